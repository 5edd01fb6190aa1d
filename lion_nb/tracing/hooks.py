"""Where the turn lifecycle, the model calls, the tool calls and the evaluations find tracing.

`ACTIVE` is the running `lion_nb.tracing.spans.Tracer`, or ``None`` while tracing is off.
Callers read it once (``tracer = hooks.ACTIVE``) and do nothing more when it is ``None``, so
tracing off costs one attribute look-up per call and imports no OpenTelemetry module.
`lion_nb.tracing.enable` and `disable` set it; nothing else does.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ACTIVE"]

#: the running tracer (``None``: tracing is off)
ACTIVE: Any = None
