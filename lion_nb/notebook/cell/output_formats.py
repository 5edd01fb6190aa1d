"""Turning a turn's result into what the cell shows, in one of five output formats.

Model output is untrusted. ``markdown`` (the default) renders through markdown-it with raw
HTML disabled and then through the allowlist sanitizer, so nothing a model writes can run
script in the notebook; ``html`` goes through the same sanitizer; ``json`` and ``text`` are
inert mimetypes. ``code`` puts the answer's code into a new cell below through
``set_next_input`` and never runs it. markdown-it is imported on first use, not at load.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from html import escape
from typing import Any

from ...rendering import markdown_html, sanitize_html
from .interpolate import format_value
from .options import FORMATS

__all__ = ["FORMATS", "Table", "extract_code", "markdown_html", "mime_bundle", "to_json"]

_FENCE = re.compile(r"^(```|~~~)[ \t]*([\w+#.-]*)[^\n]*\n(.*?)^\1[ \t]*$", re.S | re.M)


def extract_code(text: str) -> str:
    """The code in an answer: its fenced blocks (Python ones first if any), else the text."""
    blocks = [(lang.lower(), body) for _, lang, body in _FENCE.findall(text)]
    if not blocks:
        return text.strip()
    python = [body for lang, body in blocks if lang in ("python", "py", "python3", "ipython")]
    chosen = python or [body for _, body in blocks]
    return "\n\n".join(b.rstrip() for b in chosen)


def to_json(value: Any) -> Any:
    """A JSON-compatible form of a result: models dumped, JSON text parsed, other text kept."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def as_text(value: Any) -> str:
    return "" if value is None else format_value(value)


def mime_bundle(value: Any, fmt: str) -> dict[str, Any]:
    """The display data for ``value`` in output format ``fmt``."""
    text = as_text(value)
    if fmt == "text":
        return {"text/plain": text}
    if fmt == "json":
        data = to_json(value)
        return {
            "application/json": data,
            "text/plain": json.dumps(data, indent=2, ensure_ascii=False),
        }
    if fmt == "html":
        return {"text/html": sanitize_html(text), "text/plain": text}
    if not isinstance(value, str) and value is not None:
        text = "```json\n" + json.dumps(to_json(value), indent=2, ensure_ascii=False) + "\n```"
    return {"text/html": markdown_html(text), "text/plain": as_text(value)}


class Table:
    """A small table returned by ``%lion`` subcommands: HTML in a notebook, text elsewhere.

    ``rows`` keeps the data (a list of dicts) so a cell can work with it.
    """

    def __init__(self, columns: Sequence[str], rows: Sequence[dict[str, Any]], *, title: str = ""):
        self.columns = list(columns)
        self.rows = [dict(r) for r in rows]
        self.title = title

    def __len__(self) -> int:
        return len(self.rows)

    def _cells(self) -> list[list[str]]:
        return [
            ["" if r.get(c) is None else str(r.get(c)) for c in self.columns] for r in self.rows
        ]

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(_short(v, 200))}</td>" for v in row) + "</tr>"
            for row in self._cells()
        )
        caption = f"<caption>{escape(self.title)}</caption>" if self.title else ""
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def __repr__(self) -> str:
        cells = [[_short(v, 60).replace("\n", " ") for v in row] for row in self._cells()]
        widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(self.columns)]
        lines = [self.title] if self.title else []
        lines.append(
            "  ".join(c.ljust(w) for c, w in zip(self.columns, widths, strict=True)).rstrip()
        )
        lines.append("  ".join("-" * w for w in widths))
        lines += [
            "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells
        ]
        if not self.rows:
            lines.append("(none)")
        return "\n".join(lines)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
