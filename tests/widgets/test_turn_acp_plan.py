"""An ACP agent's turn in the turn view: its plan is one checklist step that changes as the
agent works (each plan update replaces it), beside the agent's other steps; the messages come
from a real turn of the bundled offline agent."""

from __future__ import annotations

import anyio
import pytest

from lion_nb import Branch, iModel
from lion_nb.widgets import TurnWidget

pytestmark = pytest.mark.timeout(120)


def test_the_plan_is_one_checklist_that_moves_on(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("# Plan demo\n", encoding="utf-8")
    branch = Branch(chat_model=iModel(provider="acp", model="offline", approve=True))
    turn = TurnWidget("main · run · acp/offline")
    turn.start()
    shown: list[str] = []

    async def main():
        async for message in branch.run("Look at README.md"):
            turn.message(message)
            turn._throttle.flush()
            plans = [s for s in turn.steps if s["function"] == "plan"]
            if plans:
                shown.append(str(plans[0]))
        await branch.chat_model.aclose()

    anyio.run(main)
    turn.finish()
    plans = [s for s in turn.steps if s["function"] == "plan"]
    assert len(plans) == 1  # four plan updates, one step
    assert plans[0]["index"] == 0  # where the first plan appeared
    assert "[x] Write notes.md" in str(plans[0]) and "[ ] Read the file" not in str(plans[0])
    assert any("[ ] Read the file" in s for s in shown)  # it was shown pending first
    others = [s["function"] for s in turn.steps if s["function"] != "plan"]
    assert "Read README.md" in others and "python --version" in others
    # the branch keeps every update
    requests = [m for m in branch.messages if m.kind == "action_request"]
    assert sum(m.function == "plan" for m in requests) == 4
    assert all(m.metadata.get("acp") == "plan" for m in requests if m.function == "plan")
