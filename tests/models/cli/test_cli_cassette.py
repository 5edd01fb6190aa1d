"""Record against the fake CLIs, take them off PATH, replay: the CLI agents' round trips.

Each case runs CLI turns through `Branch.run` with a cassette in mode ``once`` against the
fake ``claude``, ``codex`` and ``gemini`` executables (real subprocesses replaying provider
transcripts), then removes the fakes from ``PATH`` and runs the same turns on a fresh branch
with the cassette in mode ``none``. The replay must leave the branch exactly as the
recording did (`snapshot`: ids and timestamps aside) -- tool calls and results, thinking,
usage, cost, the provider session id -- send the same text to the listener, emit the same
signals, and start no process (the fakes log every run they make).
"""

from __future__ import annotations

import json
import os
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from lion_nb import Session, Signal, iModel
from lion_nb.errors import CLIError, ConfigurationError
from lion_nb.models.cassettes import CassetteError, cassette
from lion_nb.models.endpoints.base import streaming_to
from tests.fakes.cli import FAKE_BIN, FakeCLI
from tests.models.cassette_support import snapshot

PROVIDERS = {"claude_code": "claude", "codex": "codex", "gemini_cli": "gemini"}
PROMPT = "How many .py files are here?"


class Count(BaseModel):
    files: int


class Turns:
    """Prompts run in order on one fresh branch: its snapshot, deltas, signals, model."""

    def __init__(self, provider: str, prompts: list[str], operate: Any = None):
        session = Session()
        self.model = iModel(provider=provider, model="default")
        self.branch = session.new_branch(name="main", system="Be brief.", chat_model=self.model)
        self.deltas: list[str] = []
        self.signals: list[str] = []
        self.sessions: list[str | None] = []
        session.observe(Signal, lambda s: self.signals.append(s.kind))

        async def main() -> Any:
            with streaming_to(self.deltas.append):
                if operate is not None:
                    return await self.branch.operate(instruction=prompts[0], **operate)
                for prompt in prompts:
                    async with aclosing(self.branch.run(prompt)) as stream:
                        async for _ in stream:
                            pass
                    self.sessions.append(self.model.provider_session_id)
                return None

        self.value = anyio.run(main)


def off_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """No fake (and no real) CLI can be found any more."""
    kept = [p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != FAKE_BIN]
    monkeypatch.setenv("PATH", os.pathsep.join(kept))
    for cli in PROVIDERS.values():
        assert not any((Path(p) / cli).exists() for p in kept)


def round_trip(
    fake_cli: FakeCLI, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, provider: str, **kw: Any
) -> tuple[Turns, Turns, Path]:
    path = tmp_path / "agent.jsonl"
    with cassette(path, mode="once") as tape:
        recorded = Turns(provider, **kw)
    runs = len(fake_cli.records())
    assert runs > 0 and tape.recorded == runs
    off_path(monkeypatch)
    with cassette(path, mode="none") as tape:
        replayed = Turns(provider, **kw)
    assert tape.replayed == runs and tape.recorded == 0
    assert len(fake_cli.records()) == runs  # no process was started
    assert snapshot(replayed.branch) == snapshot(recorded.branch)
    assert replayed.deltas == recorded.deltas
    assert replayed.signals == recorded.signals
    assert replayed.sessions == recorded.sessions
    assert replayed.value == recorded.value
    return recorded, replayed, path


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_run_round_trip(provider: str, fake_cli, monkeypatch, tmp_path):
    recorded, _, path = round_trip(fake_cli, monkeypatch, tmp_path, provider, prompts=[PROMPT])
    kinds = [m.kind for m in recorded.branch.messages]
    assert "action_request" in kinds and "action_response" in kinds
    final = recorded.branch.messages[-1]
    assert final.metadata["usage"]["output_tokens"] > 0
    assert recorded.deltas and "".join(recorded.deltas) in "".join(
        m.response for m in recorded.branch.messages if m.kind == "assistant_response"
    )
    (exchange,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert exchange["kind"] == "run" and exchange["request"]["provider"] == provider
    assert exchange["request"]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": PROMPT},
    ]
    assert [e["type"] for e in exchange["events"]][-1] == "result"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_replayed_session_resumes_and_reports_usage_and_cost(
    provider: str, fake_cli, monkeypatch, tmp_path
):
    prompts = [PROMPT, "And how many tests?"]
    recorded, replayed, path = round_trip(
        fake_cli, monkeypatch, tmp_path, provider, prompts=prompts
    )
    first, second = [json.loads(line)["request"] for line in path.read_text().splitlines()]
    assert "resume" not in first and second["resume"] == recorded.sessions[0]
    assert replayed.sessions[-1] == replayed.model.provider_session_id is not None
    results = [
        m.metadata
        for m in replayed.branch.messages
        if m.kind == "assistant_response" and "usage" in m.metadata
    ]
    assert len(results) == 2 and all(r["usage"]["total_tokens"] > 0 for r in results)
    if provider == "claude_code":
        assert results[-1]["cost_usd"] > 0
    else:  # these CLIs report no cost: recorded as unknown, never as zero
        assert results[-1]["cost_usd"] is None


def test_structured_output_from_an_agent_round_trip(fake_cli, monkeypatch, tmp_path):
    answer = {"files": 3}
    fake_cli.replay(
        [
            {"type": "system", "subtype": "init", "session_id": "s-1", "model": "sonnet"},
            {
                "type": "assistant",
                "message": {"id": "m1", "content": [{"type": "text", "text": json.dumps(answer)}]},
            },
            {
                "type": "result",
                "subtype": "success",
                "session_id": "s-1",
                "usage": {"input_tokens": 10, "output_tokens": 4},
                "total_cost_usd": 0.001,
            },
        ]
    )
    recorded, _, _ = round_trip(
        fake_cli,
        monkeypatch,
        tmp_path,
        "claude_code",
        prompts=["Count the files as JSON."],
        operate={"response_format": Count},
    )
    assert recorded.value == Count(files=3)


def test_a_changed_prompt_fails_before_any_process_starts(fake_cli, monkeypatch, tmp_path):
    path = tmp_path / "agent.jsonl"
    with cassette(path):
        Turns("codex", prompts=[PROMPT])
    off_path(monkeypatch)
    with cassette(path, mode="none"), pytest.raises(CassetteError) as info:
        Turns("codex", prompts=["How many .rs files are here?"])
    message = str(info.value)
    assert "messages[1].content" in message and "How many .rs files" in message
    assert len(fake_cli.records()) == 1


def test_without_a_cassette_the_cli_would_have_been_needed(fake_cli, monkeypatch, tmp_path):
    """The control for the tests above: off PATH and live, the run cannot start."""
    off_path(monkeypatch)
    with pytest.raises(ConfigurationError, match="not found on PATH"):
        Turns("gemini_cli", prompts=[PROMPT])


def test_a_run_that_fails_is_not_recorded(fake_cli, tmp_path):
    fake_cli.replay("codex_fail.jsonl")
    fake_cli.set(exit=1)
    path = tmp_path / "agent.jsonl"
    with cassette(path, mode="new") as tape, pytest.raises(CLIError, match="usage limit"):
        Turns("codex", prompts=[PROMPT])
    assert tape.recorded == 0 and not path.exists()
