"""Forks of an ACP branch against the bundled offline agent as a real subprocess: by the
agent's own ``session/fork`` or ``session/load`` when it offers one, by a transcript
otherwise; either way the fork and its parent each go on with their own history."""

from __future__ import annotations

import anyio
import pytest

from lion_nb import Branch, iModel

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "README.md").write_text("# Demo project\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


async def _answer(branch: Branch, prompt: str) -> str:
    return [m async for m in branch.run(prompt)][-1].response


def _answers(branch: Branch) -> list[str]:
    return [m.response for m in branch.messages if m.kind == "assistant_response"]


def _diverge(preset: str):
    """Parent ``alpha``; fork; fork ``gamma``; parent ``beta``; fork ``delta``."""
    model = iModel(provider="acp", model=preset, approve=True)
    branch = Branch(chat_model=model)

    async def main():
        await _answer(branch, "quick alpha")
        parent_session = model.endpoint.session_id
        fork = branch.clone()
        seen = {
            "gamma": await _answer(fork, "quick gamma"),
            "beta": await _answer(branch, "quick beta"),
            "delta": await _answer(fork, "quick delta"),
            "parent_session": parent_session,
            "fork_session": fork.chat_model.endpoint.session_id,
            "carried_by": fork.chat_model.endpoint.carried_by,
            "pids": {model.endpoint.pid, fork.chat_model.endpoint.pid},
        }
        await model.aclose()
        await fork.chat_model.aclose()
        return branch, fork, seen

    return anyio.run(main)


def _assert_each_has_its_own_history(branch: Branch, fork: Branch, seen: dict) -> None:
    assert len(seen["pids"]) == 2  # one process per branch
    # the fork's session went on from the parent's: its second turn, not a first one
    assert "turn 2 of this session" in seen["gamma"]
    assert "Earlier prompts: quick alpha." in seen["gamma"]
    assert "turn 3 of this session" in seen["delta"]
    assert "Earlier prompts: quick alpha; quick gamma." in seen["delta"]
    assert "beta" not in seen["delta"]
    # the parent went on with its own
    assert "turn 2 of this session" in seen["beta"] and "quick alpha" in seen["beta"]
    assert "gamma" not in seen["beta"]
    # nothing the agent replayed or carried was recorded on the fork as new messages
    assert len(_answers(fork)) == 3 and len(_answers(branch)) == 2
    assert [m.rendered for m in fork.messages if m.kind == "instruction"] == [
        "quick alpha",
        "quick gamma",
        "quick delta",
    ]


def test_a_fork_uses_the_agents_session_fork_when_it_offers_one(project):
    branch, fork, seen = _diverge("offline-fork")
    assert seen["carried_by"] == "fork"
    assert seen["fork_session"] != seen["parent_session"]  # a session of its own
    _assert_each_has_its_own_history(branch, fork, seen)


def test_a_fork_uses_session_load_when_the_agent_loads_but_does_not_fork(project):
    branch, fork, seen = _diverge("offline-load")
    assert seen["carried_by"] == "load"
    assert seen["fork_session"] == seen["parent_session"]  # loaded in the fork's process
    _assert_each_has_its_own_history(branch, fork, seen)


def test_a_fork_gets_a_transcript_from_an_agent_without_load_or_fork(project):
    branch, fork, seen = _diverge("offline")
    assert seen["carried_by"] == "transcript"
    assert len(seen["pids"]) == 2
    # a new session, given the conversation up to the fork
    assert "turn 1 of this session" in seen["gamma"]
    assert "Earlier prompts: quick alpha." in seen["gamma"]
    assert "Earlier prompts: quick alpha; quick gamma." in seen["delta"]
    assert "gamma" not in seen["beta"] and "beta" not in seen["delta"]
    assert len(_answers(fork)) == 3 and len(_answers(branch)) == 2


@pytest.mark.parametrize("preset", ["offline-fork", "offline-load"])
def test_a_parent_that_went_on_first_or_a_fork_cut_earlier_gets_a_transcript(project, preset):
    """The agent's fork or load would carry turns the fork does not have: a transcript."""
    model = iModel(provider="acp", model=preset, approve=True)
    branch = Branch(chat_model=model)

    async def main():
        await _answer(branch, "quick alpha")
        late = branch.clone()
        await _answer(branch, "quick beta")  # the parent's session moves on before the fork
        cut = branch.clone()
        for doomed in list(cut.messages)[2:]:  # cut back to the first exchange
            cut.msgs.remove_message(doomed.id)
        got = {
            "late": await _answer(late, "quick gamma"),
            "cut": await _answer(cut, "quick delta"),
            "late_by": late.chat_model.endpoint.carried_by,
            "cut_by": cut.chat_model.endpoint.carried_by,
        }
        for b in (branch, late, cut):
            await b.chat_model.aclose()
        return got

    got = anyio.run(main)
    assert got["late_by"] == got["cut_by"] == "transcript"
    for key in ("late", "cut"):
        assert "turn 1 of this session" in got[key]
        assert "Earlier prompts: quick alpha." in got[key] and "beta" not in got[key]


def test_a_session_fork_replays_from_a_cassette_without_a_process(project, tmp_path):
    tape = tmp_path / "fork.jsonl"

    def run():
        async def main():
            model = iModel(provider="acp", model="offline-fork", approve=True, cassette=str(tape))
            branch = Branch(chat_model=model)
            await _answer(branch, "quick alpha")
            fork = branch.clone()
            await _answer(fork, "quick gamma")
            pids = {model.endpoint.pid, fork.chat_model.endpoint.pid}
            await model.aclose()
            await fork.chat_model.aclose()
            return _answers(branch), _answers(fork), pids, fork.chat_model.endpoint.carried_by

        return anyio.run(main)

    recorded = run()
    assert recorded[3] == "fork" and None not in recorded[2]
    replayed = run()
    assert replayed[2] == {None}  # no process was started, for the parent or the fork
    assert replayed[:2] == recorded[:2]
    assert "turn 2 of this session" in replayed[1][-1]
