"""`Secret` and `redact`: keys and secret-looking environment values never reach a text."""

from __future__ import annotations

import copy
import pickle

import pytest

from lion_nb.models.secrets import Secret, redact


def test_values_of_variables_named_like_secrets_are_redacted(monkeypatch):
    values = {
        "CODEX_API_KEY": "codex-key-9f8e7d6c5b4a",
        "CLAUDE_CODE_OAUTH_TOKEN": "oauth-tok-0123456789",
        "MY_DB_PASSWORD": "hunter2hunter2",
        "GCP_CREDENTIALS": "cred-blob-abcdefgh",
        "app_client_secret": "lowercase-name-secret",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    text = "leaked: " + " | ".join(values.values())
    clean = redact(text)
    for value in values.values():
        assert value not in clean
    assert clean.count("****") == len(values)


def test_short_values_and_other_variables_are_left_alone(monkeypatch):
    monkeypatch.setenv("FEATURE_TOKEN", "on1234")  # below 8 characters: harmless
    monkeypatch.setenv("BUILD_LABEL", "release-candidate-7")  # the name does not look secret
    text = "flags on1234 built from release-candidate-7"
    assert redact(text) == text


def test_well_known_key_variables_keep_the_shorter_minimum(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-12")
    assert redact("key sk-12 here") == "key **** here"


def test_redaction_follows_changes_to_the_environment(monkeypatch):
    monkeypatch.setenv("XAI_API_KEY", "first-value-123456")
    assert redact("first-value-123456") == "****"
    monkeypatch.setenv("XAI_API_KEY", "second-value-654321")
    assert redact("second-value-654321") == "****"
    monkeypatch.delenv("XAI_API_KEY")
    assert redact("third-value-000000") == "third-value-000000"


def test_a_longer_secret_is_masked_whole(monkeypatch):
    monkeypatch.setenv("SHORT_TOKEN", "abcdefgh")
    monkeypatch.setenv("LONG_TOKEN", "abcdefgh-and-more")
    assert redact("x abcdefgh-and-more y") == "x **** y"


def test_secret_copies_as_itself():
    secret = Secret("sk-copy-me-12345678")
    assert copy.copy(secret) is secret
    assert copy.deepcopy({"k": secret})["k"] is secret


def test_pickling_a_secret_is_refused_and_names_imodel_copy():
    with pytest.raises(TypeError) as info:
        pickle.dumps(Secret("sk-never-on-disk-1234"))
    assert "`iModel.copy()`" in str(info.value)
    assert "sk-never-on-disk-1234" not in str(info.value)


def test_auth_headers_are_masked_even_for_unknown_keys():
    assert redact("Authorization: Bearer tok-unknown-123") == "Authorization: ****"
    masked = redact('{"x-api-key": "zzz-unknown-9", "model": "m"}')
    assert "zzz-unknown-9" not in masked and '"model": "m"' in masked
    assert "api_key=" in redact("api_key=abc-unknown-77") and "abc-unknown-77" not in redact(
        "api_key=abc-unknown-77"
    )


def test_redacting_filter_scrubs_log_records():
    import logging

    from lion_nb.models.secrets import RedactingFilter

    Secret("filter-secret-value-42")
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    handler = Keep()
    handler.addFilter(RedactingFilter())
    log = logging.getLogger("lion_nb.test.redacting")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("calling with %s", "filter-secret-value-42")
    finally:
        log.removeHandler(handler)
    assert records[0].getMessage() == "calling with ****"


def test_the_missing_key_hint_survives_redaction_and_keys_do_not(monkeypatch):
    import asyncio

    from lion_nb import iModel
    from lion_nb.errors import ExecutionError
    from lion_nb.session.branch import Branch

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    hint = 'pass `api_key=` (`iModel(provider="openai", model=..., api_key=...)`).'
    branch = Branch(chat_model=iModel(provider="openai", model="gpt-4o-mini"))
    with pytest.raises(ExecutionError) as info:
        asyncio.run(branch.communicate("hi"))
    assert "no API key" in str(info.value) and hint in str(info.value)  # redacted on its way
    assert redact(hint) == hint
    # a value after `api_key=` or in a header is still masked, whatever its quoting
    assert redact("`api_key=sk-live-unknown-4821`") == "`api_key=****`"
    assert redact("iModel(api_key='sk-live-unknown-4821')") == "iModel(api_key='****')"
    assert redact('{"x-api-key": "k-unknown-93"}') == '{"x-api-key": "****"}'
    assert redact("Authorization: Bearer tok-unknown-5") == "Authorization: ****"


def test_scrub_masks_key_values_and_leaves_code_and_placeholders_alone(monkeypatch):
    from lion_nb.models import secrets
    from lion_nb.models.secrets import MASK, scrub

    monkeypatch.setattr(secrets, "_KNOWN", set(secrets._KNOWN))  # forget these keys afterwards
    Secret("sk-scrub-known-5a6b7c8d9e")
    Secret("ollama")  # the placeholder a local server takes for a key
    monkeypatch.setenv("MY_SERVICE_API_KEY", "svc-env-0f1e2d3c4b")
    code = (
        'connect(api_key=os.environ["OPENAI_API_KEY"], base="ollama")  # sk-scrub-known-5a6b7c8d9e'
    )
    assert scrub(code) == f'connect(api_key=os.environ["OPENAI_API_KEY"], base="ollama")  # {MASK}'
    assert "ollama" not in redact(code)  # `redact`, for errors and logs, masks every known value
    assert (
        scrub("token svc-env-0f1e2d3c4b, again svc-env-0f1e2d3c4b") == f"token {MASK}, again {MASK}"
    )
    assert scrub("") == ""
