"""An allowlist HTML sanitizer for model output (the standard library's parser, no dependency).

Model output is untrusted: a model can be prompted -- by a web page it read, a file it was
shown -- to write ``<script>`` or an ``onerror=`` handler. Only formatting tags survive, with
only harmless attributes; URLs must be http(s), mailto or a relative path (images may also
be ``data:image/...``). Everything else is escaped as text, and the content of ``script``,
``style``, ``iframe`` and similar elements is dropped entirely.
"""

from __future__ import annotations

from html import escape
from html.parser import HTMLParser

__all__ = ["sanitize_html"]

ALLOWED_TAGS = frozenset(
    [
        "a",
        "abbr",
        "b",
        "blockquote",
        "br",
        "caption",
        "code",
        "col",
        "colgroup",
        "dd",
        "del",
        "details",
        "div",
        "dl",
        "dt",
        "em",
        "figcaption",
        "figure",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "i",
        "img",
        "ins",
        "kbd",
        "li",
        "mark",
        "ol",
        "p",
        "pre",
        "q",
        "s",
        "samp",
        "small",
        "span",
        "strong",
        "sub",
        "summary",
        "sup",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "u",
        "ul",
    ]
)
VOID_TAGS = frozenset({"br", "col", "hr", "img"})
DROP_CONTENT = frozenset(
    {"script", "style", "iframe", "object", "embed", "noscript", "template", "svg", "math"}
)
ALLOWED_ATTRS = frozenset(
    {"href", "src", "alt", "title", "colspan", "rowspan", "align", "start", "class", "open"}
)
URL_ATTRS = frozenset({"href", "src"})
SAFE_SCHEMES = ("http:", "https:", "mailto:")


def _safe_url(value: str, *, image: bool) -> bool:
    url = "".join(value.split()).lower()  # browsers ignore whitespace inside schemes
    if ":" not in url.split("/", 1)[0] or url.startswith(("#", "/", "./", "../", "?")):
        return True  # relative
    if image and url.startswith(
        ("data:image/png", "data:image/jpeg", "data:image/gif", "data:image/webp")
    ):
        return True
    return url.startswith(SAFE_SCHEMES)


class _Sanitizer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[str] = []
        self.dropping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in DROP_CONTENT:
            if tag not in VOID_TAGS:
                self.dropping += 1
            return
        if self.dropping or tag not in ALLOWED_TAGS:
            return
        kept = []
        for name, value in attrs:
            if name not in ALLOWED_ATTRS or value is None:
                continue
            if name in URL_ATTRS and not _safe_url(value, image=tag == "img"):
                continue
            kept.append(f' {name}="{escape(value, quote=True)}"')
        if tag == "a":
            kept.append(' rel="noopener noreferrer nofollow"')
        self.out.append(f"<{tag}{''.join(kept)}>")
        if tag not in VOID_TAGS:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID_TAGS and self.open and self.open[-1] == tag:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in DROP_CONTENT:
            self.dropping = max(0, self.dropping - 1)
            return
        if self.dropping or tag not in self.open:
            return
        while self.open:
            top = self.open.pop()
            self.out.append(f"</{top}>")
            if top == tag:
                break

    def handle_data(self, data: str) -> None:
        if not self.dropping:
            self.out.append(escape(data, quote=False))

    def close_all(self) -> str:
        self.close()
        while self.open:
            self.out.append(f"</{self.open.pop()}>")
        return "".join(self.out)


def sanitize_html(html: str) -> str:
    """``html`` with only allowlisted tags, attributes and URL schemes kept."""
    parser = _Sanitizer()
    parser.feed(html)
    return parser.close_all()
