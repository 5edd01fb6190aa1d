"""Markdown to safe HTML: markdown-it with raw HTML off, then the allowlist sanitizer.

Highlighting, when asked for, runs last, on the sanitized HTML: it adds only its own token
spans, so the sanitizer never has to allow them. markdown-it is imported on first use, not
at load.
"""

from __future__ import annotations

from .highlight import highlight_code_blocks
from .sanitize import sanitize_html

__all__ = ["markdown_html"]

_md = None


def markdown_html(text: str, *, highlight: bool = False) -> str:
    """``text`` as Markdown rendered to safe HTML (raw HTML in the text is shown as text),
    with its fenced code blocks highlighted if ``highlight``."""
    global _md
    if _md is None:
        from markdown_it import MarkdownIt

        _md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    html = sanitize_html(_md.render(text))
    return highlight_code_blocks(html) if highlight else html
