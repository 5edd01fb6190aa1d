"""Traces that leave the notebook: OpenTelemetry GenAI spans (ADR-0116).

``lion_nb.tracing.enable(endpoint=..., headers=...)`` sends a span per turn, per model call
and per tool call to an OTLP/HTTP collector (Phoenix, Langfuse, Logfire, MLflow, an
OpenTelemetry Collector), with the GenAI semantic conventions' ``gen_ai.*`` attributes; or
``enable(tracer_provider=provider)`` joins an application's own traces. Nothing is sent
until it is called, and OpenTelemetry (the ``otel`` extra) is imported only then.
Message content is left out unless ``capture_content=True``.
"""

from __future__ import annotations

from .setup import TraceStatus, disable, enable, flush, status

__all__ = ["TraceStatus", "disable", "enable", "flush", "status"]
