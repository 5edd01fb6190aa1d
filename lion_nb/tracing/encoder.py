"""OTLP protobuf bytes of a batch of spans, written directly: the SDK encoder's output, cheaper.

The exporter's encoder (``encode_spans(spans).SerializePartialToString()``) builds a
protobuf object per span, attribute and value in Python and hashes the resource (a JSON dump)
once per span: about 50 µs a span, as much as a traced turn's whole budget. lion_nb's spans
use a small part of the format -- one resource and one scope per batch, scalar and
sequence attributes, events, a status -- and that part is written here straight to the wire
format, in the same field order, so the bytes are the SDK's own (the tests compare them on
every kind of span lion_nb makes). Anything else (links, a trace state, a mapping or bytes
value, spans of several resources) goes to the SDK encoder unchanged.

`LionSpanExporter` is the official OTLP/HTTP exporter with only its encoding step replaced:
its HTTP client, retries, headers, compression and size limit are the exporter's own. That
step reads four of the exporter's own attributes; a release without them is not an error,
its export runs as it ships (the SDK encoder's speed), and a test holds that.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

__all__ = ["LionSpanExporter", "encode_request"]

_Q = struct.Struct("<Q").pack
_D = struct.Struct("<d").pack
_I = struct.Struct("<I").pack
_KIND = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}
_HAS_IS_REMOTE, _IS_REMOTE = 0x100, 0x200


class _Unsupported(Exception):
    """A span outside the part of the format written here: the SDK encoder takes the batch."""


_SMALL = [bytes((i,)) for i in range(128)]


def _varint(value: int) -> bytes:
    if 0 <= value < 128:
        return _SMALL[value]
    value &= 0xFFFFFFFFFFFFFFFF  # int64 negatives: two's complement, ten bytes
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(tag: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2) with its one-byte tag."""
    return _SMALL[tag] + _varint(len(payload)) + payload


def _text(tag: int, text: str) -> bytes:
    return _field(tag, text.encode("utf-8"))


def _any(value: Any) -> bytes:
    """An ``AnyValue`` message (a oneof: written even when it is a default value)."""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return _text(0x0A, value)
    if isinstance(value, int):
        return b"\x18" + _varint(value)
    if isinstance(value, float):
        return b"\x21" + _D(value)
    if isinstance(value, (tuple, list)):
        return _field(0x2A, b"".join(_field(0x0A, _any(v)) for v in value))
    raise _Unsupported(type(value).__name__)


#: (tag, key, type, value) -> the encoded key-value field: a conversation's spans repeat most
#: of their attributes (its id, session, cell, model, server), so most are looked up, not built
_PAIRS: dict[tuple[int, str, type, Any], bytes] = {}
_CACHED = (str, int, bool)


def _pair(tag: int, key: str, value: Any) -> bytes:
    kind = type(value)
    if kind not in _CACHED or (kind is str and len(value) > 256):
        return _field(tag, _text(0x0A, key) + _field(0x12, _any(value)))
    entry = (tag, key, kind, value)
    found = _PAIRS.get(entry)
    if found is None:
        if len(_PAIRS) >= 4096:
            _PAIRS.clear()
        found = _PAIRS[entry] = _field(tag, _text(0x0A, key) + _field(0x12, _any(value)))
    return found


def _attributes(tag: int, attributes: Any) -> bytes:
    if not attributes:
        return b""
    return b"".join([_pair(tag, key, value) for key, value in attributes.items()])


def _count(tag: int, value: int) -> bytes:
    return bytes((tag,)) + _varint(value) if value else b""


def _span(span: ReadableSpan) -> bytes:
    context = span.get_span_context()
    if context is None or span.links or (context.trace_state and len(context.trace_state)):
        raise _Unsupported("links or a trace state")
    parent = span.parent
    out = [
        _field(0x0A, context.trace_id.to_bytes(16, "big")),
        _field(0x12, context.span_id.to_bytes(8, "big")),
    ]
    if parent:
        out.append(_field(0x22, parent.span_id.to_bytes(8, "big")))
    if span.name:
        out.append(_text(0x2A, span.name))
    out.append(b"\x30" + bytes((_KIND[span.kind.name],)))
    if span.start_time:
        out.append(b"\x39" + _Q(span.start_time))
    if span.end_time:
        out.append(b"\x41" + _Q(span.end_time))
    out.append(_attributes(0x4A, span.attributes))
    out.append(_count(0x50, span.dropped_attributes))
    for event in span.events:
        body = b"\x09" + _Q(event.timestamp) if event.timestamp else b""
        if event.name:
            body += _text(0x12, event.name)
        body += _attributes(0x1A, event.attributes) + _count(0x20, event.dropped_attributes)
        out.append(_field(0x5A, body))
    out.append(_count(0x60, span.dropped_events))
    status = span.status
    body = _text(0x12, status.description) if status.description else b""
    if status.status_code.value:
        body += b"\x18" + _varint(status.status_code.value)
    out.append(_field(0x7A, body))
    out.append(_count(0x70, span.dropped_links))
    flags = _HAS_IS_REMOTE | (_IS_REMOTE if parent is not None and parent.is_remote else 0)
    out.append(b"\x85\x01" + _I(flags))
    return b"".join(out)


def _fast(spans: Sequence[ReadableSpan]) -> bytes:
    first = spans[0]
    resource, scope = first.resource, first.instrumentation_scope
    if scope is None or any(
        (s.resource is not resource and s.resource != resource)
        or (s.instrumentation_scope is not scope and s.instrumentation_scope != scope)
        for s in spans
    ):  # equal ones are one resource and scope: the SDK encoder groups them so too
        raise _Unsupported("several resources or scopes")
    scope_body = b""
    if scope.name:
        scope_body += _text(0x0A, scope.name)
    if scope.version:
        scope_body += _text(0x12, scope.version)
    scope_body += _attributes(0x1A, scope.attributes)
    scope_spans = _field(0x0A, scope_body) + b"".join(_field(0x12, _span(s)) for s in spans)
    if scope.schema_url:
        scope_spans += _text(0x1A, scope.schema_url)
    resource_spans = _field(0x0A, _attributes(0x0A, resource.attributes))
    resource_spans += _field(0x12, scope_spans)
    if resource.schema_url:
        resource_spans += _text(0x1A, resource.schema_url)
    return _field(0x0A, resource_spans)


def encode_request(spans: Sequence[ReadableSpan]) -> bytes:
    """The serialized ``ExportTraceServiceRequest`` of ``spans``: the SDK encoder's bytes."""
    if spans:
        try:
            return _fast(spans)
        except _Unsupported:
            pass
    return encode_spans(spans).SerializePartialToString()


#: the exporter's own parts the direct path uses (it is the exporter's `export` without its
#: encoding step); a version without one of them exports as it ships, only slower
_EXPORTER_PARTS = ("_shutdown", "_metrics", "_max_request_size", "_client")


class LionSpanExporter(OTLPSpanExporter):
    """The OTLP/HTTP span exporter, encoding with `encode_request` (where its parts allow)."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not all(hasattr(self, part) for part in _EXPORTER_PARTS):
            return super().export(spans)  # an exporter laid out otherwise: its own way
        if self._shutdown:
            return SpanExportResult.FAILURE
        with self._metrics.export_operation(len(spans)) as result:
            try:
                data = encode_request(spans)
            except Exception as error:
                result.error = error
                return SpanExportResult.FAILURE
            if 0 < self._max_request_size < len(data):
                return super().export(spans)  # the exporter's own refusal and message
            sent = self._client.export(data)
            if not sent.success:
                result.error = sent.error
                if sent.status_code is not None:
                    result.error_attrs = {"http.response.status_code": sent.status_code}
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS
