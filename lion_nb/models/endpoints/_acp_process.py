"""One ACP agent process and the SDK connection to it, kept for the branch's whole life.

- The agent runs in its own session (process group), like every CLI run (`_process`):
  `stop` closes its stdin, gives it ``grace`` seconds, then SIGTERMs and SIGKILLs the
  whole group, children included; a group still running at interpreter exit is killed
  (``LIVE_GROUPS``).
- The JSON-RPC itself is the SDK's (``acp.connect_to_agent``). What this module gives it is
  the framing, through the SDK's message-level transport seam: one JSON object a line on
  the agent's stdout, read with a bound. A line that is not JSON, or is longer than
  ``max_line`` bytes, is a fault of the agent: the connection ends (pending requests fail)
  and `fault` says why, so the turn raises a `CLIError` instead of waiting forever.
- stderr is drained by a thread keeping its last bytes (`StderrTail`), for error texts.
- The environment is the kernel's (as for the other CLI agents) plus ``env``; neither is
  ever shown, logged or recorded.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
from typing import Any

import anyio

from ...errors import ConfigurationError
from ..secrets import redact
from ._process import LIVE_GROUPS, StderrTail, kill_group, stop_group

__all__ = ["AgentProcess"]

log = logging.getLogger("lion_nb.models.acp")

DEFAULT_MAX_LINE = 16 * 1024 * 1024


class _Lines:
    """The SDK's `Transport`: JSON-RPC messages as lines on the agent's stdio."""

    def __init__(self, owner: AgentProcess, stdout: Any, stdin: Any):
        self._owner = owner
        self._stdout = stdout
        self._stdin = stdin
        self._buf = bytearray()
        self._scanned = 0  # how much of the buffer holds no newline
        self._lock = anyio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        async with self._lock:
            await self._stdin.send(line.encode("utf-8"))

    async def receive(self) -> dict[str, Any] | None:
        while True:
            end = self._buf.find(b"\n", self._scanned)
            if end < 0:
                self._scanned = len(self._buf)
                if len(self._buf) > self._owner.max_line:
                    self._owner.fault = (
                        f"sent a message longer than {self._owner.max_line // (1024 * 1024)} "
                        "MB (one line of its output); the connection was closed"
                    )
                    return None
                try:
                    data = await self._stdout.receive(65536)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    data = b""
                if data:
                    self._buf += data
                    continue
                if not self._buf.strip():
                    return None
                end = len(self._buf)  # the agent's last line, without its newline
            line = bytes(self._buf[:end]).strip()
            del self._buf[: end + 1]
            self._scanned = 0
            if not line:
                continue
            return self._parse(line)

    def _parse(self, line: bytes) -> dict[str, Any] | None:
        try:
            message = json.loads(line)
        except ValueError:
            shown = redact(line[:80].decode("utf-8", "replace"))
            self._owner.fault = f"wrote {shown!r} on its stdout, which is not JSON-RPC"
            return None
        if not isinstance(message, dict):
            self._owner.fault = "wrote a JSON value that is not a JSON-RPC message"
            return None
        return message

    async def close(self) -> None:
        try:
            await self._stdin.aclose()
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass


class AgentProcess:
    """``argv`` started as an ACP agent, with ``client`` (an ``acp.Client``) answering it."""

    def __init__(
        self,
        argv: list[str],
        client: Any,
        *,
        name: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        grace: float = 2.0,
        max_line: int = DEFAULT_MAX_LINE,
    ):
        self.argv = list(argv)
        self.client = client
        self.name = name
        self.cwd = cwd
        self.env = dict(env) if env else None
        self.grace = grace
        self.max_line = max_line
        self.fault: str | None = None  # why the agent's output could not be read
        self.conn: Any = None
        self.initialized: Any = None  # the agent's `InitializeResponse`
        self.loop: Any = None
        self._process: Any = None  # an anyio `Process`
        self._stderr: StderrTail | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process is not None else None

    @property
    def alive(self) -> bool:
        """Running, reachable from this loop, and its output still readable."""
        process = self._process
        return (
            process is not None
            and process.returncode is None
            and self.fault is None
            and self.loop is _running_loop()
        )

    async def exited(self, within: float) -> int | None:
        """The exit code once the process has exited, waiting up to ``within`` seconds (its
        output can end before its exit is seen)."""
        process = self._process
        if process is None:
            return None
        if process.returncode is None:
            with anyio.move_on_after(within):
                await process.wait()
        code: int | None = process.returncode
        return code

    def stderr_text(self) -> str:
        return self._stderr.text().strip()[-500:] if self._stderr is not None else ""

    async def start(self, capabilities: Any, client_info: Any) -> Any:
        """Start the process and ``initialize`` it; the agent's `InitializeResponse`."""
        import acp

        read_fd, write_fd = os.pipe()
        try:
            self._process = await anyio.open_process(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=write_fd,
                cwd=self.cwd,
                env={**os.environ, **self.env} if self.env else None,
                start_new_session=True,
            )
        except OSError as exc:
            os.close(read_fd)
            raise ConfigurationError(
                f"The ACP agent `{self.name}` could not be started ({exc.strerror or exc})."
            ) from exc
        finally:
            os.close(write_fd)
        LIVE_GROUPS.add(self._process.pid)
        self._stderr = StderrTail(read_fd, 64 * 1024)
        self.loop = _running_loop()
        assert self._process.stdout is not None and self._process.stdin is not None
        transport = _Lines(self, self._process.stdout, self._process.stdin)
        self.conn = acp.connect_to_agent(self.client, transport, use_unstable_protocol=True)
        self.initialized = await self.conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=capabilities,
            client_info=client_info,
        )
        return self.initialized

    async def stop(self) -> None:
        """Close the connection, let the agent exit, stop what is left of its group."""
        process, self._process = self._process, None
        conn, self.conn = self.conn, None
        with anyio.CancelScope(shield=True):
            if conn is not None:
                try:
                    await conn.close()
                except Exception:
                    log.debug("closing the ACP connection failed", exc_info=True)
            if process is None:
                return
            try:
                with anyio.move_on_after(self.grace):
                    await process.wait()  # its stdin closed: a well-behaved agent exits
                await stop_group(process, self.grace)
            finally:
                LIVE_GROUPS.discard(process.pid)
                if self._stderr is not None:
                    await self._stderr.wait_closed(0.5)

    def kill_now(self) -> None:
        """SIGKILL the group at once (no loop to wait on: a copy dropped, interpreter exit)."""
        process, self._process = self._process, None
        self.conn = None
        if process is not None:
            kill_group(process.pid)
            LIVE_GROUPS.discard(process.pid)


def _running_loop() -> Any:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
