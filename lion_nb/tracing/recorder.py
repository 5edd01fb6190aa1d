"""`SpanRecorder`: lion_nb's spans made straight into the SDK's span records, for its own provider.

On the provider `lion_nb.tracing.enable` builds, nothing but lion_nb starts spans and one
processor (`CellSpanProcessor`) takes them. The SDK's live span does work that provider
never needs -- a lock per span, the attribute checks of every set, span limits, a walk over
the processors -- which costs a turn about half of what tracing adds. Here a span keeps its
name, ids, parent, attributes and status in plain slots, and its end hands the SDK's
own `ReadableSpan` to the processor: what the exporter gets is what the SDK would give it
(a test compares the two, span by span).

The rules of the SDK that matter are kept: ids come from the provider's id generator, a
span's parent is the running lion_nb span or else the application's current span (whose
trace it joins, and whose "not sampled" it follows: such a span records nothing), a value
that is not a plain one is cleaned by the SDK's own rules, a key set again moves to the end,
and a span ends once. Evaluation spans (rare, with events) and an application's own
provider (``enable(tracer_provider=...)``) get the SDK's spans, through its tracer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

__all__ = ["RecordedSpan", "SpanRecorder"]

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_PLAIN_TYPES = frozenset((str, bool, int, float))  # exactly these: a subclass is cleaned
_SEQUENCES = frozenset((list, tuple))
_UNSET = Status(StatusCode.UNSET)


def _cleaned(key: str, value: Any) -> dict[str, Any]:
    """What the SDK keeps of a value that is not a plain one (its own rules, through its
    public `BoundedAttributes`): a tuple for a list, a dict for a mapping, text or ``None``
    for anything else, nothing for a bad key."""
    return dict(BoundedAttributes(maxlen=None, attributes={key: value}, immutable=False))


class SpanRecorder:
    """Starts `RecordedSpan` s whose end goes to ``processor`` (see the module)."""

    def __init__(self, provider: Any, processor: Any, scope: InstrumentationScope):
        self._ids = provider.id_generator
        self._resource = provider.resource
        self._processor = processor
        self._scope = scope

    def start(
        self, name: str, kind: SpanKind, attributes: Mapping[str, Any], parent: Any = None
    ) -> Any:
        """A span under ``parent`` (a lion_nb span), else under the application's current span."""
        above = (
            parent.get_span_context()
            if parent is not None
            else trace.get_current_span().get_span_context()
        )
        if above.is_valid:
            if not above.trace_flags.sampled:
                return trace.NonRecordingSpan(above)
            trace_id = above.trace_id
        else:
            above, trace_id = None, self._ids.generate_trace_id()
        context = SpanContext(trace_id, self._ids.generate_span_id(), False, _SAMPLED)
        return RecordedSpan(self, name, kind, context, above, attributes)

    def finish(self, span: RecordedSpan, end_time: int) -> None:
        self._processor.on_end(
            ReadableSpan(
                span.name,
                context=span.context,
                parent=span.parent,
                resource=self._resource,
                attributes=span.attributes,
                kind=span.kind,
                status=span.status,
                start_time=span.start_time,
                end_time=end_time,
                instrumentation_scope=self._scope,
            )
        )


class RecordedSpan:
    """A span being recorded: the calls lion_nb's `Tracer` makes of a span, nothing more."""

    __slots__ = (
        "_recorder",
        "attributes",
        "context",
        "ended",
        "kind",
        "name",
        "parent",
        "start_time",
        "status",
    )

    def __init__(
        self,
        recorder: SpanRecorder,
        name: str,
        kind: SpanKind,
        context: SpanContext,
        parent: SpanContext | None,
        attributes: Mapping[str, Any],
    ):
        self._recorder = recorder
        self.name = name
        self.kind = kind
        self.context = context
        self.parent = parent
        self.attributes: dict[str, Any] = {}
        self.status = _UNSET
        self.ended = False
        self.set_attributes(attributes)
        self.start_time = time.time_ns()

    def get_span_context(self) -> SpanContext:
        return self.context

    def is_recording(self) -> bool:
        return not self.ended

    def set_attribute(self, key: str, value: Any) -> None:
        self.set_attributes({key: value})

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        if self.ended:
            return
        into = self.attributes
        for key, value in attributes.items():
            if key in into:  # a key set again moves to the end, as in the SDK's records
                del into[key]
            kind = type(value)
            if kind in _PLAIN_TYPES and type(key) is str and key:
                into[key] = value
            elif kind in _SEQUENCES and all(type(v) in _PLAIN_TYPES for v in value) and key:
                into[key] = tuple(value)  # a list of plain values: the SDK's tuple of them
            else:
                into.update(_cleaned(key, value))

    def set_status(self, status: Status) -> None:
        if not self.ended and self.status.status_code is not StatusCode.OK:
            self.status = status

    def end(self, end_time: int | None = None) -> None:
        if self.ended:
            return
        self.ended = True
        self._recorder.finish(self, end_time or time.time_ns())
