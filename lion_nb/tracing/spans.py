"""`Tracer`: the spans of turns, model calls, tool calls and evaluations.

One span per turn (``communicate``, ``operate``, ``ReAct``, ``run``: from the run lifecycle,
`lion_nb.runtime.lifecycle`), a ``chat {model}`` CLIENT span per model call, an
``execute_tool {name}`` INTERNAL span per tool call, and evaluation outcomes as
``gen_ai.evaluation.result`` events. A model call's and a tool call's parent is the turn
they belong to; a turn started inside a tool (a tool that asks another branch) is that
tool's child; a turn with no lion_nb parent is a child of the application's current span,
if any, so lion_nb joins an app's own traces. The parent is carried by a context variable,
so concurrent turns (background cells, ``map`` items) never adopt each other's spans.

Every span says which conversation it belongs to (``gen_ai.conversation.id``: the branch
id), with its session, its cell and the branch it was forked from (`branch_attributes`).
Content goes in only with ``capture_content`` (`attributes`).
"""

from __future__ import annotations

import contextvars
import time
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from . import attributes as A

__all__ = ["Tracer", "current_trace_id"]

_CURRENT: contextvars.ContextVar[Any] = contextvars.ContextVar("lion_nb_span", default=None)


def current_trace_id() -> str | None:
    """The trace id (32 hex digits) of the lion_nb span running in this task, if any."""
    span = _CURRENT.get()
    return None if span is None else format(span.get_span_context().trace_id, "032x")


class Tracer:
    """Makes lion_nb's spans on an OpenTelemetry ``TracerProvider``; with ``processor`` (the
    only one of a provider lion_nb built), turns, model calls and tool calls are recorded
    straight into the SDK's span records (`recorder.SpanRecorder`)."""

    def __init__(
        self,
        provider: Any,
        *,
        capture_content: bool = False,
        max_chars: int = 4000,
        processor: Any = None,
    ):
        from .. import __version__

        self.provider = provider
        self.capture_content = capture_content
        self.max_chars = max_chars
        self.cell: tuple[Any, Any] = (None, None)  # (execution count, cell id) of the cell
        self._tracer = provider.get_tracer("lion_nb", __version__, schema_url=A.SCHEMA_URL)
        self._recorder = None
        if processor is not None:  # lion_nb's own provider: spans straight into records
            from opentelemetry.sdk.util.instrumentation import InstrumentationScope

            from .recorder import SpanRecorder

            scope = InstrumentationScope("lion_nb", __version__, A.SCHEMA_URL)
            self._recorder = SpanRecorder(provider, processor, scope)

    def _start(self, name: str, kind: SpanKind, attrs: dict[str, Any]) -> Any:
        parent = _CURRENT.get()
        if self._recorder is not None:
            return self._recorder.start(name, kind, attrs, parent)
        context = None if parent is None else trace.set_span_in_context(parent)
        return self._tracer.start_span(name, context=context, kind=kind, attributes=attrs)

    # -- turns ------------------------------------------------------------------------------------
    def turn_start(self, branch: Any, operation: str, run_id: str) -> Any:
        """Open the turn's span and make it the parent of what the turn does."""
        attrs = A.branch_attributes(branch, self.cell)
        attrs["gen_ai.operation.name"] = "invoke_agent"
        attrs["lion_nb.operation"] = operation
        attrs["lion_nb.run.id"] = run_id
        if branch.name:
            attrs["gen_ai.agent.name"] = str(branch.name)
        span = self._start(operation, SpanKind.INTERNAL, attrs)
        return span, _CURRENT.set(span)

    def turn_end(self, handle: Any, error: BaseException | None = None) -> None:
        span, token = handle
        if error is not None:
            _fail(span, error)
        span.end()
        try:
            _CURRENT.reset(token)
        except ValueError:  # ended in another context (a generator's run): leave it alone
            if _CURRENT.get() is span:
                _CURRENT.set(None)

    # -- model calls ------------------------------------------------------------------------------
    def model_start(self, branch: Any, imodel: Any, request: Any) -> Any:
        attrs = A.request_attributes(imodel, request)
        attrs.update(A.branch_attributes(branch, self.cell))
        if self.capture_content:
            messages = getattr(request, "messages", None)
            if messages is None:  # a CLI agent's request: its system text and prompt
                system = getattr(request, "system", None)
                messages = [{"role": "system", "content": system}] if system else []
                messages.append({"role": "user", "content": request.prompt})
            attrs.update(A.input_messages(list(messages), self.max_chars))
            if getattr(request, "tools", None):
                attrs["gen_ai.tool.definitions"] = A.content_json(request.tools, self.max_chars)
        return self._start(f"chat {imodel.model}", SpanKind.CLIENT, attrs)

    def model_end(self, span: Any, call: Any, usd: float | None = None) -> tuple[str, str]:
        """Close a model call's span from its `APICalling`; returns its trace and span ids
        (hex), which the answer keeps (the footer shows the trace; evaluations link to the
        call)."""
        response = call.response if call is not None else None
        if response is not None:
            span.set_attributes(A.response_attributes(response, usd))
            if self.capture_content:
                span.set_attributes(A.output_messages(response, self.max_chars))
        error = None if call is None else call.error
        if error is not None or response is None:
            _fail(span, error)
        span.end()
        context = span.get_span_context()
        return format(context.trace_id, "032x"), format(context.span_id, "016x")

    def agent_end(
        self, span: Any, usage: Any, usd: float | None, error: BaseException | None
    ) -> None:
        """Close a CLI agent's run: its usage and price as the ledger recorded them."""
        if isinstance(usage, dict):
            span.set_attributes(A.usage_attributes(usage))
        if usd is not None:
            span.set_attribute("lion_nb.cost.usd", float(usd))
        if error is not None:
            _fail(span, error)
        span.end()

    def model_failed(self, span: Any, error: BaseException) -> None:
        _fail(span, error)
        span.end()

    # -- tool calls -------------------------------------------------------------------------------
    def tool_start(self, branch: Any, request: Any, tool: Any) -> Any:
        attrs = A.branch_attributes(branch, self.cell)
        attrs["gen_ai.operation.name"] = "execute_tool"
        attrs["gen_ai.tool.name"] = request.function
        if request.call_id:
            attrs["gen_ai.tool.call.id"] = str(request.call_id)
        server = request.metadata.get("mcp_server")
        attrs["gen_ai.tool.type"] = "extension" if server else "function"
        if server:
            attrs["lion_nb.mcp.server"] = str(server)
        description = getattr(tool, "description", None) or getattr(tool, "__doc__", None)
        if isinstance(description, str) and description:
            attrs["gen_ai.tool.description"] = description.strip()[:500]
        span = self._start(f"execute_tool {request.function}", SpanKind.INTERNAL, attrs)
        return span, _CURRENT.set(span)

    def tool_end(self, handle: Any, request: Any, response: Any, error: Any = None) -> None:
        span, token = handle
        _CURRENT.reset(token)
        meta = getattr(response, "metadata", None) or {}
        approval = meta.get("approval") or request.metadata.get("approval")
        if approval:  # "approved by callable", "denied by policy", "denied: the turn was..."
            text = str(approval)
            span.set_attribute("lion_nb.tool.approval", text.split(" ", 1)[0].rstrip(":"))
            span.set_attribute("lion_nb.tool.approval.by", text.partition(" by ")[2] or text)
        if self.capture_content:
            output = None if response is None else response.output
            span.set_attributes(A.tool_content(dict(request.arguments), output, self.max_chars))
        if error is not None:
            _fail(span, error)
        elif response is not None and response.is_error:
            span.set_status(Status(StatusCode.ERROR))
            span.set_attribute("error.type", "cancelled" if meta.get("cancelled") else "tool_error")
        span.end()

    # -- evaluations ------------------------------------------------------------------------------
    def evaluation(self, link: Any, results: list[dict[str, Any]], attrs: dict[str, Any]) -> None:
        """One ``evaluation`` span, child of the evaluated call's span (``link``: a
        ``(trace id, span id)`` pair, or ``None``), with a ``gen_ai.evaluation.result``
        event per check."""
        context = None
        if link is not None:
            parent = trace.SpanContext(
                trace_id=int(link[0], 16),
                span_id=int(link[1], 16),
                is_remote=False,
                trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
            )
            context = trace.set_span_in_context(trace.NonRecordingSpan(parent))
        name = str(attrs.get("gen_ai.evaluation.name") or "evaluation")
        span = self._tracer.start_span(f"evaluation {name}", context=context, attributes=attrs)
        now = time.time_ns()
        for result in results:
            span.add_event("gen_ai.evaluation.result", attributes=result, timestamp=now)
        span.end()


def _fail(span: Any, error: BaseException | None) -> None:
    kind = "error" if error is None else type(error).__name__
    span.set_attribute("error.type", kind)
    span.set_status(Status(StatusCode.ERROR))  # no description: an error text may quote secrets
