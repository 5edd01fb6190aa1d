"""Model output as safe HTML: the allowlist sanitizer, the Markdown renderer and code
highlighting.

Shared by the notebook layer (a cell's answer) and the widgets (every message they show), so
both apply one policy. Nothing heavy is imported until a turn or a widget renders something:
nh3, markdown-it and Pygments load on first use, and ``HIGHLIGHT_CSS`` is built when first
read.
"""

from __future__ import annotations

from .highlight import MAX_HIGHLIGHT, highlight_code_blocks, highlight_css
from .markdown import markdown_html
from .sanitize import INLINE_IMAGES, sanitize_html

__all__ = [
    "HIGHLIGHT_CSS",
    "INLINE_IMAGES",
    "MAX_HIGHLIGHT",
    "highlight_code_blocks",
    "highlight_css",
    "markdown_html",
    "sanitize_html",
]

HIGHLIGHT_CSS: str  # `highlight_css()`, built when first read


def __getattr__(name: str) -> str:
    if name == "HIGHLIGHT_CSS":
        return highlight_css()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
