"""A denied tool call is a decision, not a failure: every view says "denied" in the neutral
style (never the red "error" of a tool that failed), live and static alike -- the turn view,
BranchView and Chat; a tool that raised still reads "error"."""

from __future__ import annotations

import asyncio

from lion_nb import Branch, iModel
from lion_nb.widgets import BranchView, Chat, TurnWidget
from lion_nb.widgets._base import esm


def wipe(path: str) -> str:
    """Wipe a path."""
    return f"wiped {path}"


def boom(path: str) -> str:
    """Fail."""
    raise RuntimeError("disk on fire")


def _acted() -> tuple[Branch, list]:
    from lion_nb.protocols.actions import Tool

    branch = Branch(chat_model=iModel("offline/auto"), tools=[Tool(wipe, approve=False), boom])
    calls = [
        {"function": "wipe", "arguments": {"path": "/a"}},
        {"function": "boom", "arguments": {"path": "/b"}},
    ]
    out = asyncio.run(branch.act(calls, suppress_errors=True))
    return branch, out


def test_the_branch_view_says_denied_and_error_apart():
    branch, out = _acted()
    assert out[0].metadata["approval"].startswith("denied") and out[1].is_error
    view = BranchView(branch)
    states = {e["function"]: e["state"] for e in view.entries if e["kind"] == "action"}
    assert states == {"wipe": "denied", "boom": "error"}
    html = view.static_html()
    assert "<code>wipe</code> · denied" in html and "<code>boom</code> · error" in html
    text = view.static_text()
    assert "tool wipe" in text and "denied (by policy)" in text


def test_the_turn_view_shows_a_denied_step_as_denied():
    branch, _ = _acted()
    turn = TurnWidget("t")
    turn.start()
    for message in branch.messages:
        turn.message(message)
    turn.finish()
    states = {s["function"]: s["state"] for s in turn.steps}
    assert states == {"wipe": "denied", "boom": "error"}


def test_chat_static_html_says_denied():
    branch, _ = _acted()
    chat = Chat(branch)
    assert "<code>wipe</code> · denied" in chat.static_html()


def test_the_front_ends_draw_the_kernels_state_word_and_class():
    for name in ("turn.js", "branch_view.js"):
        module = esm(name)
        assert "lnb-tool-${state}" in module and "TOOL_STATE_WORDS[state]" in module
    from lion_nb.widgets._base import stylesheet

    assert ".lnb-tool-denied::before" in stylesheet()
