"""An in-process shell that ran HTTP turns exits cleanly: the streamed response's async
generators are finished on the loop, not left for the interpreter's exit to complain about
("Task was destroyed but it is pending!")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
from IPython.core.interactiveshell import InteractiveShell
from tests.fakes.http_server import FakeProvider, sse_events

fake = FakeProvider().start()
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "lion_nb")
ip.run_cell(
    "from lion_nb import iModel\\n"
    f'gpt = iModel(provider="openai", model="gpt-4o-mini", base_url="{fake.openai_url}", '
    'api_key="sk-test-not-a-real-key")'
)
for question in ("Greet me", "Greet me again"):
    fake.push(events=sse_events("openai_stream_text.sse"))
    result = ip.run_cell(f"%%lion -m gpt -q -o answer\\n{question}")
    assert result.error_in_exec is None, result.error_in_exec
print("ANSWER", ip.user_ns["answer"])
fake.stop()
"""


def test_http_turns_in_an_in_process_shell_leave_nothing_pending_at_exit(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), LION_NB_STORE=str(tmp_path / "store"))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "ANSWER Hello!" in done.stdout
    assert "Task was destroyed" not in done.stderr, done.stderr
    assert done.stderr.strip() == ""
