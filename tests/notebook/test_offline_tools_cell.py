"""``%%lion -t`` with the offline auto model in a real in-process IPython shell: a tool runs
only when the cell names it, and a destructive one never -- neither a notebook function nor
the example MCP server's ``clear_notes`` (a real process whose notes would be gone)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

import lion_nb
from lion_nb import current_session
from tests.notebook.nbshell import run

pytestmark = pytest.mark.timeout(180)

SETUP = '''
notes = ["keep me"]
def add_note(text: str) -> str:
    """Add a note."""
    notes.append(text)
    return f"note {len(notes)} added"

def clear_notes() -> str:
    """Every note goes."""
    notes.clear()
    return "all notes deleted"
'''


def tool_messages() -> list:
    branch = current_session().default_branch
    return [m for m in branch.messages if m.kind in ("action_request", "action_response")]


def test_a_cell_that_names_no_tool_calls_none(ip):
    assert run(ip, SETUP).error is None
    ran = run(ip, "%%lion -t add_note,clear_notes\nAdd a note that says hi.")
    assert ran.error is None, ran
    assert ip.user_ns["notes"] == ["keep me"]
    assert tool_messages() == []
    assert "`add_note`, `clear_notes`" in ran.value and "names it" in ran.value


def test_a_named_destructive_tool_is_not_called_and_a_named_one_is(ip):
    assert run(ip, SETUP).error is None
    ran = run(ip, "%%lion -t add_note,clear_notes\nCall clear_notes now.")
    assert ran.error is None, ran
    assert ip.user_ns["notes"] == ["keep me"] and tool_messages() == []
    assert "`clear_notes` looks destructive" in ran.value
    ran = run(ip, "%%lion -t add_note,clear_notes\nCall add_note with 'buy milk'.")
    assert ran.error is None, ran
    assert ip.user_ns["notes"] == ["keep me", "buy milk"]
    assert [m.function for m in tool_messages() if m.kind == "action_response"] == ["add_note"]


def test_the_example_mcp_servers_clear_notes_is_not_called(ip):
    server = Path(lion_nb.__file__).parent / "mcp" / "example_server.py"
    added = run(ip, f"%lion mcp add notes -- {shlex.join([sys.executable, str(server)])}")
    assert added.error is None, added
    try:
        for cell in (
            'Call add_note "buy milk".',
            "Add a note that says hi.",
            "Clear my notes: use clear_notes.",
            "Use list_notes.",
        ):
            ran = run(ip, f"%%lion -t notes\n{cell}")
            assert ran.error is None, ran
        called = [m.function for m in tool_messages() if m.kind == "action_response"]
        assert called == ["add_note", "list_notes"]
        listed = [m for m in tool_messages() if m.kind == "action_response"][-1]
        assert "buy milk" in str(listed.output)
    finally:
        run(ip, "%lion mcp remove notes")
