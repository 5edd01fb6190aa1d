"""Markdown to safe HTML: markdown-it with raw HTML off, then the allowlist sanitizer.

Highlighting, when asked for, runs last, on the sanitized HTML: it adds only its own token
spans, so the sanitizer never has to allow them. markdown-it is imported on first use, not
at load; one line of plain words (a system prompt, a table row's prompt) is one paragraph
in any Markdown, so it is written without it (the import is most of a first
`SessionExplorer`'s build).
"""

from __future__ import annotations

import re

from .highlight import highlight_code_blocks
from .sanitize import sanitize_html

__all__ = ["markdown_html"]

_md = None
#: one line of words (letters, digits, ,.;:?!' and single spaces), starting with a letter
#: (not a list, an indented code block or a heading) and not ending with a space: markdown-it
#: makes it ``<p>line</p>``, nothing else
_PLAIN = re.compile(r"[A-Za-z](?:[A-Za-z0-9,.;:?!']| (?=[^ ]))*")


def markdown_html(text: str, *, highlight: bool = False) -> str:
    """``text`` as Markdown rendered to safe HTML (raw HTML in the text is shown as text),
    with its fenced code blocks highlighted if ``highlight``."""
    global _md
    if _PLAIN.fullmatch(text):
        return f"<p>{text}</p>\n"
    if _md is None:
        from markdown_it import MarkdownIt

        _md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    html = sanitize_html(_md.render(text))
    return highlight_code_blocks(html) if highlight else html
