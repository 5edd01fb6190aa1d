"""An allowlist HTML sanitizer for model output (the standard library's parser, no dependency).

Model output is untrusted: a model can be prompted -- by a web page it read, a file it was
shown -- to write ``<script>`` or an ``onerror=`` handler. Only formatting tags survive, with
only harmless attributes; URLs must be http(s), mailto or a relative path. Everything else is
escaped as text, and the content of ``script``, ``style``, ``iframe`` and similar elements is
dropped entirely.

Two quieter channels are closed too. An image loads by itself, so a remote one would send
whatever the model put in its URL (say, a secret from the prompt) to a stranger's server the
moment the answer is shown: only inline ``data:`` images of raster types (PNG, JPEG, GIF,
WebP) are kept as images; an image on the web becomes a link the reader can choose to follow,
any other one its description.
And CSS classes are the notebook's own styling, so model output could dress itself up as
JupyterLab's dialogs or buttons: only ``language-*`` (a code block's language) is kept.
"""

from __future__ import annotations

import re
from html import escape
from html.parser import HTMLParser

__all__ = ["INLINE_IMAGES", "sanitize_html"]

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
INLINE_IMAGES = ("data:image/png", "data:image/jpeg", "data:image/gif", "data:image/webp")
_LANGUAGE_CLASS = re.compile(r"language-[\w+#.-]+\Z")


def _compact(value: str) -> str:
    return "".join(value.split()).lower()  # browsers ignore whitespace inside schemes


def _safe_url(value: str) -> bool:
    url = _compact(value)
    if ":" not in url.split("/", 1)[0] or url.startswith(("#", "/", "./", "../", "?")):
        return True  # relative
    return url.startswith(SAFE_SCHEMES)


def _inline_image(value: str) -> bool:
    url = _compact(value)
    return any(
        url.startswith(kind) and url[len(kind) : len(kind) + 1] in (";", ",")
        for kind in INLINE_IMAGES
    )


def _classes(value: str) -> str:
    """Only ``language-*`` classes: the notebook's own class names are not for model output."""
    return " ".join(c for c in value.split() if _LANGUAGE_CLASS.match(c))


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
        if tag == "img" and not _inline_image(dict(attrs).get("src") or ""):
            self._image_as_link(attrs)
            return
        kept = []
        for name, value in attrs:
            if name not in ALLOWED_ATTRS or value is None:
                continue
            if name == "src" and not _inline_image(value):
                continue
            if name == "href" and not _safe_url(value):
                continue
            if name == "class":
                value = _classes(value)
                if not value:
                    continue
            kept.append(f' {name}="{escape(value, quote=True)}"')
        if tag == "a":
            kept.append(' rel="noopener noreferrer nofollow"')
        self.out.append(f"<{tag}{''.join(kept)}>")
        if tag not in VOID_TAGS:
            self.open.append(tag)

    def _image_as_link(self, attrs: list[tuple[str, str | None]]) -> None:
        """An image that would load from elsewhere: a link to it if it is on the web, else
        its description only (a relative path means nothing in a notebook's output)."""
        found = dict(attrs)
        src, alt = found.get("src") or "", found.get("alt") or ""
        if _compact(src).startswith(("http:", "https:", "//")):
            label = escape(f"image: {alt or src}", quote=False)
            href = escape(src, quote=True)
            self.out.append(f'<a href="{href}" rel="noopener noreferrer nofollow">{label}</a>')
        else:  # nowhere safe to point: the description only
            self.out.append(escape(f"image: {alt}" if alt else "image", quote=False))

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
