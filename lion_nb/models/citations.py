"""Citations: where an answer's text came from, in one shape for every provider.

An answer that cites its sources carries ``metadata["citations"]``: a list of
``{"n", "title", "url", "cited_text", "kind", "end"}``, one entry a citation, in the order
they appear. ``n`` numbers the sources from 1 in order of first appearance (the same source
keeps its number); ``kind`` is ``"document"`` (a document the request sent), ``"web_search"``
(a result of Anthropic's web search tool) or ``"url"`` (an OpenAI URL annotation); ``end`` is
the character offset in the answer's text after which the footnote marker goes (None when
not known). The widgets render this shape, so it stays as it is.

Read from the provider's own answer: Anthropic's ``citations`` on text blocks (streamed as
``citations_delta``s), the Responses API's ``url_citation`` annotations on ``output_text``
parts, and Chat Completions' ``message.annotations``. Citations are what the model said, for
the reader: they are never sent back to a provider.

Asking for them: Claude cites a document only when its block says ``"citations": {"enabled":
true}``, so ``citations=True`` (on the `iModel` or per call) puts that on every ``document``
block the Anthropic endpoint sends (PDFs and text documents; a block that says already is
left as it is). Off, the default, requests are as before. An endpoint that cannot ask yet
declares ``takes_citations = False``: the option is left out and the answer's notes say so.
A value other than True, False or None is refused before any request.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigurationError
from ..shapes import JsonObject

__all__ = [
    "CITATIONS",
    "anthropic_citations",
    "chat_citations",
    "check_citations",
    "responses_citations",
]

#: the metadata key (of an answer, then of its message) holding its citations
CITATIONS = "citations"


def check_citations(value: object) -> bool | None:
    """``value`` if it is True, False or None; a one-line `ConfigurationError` otherwise."""
    if value is None or isinstance(value, bool):
        return value
    raise ConfigurationError(f"`citations={value!r:.40}`: give True or False.")


class _Numbering:
    """Numbers sources in order of first appearance and collects the entries."""

    def __init__(self) -> None:
        self.numbers: dict[tuple[Any, ...], int] = {}
        self.entries: list[dict[str, Any]] = []

    def add(
        self,
        source: tuple[Any, ...],
        *,
        kind: str,
        title: Any,
        url: Any,
        cited_text: Any,
        end: int | None,
    ) -> None:
        n = self.numbers.setdefault(source, len(self.numbers) + 1)
        self.entries.append(
            {
                "n": n,
                "title": title if isinstance(title, str) else None,
                "url": url if isinstance(url, str) else None,
                "cited_text": cited_text if isinstance(cited_text, str) else None,
                "kind": kind,
                "end": end,
            }
        )


def anthropic_citations(content: list[object]) -> list[JsonObject]:
    """The citations of a Messages API answer's ``content`` blocks; each marker goes at the
    end of the text block that cites (the answer's text is its text blocks joined)."""
    found = _Numbering()
    offset = 0
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "text":
            continue
        text = block.get("text")
        offset += len(text) if isinstance(text, str) else 0
        for cite in block.get("citations") or ():
            if not isinstance(cite, dict):
                continue
            kind = cite.get("type")
            if kind == "web_search_result_location":
                url = cite.get("url")
                found.add(
                    ("web", url if url is not None else cite.get("title")),
                    kind="web_search",
                    title=cite.get("title"),
                    url=url,
                    cited_text=cite.get("cited_text"),
                    end=offset,
                )
            else:  # char_location, page_location, content_block_location, ...
                title = cite.get("document_title")
                found.add(
                    ("document", cite.get("document_index"), title),
                    kind="document",
                    title=title,
                    url=None,
                    cited_text=cite.get("cited_text"),
                    end=offset,
                )
    return found.entries


def _url_annotations(found: _Numbering, annotations: Any, offset: int) -> None:
    for note in annotations if isinstance(annotations, list) else ():
        if not isinstance(note, dict) or note.get("type") != "url_citation":
            continue
        # Chat Completions nests the fields under `url_citation`; the Responses API is flat
        nested = note.get("url_citation")
        fields: dict[str, Any] = nested if isinstance(nested, dict) else note
        url, end = fields.get("url"), fields.get("end_index")
        found.add(
            ("url", url),
            kind="url",
            title=fields.get("title"),
            url=url,
            cited_text=None,
            end=offset + end if isinstance(end, int) and not isinstance(end, bool) else None,
        )


def responses_citations(output: list[object]) -> list[JsonObject]:
    """The ``url_citation`` annotations of a Responses API answer's ``output`` items; an
    annotation's ``end_index`` counts in its own part, so the parts before it are added."""
    found = _Numbering()
    offset = 0
    for item in output:
        if not isinstance(item, dict) or item.get("type") != "message":
            continue
        for part in item.get("content") or ():
            if not isinstance(part, dict):
                continue
            if part.get("type") == "output_text":
                _url_annotations(found, part.get("annotations"), offset)
            text = part.get("text") if part.get("type") == "output_text" else part.get("refusal")
            offset += len(text) if isinstance(text, str) else 0
    return found.entries


def chat_citations(message: object) -> list[JsonObject]:
    """The ``url_citation`` annotations of a Chat Completions ``message``, where the server
    sends them."""
    found = _Numbering()
    if isinstance(message, dict):
        _url_annotations(found, message.get("annotations"), 0)
    return found.entries
