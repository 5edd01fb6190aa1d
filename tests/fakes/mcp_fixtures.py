"""Fixtures for tests against the fake MCP server (`tests/fakes/mcp_server.py`) run as a real
process: over stdio (a command) or over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SERVER = Path(__file__).resolve().parent / "mcp_server.py"
QUICK_SERVER = SERVER.parent / "mcp_quick_server.py"  # hand-written: starts in milliseconds
TOKEN = "mcp-test-token-5f3c9a7e21"


def server_command(log: Path | None = None, *extra: str) -> list[str]:
    command = [sys.executable, str(SERVER)]
    if log is not None:
        command += ["--log", str(log)]
    return [*command, *extra]


def _live_processes() -> Iterator[tuple[int, list[str]]]:
    """``(pid, the fields of /proc/PID/stat after the name)`` of every live process (zombies
    excluded): field 1 is the parent's pid, field 2 the process group."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] != "Z":
            yield int(entry), fields


def children() -> set[int]:
    """Pids of this process's live children (zombies excluded)."""
    me = str(os.getpid())
    return {pid for pid, fields in _live_processes() if fields[1] == me}


def group_members(pgid: int) -> set[int]:
    """Pids of the live processes (zombies excluded) in process group ``pgid``."""
    return {pid for pid, fields in _live_processes() if int(fields[2]) == pgid}


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def threads() -> int:
    return threading.active_count()


@pytest.fixture
def mcp_log(tmp_path):
    return tmp_path / "server.log"


@pytest.fixture
def mcp_command(mcp_log):
    return server_command(mcp_log)


@pytest.fixture
def mcp_http(tmp_path):
    """The fake server over streamable HTTP on 127.0.0.1; yields (url, log path)."""
    log = tmp_path / "http.log"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        server_command(log, "--http", str(port), "--token", TOKEN),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError as exc:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(
                    f"the fake MCP HTTP server did not start: {proc.stderr.read()!r}"
                ) from exc
            time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()
