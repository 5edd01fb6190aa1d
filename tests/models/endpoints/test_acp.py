"""The ACP provider against the bundled offline agent run as a real subprocess: every update
kind reaches the branch and the live sinks, permissions follow ``approve=``, file access is
confined to the folder, a write is asked for with its diff before it happens, cost and the
ledger, forks, cassettes, and settings that never hold a secret."""

from __future__ import annotations

import json
import os
import sys

import anyio
import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import ConfigurationError
from lion_nb.models.endpoints import streaming_to
from lion_nb.models.endpoints.base import thinking_to
from lion_nb.protocols.approval import asking

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "README.md").write_text("# Demo project\nMore.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


async def _turn(branch: Branch, prompt: str) -> list:
    return [m async for m in branch.run(prompt)]


def _calls(messages) -> dict[str, list]:
    found: dict[str, list] = {}
    for m in messages:
        if m.kind == "action_request":
            found.setdefault(m.function, []).append(m)
    return found


def _output(branch: Branch, request) -> object:
    return branch.messages[request.action_response_id].output


def test_every_update_kind_reaches_the_branch_and_the_sinks(project):
    texts, thoughts = [], []
    model = iModel(provider="acp", model="offline", approve=True)
    branch = Branch(chat_model=model)

    async def main():
        with streaming_to(texts.append), thinking_to(lambda c: thoughts.append(c.content)):
            messages = await _turn(branch, "Look at README.md")
        pid = model.endpoint.pid
        second = await _turn(branch, "quick again")
        assert model.endpoint.pid == pid  # one process, kept across turns
        await model.aclose()
        return messages, second

    messages, second = anyio.run(main)
    calls = _calls(messages)
    # thoughts as thinking, on the first answer and live
    assert "Planning how to answer" in "".join(thoughts)
    assert any("Planning" in (m.metadata.get("thinking") or "") for m in branch.messages)
    # message chunks as text, live and on the branch
    assert "Offline ACP agent, turn 1" in "".join(texts)
    # tool calls: kind, status, locations, content
    [read] = calls["Read README.md"]
    assert read.arguments["kind"] == "read" and read.arguments["locations"]
    assert _output(branch, read)["content"] == "# Demo project"
    [run] = calls["python --version"]
    assert run.arguments["kind"] == "execute"
    assert _output(branch, run)["raw_output"]["exitCode"] == 0
    # a diff
    [edit] = calls["Write notes.md"]
    [diff] = _output(branch, edit)["diffs"]
    assert "+- interpreter check: allowed" in diff["diff"]
    # plans as a checklist that moves on
    plans = [_output(branch, p) for p in calls["plan"]]
    assert plans[0].startswith("[ ] Read the file") and plans[-1].count("[x]") == 3
    # the file read served from the notebook's side
    [served] = calls["read_text_file"]
    assert _output(branch, served).startswith("# Demo project")
    # the same session goes on: the agent remembers the first prompt
    assert "turn 2 of this session" in second[-1].response
    assert "Look at README.md" in second[-1].response
    assert (project / "notes.md").read_text().startswith("# Notes")


def test_permission_is_asked_with_the_agents_options_and_allow_once_runs_once(project):
    asked = []

    async def asker(ask):
        asked.append(ask)
        return "option:allow_once"

    branch = Branch(chat_model=iModel(provider="acp", model="offline"))

    async def main():
        with asking(asker):
            first = await _turn(branch, "Look at README.md")
            second = await _turn(branch, "Look at README.md")
        await branch.chat_model.aclose()
        return first, second

    first, second = anyio.run(main)
    kinds = [o["kind"] for o in asked[0].extra["options"]]
    assert kinds == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert asked[0].tool == "python --version" and asked[0].server == "acp/offline"
    # asked again next turn (allow once is once); the write was asked too, with its diff
    assert [a.tool for a in asked].count("python --version") == 2
    write = next(a for a in asked if a.tool.startswith("write "))
    assert "+# Notes" in write.arguments["diff"]
    [perm, _write] = _calls(first)["permission"]
    assert _output(branch, perm)["outcome"] == "allow_once"
    assert _output(branch, _calls(second)["permission"][0])["outcome"] == "allow_once"


def test_reject_always_is_recorded_and_the_agent_stops_asking(project):
    asked = []

    async def asker(ask):
        asked.append(ask.tool)
        return "option:reject_always" if ask.tool == "python --version" else False

    branch = Branch(chat_model=iModel(provider="acp", model="offline"))

    async def main():
        with asking(asker):
            first = await _turn(branch, "Look at README.md")
            await _turn(branch, "Look at README.md")
        await branch.chat_model.aclose()
        return first

    first = anyio.run(main)
    assert asked.count("python --version") == 1  # the agent remembered "always"
    [run] = _calls(first)["python --version"]
    assert _output(branch, run)["status"] == "failed"
    outcome = _output(branch, _calls(first)["permission"][0])
    assert outcome["outcome"] == "reject_always"
    assert not (project / "notes.md").exists()  # the write was rejected: nothing written


def test_nobody_to_ask_rejects_and_a_callable_decides(project):
    seen = []

    def only_reads(title, arguments):
        seen.append(title)
        return False

    async def main():
        b1 = Branch(chat_model=iModel(provider="acp", model="offline"))
        first = await _turn(b1, "Look at README.md")  # no asker: rejected
        await b1.chat_model.aclose()
        b2 = Branch(chat_model=iModel(provider="acp", model="offline"), approve=only_reads)
        second = await _turn(b2, "Look at README.md")
        await b2.chat_model.aclose()
        return b1, first, b2, second

    b1, first, b2, second = anyio.run(main)
    assert _output(b1, _calls(first)["permission"][0])["outcome"] == "reject_once"
    assert "python --version" in seen
    assert _output(b2, _calls(second)["python --version"][0])["status"] == "failed"
    assert not (project / "notes.md").exists()


def test_reads_outside_the_folder_are_refused(project, tmp_path_factory):
    secret = tmp_path_factory.mktemp("outside") / "secret.txt"
    secret.write_text("top secret", encoding="utf-8")
    branch = Branch(chat_model=iModel(provider="acp", model="offline", approve=True))

    async def main():
        messages = await _turn(branch, f"Read {secret}")
        await branch.chat_model.aclose()
        return messages

    messages = anyio.run(main)
    [refused] = _calls(messages)["read_text_file"]
    assert "outside the notebook's folder" in _output(branch, refused)["error"]
    [read] = _calls(messages)[f"Read {secret}"]
    assert _output(branch, read)["status"] == "failed"
    assert "top secret" not in json.dumps(branch.to_dict(mode="json"))


def test_every_turn_has_a_ledger_row_and_the_reported_cost(project):
    model = iModel(provider="acp", model="offline", approve=True)
    branch = Branch(chat_model=model)

    async def main():
        await _turn(branch, "quick one")
        await _turn(branch, "quick two")
        await model.aclose()

    anyio.run(main)
    cost = branch.cost()
    assert cost.calls == 2
    assert cost.usd == pytest.approx(0.001)  # the change of the agent's cumulative cost
    answers = [m for m in branch.messages if m.kind == "assistant_response" and m.response]
    assert answers[-1].metadata["usage"]["output_tokens"] == 24
    assert answers[-1].metadata["stop_reason"] == "end_turn"


def test_a_fork_starts_its_own_session_with_the_history(project):
    model = iModel(provider="acp", model="offline", approve=True)
    branch = Branch(chat_model=model)

    async def main():
        await _turn(branch, "quick alpha")
        fork = branch.clone()
        a = await _turn(branch, "quick beta")
        b = await _turn(fork, "quick gamma")
        pids = {model.endpoint.pid, fork.chat_model.endpoint.pid}
        await model.aclose()
        await fork.chat_model.aclose()
        return fork, a[-1].response, b[-1].response, pids

    fork, a, b, pids = anyio.run(main)
    assert len(pids) == 2  # one process per branch
    assert "turn 2 of this session" in a and "quick alpha" in a
    # the fork's new session was given the conversation up to the fork
    assert "turn 1 of this session" in b and "Earlier prompts: quick alpha." in b
    assert "beta" not in b
    fork_prompt = [m for m in fork.messages if m.kind == "instruction"][-1]
    assert fork_prompt.rendered == "quick gamma"


def test_a_cassette_replays_an_acp_turn_without_a_process(project, tmp_path):
    tape = tmp_path / "acp.jsonl"

    async def record():
        model = iModel(provider="acp", model="offline", approve=True, cassette=str(tape))
        branch = Branch(chat_model=model)
        await _turn(branch, "Look at README.md")
        await model.aclose()
        return [m.response for m in branch.messages if m.kind == "assistant_response"]

    recorded = anyio.run(record)
    text = tape.read_text()
    assert sys.executable not in text and "offline_acp" not in text

    async def replay():
        model = iModel(provider="acp", model="offline", approve=True, cassette=str(tape))
        branch = Branch(chat_model=model)
        await _turn(branch, "Look at README.md")
        assert model.endpoint.pid is None  # no process was started
        return branch

    branch = anyio.run(replay)
    assert [m.response for m in branch.messages if m.kind == "assistant_response"] == recorded
    assert branch.cost().calls == 1


def test_settings_keep_the_environment_secret_and_check_their_input():
    key = "sk-acp-test-0123456789abcdef"
    model = iModel(provider="acp", command=["my-agent", "--acp"], env={"MY_AGENT_KEY": key})
    assert key not in repr(model) and key not in json.dumps(model.to_dict())
    assert model.to_dict()["endpoint"] == {"command": ["my-agent", "--acp"]}
    copy = model.copy()  # an in-process copy keeps what it needs to start the agent
    assert copy.endpoint.live_config()["env"] == {"MY_AGENT_KEY": key}
    assert model.model == "my-agent"
    with pytest.raises(ConfigurationError, match="Presets"):
        iModel(provider="acp", model="nope")
    with pytest.raises(ConfigurationError, match="argv"):
        iModel(provider="acp", command="gemini --acp")
    with pytest.raises(ConfigurationError, match="approval policy"):
        iModel(provider="acp", model="offline", approve="maybe")
    assert iModel("acp/gemini").endpoint.argv() == ["gemini", "--acp"]


def test_a_missing_agent_is_a_configuration_error(project):
    branch = Branch(chat_model=iModel(provider="acp", command=["no-such-acp-agent-xyz"]))

    async def main():
        with pytest.raises(ConfigurationError, match="could not be started"):
            await _turn(branch, "hello")

    anyio.run(main)
    assert [m.kind for m in branch.messages] == ["instruction"]
    assert branch.cost().calls == 0


def test_loading_the_provider_does_not_import_the_sdk():
    code = (
        "import sys, lion_nb; from lion_nb import iModel; "
        "iModel(provider='acp', model='offline'); print('acp' in sys.modules)"
    )
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ)
    )
    assert out.stdout.strip() == "False", out.stderr


def test_the_branchs_mcp_servers_are_offered_to_the_agent(project):
    from tests.fakes.mcp_fixtures import QUICK_SERVER

    model = iModel(provider="acp", model="offline", approve=True)
    branch = Branch(chat_model=model)

    async def main():
        await branch.connect_mcp("quick", command=[sys.executable, str(QUICK_SERVER)])
        messages = await _turn(branch, "quick hello")
        await model.aclose()
        await branch.aclose()
        return messages

    messages = anyio.run(main)
    assert "MCP servers: quick." in messages[-1].response


def test_a_recording_holds_neither_the_command_nor_the_environment(project, tmp_path):
    from pathlib import Path

    hostile = Path(__file__).resolve().parents[2] / "fakes" / "acp_hostile_agent.py"
    key = "sk-acp-recorded-9f8e7d6c5b4a3210"
    tape = tmp_path / "secret.jsonl"
    model = iModel(
        provider="acp",
        command=[sys.executable, str(hostile), "unsupported", f"--token={key}"],
        env={"AGENT_API_KEY": key},
        cassette=str(tape),
    )

    async def main():
        await _turn(Branch(chat_model=model), "go")
        await model.aclose()

    anyio.run(main)
    text = tape.read_text()
    assert key not in text and "AGENT_API_KEY" not in text and str(hostile) not in text


def test_a_new_agent_on_the_same_branch_is_given_the_conversation(project):
    model = iModel(provider="acp", model="offline", approve=True)
    branch = Branch(chat_model=model, system="Be brief.")

    async def main():
        await _turn(branch, "quick first")
        await model.aclose()  # the process and its session end
        assert model.provider_session_id is None
        again = await _turn(branch, "quick second")
        await model.aclose()
        return again

    again = anyio.run(main)
    assert "turn 1 of this session" in again[-1].response
    assert "Earlier prompts: quick first." in again[-1].response
