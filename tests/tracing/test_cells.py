"""``%%lion`` cells in a real in-process IPython shell, traced to a loopback collector: a
tool round's spans carry the cell, arrive before the cell has finished running (the flush
after each cell), and the turn view's footer shows the trace id."""

from __future__ import annotations

import pytest

from tests.notebook.nbshell import run

pytestmark = pytest.mark.timeout(120)

SETUP = '''
notes = []
def add_note(text: str) -> str:
    """Add a note."""
    notes.append(text)
    return f"note {len(notes)} added"
'''


def test_a_tool_round_in_a_cell_is_traced_and_sent_before_the_cell_ends(ip, collector):
    assert run(ip, SETUP).error is None
    on = run(ip, f"%lion trace on {collector.endpoint}")
    assert on.error is None and "tracing: on" in on.stdout
    ran = run(ip, "%%lion -t add_note\nCall add_note with 'buy milk'.", cell_id="cell-7")
    assert ran.error is None, ran
    assert ip.user_ns["notes"] == ["buy milk"]
    spans = list(collector.spans)  # no waiting: the cell's end flushed them
    names = sorted(s.name for s in spans)
    assert "execute_tool add_note" in names and names.count("chat auto") >= 2, names
    turn = next(s for s in spans if s.parent_span_id == "")
    assert all(s.trace_id == turn.trace_id for s in spans)
    assert {s.parent_span_id for s in spans if s is not turn} == {turn.span_id}
    for span in spans:
        assert span.attributes["lion_nb.cell.id"] == "cell-7"
        assert isinstance(span.attributes["lion_nb.cell.execution_count"], int)
    shown = " ".join(o.data.get("text/plain", "") for o in ran.outputs)
    assert f"· trace {turn.trace_id}" in shown, shown  # the footer: [model · tokens · $ · trace]


def test_a_cell_that_is_not_a_turn_sends_nothing_and_off_stops_sending(ip, collector):
    assert run(ip, f"%lion trace on {collector.endpoint}").error is None
    assert run(ip, "x = 1 + 1").error is None
    assert collector.spans == []
    assert run(ip, "%%lion\nhello").error is None
    sent = len(collector.spans)
    assert sent == 2
    off = run(ip, "%lion trace off")
    assert off.error is None and "tracing: off" in off.stdout
    assert run(ip, "%%lion\nhello again").error is None
    assert len(collector.spans) == sent
    ran = run(ip, "%%lion\nand again")
    shown = " ".join(o.data.get("text/plain", "") for o in ran.outputs)
    assert "tokens" in shown and "· trace " not in shown
