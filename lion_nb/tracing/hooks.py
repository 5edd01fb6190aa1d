"""Where the turn lifecycle, the model calls, the tool calls and the evaluations find tracing.

`ACTIVE` is the running `lion_nb.tracing.spans.Tracer`, or ``None`` while tracing is off.
Callers read it once (``tracer = hooks.ACTIVE``) and do nothing more when it is ``None``, so
tracing off costs one attribute look-up per call and imports no OpenTelemetry module.
`lion_nb.tracing.enable` and `disable` set it; nothing else does.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["ACTIVE", "invoke", "safely"]

#: the running tracer (``None``: tracing is off)
ACTIVE: Any = None


def safely(method: Any, *args: Any) -> Any:
    """Call a tracer's method; a failure is logged, never raised into the work it traces."""
    try:
        return method(*args)
    except Exception:
        logging.getLogger("lion_nb.tracing").warning("tracing failed", exc_info=True)
        return None


async def invoke(branch: Any, imodel: Any, request: Any, purpose: str) -> Any:
    """``imodel.invoke(request)`` with a model-call span while tracing is on (for the
    unrecorded calls of ``parse`` and ``interpret``; ``purpose`` says which)."""
    tracer = ACTIVE
    span = None if tracer is None else safely(tracer.model_start, branch, imodel, request)
    if span is not None:
        safely(span.set_attribute, "lion_nb.model_call.purpose", purpose)
    try:
        call = await imodel.invoke(request)
    except BaseException as exc:  # cancelled mid-call: the span ends failed
        if span is not None:
            safely(tracer.model_failed, span, exc)
        raise
    if span is not None:
        safely(tracer.model_end, span, call)
    return call
