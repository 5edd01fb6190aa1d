"""A real HTTP server on 127.0.0.1 that plays an OpenAI-compatible and an Anthropic API.

It runs in a background thread (stdlib ``ThreadingHTTPServer``, HTTP/1.1 with keep-alive)
and answers

- ``POST /v1/chat/completions``: ``openai_stream_text.sse`` when the body asks for a stream,
  else ``openai_nonstream_tool.json``;
- ``POST /v1/messages``: ``anthropic_stream_tool.sse`` when streaming, else a short text
  message;

unless a scripted reply is queued (`FakeProvider.push` and helpers): any status, body and
headers, a slow first byte, a stream cut in the middle (the socket is closed), delays
between events, malformed JSON. Every request is recorded (method, path, headers, JSON body,
arrival time, requests in flight when it arrived), and the most requests in flight at once
is tracked.

The Messages route keeps one rule of the real API that a fake would otherwise hide: a request
whose messages hold ``tool_use`` or ``tool_result`` blocks must define ``tools``, else the API
answers 400 ``invalid_request_error`` ("Requests which include `tool_use` or `tool_result`
blocks must define tools."). That refusal comes before any scripted reply, which stays queued;
``anthropic_rules = False`` turns it off. The Chat Completions route keeps one of OpenAI's
likewise: its reasoning models (o-series, GPT-5) refuse ``max_tokens`` with a 400
``unsupported_parameter`` naming ``max_completion_tokens``.

``routes`` (functions ``Recorded -> Script | None``, tried in order before the queue) let a
test add an API, GET requests included (`tests.fakes.batch_api` plays the providers' batch
services this way); ``default_delay`` slows every unscripted reply, so that load tests have
requests in flight at once.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "FIXTURES",
    "FakeProvider",
    "Recorded",
    "Script",
    "anthropic_message",
    "openai_completion",
    "sse_events",
]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "providers"

ANTHROPIC_TEXT = {
    "id": "msg_fake_text",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [{"type": "text", "text": "Hello from Claude."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 5},
}

_TOOL_BLOCKS = frozenset({"tool_use", "tool_result"})


def sse_events(name_or_text: str) -> list[str]:
    """The events of a fixture file (or of SSE text), one string per event."""
    path = FIXTURES / name_or_text
    text = path.read_text() if path.suffix == ".sse" and path.exists() else name_or_text
    return [block.strip("\n") for block in text.split("\n\n") if block.strip()]


def openai_completion(text: str, *, prompt_tokens: int = 11, completion_tokens: int = 3) -> dict:
    """A non-streamed OpenAI chat completion answering ``text``, as the API sends it."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1760000000,
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def openai_deltas(parts: list[str], *, finish_reason: str | None = None) -> list[str]:
    """An OpenAI chat stream's events: one content delta per part, then ``[DONE]``. Without
    a ``finish_reason`` it is how llama.cpp ends a request another one preempted."""
    events = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        choice = {
            "index": 0,
            "delta": {"content": part},
            "finish_reason": finish_reason if last else None,
        }
        chunk = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "choices": [choice]}
        events.append(f"data: {json.dumps(chunk)}")
    return [*events, "data: [DONE]"]


def anthropic_message(text: str, *, input_tokens: int = 9, output_tokens: int = 2) -> dict:
    """A non-streamed Anthropic message answering ``text``, as the API sends it."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


@dataclass
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # decoded JSON, or None
    raw: bytes
    time: float  # time.monotonic() when it arrived
    in_flight: int = 0  # requests being answered once this one arrived, itself included


@dataclass
class Script:
    """One scripted reply. ``events`` makes it an SSE stream (one string per event)."""

    status: int = 200
    body: Any = None  # dict/list -> JSON; str/bytes sent as is
    headers: dict[str, str] = field(default_factory=dict)
    events: list[str] | None = None
    first_byte_delay: float = 0.0
    event_delay: float = 0.0
    cut_after: int | None = None  # close the socket after this many events
    content_type: str | None = None


class FakeProvider:
    """The server; use as a context manager. ``openai_url`` / ``anthropic_url`` are base URLs."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._queue: deque[Script] = deque()
        self._lock = threading.Lock()
        self._counter = 0
        self.routes: list[Callable[[Recorded], Script | None]] = []
        self.default_delay = 0.0
        self.anthropic_rules = True
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self  # type: ignore[attr-defined]
        self._server.handle_error = lambda request, address: None  # type: ignore[method-assign]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> FakeProvider:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_url(self) -> str:
        return self.url

    # -- scripting -----------------------------------------------------------------------------
    def push(self, script: Script | None = None, **kw: Any) -> Script:
        """Queue one reply for the next request (replies are used in order)."""
        script = script or Script(**kw)
        with self._lock:
            self._queue.append(script)
        return script

    def push_error(
        self, status: int, body: Any = None, headers: dict[str, str] | None = None, **kw: Any
    ) -> Script:
        body = (
            {"error": {"message": "scripted failure", "type": "server_error"}}
            if body is None
            else body
        )
        return self.push(status=status, body=body, headers=headers or {}, **kw)

    def push_json(self, body: Any, **kw: Any) -> Script:
        return self.push(body=body, **kw)

    def push_fixture(self, name: str, **kw: Any) -> Script:
        """A fixture transcript: ``.sse`` as a stream, ``.json`` as a body."""
        if name.endswith(".sse"):
            return self.push(events=sse_events(name), **kw)
        return self.push(body=json.loads((FIXTURES / name).read_text()), **kw)

    def push_sse(self, events: list[str] | str, **kw: Any) -> Script:
        return self.push(events=sse_events(events) if isinstance(events, str) else events, **kw)

    def push_malformed(self, **kw: Any) -> Script:
        return self.push(body='{"id": "chatcmpl-broken", "choices": [', **kw)

    @property
    def pending(self) -> int:
        return len(self._queue)

    # -- used by the handler -------------------------------------------------------------------
    def _next(self, path: str, body: Any, recorded: Recorded | None = None) -> Script:
        refusal = self._anthropic_refusal(path, body) if self.anthropic_rules else None
        refusal = refusal or _openai_refusal(path, body)
        with self._lock:
            self._counter += 1
            if refusal is not None:
                return refusal
            if self._queue:
                return self._queue.popleft()
        for route in list(self.routes) if recorded is not None else ():
            script = route(recorded)
            if script is not None:
                return script
        streaming = isinstance(body, dict) and bool(body.get("stream"))
        delay = self.default_delay
        if path.endswith("/chat/completions"):
            if streaming:
                return Script(events=sse_events("openai_stream_text.sse"), first_byte_delay=delay)
            fixture = json.loads((FIXTURES / "openai_nonstream_tool.json").read_text())
            return Script(body=fixture, first_byte_delay=delay)
        if path.endswith("/messages"):
            if streaming:
                return Script(
                    events=sse_events("anthropic_stream_tool.sse"), first_byte_delay=delay
                )
            return Script(body=ANTHROPIC_TEXT, first_byte_delay=delay)
        return Script(status=404, body={"error": {"message": f"no route {path}"}})

    @staticmethod
    def _anthropic_refusal(path: str, body: Any) -> Script | None:
        """The Messages API's 400 for tool blocks in a request that defines no tools."""
        if not path.endswith("/v1/messages") or not isinstance(body, dict) or body.get("tools"):
            return None
        blocks = (
            block
            for message in body.get("messages") or ()
            if isinstance(message, dict) and isinstance(message.get("content"), list)
            for block in message["content"]
        )
        if not any(isinstance(b, dict) and b.get("type") in _TOOL_BLOCKS for b in blocks):
            return None
        message = "Requests which include `tool_use` or `tool_result` blocks must define tools."
        error = {"type": "invalid_request_error", "message": message}
        return Script(status=400, body={"type": "error", "error": error})

    def _enter(self, recorded: Recorded | None = None) -> int:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            if recorded is not None:
                recorded.in_flight = self._in_flight
            return self._counter

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


def _openai_refusal(path: str, body: Any) -> Script | None:
    """OpenAI's 400 for ``max_tokens`` sent to a reasoning model on Chat Completions."""
    if not path.endswith("/chat/completions") or not isinstance(body, dict):
        return None
    model = str(body.get("model") or "")
    if "max_tokens" not in body or not re.fullmatch(r"(o\d|gpt-5(?!-chat)).*", model):
        return None
    message = (
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead."
    )
    error = {
        "message": message,
        "type": "invalid_request_error",
        "param": "max_tokens",
        "code": "unsupported_parameter",
    }
    return Script(status=400, body={"error": error})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # the listen backlog: the stdlib's 5 overflows when a client opens 20 connections at
    # once, and the kernel then resets some of them (a ReadError on the client's side)
    request_queue_size = 128


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30

    def setup(self) -> None:
        super().setup()  # no Nagle delay: headers and body are separate writes
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        self._handle("POST")

    def do_GET(self) -> None:
        self._handle("GET")

    def _handle(self, method: str) -> None:
        fake: FakeProvider = self.server.fake  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        recorded = Recorded(method, self.path, headers, body, raw, time.monotonic())
        fake.requests.append(recorded)
        script = fake._next(self.path, body, recorded)
        number = fake._enter(recorded)
        try:
            self._play(script, number)
        except OSError:  # the client went away (a timeout on its side): nothing to do
            self.close_connection = True
        finally:
            fake._leave()

    def _play(self, script: Script, number: int) -> None:
        if script.first_byte_delay:
            time.sleep(script.first_byte_delay)
        id_header = "request-id" if self.path.endswith("/messages") else "x-request-id"
        headers = {id_header: f"req_fake_{number}", **script.headers}
        if script.events is not None:
            self._play_stream(script, headers)
            return
        body = script.body
        data = (
            body
            if isinstance(body, bytes)
            else (body.encode() if isinstance(body, str) else json.dumps(body).encode())
        )
        ctype = script.content_type or (
            "application/json"
            if not isinstance(body, (str, bytes)) or body[:1] in ("{", b"{")
            else "text/plain"
        )
        self.send_response(script.status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _play_stream(self, script: Script, headers: dict[str, str]) -> None:
        self.send_response(script.status)
        self.send_header("Content-Type", script.content_type or "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        for i, event in enumerate(script.events or []):
            if script.cut_after is not None and i >= script.cut_after:
                self._cut()
                return
            self._chunk((event + "\n\n").encode())
            if script.event_delay:
                time.sleep(script.event_delay)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _cut(self) -> None:
        """Drop the connection mid-body, as a crashing proxy or server would."""
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
