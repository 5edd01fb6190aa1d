"""``%%lion`` in a real terminal IPython (``ipython --simple-prompt`` on a pty, via pexpect).

A terminal prints every display update as new output, and a Ctrl-C there arrives as a
SIGINT in the main thread while the loop waits in its selector. So: Ctrl-C once the first
fragment is on screen ends the turn with its partial answer kept and marked incomplete, and
a later async cell does not resume it; a turn that runs to its end prints its answer once,
and a model's thinking before it, marked, ending in one summary line.
Every wait is for output to appear (pexpect's ``expect``), never a fixed sleep; the timeouts
only guard against a hang.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

ROOT = Path(__file__).resolve().parents[2]
GUARD = 90  # seconds: a hang, not a timing check
PROMPT = r"In \[\d+\]: "
WORDS = 200  # at 0.05 s a word, the answer takes 10 s: Ctrl-C comes long before its end

SETUP = f"""\
from lion_nb import current_session, iModel
from lion_nb.operations.early_end import is_incomplete
def words(messages, **request): return " ".join(f"w{{i}}" for i in range({WORDS})) + " END"
def short(messages, **request): return " ".join(f"s{{i}}" for i in range(30)) + " FIN"
slow = iModel(provider="offline", model="function", function=words, delay=0.05)
steady = iModel(provider="offline", model="function", function=short, delay=0.03)
from lion_nb.models.endpoints.base import emit_thinking_delta
THOUGHTS = ("Rivers run\\nto the sea.\\x1b[31m", " So: ", "downhill.")
def muse(messages, **request): [emit_thinking_delta(t) for t in THOUGHTS]; return "Down. FIN"
musing = iModel(provider="offline", model="function", function=muse, delay=0.03)
"""


@pytest.fixture
def shell(tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "IPYTHONDIR": str(tmp_path / "ipython"),
        "LION_NB_STORE": str(tmp_path / "store"),
        "TERM": "dumb",
    }
    child = pexpect.spawn(
        sys.executable,
        ["-m", "IPython", "--simple-prompt", "--no-banner", "--colors=nocolor"],
        env=env,
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=GUARD,
        dimensions=(50, 400),
    )
    child.expect(PROMPT)
    run(child, "%load_ext lion_nb")
    for line in SETUP.splitlines():
        run(child, line)
    yield child
    child.sendline("exit")
    child.expect(pexpect.EOF)
    child.close()


def run(child, code: str) -> str:
    """Send one line and return what it printed before the next prompt."""
    child.sendline(code)
    child.expect(PROMPT)
    return child.before


def start_cell(child, options: str, text: str) -> None:
    """Enter a ``%%lion`` cell (the simple prompt ends a cell at two empty lines)."""
    for line in (f"%%lion {options}", text, "", ""):
        child.sendline(line)


def test_ctrl_c_ends_the_turn_with_its_partial_answer_and_the_next_cell_does_not_resume_it(
    shell,
):
    start_cell(shell, "-m slow", "Say the words.")
    shell.expect(r"w0 ")  # the first fragment is on screen
    shell.sendintr()  # Ctrl-C, as the terminal sends it: SIGINT to the foreground process
    shell.expect(PROMPT)
    printed = shell.before
    assert "RunInterrupted" in printed and "KeyboardInterrupt" not in printed, printed
    assert "incomplete answer kept" in printed

    # another async cell: it waits for every task still pending on the loop (a resumed turn
    # would finish here and record the whole answer)
    out = run(
        shell,
        "import asyncio; await asyncio.wait([t for t in asyncio.all_tasks() "
        "if t is not asyncio.current_task()] or [asyncio.sleep(0)], timeout=60); print('waited')",
    )
    assert "waited" in out and "END" not in out
    out = run(
        shell,
        "b = current_session().default_branch; "
        "print('KINDS', [m.kind for m in b.messages], 'INCOMPLETE', is_incomplete(b.messages[-1]), "
        "'END' in b.messages[-1].response, b.messages[-1].response.startswith('w0'))",
    )
    assert "KINDS ['instruction', 'assistant_response'] INCOMPLETE True False True" in out, out


def test_a_streamed_answer_is_printed_once_in_a_terminal(shell):
    start_cell(shell, "-m steady", "Count.")
    shell.expect(PROMPT)
    printed = shell.before
    answer = " ".join(f"s{i}" for i in range(30)) + " FIN"
    assert printed.count("FIN") == 1, printed
    assert printed.count("s0 s1 s2") == 1, printed
    assert answer in re.sub(r"\s+", " ", printed)
    assert printed.count("running…") == 1  # the header once, not at every refresh


def test_the_thinking_streams_marked_and_ends_in_one_summary_line_in_a_terminal(shell):
    start_cell(shell, "-m musing", "Where does water go?")
    shell.expect(PROMPT)
    printed = shell.before.replace("\r\n", "\n")
    lines = printed.split("\n")
    start = lines.index("[Thinking…]")
    # every line of the thinking behind the mark, its escape character dropped
    assert lines[start + 1 : start + 3] == ["│ Rivers run", "│ to the sea.[31m So: downhill."]
    assert "\x1b" not in printed
    summary = lines[start + 3]
    assert re.fullmatch(r"\[Thought for \d+\.\d s · ~\d+ tokens\]", summary), printed
    assert lines[start + 4].startswith("Down. FIN")  # then the answer, printed once
    assert printed.count("FIN") == 1 and printed.count("[Thinking…]") == 1
    assert printed.index("running…") < printed.index("[Thinking…]")
