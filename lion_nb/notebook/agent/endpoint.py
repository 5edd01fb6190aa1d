"""The notebook as an MCP server for outside agents: the notebook tools over streamable HTTP.

`NotebookEndpoint` serves `notebook_tools` with the ``mcp`` SDK's server on 127.0.0.1 only, on
a free port, behind a random bearer token: every request without ``Authorization: Bearer
<token>`` is refused with 401 before the SDK sees it. The HTTP server runs on its own loop in
a daemon thread; each call is handed to the kernel's loop, where it runs as a turn's call
does: approved under the tools' policy (``"ask"``: the endpoint's card, a `TurnWidget`
shown by ``%lion serve``, with the code and its risk flags), run on the kernel's main thread,
and recorded on the endpoint's branch. The token is never printed: it is ``endpoint.token``
and in the MCP configuration file `write_config` writes (mode 0600) for a CLI agent. The
server stops with ``stop()``, ``%lion serve --stop``, the card's Stop, or the kernel's exit.
"""

from __future__ import annotations

import asyncio
import atexit
import hmac
import json
import os
import secrets
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = ["NotebookEndpoint"]

HOST = "127.0.0.1"


class NotebookEndpoint:
    """One running server; ``url``, ``token``, ``branch`` (where its calls are recorded)."""

    def __init__(self, branch: Any, *, loop: asyncio.AbstractEventLoop, approve: Any = "ask",
                 shell: Any = None, card: Any = None):  # fmt: skip
        from .tools import notebook_tools

        self.branch = branch
        self.card = card
        self.token = secrets.token_urlsafe(32)
        self._loop = loop
        self._tools = {t.name: t for t in notebook_tools(approve=approve, shell=shell)}
        branch.acts.register_tools(list(self._tools.values()), update=True)
        self._socket: socket.socket | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.config_path: Path | None = None

    def __repr__(self) -> str:  # no token
        return f"NotebookEndpoint({self.url if self._socket else 'stopped'})"

    @property
    def port(self) -> int:
        return int(self._socket.getsockname()[1]) if self._socket is not None else 0

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/mcp"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- lifecycle --------------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> NotebookEndpoint:
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, 0))  # loopback only, a free port
        self._socket = sock
        config = uvicorn.Config(_Bearer(self._app(), self.token), log_level="warning",
                                lifespan="on", access_log=False)  # fmt: skip
        ready = threading.Event()

        class Server(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets=sockets)
                ready.set()  # listening (or failed: `started` stays false)

        self._server = Server(config)

        def serve() -> None:
            try:
                asyncio.run(self._server.serve(sockets=[sock]))
            finally:
                ready.set()

        self._thread = threading.Thread(target=serve, name="lion-nb-serve", daemon=True)
        self._thread.start()
        if not ready.wait(timeout) or not self._server.started:
            self.stop()
            raise RuntimeError("the notebook's MCP server did not start")
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(10)
        if self._socket is not None:
            self._socket.close()
        self._socket = None
        if self.config_path is not None:
            self.config_path.unlink(missing_ok=True)
        atexit.unregister(self.stop)

    def write_config(self, name: str = "notebook") -> Path:
        """An MCP configuration file (Claude Code's ``--mcp-config`` form) with the URL and
        the token, readable by this user only."""
        data = {"mcpServers": {name: {"type": "http", "url": self.url,
                                      "headers": {"Authorization": f"Bearer {self.token}"}}}}  # fmt: skip
        folder = Path(tempfile.mkdtemp(prefix="lion_nb_serve_"))
        path = folder / "mcp.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        self.config_path = path
        return path

    # -- the MCP app ------------------------------------------------------------------------
    def _app(self) -> Any:
        from mcp.server.mcpserver import MCPServer

        server = MCPServer("lion_nb notebook", instructions=_INSTRUCTIONS, log_level="WARNING")
        call = self._call

        async def run_python(code: str) -> str:
            return await call("run_python", {"code": code})

        async def inspect(name: str) -> str:
            return await call("inspect", {"name": name})

        async def list_variables() -> str:
            return await call("list_variables", {})

        async def propose_cell(code: str) -> str:
            return await call("propose_cell", {"code": code})

        for fn in (run_python, inspect, list_variables, propose_cell):
            server.add_tool(fn, name=fn.__name__, description=self._tools[fn.__name__].description)
        return server.streamable_http_app(host=HOST)

    async def _call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one call on the kernel's loop (approval, the main thread, the record)."""
        future = asyncio.run_coroutine_threadsafe(self._invoke(name, arguments), self._loop)
        response = await asyncio.wrap_future(future)
        if response.is_error:  # denied, or the code failed: the agent reads why
            from mcp.server.mcpserver.exceptions import ToolError

            raise ToolError(response.rendered)
        return str(response.rendered)

    async def _invoke(self, name: str, arguments: dict[str, Any]) -> Any:
        from ...protocols.approval import asking, current_asker

        asker = getattr(self.card, "ask", None) or current_asker()
        with asking(asker):
            [response] = await self.branch.act({"function": name, "arguments": arguments})
        if self.card is not None:
            request = self.branch.messages.get(response.action_request_id, None)
            if request is not None:
                self.card.message(request)
            self.card.message(response)
        return response


_INSTRUCTIONS = (
    "Tools that work in a user's live Jupyter notebook: list_variables and inspect read its "
    "variables; run_python runs code in its namespace (the user approves each run); "
    "propose_cell offers a new cell for the user to run."
)


class _Bearer:
    """ASGI: every HTTP request needs ``Authorization: Bearer <token>``, else 401."""

    def __init__(self, app: Any, token: str):
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            got = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(got, self._expected):
                body = b'{"error": "unauthorized: a bearer token is required"}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b"Bearer"),
                    (b"content-length", str(len(body)).encode()),
                ]})  # fmt: skip
                await send({"type": "http.response.body", "body": body})
                return
        await self._app(scope, receive, send)
