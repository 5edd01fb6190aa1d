"""In a real kernel (jupyter_client): every span of a cell has reached the collector when the
cell's ``execute_reply`` arrives, 50 cells in a row; a background turn's spans leave as it
finishes, with no cell running; a collector that is down gives one warning and the cells
still end."""

from __future__ import annotations

import os
import queue
import socket
from pathlib import Path
from typing import Any

import pytest

from lion_nb.tracing.collector import LoopbackCollector

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]

SETUP = '''
%load_ext lion_nb
notes = []
def add_note(text: str) -> str:
    """Add a note."""
    notes.append(text)
    return f"note {len(notes)} added"
'''
CELL = "%%lion -t add_note\nCall add_note with 'buy milk'."
SPANS_PER_CELL = 4  # the turn, the call that asks for the tool, the tool, the answer


@pytest.fixture
def kernel(tmp_path):
    from jupyter_client import KernelManager

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ["PYTHONPATH"]])}
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(tmp_path), env=env)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def execute(kc: Any, code: str, cell_id: str = "cell") -> dict[str, Any]:
    """Send ``code``; return its execute_reply and the stream output seen on the way."""
    msg = kc.session.msg(
        "execute_request",
        {"code": code, "silent": False, "store_history": True, "allow_stdin": False},
        metadata={"cellId": cell_id},
    )
    kc.shell_channel.send(msg)
    msg_id = msg["header"]["msg_id"]
    while True:
        reply = kc.get_shell_msg(timeout=120)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    out = {"stdout": "", "stderr": "", "reply": reply["content"]}
    while True:  # the output of the cell, up to its idle status
        try:
            m = kc.get_iopub_msg(timeout=30)
        except queue.Empty:
            break
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "stream":
            out[m["content"]["name"]] += m["content"]["text"]
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    return out


def ok(kc: Any, code: str, cell_id: str = "cell") -> dict[str, Any]:
    out = execute(kc, code, cell_id)
    assert out["reply"]["status"] == "ok", out
    return out


def test_every_span_of_a_cell_arrives_before_its_execute_reply_50_times(kernel):
    _km, kc = kernel
    with LoopbackCollector() as collector:
        ok(kc, SETUP)
        ok(kc, f"%lion trace on {collector.endpoint}")
        for n in range(50):
            msg = kc.session.msg(
                "execute_request",
                {"code": CELL, "silent": False, "store_history": True, "allow_stdin": False},
                metadata={"cellId": f"cell-{n}"},
            )
            kc.shell_channel.send(msg)
            while True:
                reply = kc.get_shell_msg(timeout=120)
                if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                    break
            received = len(collector.spans)  # read at once, on the reply: no waiting
            assert reply["content"]["status"] == "ok", reply["content"]
            assert received == SPANS_PER_CELL * (n + 1), (n, received)
            cell_spans = collector.spans[-SPANS_PER_CELL:]
            assert {s.attributes["lion_nb.cell.id"] for s in cell_spans} == {f"cell-{n}"}
        assert sorted(s.name for s in collector.spans[:4]) == [
            "chat auto",
            "chat auto",
            "execute_tool add_note",
            "operate",
        ]


def test_a_background_turns_spans_leave_as_it_finishes(kernel):
    _km, kc = kernel
    with LoopbackCollector() as collector:
        ok(kc, SETUP)
        ok(kc, f"%lion trace on {collector.endpoint}")
        ok(kc, 'handle = %lion ask --bg "Write the report."')
        spans = collector.wait_for(2, timeout=60)  # no cell runs meanwhile
        assert {s.name for s in spans} >= {"chat auto"}
        assert len(spans) == 2


def _down_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_collector_that_is_down_gives_one_warning_and_every_cell_ends(kernel):
    _km, kc = kernel
    ok(kc, SETUP)
    ok(
        kc,
        f"import lion_nb.tracing\nlion_nb.tracing.enable('http://127.0.0.1:{_down_port()}', flush_timeout=1)",
    )
    outs = [ok(kc, CELL, f"down-{n}") for n in range(3)]
    warned = [o["stderr"].count("TracingWarning") for o in outs]
    assert sum(warned) == 1, [o["stderr"] for o in outs]
    assert "not delivered" in outs[0]["stderr"]
    assert "note 3 added" in ok(kc, "print(notes and f'note {len(notes)} added')")["stdout"]
