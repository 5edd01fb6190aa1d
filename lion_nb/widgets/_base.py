"""What every lion_nb widget shares: its front-end code, a static rendering, safe callbacks.

Each widget is one `anywidget.AnyWidget` (its ES module and stylesheet ship inside the
package: no build step, no CDN) whose state is kernel-made, sanitized HTML plus plain data.
ipywidgets controls (buttons, text boxes) sit beside it where a stock control does the job.

Every widget also carries a static ``text/html`` and a readable ``text/plain`` rendering in
its display bundle, so a saved notebook shows the conversation on GitHub, in nbviewer and
after nbconvert, where no kernel runs the widget. Those renderings hold no ids, times or
durations, so executed notebooks compare equal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "PRELUDE",
    "STATIC",
    "StaticFallback",
    "call_safely",
    "esm",
    "release",
    "stylesheet",
    "stylesheet_version",
]

logger = logging.getLogger("lion_nb.widgets")

STATIC = Path(__file__).parent / "_static"
#: what every widget's module starts with, in order: the stylesheet's claim, the shared helpers
PRELUDE = ("_styles.js", "_shared.js")


@cache
def stylesheet() -> str:
    """The widgets' CSS: every stylesheet in ``_static`` (one per widget, all scoped under
    ``lnb-`` classes), then the code highlighting rules."""
    from ..rendering import HIGHLIGHT_CSS

    sheets = sorted(STATIC.glob("*.css"))
    return "\n".join([*(s.read_text(encoding="utf-8") for s in sheets), HIGHLIGHT_CSS])


@cache
def stylesheet_version() -> str:
    """``<lion_nb version>+<hash of the stylesheet>``: which stylesheet a page holds."""
    import hashlib

    from .. import __version__

    return f"{__version__}+{hashlib.sha256(stylesheet().encode()).hexdigest()[:12]}"


@cache
def esm(name: str) -> str:
    """The ES module of the widget whose front end is ``_static/<name>``: the stylesheet and
    ``_styles.js``, which puts it in the page (styles are never a widget's saved state, where
    an older version's would override the running one's); ``_shared.js``, the drawing helpers
    every widget uses (``el``, ``icon``, ...), defined there once; then the widget's own file.
    One string, because anywidget loads each widget as one module: a relative ``import`` would
    not resolve in JupyterLab, Notebook 7 or an exported page. Every widget is built this one
    way (tests/widgets/test_front_end.py)."""
    import json

    prelude = (
        f"const LNB_CSS = {json.dumps(stylesheet())};\n"
        f"const LNB_CSS_VERSION = {json.dumps(stylesheet_version())};\n"
    )
    parts = [*PRELUDE, name]
    return prelude + "\n".join((STATIC / part).read_text(encoding="utf-8") for part in parts)


def call_safely(callback: Callable[..., Any], *args: Any) -> Any:
    """Run a user or front-end callback; log its error instead of raising into the kernel's
    comm handler (which would print a traceback into whichever cell runs next)."""
    try:
        return callback(*args)
    except Exception:
        logger.warning("a widget callback failed", exc_info=True)
        return None


def release(widget: Any, *, subscriptions: str = "_subscription") -> None:
    """Cancel what a live widget holds -- its signal subscription(s) and its throttle -- before
    it closes. Safe on a half-built widget: ipywidgets' ``__del__`` closes those too."""
    held = getattr(widget, subscriptions, None)
    for subscription in held if isinstance(held, list) else [held]:
        if subscription is not None:
            subscription.cancel()
    setattr(widget, subscriptions, [] if isinstance(held, list) else None)
    throttle = getattr(widget, "_throttle", None)
    if throttle is not None:
        throttle.cancel()


class StaticFallback:
    """Adds ``static_html()`` and ``static_text()`` to a widget's display bundle."""

    def static_html(self) -> str:  # pragma: no cover - every widget overrides it
        return ""

    def static_text(self) -> str:  # pragma: no cover - every widget overrides it
        return repr(self)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        found = super()._repr_mimebundle_(**kwargs) or {}  # type: ignore[misc]
        data = found[0] if isinstance(found, tuple) else found  # anywidget: (data, metadata)
        try:
            data["text/html"] = self.static_html()
            data["text/plain"] = self.static_text()
        except Exception:  # a display must never fail a cell
            logger.warning("could not render a widget's static view", exc_info=True)
        return found
