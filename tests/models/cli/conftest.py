"""Fixtures for the CLI endpoints: the fake executables first on PATH, and small helpers.

The fakes (``tests/fakes/bin``) are real executables run as real subprocesses; these
fixtures only choose what they replay and how they misbehave, through environment variables.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from lion_nb.models.endpoints import CLIRequest
from lion_nb.models.imodel import iModel
from lion_nb.models.stream import StreamChunk

TESTS = Path(__file__).resolve().parents[2]
FAKE_BIN = TESTS / "fakes" / "bin"
FIXTURES = TESTS / "fixtures" / "providers"


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


@pytest.fixture
def fake_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeCLI:
    for name in list(os.environ):
        if name.startswith("FAKE_CLI_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PATH", f"{FAKE_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return FakeCLI(monkeypatch, tmp_path)


def _collect(model: iModel, request: CLIRequest | str) -> list[StreamChunk]:
    if isinstance(request, str):
        request = CLIRequest(prompt=request)

    async def main() -> list[StreamChunk]:
        return [chunk async for chunk in model.stream_cli(request)]

    return anyio.run(main)


@pytest.fixture
def collect() -> Callable[[iModel, CLIRequest | str], list[StreamChunk]]:
    """Run one CLI request to its end and return every chunk."""
    return _collect


def _alive(pid: int) -> bool:
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


@pytest.fixture
def alive() -> Callable[[int], bool]:
    return _alive


def brief(chunk: StreamChunk) -> dict[str, Any]:
    """A chunk without its metadata and default fields, for comparing sequences."""
    return chunk.model_dump(exclude_defaults=True, exclude={"metadata"})


@pytest.fixture
def briefs() -> Callable[[list[StreamChunk]], list[dict[str, Any]]]:
    return lambda chunks: [brief(c) for c in chunks]
