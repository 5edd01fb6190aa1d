"""Where the turn lifecycle, the model calls, the tool calls and the evaluations find tracing.

`ACTIVE` is the running `lion_nb.tracing.spans.Tracer`, or ``None`` while tracing is off.
Callers read it once (``tracer = hooks.ACTIVE``) and do nothing more when it is ``None``, so
tracing off costs one attribute look-up per call and imports no OpenTelemetry module.
`lion_nb.tracing.enable` and `disable` set it; nothing else does.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["ACTIVE", "safely"]

#: the running tracer (``None``: tracing is off)
ACTIVE: Any = None


def safely(method: Any, *args: Any) -> Any:
    """Call a tracer's method; a failure is logged, never raised into the work it traces."""
    try:
        return method(*args)
    except Exception:
        logging.getLogger("lion_nb.tracing").warning("tracing failed", exc_info=True)
        return None
