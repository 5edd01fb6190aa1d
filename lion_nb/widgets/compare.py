"""`Comparison`: the answers of one prompt from several models, side by side.

It shows a run made by ``session.compare(...)`` (or ``%%lion --compare``): one column per
model with its answer (rendered as Markdown and sanitized, like every model-written text),
then its tokens, cost and latency, or its error. It is a plain display object -- a
``text/html`` table and a ``text/plain`` rendering -- rather than a live widget: a
comparison is read once it is complete, and a static table survives in a saved notebook,
on GitHub and after nbconvert exactly as it was shown.
"""

from __future__ import annotations

from html import escape
from typing import Any

__all__ = ["Comparison"]

_CELL = "border:1px solid #ccc;padding:4px 8px;vertical-align:top;text-align:left"
_META = "font-size:0.85em;color:#666"


def _answer(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    dump = getattr(value, "model_dump_json", None)
    return dump(indent=2) if callable(dump) else str(value)


class Comparison:
    """A finished (or stopped) comparison run, as a side-by-side table."""

    def __init__(self, run: Any):
        self.run = run

    def columns(self) -> list[dict[str, Any]]:
        """One dict per model: label, status, answer text, tokens, cost, latency, error."""
        out = []
        for result in self.run.items:
            out.append(
                {
                    "model": result.label,
                    "status": result.status,
                    "answer": _answer(result.value) if result.status == "done" else "",
                    "tokens": result.tokens,
                    "cost_usd": result.cost_usd,
                    "latency": result.duration,
                    "error": result.error_text,
                }
            )
        return out

    @staticmethod
    def _meta(column: dict[str, Any]) -> str:
        parts = [f"{column['tokens']:,} tokens"]
        if column["cost_usd"] is not None:
            parts.append(f"${column['cost_usd']:.4f}")
        if column["latency"] is not None:
            parts.append(f"{column['latency']:.2f} s")
        return " · ".join(parts)

    def _repr_html_(self) -> str:
        from ..rendering import markdown_html

        columns = self.columns()
        head = "".join(f'<th style="{_CELL}">{escape(c["model"])}</th>' for c in columns)
        cells = []
        for c in columns:
            if c["status"] == "done":
                body = markdown_html(c["answer"])
            elif c["error"]:
                body = f"<pre>{escape(c['error'])}</pre>"
            else:
                body = f"<em>{escape(c['status'])}</em>"
            meta = f'<div style="{_META}">{escape(self._meta(c))}</div>'
            cells.append(f'<td style="{_CELL}">{body}{meta}</td>')
        return (
            '<div class="lnb-compare"><table style="border-collapse:collapse;width:100%;'
            f'table-layout:fixed"><tr>{head}</tr><tr>{"".join(cells)}</tr></table></div>'
        )

    def __repr__(self) -> str:
        blocks = []
        for c in self.columns():
            body = c["answer"] if c["status"] == "done" else (c["error"] or c["status"])
            blocks.append(f"── {c['model']} ({self._meta(c)})\n{body}")
        return "\n".join(blocks)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))
