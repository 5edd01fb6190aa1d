"""`MCPServer`: one MCP server a branch or a session uses, and its connection's lifecycle.

The connection is the official SDK's (``mcp.ClientSession`` over ``stdio_client`` or
``streamable_http_client``); nothing here speaks the protocol. What this module adds:

- **One owner task.** The SDK's transports are async context managers whose task groups
  must be entered and left in one task, while a notebook uses the connection from many
  cells (many tasks). So `start` spawns a task on the running loop that enters the
  transport and the session, reports ready, and holds them until `aclose` asks it to leave.
  Calls from any task go through the session's streams.
- **Started once, reused.** A stdio server is one child process for every call; it runs in
  its own session (process group), and is stopped with that group: on `aclose` (the SDK
  closes stdin, waits, then SIGTERMs and SIGKILLs the group), and -- as a last resort -- at
  interpreter exit (kernel shutdown): its group is in `LIVE_GROUPS` like a CLI run's.
- **Failures are tool errors.** A server that exits mid-call, or does not answer within
  ``timeout`` seconds, makes the call raise `MCPError`; the connection is marked broken and
  stopped. The next call restarts it once: if that restart fails, or the restarted server
  fails again before any call succeeded, the server is ``failed`` and calls say so until it
  is connected again. A malformed answer is an error of that call only.
- **Loops.** The connection belongs to the loop that started it; used from another loop
  (two ``anyio.run`` calls) it is started afresh there.
- **Secrets.** ``headers`` (authentication) are kept private: never in the repr, `describe`,
  errors or logs; error texts pass through `redact`, which masks their values and those of
  secret-named ``env`` variables (``*TOKEN*``, ``*KEY*``, ...) -- in cassettes too.
- **Cassettes.** Connected under a cassette, the server's tool list and every answer are
  recorded, or replayed without starting it (`recorded`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import math
import os
import re
import sys
import tempfile
from typing import Any

import anyio

from ..errors import MCPError
from ..models.secrets import MIN_NAMED, SECRET_NAME, Secret, redact
from . import recorded

__all__ = ["MCPError", "MCPServer"]

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
_STDERR_TAIL = 2000
_GROUP_GRACE = 2.0  # seconds a server's leftover processes get between SIGTERM and SIGKILL


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"`{name}` is not a valid MCP server name: a letter, then letters, digits, `_` "
            "or `-`, at most 32."
        )
    return name


def check_timeout(value: Any, what: str) -> float:
    """``value`` as seconds: a positive finite number, else a `ValueError` naming ``what``."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if isinstance(value, bool) or not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{what} is {value!r}: give a positive number of seconds, e.g. 30.")
    return seconds


class MCPServer:
    """How to reach one MCP server, what it offers, and its connection (see the module
    docstring). Built by ``connect_mcp``; ``await server.start()`` connects it."""

    def __init__(
        self,
        name: str,
        *,
        command: list[str] | None = None,
        url: str | None = None,
        env: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        cwd: str | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 30.0,
    ):
        self.name = check_name(name)
        if (command is None) == (url is None):
            raise ValueError(
                f"MCP server `{name}`: give either `command=[...]` (a stdio server) or "
                "`url=...` (a streamable-HTTP server)."
            )
        if command is not None:
            if (
                isinstance(command, str)
                or not command
                or not all(isinstance(p, str) for p in command)
            ):
                raise ValueError(
                    f"MCP server `{name}`: `command` is a list of strings, e.g. "
                    '`["python", "server.py"]`.'
                )
            command = list(command)
        if url is not None and not re.match(r"^https?://", str(url)):
            raise ValueError(f"MCP server `{name}`: `url` starts with http:// or https://.")
        self.command = command
        self.url = url
        self.env = dict(env) if env else None
        self.cwd = cwd
        self.timeout = check_timeout(timeout, f"MCP server `{name}`: `timeout`")
        self.connect_timeout = check_timeout(
            connect_timeout, f"MCP server `{name}`: `connect_timeout`"
        )
        self._headers = dict(headers) if headers else None
        _remember_secrets(self._headers, self.env, self.command)
        self.status = "new"  # new, connected, broken, failed, closed
        self.tools: list[Any] = []  # the SDK's tool definitions
        self.cassette: Any = None  # the cassette in force when it was connected
        self.replaying = False  # connected from the cassette: no process was started
        self._listed: Any = None  # the live tool list, as the SDK returned it
        self.last_error: str | None = None
        self.calls = 0
        self._session: Any = None
        self._owner: asyncio.Task | None = None
        self._stop: asyncio.Event | None = None
        self._loop: Any = None
        self._pgid: int | None = None
        self._errlog: Any = None
        self._restarted = False  # a restart since the last call that succeeded
        self._stray: str | None = None  # a line it wrote on stdout that is not JSON-RPC
        self._lock: anyio.Lock | None = None  # one (re)start at a time, on self._lock_loop
        self._lock_loop: Any = None

    # -- description -----------------------------------------------------------------------------
    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    @property
    def target(self) -> str:
        """What the server runs as, to show: its command line or its URL (no headers), with
        every known secret (a token in its arguments, an ``env`` value) masked."""
        from ..models.clean import clean_text

        return clean_text(" ".join(self.command) if self.command else str(self.url))

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]

    def describe(self) -> dict[str, Any]:
        """Name, transport, target, status and tools: what ``%lion mcp list`` shows."""
        return {
            "name": self.name,
            "transport": self.transport,
            "target": self.target,
            "status": self.status,
            "tools": self.tool_names,
            "calls": self.calls,
            "last_error": self.last_error,
            "replaying": self.replaying,
        }

    def launch_spec(self) -> dict[str, Any]:
        """How another program starts or reaches this server (an ACP agent's
        ``session/new``): name and command with ``env``, or URL with ``headers``."""
        if self.command is not None:
            return {"name": self.name, "command": list(self.command), "env": dict(self.env or {})}
        return {"name": self.name, "url": self.url, "headers": dict(self._headers or {})}

    def same_as(self, other: MCPServer) -> bool:
        """Whether ``other`` starts the same server the same way (a cell run again)."""
        return self._definition() == other._definition()

    def _definition(self) -> tuple:
        return (
            self.name, self.command, self.url, self.env, self._headers, self.cwd,
            self.timeout, self.connect_timeout,
        )  # fmt: skip

    def __repr__(self) -> str:
        return f"MCPServer({self.name!r}, {self.transport}, {self.status}, tools={len(self.tools)})"

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> MCPServer:
        """Connect: start the process (stdio), initialize and list the tools -- or, under a
        cassette that replays, take the tool list from it and start nothing."""
        self.cassette = recorded.tape_in_force()
        tools = await recorded.replays_tools(self)
        if tools is not None:
            await self._shutdown()
            self.tools, self.replaying = tools, True
            self.status, self.last_error = "connected", None
            return self
        await self._start_live()
        recorded.record_tools(self, self._listed)
        return self

    async def _start_live(self) -> MCPServer:
        """Start the connection (the process, for stdio), initialize and list the tools."""
        loop = asyncio.get_running_loop()
        if self._session is not None and self._loop is loop and self.status == "connected":
            return self
        await self._shutdown()
        self._loop = loop
        ready: asyncio.Future = loop.create_future()
        self._stop = asyncio.Event()
        self._owner = loop.create_task(self._own(ready), name=f"lion-mcp-{self.name}")
        try:
            await ready
        except BaseException:
            await self._shutdown()
            raise
        self.status = "connected"
        self.last_error = None
        self.replaying = False  # a process runs now (`new`: a call with no recording)
        return self

    async def _own(self, ready: asyncio.Future) -> None:
        """The owner task: hold the transport and the session until asked to stop."""
        from mcp import ClientSession

        _SERVING.set(self)  # the SDK's transport tasks inherit it (see `_QuietParseErrors`)
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                if self.command is not None:
                    await self._register_group()
                # the contexts start task groups: enter them outside any cancel scope
                session = await stack.enter_async_context(ClientSession(read, write))
                with anyio.fail_after(self.connect_timeout):
                    await session.initialize()
                    self._listed = await session.list_tools()
                    self.tools = list(self._listed.tools)
                self._session = session
                ready.set_result(None)
                assert self._stop is not None
                await self._stop.wait()
        except BaseException as exc:
            # a transport that failed cancels the start inside it and raises the failure
            # when it is left: report that, not the cancellation it caused
            if not ready.done():
                ready.set_exception(self._start_error(exc))
            if not isinstance(exc, Exception):
                raise
        finally:
            self._session = None
            with anyio.CancelScope(shield=True):
                await self._end_group()
            self._forget_group()

    def _transport(self) -> Any:
        self._stray = None
        if self.command is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            _quiet_parse_errors()

            self._errlog = tempfile.TemporaryFile(  # noqa: SIM115 - closed with the connection
                "w+", encoding="utf-8", errors="replace"
            )
            params = StdioServerParameters(
                command=self.command[0], args=self.command[1:], env=self.env, cwd=self.cwd
            )
            return stdio_client(params, errlog=self._errlog)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        client = create_mcp_http_client(headers=self._headers)
        return _with_client(client, streamable_http_client(self.url, http_client=client))

    def _start_error(self, exc: BaseException) -> BaseException:
        if not isinstance(exc, Exception):
            return exc
        what = f"`{self.target}`"
        leaf = _leaf_exception(exc)
        if self._stray is not None:
            why = (
                f"it is not an MCP server: it wrote {self._stray!r} on its stdout, which is "
                "not a JSON-RPC message"
            )
        elif isinstance(leaf, TimeoutError):
            why = f"it did not answer within {self.connect_timeout:g} s"
        elif self.url is not None and _unreachable(leaf):
            why = f"the server could not be reached at {self.url} ({_leaf(exc)})"
        elif isinstance(leaf, (FileNotFoundError, PermissionError)):
            why = f"the command cannot be run ({type(leaf).__name__}: {leaf.strerror or leaf})"
        else:
            why = f"{type(exc).__name__}: {_leaf(exc)}"
        tail = self._stderr_tail()
        said = f" Its stderr: {tail}" if tail else ""
        fix = "check the command" if self.command else "check the URL and headers"
        return MCPError(
            redact(f"MCP server `{self.name}` ({what}) did not start: {why}.{said} Fix: {fix}.")
        )

    def _stderr_tail(self) -> str:
        text = self._stderr_from(max(0, self._stderr_size() - _STDERR_TAIL)).strip()
        return " ".join(text.split())[-300:]

    async def _register_group(self) -> None:
        """Find the server's pid (the child whose stderr is our log file) so its process
        group can be killed at interpreter exit even if the loop is gone by then."""
        from ..models.endpoints._process import LIVE_GROUPS

        pid = await anyio.to_thread.run_sync(_child_writing_to, self._errlog.fileno())
        if pid is not None:
            self._pgid = pid
            LIVE_GROUPS.add(pid)

    async def _end_group(self) -> None:
        """Stop what is left of the server's process group once the transport has stopped
        the server: a helper it started (``npx``'s node) outlives a server that exited at
        once when its stdin closed, and the SDK signals the group only when it did not."""
        if self._pgid is not None:
            from ..models.endpoints._process import end_group

            await end_group(self._pgid, _GROUP_GRACE)

    def _forget_group(self) -> None:
        from ..models.endpoints._process import LIVE_GROUPS

        if self._pgid is not None:
            LIVE_GROUPS.discard(self._pgid)
            self._pgid = None
        if self._errlog is not None:
            with contextlib.suppress(OSError):
                self._errlog.close()
            self._errlog = None

    async def _shutdown(self) -> None:
        """Stop the owner task (and with it the process) and wait until it has gone."""
        owner, self._owner = self._owner, None
        if owner is None:
            return
        if self._stop is not None:
            self._stop.set()
        if owner.get_loop() is not asyncio.get_running_loop():
            self.kill_now()  # its loop is gone or elsewhere: the group is all we can reach
            self._session = None
            return
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(10):
                await asyncio.wait({owner})
            if not owner.done():
                owner.cancel()
                await asyncio.wait({owner})

    async def aclose(self) -> None:
        """Stop the server (its process group, for stdio). It can be started again."""
        await self._shutdown()
        self.status = "closed"

    def kill_now(self) -> None:
        """SIGKILL a stdio server's process group at once (synchronous: a close from a
        running loop, interpreter exit)."""
        from ..models.endpoints._process import kill_group

        if self._pgid is not None:
            kill_group(self._pgid)
        self._forget_group()

    # -- calls -----------------------------------------------------------------------------------
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call one of the server's tools; the SDK's result. `MCPError` for any failure."""
        self._usable()
        params = {"tool": name, "arguments": arguments}
        result = await recorded.exchange(
            self, "tools/call", params, lambda: self._call_live(name, arguments)
        )
        self.calls += 1
        return result

    async def _call_live(self, name: str, arguments: dict[str, Any]) -> Any:
        session = await self._ready()
        logged = self._stderr_size()
        try:
            result = await session.call_tool(name, arguments, read_timeout_seconds=self.timeout)
        except Exception as exc:
            raise await self._failed(exc, f"the call to `{name}`") from None
        self._restarted = False
        if result.is_error:
            result = self._with_cause(result, name, logged)
        return result

    def _with_cause(self, result: Any, name: str, logged: int) -> Any:
        """A crash's result says only ``Error executing tool NAME`` (the SDK's servers keep
        the exception on their side, and log it on stderr): add the exception's last line
        from what the server logged during the call, so the model and the user see why."""
        content = list(result.content or [])
        first = content[0] if content else None
        if (
            getattr(first, "type", "") != "text"
            or first.text.strip() != f"Error executing tool {name}"
        ):
            return result
        cause = _exception_line(self._stderr_from(logged))
        if cause is None:
            return result
        content[0] = first.model_copy(update={"text": f"{first.text.strip()}: {cause}"})
        return result.model_copy(update={"content": content})

    def _stderr_size(self) -> int:
        try:
            return os.fstat(self._errlog.fileno()).st_size if self._errlog is not None else 0
        except (OSError, ValueError):
            return 0

    def _stderr_from(self, offset: int) -> str:
        """What the server wrote on stderr from ``offset`` on (read without moving the file
        position the server writes at)."""
        if self._errlog is None:
            return ""
        try:
            fd = self._errlog.fileno()
            size = os.fstat(fd).st_size
            start = max(offset, size - 64_000)
            return os.pread(fd, size - start, start).decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    async def list_resources(self) -> list[Any]:
        result = await self._request("resources/list", {}, "listing resources")
        return list(result.resources)

    async def read_resource(self, uri: str) -> Any:
        return await self._request("resources/read", {"uri": uri}, f"reading `{uri}`")

    async def list_prompts(self) -> list[Any]:
        return list((await self._request("prompts/list", {}, "listing prompts")).prompts)

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> Any:
        params = {"name": name, "arguments": arguments or {}}
        return await self._request("prompts/get", params, f"prompt `{name}`")

    async def read_text(self, uri: str) -> str:
        """A resource's text contents, joined: ready to pass as ``context=``."""
        result = await self.read_resource(uri)
        return "\n".join(
            getattr(c, "text", None) or f"[{getattr(c, 'mime_type', None) or 'binary'} {c.uri}]"
            for c in result.contents
        )

    async def prompt_text(self, name: str, arguments: dict[str, str] | None = None) -> str:
        """A prompt's messages as text (``role: text`` lines when there are several)."""
        result = await self.get_prompt(name, arguments)
        texts = [
            (m.role, getattr(m.content, "text", None) or f"[{m.content.type}]")
            for m in result.messages
        ]
        if len(texts) == 1:
            return texts[0][1]
        return "\n\n".join(f"{role}: {text}" for role, text in texts)

    async def _request(self, method: str, params: dict[str, Any], what: str) -> Any:
        """A resource or prompt request: through the cassette, else to the live session."""
        self._usable()

        async def live() -> Any:
            session = await self._ready()
            call = {
                "resources/list": lambda: session.list_resources(),
                "resources/read": lambda: session.read_resource(params["uri"]),
                "prompts/list": lambda: session.list_prompts(),
                "prompts/get": lambda: session.get_prompt(params["name"], params["arguments"]),
            }[method]
            try:
                with anyio.fail_after(self.timeout):
                    return await call()
            except Exception as exc:
                raise await self._failed(exc, what) from None

        return await recorded.exchange(self, method, params, live)

    def _usable(self) -> None:
        """`MCPError` when the server was removed, or failed for good."""
        if self.status == "closed":
            raise MCPError(
                f"MCP server `{self.name}` was removed; connect it again with `connect_mcp`."
            )
        if self.status == "failed":
            raise MCPError(
                f"MCP server `{self.name}` failed and was not restarted ({self.last_error}); "
                "connect it again with `connect_mcp` (or `%lion mcp add`)."
            )

    async def _ready(self) -> Any:
        """The live session: (re)started when needed, within the restart rule."""
        self._usable()
        loop = asyncio.get_running_loop()
        if self._session is not None and self.status == "connected" and self._loop is loop:
            return self._session
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = anyio.Lock(), loop
        async with self._lock:
            if self._session is not None and self.status == "connected" and self._loop is loop:
                return self._session  # another task (re)started it meanwhile
            if self.status == "broken":
                if self._restarted:
                    self.status = "failed"
                    raise MCPError(
                        f"MCP server `{self.name}` failed again after a restart "
                        f"({self.last_error}); connect it again with `connect_mcp`."
                    )
                self._restarted = True
            try:
                await self._start_live()
            except MCPError as exc:
                self.status, self.last_error = "failed", str(exc)
                raise
        return self._session

    async def _failed(self, exc: Exception, what: str) -> MCPError:
        """Turn a failure into an `MCPError`; a dead or hung server is stopped (restarted
        at the next call)."""
        text = _leaf(exc)
        malformed = type(exc).__name__ == "ValidationError"
        if malformed:
            message = f"MCP server `{self.name}` answered {what} with a malformed result"
        elif "timed out" in text.lower() or isinstance(exc, TimeoutError):
            message = f"MCP server `{self.name}` did not answer {what} within {self.timeout:g} s"
        else:
            message = f"MCP server `{self.name}` failed during {what}: {text}"
        if not malformed:
            self.status = "broken"
            await self._shutdown()
            message += "; it is stopped and will be restarted at the next call"
        self.last_error = redact(message)
        return MCPError(self.last_error + ".")


def _remember_secrets(
    headers: dict[str, str] | None, env: dict[str, str] | None, command: list[str] | None
) -> None:
    """Register header values, the values of secret-named ``env`` variables and of
    secret-named options in the command (``--api-token X``, ``--key=X``) as secrets: `redact`
    then masks them in errors, logs and cassette lines, and `target` shows them masked."""
    words = command or []
    for before, word in zip(["", *words], words, strict=False):
        option, eq, value = word.partition("=")
        if eq and option.startswith("-") and SECRET_NAME.search(option):
            before, word = option, value
        if (
            before.startswith("-")
            and SECRET_NAME.search(before)
            and not word.startswith("-")
            and len(word) >= MIN_NAMED
        ):
            Secret(word)
    for value in (headers or {}).values():
        Secret(value)
        scheme, _, credential = str(value).partition(" ")
        if credential and scheme.isalpha():  # `Bearer TOKEN`: the token alone too
            Secret(credential.strip())
    for name, value in (env or {}).items():
        if len(str(value)) >= MIN_NAMED and SECRET_NAME.search(name):
            Secret(value)


@contextlib.asynccontextmanager
async def _with_client(client: Any, transport: Any) -> Any:
    async with client, transport as streams:
        yield streams


def _leaf_exception(exc: BaseException) -> BaseException:
    """The innermost exception of an exception group (anyio wraps transport failures)."""
    while getattr(exc, "exceptions", None):  # an exception group
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def _leaf(exc: BaseException) -> str:
    """The innermost message of an exception group."""
    exc = _leaf_exception(exc)
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


_RAISED = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure)): (.+)$")


def _exception_line(log: str) -> str | None:
    """The first exception a traceback in ``log`` names (a chained traceback names its
    cause first), as ``Name: message``; the SDK's own wrapper is skipped."""
    for line in log.splitlines():
        found = _RAISED.match(line.rstrip())
        if found and not found.group(1).endswith("ToolError"):
            text = redact(f"{found.group(1).rsplit('.', 1)[-1]}: {found.group(2)}")
            return text if len(text) <= 300 else text[:297] + "..."
    return None


def _unreachable(exc: BaseException) -> bool:
    """Whether a connection to the URL could not be made (nothing listens, no such host)."""
    return isinstance(exc, OSError) or type(exc).__name__ in ("ConnectError", "ConnectTimeout")


#: the server whose connection the current task serves (the SDK's reader task inherits it)
_SERVING: contextvars.ContextVar[MCPServer | None] = contextvars.ContextVar(
    "lion_nb_mcp_serving", default=None
)


class _QuietParseErrors(logging.Filter):
    """The SDK's stdio client logs every stdout line that is not JSON-RPC with a pydantic
    traceback, which lands in the cell above the one-line error of a program that is not an
    MCP server. The line is kept on the server instead, and the start error quotes it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("Failed to parse JSONRPC message"):
            return True
        server = _SERVING.get()
        if server is not None and server._stray is None:
            server._stray = _stray_line(record.exc_info[1] if record.exc_info else None)
        return False


_FILTER = _QuietParseErrors()


def _quiet_parse_errors() -> None:
    logger = logging.getLogger("mcp.client.stdio")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


def _stray_line(exc: BaseException | None) -> str:
    """The line a JSON-RPC parse error was about (pydantic keeps it as the error's input)."""
    try:
        text = str(exc.errors()[0]["input"])  # type: ignore[union-attr]
    except Exception:
        text = "?"
    text = redact(" ".join(text.split()))
    return text if len(text) <= 80 else text[:77] + "..."


def _child_writing_to(fd: int) -> int | None:
    """The pid of this process's child whose stderr is the file open at ``fd``."""
    if not os.path.isdir("/proc") or sys.platform == "win32":
        return None
    target = os.fstat(fd)
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
            if stat[stat.rfind(")") + 2 :].split()[1] != me:
                continue
            found = os.stat(f"/proc/{entry}/fd/2")
        except (OSError, IndexError):
            continue
        if (found.st_ino, found.st_dev) == (target.st_ino, target.st_dev):
            return int(entry)
    return None
