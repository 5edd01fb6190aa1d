"""lion_nb's OTLP encoder writes the SDK encoder's bytes exactly: on the spans of a real
tool round, content capture on, an error and an evaluation, and on every value type and
edge the format allows (the rest goes to the SDK encoder itself)."""

from __future__ import annotations

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

import lion_nb.tracing as tracing
from lion_nb import Session
from lion_nb.tracing.encoder import _fast, encode_request

pytestmark = pytest.mark.timeout(60)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def sdk_bytes(spans) -> bytes:
    return encode_spans(spans).SerializePartialToString()


def recording():
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "lion_nb"}), shutdown_on_exit=False
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


def test_the_spans_of_real_turns_encode_to_the_sdk_encoders_bytes():
    provider, memory = recording()
    tracing.enable(tracer_provider=provider, capture_content=True)
    session = Session()
    branch = session.new_branch(name="calc", chat_model="offline/auto", tools=[add])
    anyio.run(lambda: branch.operate(instruction="use add a=2 b=3", actions=True))
    anyio.run(lambda: branch.communicate("hello", clear_messages=True))
    forked = branch.clone()
    anyio.run(lambda: forked.communicate("and you?"))
    spans = memory.get_finished_spans()
    assert len(spans) >= 6
    assert _fast(spans) == encode_request(spans) == sdk_bytes(spans)  # written here, not passed on
    for span in spans:  # one by one as well
        assert encode_request([span]) == sdk_bytes([span])


def test_every_value_type_event_status_and_kind_encodes_to_the_same_bytes():
    provider, memory = recording()
    tracer = provider.get_tracer("lion_nb", "1.2.3", schema_url="https://example/1.41.0")
    values = {
        "s": "text é ✓",
        "empty": "",
        "t": True,
        "f": False,
        "zero": 0,
        "big": 2**62,
        "neg": -5,
        "min": -(2**63),
        "pi": 3.25,
        "nzero": -0.0,
        "strs": ("a", "b"),
        "ints": (1, -2, 300),
        "bools": (True, False),
        "floats": (0.5, 1e300),
        "none": (),
        "long": "x" * 5000,
    }
    with tracer.start_as_current_span("parent", kind=SpanKind.SERVER) as parent:
        for kind in SpanKind:
            span = tracer.start_span(f"k{kind.name}", kind=kind, attributes=values)
            span.add_event("e", {"n": 1, "s": "v"})
            span.add_event("", timestamp=0)
            span.set_status(
                Status(StatusCode.ERROR, "bad") if kind.value % 2 else Status(StatusCode.OK)
            )
            span.end()
        parent.add_event("plain")
    tracer.start_span("", attributes={}).end()
    remote = trace.SpanContext(1, 2, is_remote=True, trace_flags=trace.TraceFlags(1))
    tracer.start_span(
        "remote child", context=trace.set_span_in_context(trace.NonRecordingSpan(remote))
    ).end()
    spans = memory.get_finished_spans()
    assert _fast(spans) == encode_request(spans) == sdk_bytes(spans)
    for span in spans:
        assert encode_request([span]) == sdk_bytes([span])


def test_what_is_not_written_here_goes_to_the_sdk_encoder():
    provider, memory = recording()
    other, _ = recording()
    tracer = provider.get_tracer("lion_nb")
    first = tracer.start_span("a")
    first.end()
    tracer.start_span("linked", links=[Link(first.get_span_context(), {"k": "v"})]).end()
    other.add_span_processor(SimpleSpanProcessor(memory))
    other.get_tracer("another", "2").start_span("elsewhere").end()  # a second resource
    spans = memory.get_finished_spans()
    assert encode_request(spans) == sdk_bytes(spans)
    assert encode_request([]) == sdk_bytes([])


def test_the_installed_exporter_has_every_part_the_direct_path_reads(collector):
    """A release that moves one of them exports the SDK's slower way (`LionSpanExporter`
    checks); this test says so first."""
    from lion_nb.tracing.encoder import _EXPORTER_PARTS, LionSpanExporter

    exporter = LionSpanExporter(endpoint=f"{collector.endpoint}/v1/traces")
    assert [part for part in _EXPORTER_PARTS if not hasattr(exporter, part)] == []
    provider, memory = recording()
    provider.get_tracer("lion_nb").start_span("sent directly").end()
    assert exporter.export(memory.get_finished_spans()).name == "SUCCESS"
    assert [s.name for s in collector.wait_for(1)] == ["sent directly"]
