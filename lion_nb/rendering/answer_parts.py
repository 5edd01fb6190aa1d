"""What an answer carries besides its text: the model's thinking and the sources it cited.

Both come from the answer's ``metadata`` and both are model output, so both are untrusted:

- ``thinking`` (a string) renders like the answer (Markdown, raw HTML off, the allowlist
  sanitizer), folded away (`thinking_details_html`, a ``<details>``), with
  ``thinking_seconds`` for how long it took.
- ``citations`` (a list of ``{"n", "title", "url", "cited_text", "kind", "end"}``) become a
  superscript ``[n]`` after character ``end`` of the answer's text (``end=None``: listed
  only) and a numbered list of the sources. A source's title and quote are escaped, never
  read as HTML; its URL becomes a link only when it is http(s) with a host -- opened in a new
  tab with ``rel="noopener noreferrer"`` -- and nothing of it ever loads by itself.

Markers are put in the Markdown source as private-use characters (removed from the text
first, so a model cannot forge one) and turned into ``<sup>`` after sanitizing: the
sanitizer never has to allow anything new.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from html import escape
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "CITATION_KINDS",
    "answer_html",
    "answer_markdown",
    "citations",
    "citations_html",
    "citations_text",
    "safe_url",
    "thinking_details_html",
    "thinking_html",
    "thinking_markdown",
    "thinking_words",
]

CITATION_KINDS = {"document": "document", "web_search": "web search", "url": "web page"}
_OPEN, _CLOSE = "\ue000", "\ue001"
_MARK = re.compile(f"{_OPEN}(\\d+){_CLOSE}")
_QUOTE_LIMIT = 300
_CONTROL = re.compile(r"[\x00-\x20\x7f]")


def citations(metadata: Any) -> list[dict[str, Any]]:
    """The well-formed citations of an answer's ``metadata``, by number; others are skipped."""
    found = (metadata or {}).get("citations") if isinstance(metadata, dict) else None
    out: list[dict[str, Any]] = []
    for item in found if isinstance(found, list) else ():
        if not isinstance(item, dict):
            continue
        n, end = item.get("n"), item.get("end")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            continue
        out.append(
            {
                "n": n,
                "title": _text(item.get("title")),
                "url": _text(item.get("url")),
                "cited_text": _text(item.get("cited_text")),
                "kind": item.get("kind") if item.get("kind") in CITATION_KINDS else None,
                "end": end if isinstance(end, int) and not isinstance(end, bool) else None,
            }
        )
    return sorted(out, key=lambda c: c["n"])


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def safe_url(url: str | None) -> str | None:
    """``url`` if it is an http(s) URL with a host and nothing a browser would skip inside
    it (the way ``java\\tscript:`` hides a scheme), else ``None``."""
    if not url or _CONTROL.search(url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return url if parts.scheme.lower() in ("http", "https") and parts.hostname else None


def _marked(text: str, cited: Iterable[dict[str, Any]], mark: Any) -> str:
    """``text`` with ``mark(n)`` inserted after each citation's ``end`` character."""
    at: dict[int, list[int]] = {}
    for c in cited:
        if c["end"] is not None:
            at.setdefault(max(0, min(c["end"], len(text))), []).append(c["n"])
    pieces, last = [], 0
    for end in sorted(at):
        pieces += [text[last:end], *(mark(n) for n in sorted(set(at[end])))]
        last = end
    return "".join([*pieces, text[last:]])


def answer_html(text: str, metadata: Any, *, highlight: bool = False) -> str:
    """The answer's text as safe HTML, with its citation markers and its list of sources."""
    from .markdown import markdown_html

    cited = citations(metadata)
    text = text.replace(_OPEN, "").replace(_CLOSE, "")
    marked = _marked(text, cited, lambda n: f"{_OPEN}{n}{_CLOSE}")
    html = markdown_html(marked, highlight=highlight) if marked else ""
    html = _MARK.sub(r'<sup class="lnb-cite">[\1]</sup>', html)
    return html + citations_html(cited)


def citations_html(cited: list[dict[str, Any]]) -> str:
    """The numbered list of sources ("" with none); every string escaped."""
    if not cited:
        return ""
    items = []
    for c in cited:
        url = safe_url(c["url"])
        name = escape(c["title"] or (urlsplit(url).hostname if url else None) or "source")
        if url:
            name = (
                f'<a href="{escape(url, quote=True)}" target="_blank" '
                f'rel="noopener noreferrer">{name}</a>'
            )
        kind = f' <span class="lnb-cite-kind">({CITATION_KINDS[c["kind"]]})</span>'
        quote = c["cited_text"]
        quoted = f' <q class="lnb-cite-quote">{escape(_short(quote))}</q>' if quote else ""
        items.append(
            f'<li><span class="lnb-cite-n">[{c["n"]}]</span> {name}'
            f"{kind if c['kind'] else ''}{quoted}</li>"
        )
    return f'<ol class="lnb-citations" aria-label="sources">{"".join(items)}</ol>'


def _short(text: str, limit: int = _QUOTE_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def citations_text(metadata: Any) -> str:
    """The sources as plain text, one line each ("" with none)."""
    lines = []
    for c in citations(metadata):
        url = safe_url(c["url"])
        lines.append(f"[{c['n']}] {c['title'] or 'source'}" + (f" <{url}>" if url else ""))
    return "\n".join(lines)


def thinking_words(seconds: Any) -> str:
    """ "Thought for 3 s" (or "Thought" when the time is not known)."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds < 0:
        return "Thought"
    return f"Thought for {seconds:.1f} s" if seconds < 10 else f"Thought for {seconds:.0f} s"


def thinking_details_html(thinking_html: str, summary: str = "Thinking") -> str:
    """The thinking folded away: a ``<details>`` with ``summary`` around ``thinking_html``
    (the thinking already rendered by `thinking_html`)."""
    return (
        f'<details class="lnb-thinking-static"><summary>{escape(summary)}</summary>'
        f"{thinking_html}</details>"
    )


def thinking_html(thinking: str) -> str:
    """The thinking's text as safe HTML, like an answer's (Markdown, then the sanitizer)."""
    from .markdown import markdown_html

    return markdown_html(thinking) if thinking else ""


def answer_markdown(text: str, metadata: Any) -> str:
    """The answer as Markdown: ``<sup>[n]</sup>`` markers, then its sources as a list (not
    as footnotes, which GitHub drops when no marker refers to them)."""
    cited = citations(metadata)
    if not cited:
        return text
    body = _marked(text, cited, lambda n: f"<sup>[{n}]</sup>")
    notes = ["Sources:", ""]
    for c in cited:
        title = _md_escape(c["title"] or "source")
        url = safe_url(c["url"])
        line = f"- [{c['n']}] " + (f"[{title}](<{_md_url(url)}>)" if url else title)
        if c["cited_text"]:
            line += f" — “{_md_escape(_short(c['cited_text']))}”"
        notes.append(line)
    return body.rstrip() + "\n\n" + "\n".join(notes)


def _md_escape(text: str) -> str:
    """Text that stays text in Markdown: HTML and link syntax escaped, on one line."""
    text = " ".join(text.split())
    text = escape(text, quote=False)
    return re.sub(r"([\\`*_\[\]()!#|<>])", r"\\\1", text)


def _md_url(url: str) -> str:
    return url.replace("<", "%3C").replace(">", "%3E").replace(" ", "%20")


def thinking_markdown(thinking: str, seconds: Any) -> str:
    """The thinking folded away in Markdown: a ``<details>`` block whose text cannot close
    it or add HTML (``<``, ``>`` and ``&`` are escaped)."""
    body = escape(thinking.strip(), quote=False)
    return f"<details>\n<summary>{thinking_words(seconds)}</summary>\n\n{body}\n\n</details>"
