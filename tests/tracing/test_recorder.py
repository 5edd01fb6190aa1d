"""Spans recorded straight into the SDK's records (lion_nb's own provider) are the SDK's spans.

The same turns traced twice -- through the SDK's tracer and through `SpanRecorder` -- give
the same spans: names, kinds, statuses, parent links, scope, and every attribute in the same
order with the same value (ids and times aside); each encodes to the SDK encoder's bytes.
Values the SDK cleans (a list, ``None``, a mapping, an object, a bad key, a key set twice)
come out as the SDK leaves them. A turn joins the application's current span, and follows
its "not sampled".
"""

from __future__ import annotations

import anyio
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import SpanKind, Status, StatusCode

from lion_nb import Session
from lion_nb.tracing import hooks
from lion_nb.tracing.encoder import _fast, encode_request
from lion_nb.tracing.spans import Tracer
from tests.tracing.test_encoder import recording as _provider  # a provider keeping its spans

pytestmark = pytest.mark.timeout(60)

#: attributes whose values are ids or counts of one run (the branch, the run, the call)
VARYING = {
    "gen_ai.conversation.id",
    "gen_ai.response.id",
    "gen_ai.tool.call.id",
    "lion_nb.branch.parent_id",
    "lion_nb.run.id",
    "lion_nb.session.id",
}


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Kept:
    """A span processor that keeps what ends (the recorder's only processor here)."""

    def __init__(self) -> None:
        self.spans: list = []

    def on_end(self, span) -> None:
        self.spans.append(span)


@pytest.fixture
def active():
    """Set `hooks.ACTIVE` for a test (what `enable` does), and clear it after."""

    def use(tracer: Tracer) -> Tracer:
        hooks.ACTIVE = tracer
        return tracer

    yield use
    hooks.ACTIVE = None


def _turns() -> None:
    session = Session()
    branch = session.new_branch(name="calc", chat_model="offline/auto", tools=[add])
    anyio.run(lambda: branch.operate(instruction="use add a=2 b=3", actions=True))
    anyio.run(lambda: branch.communicate("hello", clear_messages=True))
    anyio.run(lambda: branch.clone().communicate("and you?"))


def _shape(spans) -> list[tuple]:
    by_id = {s.context.span_id: s.name for s in spans}
    shape = []
    for s in sorted(spans, key=lambda s: s.start_time):
        items = [(k, "id" if k in VARYING else v) for k, v in s.attributes.items()]
        parent = by_id.get(s.parent.span_id) if s.parent else None
        scope = s.instrumentation_scope
        shape.append((s.name, s.kind, s.status.status_code, parent, scope, items))
    return shape


def test_the_same_turns_give_the_same_spans_through_the_sdk_and_the_recorder(active):
    provider, memory = _provider()
    for capture in (False, True):
        memory.clear()
        active(Tracer(provider, capture_content=capture))
        _turns()
        through_sdk = memory.get_finished_spans()
        kept = Kept()
        active(Tracer(provider, capture_content=capture, processor=kept))
        _turns()
        assert len(through_sdk) == len(kept.spans) >= 7
        assert _shape(kept.spans) == _shape(through_sdk)
        assert memory.get_finished_spans() == through_sdk  # the recorder went around the SDK
        assert encode_request(kept.spans) == encode_spans(kept.spans).SerializePartialToString()
        mixed = [*kept.spans, through_sdk[0]]  # an evaluation's SDK span in the same batch
        assert _fast(mixed) == encode_spans(mixed).SerializePartialToString()


def test_values_the_sdk_cleans_come_out_as_the_sdk_leaves_them():
    provider, memory = _provider()
    kept = Kept()
    sdk = provider.get_tracer("lion_nb").start_span("calls", kind=SpanKind.CLIENT)
    recorded = Tracer(provider, processor=kept)._start("calls", SpanKind.CLIENT, {})

    class Thing:
        pass

    for span in (sdk, recorded):
        span.set_attributes({"first": 1, "words": ["a", "b"], "none": None, "mixed": [1, "a"]})
        span.set_attribute("mapping", {"k": [1, 2], "": 3})
        span.set_attribute("thing", Thing())
        span.set_attribute("", "no key")
        span.set_attribute("first", 2)  # set again: it moves to the end
        span.set_status(Status(StatusCode.ERROR))
        span.end()
        span.set_attribute("after", "the end")  # an ended span takes nothing more
        span.end()
    [through_sdk] = memory.get_finished_spans()
    [mine] = kept.spans
    assert list(mine.attributes.items()) == list(through_sdk.attributes.items())
    assert list(mine.attributes)[-1] == "first" and "after" not in mine.attributes
    assert mine.status.status_code is StatusCode.ERROR


def test_a_turn_joins_the_applications_current_span_and_follows_its_sampling(active):
    provider, _memory = _provider()
    kept = Kept()
    active(Tracer(provider, processor=kept))
    app_provider, _app_memory = _provider()
    app = app_provider.get_tracer("app")
    session = Session()
    with app.start_as_current_span("request handler") as outer:
        branch = session.new_branch(chat_model="offline/auto")
        anyio.run(lambda: branch.communicate("hi"))
    turn = next(s for s in kept.spans if s.name == "communicate")
    assert turn.context.trace_id == outer.get_span_context().trace_id
    assert turn.parent.span_id == outer.get_span_context().span_id

    kept.spans.clear()
    unsampled = TracerProvider(sampler=ALWAYS_OFF).get_tracer("app")
    with unsampled.start_as_current_span("not sampled"):
        anyio.run(lambda: branch.communicate("again"))
    assert kept.spans == []  # the application chose not to record this trace
