"""``%lion cassette`` in a real in-process IPython shell, against the loopback server.

Recorded through a model pointed at the loopback server, a notebook replays with the model
it would use against the real service -- ``-m openai/gpt-4o-mini``, created by the cell
after the switch, with no key -- and its turns stream into the cell's display as live ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from lion_nb import current_session
from lion_nb.models.cassettes import ENV_MODE, current_cassette, use_cassette
from tests.fakes.http_server import FakeProvider, sse_events
from tests.notebook.nbshell import run, usage_error


@pytest.fixture
def nb(ip, monkeypatch) -> Iterator:
    monkeypatch.delenv(ENV_MODE, raising=False)
    assert run(ip, "from lion_nb import iModel").error is None
    yield ip
    use_cassette(None)


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


def record(nb, server: FakeProvider, path: str, question: str = "Greet me") -> str:
    """One streamed turn through a loopback model, recorded to ``path``; the answer."""
    server.push(events=sse_events("openai_stream_text.sse"))
    url = server.openai_url
    assert run(nb, f"%lion cassette {path}").error is None
    code = f'gpt = iModel(provider="openai", model="gpt-4o-mini", base_url="{url}")'
    assert run(nb, code).error is None
    ran = run(nb, f"%%lion -b rec -m gpt -o answer\n{question}")
    assert ran.error is None, ran
    return nb.user_ns["answer"]


def test_status_switch_and_off(nb, tmp_path):
    assert "No cassette" in run(nb, "%lion cassette").stdout
    path = tmp_path / "calls.jsonl"
    ran = run(nb, f"%lion cassette {path}")
    assert ran.error is None, ran
    assert "for every model of this notebook" in ran.stdout and "recording" in ran.stdout
    tape = current_cassette()
    assert tape is not None and tape.path == path and tape.mode == "once"
    assert f"Cassette `{path}` (mode `once`)" in run(nb, "%lion cassette").stdout
    assert "Cassette off" in run(nb, "%lion cassette --off").stdout
    assert current_cassette() is None


def test_a_notebook_replays_with_the_real_service_model_and_no_server(nb, server, tmp_path):
    path = tmp_path / "calls.jsonl"
    answer = record(nb, server, str(path))
    assert answer == "Hello!" and len(server.requests) == 1
    server.stop()
    ran = run(nb, f"%lion cassette {path} --mode none")
    assert "replaying 1 recorded exchange" in ran.stdout
    # a model created later, by the cell's --model string: the real service, no key
    ran = run(nb, "%%lion -b replay -m openai/gpt-4o-mini -o again\nGreet me")
    assert ran.error is None, ran
    assert nb.user_ns["again"] == answer
    assert "Hello!" in ran.last["text/plain"]
    replay = current_session().get_branch("replay")
    assert [m.kind for m in replay.messages] == ["instruction", "assistant_response"]
    assert replay.messages[-1].metadata["model_response"]["id"] == "chatcmpl-1"
    assert current_cassette().replayed == 1


def test_running_the_cell_again_replays_afresh(nb, server, tmp_path):
    path = tmp_path / "calls.jsonl"
    record(nb, server, str(path))
    server.stop()
    for _ in range(2):  # Run All twice in one kernel
        assert run(nb, f"%lion cassette {path} --mode none").error is None
        run(nb, "%lion reset --all")
        ran = run(nb, "%%lion -m openai/gpt-4o-mini -o again\nGreet me")
        assert ran.error is None, ran
        assert nb.user_ns["again"] == "Hello!" and current_cassette().replayed == 1


def test_a_changed_prompt_fails_in_one_line_naming_the_field(nb, server, tmp_path):
    path = tmp_path / "calls.jsonl"
    record(nb, server, str(path))
    run(nb, f"%lion cassette {path} --mode none")
    ran = run(nb, "%%lion -b other -m gpt\nGreet me twice")
    assert type(ran.error).__name__ == "CassetteError"
    assert "messages[0].content" in str(ran.error)
    assert "Traceback" not in ran.stdout + ran.stderr
    assert len(server.requests) == 1


def test_the_environment_forces_none(nb, tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_MODE, "none")
    ran = run(nb, f"%lion cassette {tmp_path / 'new.jsonl'} --mode all")
    assert f"mode `none`, forced by `{ENV_MODE}`" in ran.stdout
    assert "does not exist yet" in ran.stdout


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("%lion cassette x.jsonl --mode record", "invalid choice: 'record'"),
        ("%lion cassette --mode none", "needs the cassette's PATH"),
        ("%lion cassette x.jsonl --off", "takes no PATH"),
        ("%lion cassette a.jsonl b.jsonl", "unrecognized arguments"),
    ],
)
def test_bad_arguments_are_usage_errors(nb, line, needle):
    assert needle in usage_error(nb, line)
    assert current_cassette() is None


def test_a_folder_or_a_malformed_file_is_a_usage_error(nb, tmp_path):
    assert "is a folder" in usage_error(nb, f"%lion cassette {tmp_path}")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"kind": "chat"}) + "\n")
    assert "line 1, is not a recorded exchange" in usage_error(nb, f"%lion cassette {bad}")
    assert current_cassette() is None


def test_help_lists_the_subcommand_and_its_modes(nb):
    assert "cassette" in run(nb, "%lion help").stdout
    text = run(nb, "%lion help cassette").stdout
    for mode in ("once", "new", "none", "all", "--off"):
        assert mode in text
    assert "cassette   record/replay" in run(nb, "%lion?").stdout


def test_mode_none_without_a_file_warns_about_provider_calls_only(nb, tmp_path):
    ran = run(nb, f"%lion cassette {tmp_path / 'missing.jsonl'} --mode none")
    assert ran.error is None
    assert "every call to a provider" in ran.stdout and "offline models still answer" in ran.stdout
    assert "every model call will fail" not in ran.stdout
    answered = run(nb, "%%lion -m offline/auto -o reply\nstill here?")  # and that is true
    assert answered.error is None and nb.user_ns["reply"].startswith("Offline model")
