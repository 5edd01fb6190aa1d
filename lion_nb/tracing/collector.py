"""`LoopbackCollector`: a small OTLP/HTTP trace receiver on 127.0.0.1, for tutorials and tests.

It answers ``POST /v1/traces`` (``application/x-protobuf``, gzip or not), decodes the body
with ``opentelemetry-proto`` into an ``ExportTraceServiceRequest``, and keeps every span as
a plain `ReceivedSpan` *before* it answers, so once an export returned, its spans are here.
``delay=`` makes it slow and ``status=`` makes it refuse (a collector in trouble). It binds
to the loopback address only and keeps everything in memory: it is a test double of a
collector, not a trace store.
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LoopbackCollector", "ReceivedSpan"]


@dataclass
class ReceivedSpan:
    """One span as the collector got it: ids as hex, attributes as Python values."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status_code: int = 0
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""
    start_ns: int = 0
    end_ns: int = 0

    def __repr__(self) -> str:
        return f"ReceivedSpan({self.name!r}, {len(self.attributes)} attributes)"


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which)


def _attrs(items: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in items}


def decode(body: bytes) -> list[ReceivedSpan]:
    """The spans of one OTLP/protobuf export request."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for rs in request.resource_spans:
        resource = _attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                spans.append(
                    ReceivedSpan(
                        name=s.name,
                        trace_id=s.trace_id.hex(),
                        span_id=s.span_id.hex(),
                        parent_span_id=s.parent_span_id.hex(),
                        kind=int(s.kind),
                        attributes=_attrs(s.attributes),
                        events=[(e.name, _attrs(e.attributes)) for e in s.events],
                        status_code=int(s.status.code),
                        resource=resource,
                        scope=ss.scope.name,
                        start_ns=int(s.start_time_unix_nano),
                        end_ns=int(s.end_time_unix_nano),
                    )
                )
    return spans


class LoopbackCollector:
    """An OTLP/HTTP receiver on 127.0.0.1 (a free port unless given); ``with`` stops it."""

    def __init__(self, port: int = 0, *, delay: float = 0.0, status: int = 200) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests: list[
            dict[str, str]
        ] = []  # the headers of each export request, names lower-cased
        self.delay = delay
        self.status = status
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._release = threading.Event()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = (
                "HTTP/1.1"  # keep-alive, as collectors do: one connection per exporter
            )

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if collector.delay:
                    collector._release.wait(collector.delay)
                if self.path.rstrip("/") != "/v1/traces":
                    self._answer(404)
                    return
                if collector.status != 200:
                    self._answer(collector.status)
                    return
                try:
                    spans = decode(body)
                except Exception:
                    self._answer(400)
                    return
                with collector._changed:
                    collector.requests.append({k.lower(): v for k, v in self.headers.items()})
                    collector.spans.extend(spans)
                    collector._changed.notify_all()
                self._answer(200)

            def _answer(self, code: int) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="lion-nb-otlp-collector", daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def endpoint(self) -> str:
        """The base URL to give `lion_nb.tracing.enable` (``/v1/traces`` is added)."""
        return f"http://127.0.0.1:{self.port}"

    def wait_for(self, count: int, timeout: float = 10.0) -> list[ReceivedSpan]:
        """Wait until at least ``count`` spans arrived (or ``timeout``); the spans so far."""
        with self._changed:
            self._changed.wait_for(lambda: len(self.spans) >= count, timeout)
            return list(self.spans)

    def clear(self) -> None:
        with self._lock:
            self.spans.clear()
            self.requests.clear()

    def table(self) -> list[dict[str, Any]]:
        """One row per span, for a notebook: name, parent, and the main gen_ai attributes."""
        names = {s.span_id: s.name for s in self.spans}
        keys = (
            "gen_ai.operation.name",
            "gen_ai.request.model",
            "gen_ai.tool.name",
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.output_tokens",
        )
        return [
            {
                "span": s.name,
                "parent": names.get(s.parent_span_id, ""),
                **{k.removeprefix("gen_ai."): s.attributes.get(k) for k in keys},
            }
            for s in self.spans
        ]

    def close(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LoopbackCollector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LoopbackCollector({self.endpoint}, {len(self.spans)} spans)"
