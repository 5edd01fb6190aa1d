"""Loading saved data that anyone could have edited: a `ConfigurationError` naming the field.

Malformed model specs and endpoints, fields of the wrong type and ids nested deeper than
Python's stack reach `Branch.from_dict`, `iModel.from_dict` and `Session.from_dict` as
`ConfigurationError`s that name the field, with messages of bounded length -- never a
``TypeError``, ``AttributeError`` or ``RecursionError`` from inside the loader. Property
tests (hypothesis) feed them arbitrary JSON-like data: a result or the library's own error,
never another exception.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lion_nb import Branch, Session, iModel
from lion_nb.errors import ConfigurationError, LionError
from lion_nb.untrusted import MAX_MESSAGE


def deep(levels: int, kind: str = "list") -> object:
    value: object = "x"
    for _ in range(levels):
        value = [value] if kind == "list" else {"a": value}
    return value


def refused(load, data, field: str) -> str:
    with pytest.raises(ConfigurationError) as caught:
        load(data)
    text = str(caught.value)
    assert f"`{field}`" in text, text
    assert len(text) <= MAX_MESSAGE, len(text)
    return text


# -- the reported cases ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"provider": 5}, "provider"),
        ({"provider": "openai", "model": 5}, "model"),
        ({"provider": "openai", "model": "m", "endpoint": "x"}, "endpoint"),
        ({"provider": "openai", "model": "m", "options": 3}, "options"),
        ({"provider": "openai", "model": "m", "processor": ["x"]}, "processor"),
        ({"provider": deep(100_000)}, "provider"),
        ({"provider": "openai", "model": "m", "endpoint": {"base_url": deep(5000)}}, "endpoint"),
        ({"provider": "openai", "model": "m", "endpoint": {"timeout": "x" * 100_000}}, "endpoint"),
        ({"provider": "claude_code", "provider_session_id": 7}, "provider_session_id"),
    ],
)
def test_a_malformed_model_spec_names_the_field(data, field):
    refused(iModel.from_dict, data, field)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"chat_model": {"provider": 5}}, "chat_model"),
        ({"chat_model": {"provider": "openai", "model": 5}}, "chat_model"),
        ({"parse_model": {"provider": "openai", "model": "m", "endpoint": "x"}}, "parse_model"),
        ({"id": deep(100_000)}, "id"),
        ({"id": deep(100_000, "dict")}, "id"),
        ({"user": deep(100_000)}, "user"),
        ({"name": 5}, "name"),
        ({"log_config": "x"}, "log_config"),
        (
            {"messages": {"collections": [{"kind": "instruction", "sender": deep(5000)}]}},
            "messages.collections.0.instruction.sender",
        ),
        (
            {"messages": {"collections": [], "progression": {"order": [deep(5000)]}}},
            "messages.progression",
        ),
    ],
)
def test_a_malformed_branch_names_the_field(data, field):
    text = refused(Branch.from_dict, data, field)
    assert "RecursionError" not in text


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"branches": [{"chat_model": {"provider": 5}}]}, "branches[0]"),
        ({"branches": [5]}, "branches[0]"),
        ({"id": deep(100_000), "branches": []}, "id"),
        ({"name": 5, "branches": []}, "name"),
        ({"branches": [], "default_branch_id": deep(5000)}, "default_branch_id"),
        ({"branches": [], "default_branch_id": "not a member"}, "default_branch_id"),
    ],
)
def test_a_malformed_session_names_the_field(data, field):
    refused(Session.from_dict, data, field)


def test_two_saved_branches_with_one_id_are_refused():
    saved = Branch().to_dict(mode="json")
    refused(Session.from_dict, {"branches": [saved, saved]}, "branches")


def test_a_deeply_nested_value_still_saves_after_loading():
    # pydantic accepts any metadata; saving must not fail on what it holds
    branch = Branch.from_dict({"metadata": {"m": deep(5000, "dict")}})
    saved = json.dumps(branch.to_dict(mode="json"))
    assert "nested more than" in saved


# -- property tests ----------------------------------------------------------------------------
_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=25,
)
_keys = st.sampled_from(
    ["id", "created_at", "metadata", "user", "name", "messages", "logs", "system", "chat_model",
     "parse_model", "log_config", "node_metadata", "provider", "model", "endpoint", "options",
     "processor", "provider_session_id", "branches", "default_branch_id", "collections",
     "progression", "order", "kind", "instruction", "base_url", "timeout", "headers"]
)  # fmt: skip
_shaped = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=5),
    max_leaves=30,
)
_model_spec = st.fixed_dictionaries(
    {"provider": st.sampled_from(["openai", "offline", "anthropic", "ollama", "nope"]) | _scalars},
    optional={
        "model": _scalars,
        "endpoint": st.dictionaries(_keys, _json, max_size=3) | _json,
        "options": st.dictionaries(st.text(max_size=8), _json, max_size=3) | _json,
        "processor": st.dictionaries(
            st.sampled_from(["limit_requests", "limit_tokens", "concurrency_limit"]),
            _json,
            max_size=3,
        )
        | _json,
        "provider_session_id": _scalars,
    },
)
_branch_like = st.fixed_dictionaries(
    {},
    optional={
        "id": _json,
        "created_at": _json,
        "metadata": _json,
        "user": _json,
        "name": _json,
        "messages": _shaped,
        "logs": _shaped,
        "system": _shaped,
        "log_config": _shaped,
        "chat_model": _model_spec | _shaped,
        "parse_model": _model_spec,
    },
)
_PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _only_library_errors(load, data) -> None:
    try:
        result = load(data)
    except LionError as exc:
        assert len(str(exc)) <= MAX_MESSAGE, str(exc)[:200]
        return
    assert result is not None


@_PROPERTY
@given(st.one_of(_model_spec, _shaped))
def test_imodel_from_dict_gives_a_model_or_a_library_error(data):
    _only_library_errors(iModel.from_dict, data)


@_PROPERTY
@given(st.one_of(_branch_like, _shaped))
def test_branch_from_dict_gives_a_branch_or_a_library_error(data):
    _only_library_errors(Branch.from_dict, data)


@_PROPERTY
@given(
    st.fixed_dictionaries(
        {"branches": st.lists(_branch_like, max_size=2) | _shaped},
        optional={"name": _json, "user": _json, "default_branch_id": _json, "id": _json},
    )
)
def test_session_from_dict_gives_a_session_or_a_library_error(data):
    _only_library_errors(Session.from_dict, data)


@_PROPERTY
@given(
    st.lists(st.sampled_from(["instruction", "assistant_response", "action_request"]), max_size=6),
    _json,
)
def test_a_saved_branch_with_edited_messages_loads_or_is_refused(kinds, junk):
    branch = Branch()
    for kind in kinds:
        if kind == "action_request":
            branch.msgs.add_message(action_request={"function": "f", "arguments": {}})
        else:
            branch.msgs.add_message(**{kind: "text"})
    data = json.loads(json.dumps(branch.to_dict(mode="json")))
    for message in data["messages"]["collections"]:
        message["metadata"] = junk  # any JSON where a dict belongs
    _only_library_errors(Branch.from_dict, data)
