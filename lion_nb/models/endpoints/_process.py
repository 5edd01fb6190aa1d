"""A CLI's process group: stop it for sure, and drain its stderr without blocking.

- The CLI runs in its own session, so it leads a process group of its own: everything it
  spawns (shells, tool processes) is stopped with one signal to the group.
- `stop_group`: SIGTERM the group, up to ``grace`` seconds for it to go, then SIGKILL what is
  left; the CLI itself is always reaped.
- Whether anything of the group is left is read from ``/proc`` (a zombie does not count), in
  a worker thread: a scan of ``/proc`` is blocking file I/O that must not stall the event
  loop while it waits for the group to go.
- Groups still running when the interpreter exits are killed (``atexit``), a last resort.
- `StderrTail` drains stderr in a daemon thread keeping only the last bytes, so a CLI that
  floods stderr can never block on a full pipe, and memory stays bounded.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
from pathlib import Path

import anyio
from anyio.abc import Process

from ..secrets import redact

__all__ = ["LIVE_GROUPS", "StderrTail", "end_group", "kill_group", "stop_group"]

#: process groups of CLI runs in progress (killed at interpreter exit)
LIVE_GROUPS: set[int] = set()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(pgid, sig)
        else:  # pragma: no cover - Windows has no process groups of this kind
            os.kill(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    """Whether a process that is not a zombie remains in the group."""
    if not hasattr(os, "killpg"):  # pragma: no cover
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():  # pragma: no cover - without /proc, zombies count as alive
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


async def _group_left(pgid: int) -> bool:
    """`_group_alive` in a worker thread (it reads ``/proc``)."""
    return await anyio.to_thread.run_sync(_group_alive, pgid)


async def _terminate(pgid: int, grace: float, leader: Process | None = None) -> None:
    """SIGTERM the group while anything of it (``leader`` or another member) is left, wait
    up to ``grace`` s, SIGKILL what is left."""

    async def left() -> bool:
        return (leader is not None and leader.returncode is None) or await _group_left(pgid)

    if not await left():
        return
    _signal_group(pgid, signal.SIGTERM)
    with anyio.move_on_after(grace):
        if leader is not None:
            await leader.wait()
        while await _group_left(pgid):  # noqa: ASYNC110 - a group has no exit event
            await anyio.sleep(0.02)
    if await left():
        _signal_group(pgid, getattr(signal, "SIGKILL", signal.SIGTERM))


async def stop_group(process: Process, grace: float) -> None:
    """SIGTERM the group, wait up to ``grace`` s, SIGKILL what is left, reap the leader."""
    await _terminate(process.pid, grace, process)
    await process.wait()
    await process.aclose()


async def end_group(pgid: int, grace: float) -> None:
    """Stop what is left of a group whose leader is gone (a helper it started): SIGTERM,
    wait up to ``grace`` s, SIGKILL the rest."""
    await _terminate(pgid, grace)


def kill_group(pgid: int) -> None:
    """SIGKILL the group at once (its leader is reaped by the run that started it)."""
    _signal_group(pgid, getattr(signal, "SIGKILL", signal.SIGTERM))


@atexit.register
def _kill_leftovers() -> None:  # last resort when the interpreter exits mid-run
    for pgid in list(LIVE_GROUPS):
        kill_group(pgid)


class StderrTail:
    """Drain a pipe in a daemon thread, keeping its last ``cap`` bytes."""

    def __init__(self, fd: int, cap: int):
        self._fd = fd
        self._cap = cap
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, name="lion-cli-stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while data := os.read(self._fd, 65536):
                with self._lock:
                    self._buf += data
                    if len(self._buf) > self._cap:
                        del self._buf[: len(self._buf) - self._cap]
        except OSError:
            pass
        finally:
            os.close(self._fd)

    async def wait_closed(self, within: float) -> None:
        """Wait (off the event loop) for the pipe's end, at most ``within`` seconds."""
        await anyio.to_thread.run_sync(self._thread.join, within)

    def text(self) -> str:
        with self._lock:
            data = bytes(self._buf)
        return redact(data.decode("utf-8", errors="replace"))
