"""Steering the fake CLI executables (``tests/fakes/bin``) from tests.

The fakes are real programs run as real subprocesses; a test only chooses, through
environment variables, what they replay and how they misbehave, and reads back what each run
recorded (argv, pid, child pid).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parents[1]
FAKE_BIN = TESTS / "fakes" / "bin"
FIXTURES = TESTS / "fixtures" / "providers"

__all__ = ["FAKE_BIN", "FIXTURES", "FakeCLI", "alive", "fake_cli_on_path"]


class FakeCLI:
    """Steers the fake CLIs of one test and reads back what they recorded."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
        self._mp = monkeypatch
        self._tmp = tmp_path
        self.record_file = tmp_path / "record.jsonl"
        monkeypatch.setenv("FAKE_CLI_RECORD", str(self.record_file))

    def set(self, **env: Any) -> None:
        """``set(mode="hang", exit=1)`` sets ``FAKE_CLI_MODE`` and ``FAKE_CLI_EXIT``."""
        for key, value in env.items():
            self._mp.setenv(f"FAKE_CLI_{key.upper()}", str(value))

    def replay(self, source: str | list[str | dict]) -> Path:
        """Replay a fixture by file name, or these lines (dicts become JSON)."""
        if isinstance(source, str):
            path = FIXTURES / source
        else:
            path = self._tmp / f"transcript{len(list(self._tmp.glob('transcript*')))}.jsonl"
            lines = [json.dumps(x) if isinstance(x, dict) else x for x in source]
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        self.set(transcript=path)
        return path

    def records(self) -> list[dict[str, Any]]:
        if not self.record_file.exists():
            return []
        return [json.loads(x) for x in self.record_file.read_text().splitlines() if x]


def fake_cli_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeCLI:
    """Clear any steering left over, put the fakes first on ``PATH``, and steer them."""
    for name in list(os.environ):
        if name.startswith("FAKE_CLI_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PATH", f"{FAKE_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return FakeCLI(monkeypatch, tmp_path)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie (dead, waiting to be reaped) does not count."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"
