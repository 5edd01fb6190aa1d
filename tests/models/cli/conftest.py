"""Fixtures for the CLI endpoints: the fake executables first on PATH, and small helpers.

The fakes (``tests/fakes/bin``) are real executables run as real subprocesses; these
fixtures only choose what they replay and how they misbehave, through environment variables.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from lion_nb.models.endpoints import CLIRequest
from lion_nb.models.imodel import iModel
from lion_nb.models.stream import StreamChunk
from tests.fakes.cli import FakeCLI, alive, fake_cli_on_path


@pytest.fixture
def fake_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeCLI:
    return fake_cli_on_path(monkeypatch, tmp_path)


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


@pytest.fixture(name="alive")
def alive_fixture() -> Callable[[int], bool]:
    return alive


def brief(chunk: StreamChunk) -> dict[str, Any]:
    """A chunk without its metadata and default fields, for comparing sequences."""
    return chunk.model_dump(exclude_defaults=True, exclude={"metadata"})


@pytest.fixture
def briefs() -> Callable[[list[StreamChunk]], list[dict[str, Any]]]:
    return lambda chunks: [brief(c) for c in chunks]
