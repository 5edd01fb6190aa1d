"""Traces that leave the notebook: OpenTelemetry GenAI spans (ADR-0116).

``lion_nb.tracing.enable(endpoint=..., headers=...)`` sends a span per turn, per model call
and per tool call to an OTLP/HTTP collector (Phoenix, Langfuse, Logfire, MLflow, an
OpenTelemetry Collector), with the GenAI semantic conventions' ``gen_ai.*`` attributes; or
``enable(tracer_provider=provider)`` joins an application's own traces. Nothing is sent
until it is called, and OpenTelemetry (the ``otel`` extra) is imported only then.
Message content is left out unless ``capture_content=True``.

The names below load `setup` on first use: the turn lifecycle imports `hooks` from here on
every ``import lion_nb``, and needs nothing more while tracing is off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .setup import TraceStatus, disable, enable, flush, status

__all__ = ["TraceStatus", "disable", "enable", "flush", "status"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import setup

        return getattr(setup, name)
    raise AttributeError(f"module 'lion_nb.tracing' has no attribute {name!r}")
