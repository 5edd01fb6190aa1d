"""The test run leaves no event loop open at its end.

The in-process IPython shell runs cells on IPython's shared asyncio loop, and jupyter_client's
synchronous API runs on jupyter_core's loop for the main thread; nothing closed either, so a
run ended with ``ResourceWarning: unclosed event loop``. The session fixture in
``tests/conftest.py`` closes them. Checked in a fresh interpreter: two tests that make those
loops run, then a small plugin counts the loops still open once the session has ended
(whether the interpreter prints the warning while it exits depends on the order it tears
things down, so the count is what is asserted).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = [
    # a cell run by the in-process IPython shell (IPython's shared loop)
    "tests/extensions/test_notebook_context.py::"
    "test_recent_cells_come_from_the_input_history_oldest_first",
    # a kernel started through jupyter_client's synchronous API (jupyter_core's loop)
    "tests/widgets/test_chat.py::test_in_a_kernel_enter_runs_in_the_background_and_stop_frees_the_input",
]
CENSUS = """
import asyncio, gc, sys


def pytest_unconfigure(config):
    gc.collect()
    loops = [o for o in gc.get_objects() if isinstance(o, asyncio.BaseEventLoop)]
    sys.stderr.write(f"\\nloops made: {len(loops)}; still open: "
                     f"{sum(not o.is_closed() for o in loops)}\\n")
"""


def test_the_shell_and_kernel_tests_leave_no_event_loop_open(tmp_path):
    (tmp_path / "loop_census.py").write_text(CENSUS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONWARN"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    command = [sys.executable, "-X", "dev", "-m", "pytest", "-q", "-p", "no:randomly"]
    done = subprocess.run(
        [*command, "-p", "loop_census", *TESTS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "2 passed" in output
    census = next(line for line in output.splitlines() if line.startswith("loops made:"))
    made = int(census.split()[2].rstrip(";"))
    assert made >= 2, census  # the shell's loop and jupyter_core's were both made
    assert census.endswith("still open: 0"), census
    assert "unclosed event loop" not in output
