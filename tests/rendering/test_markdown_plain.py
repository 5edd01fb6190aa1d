"""One line of plain words is written without markdown-it: the same HTML as markdown-it's."""

from __future__ import annotations

import random

from markdown_it import MarkdownIt

from lion_nb.rendering import markdown_html, sanitize_html
from lion_nb.rendering.markdown import _PLAIN

_REFERENCE = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
_ALPHABET = "ab Z1 9,.;:?!'  -#*_`<>&\n"


def test_plain_lines_render_as_markdown_it_does():
    rng = random.Random(117)
    fast = 0
    for _ in range(5_000):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 12)))
        expected = sanitize_html(_REFERENCE.render(text))
        assert markdown_html(text, highlight=True) == expected, repr(text)
        fast += bool(_PLAIN.fullmatch(text))
    assert fast > 100  # the fast path was taken, and agreed each time


def test_lists_code_and_breaks_still_go_through_markdown_it():
    assert markdown_html("1. a").startswith("<ol>")
    assert markdown_html("    code").startswith("<pre>")
    assert markdown_html("Label the row.") == "<p>Label the row.</p>\n"
