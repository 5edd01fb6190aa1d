"""Tracing off costs no import: ``import lion_nb``, ``%load_ext lion_nb`` and a ``%%lion``
turn with a tool round, in a fresh interpreter, import no OpenTelemetry module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)

SCRIPT = r"""
import json, sys
import lion_nb
from IPython.testing.globalipapp import start_ipython
start_ipython()
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "lion_nb")
shell.run_cell("def add(a: int, b: int) -> int:\n    'Add.'\n    return a + b")
result = shell.run_cell("%%lion -t add\nuse add a=2 b=3")
result.raise_error()
ran = [m for m in lion_nb.current_session().default_branch.messages if m.kind == "action_response"]
print(json.dumps({
    "tool_ran": len(ran),
    "otel": sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"),
}))
"""


def test_a_turn_with_tracing_off_imports_no_opentelemetry_module(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ["PYTHONPATH"]])},
        timeout=100,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["tool_ran"] == 1
    assert found["otel"] == []
