"""An allowlist HTML sanitizer for model output, on ``nh3`` (the Rust ``ammonia`` sanitizer).

Model output is untrusted: a model can be prompted -- by a web page it read, a file it was
shown -- to write ``<script>`` or an ``onerror=`` handler. Only formatting tags survive, with
only harmless attributes; URLs must be http(s), mailto or a relative path; every link gets
``rel="noopener noreferrer nofollow"``. Other tags are removed (their text kept, escaped), and
the content of ``script``, ``style``, ``iframe`` and similar elements is dropped entirely.

Two quieter channels are closed too. An image loads by itself, so a remote one would send
whatever the model put in its URL (say, a secret from the prompt) to a stranger's server the
moment the answer is shown: only inline ``data:`` images of raster types (PNG, JPEG, GIF,
WebP) are kept as images; an image on the web becomes a link the reader can choose to follow,
any other one its description. And CSS classes are the notebook's own styling, so model output
could dress itself up as JupyterLab's dialogs or buttons: only ``language-*`` (a code block's
language) is kept.

Parsing is html5ever's, as a browser parses, and nh3 enforces whatever its options can say:
the tag and attribute allowlists, the elements dropped with their content, URL schemes
(relative URLs pass), ``rel`` on links and comments. What its options cannot say is done in
two small steps around it:

- ``attribute_filter`` narrows two rules. Ammonia checks URL schemes before the filter runs,
  with one list for ``href`` and ``src``; ``data`` is on that list so that inline images
  survive, and the filter keeps a ``data:`` URL only as a raster image's ``src``. And
  ``allowed_classes`` takes exact class names, not a pattern, so the filter keeps
  ``language-*``.
- Images are finished after nh3, because nh3 rewrites attributes but never turns one element
  into another (an image into a link or into text). The filter leaves an ``<img>`` its
  ``src`` only when it is an inline raster image or on the web; the step then replaces every
  ``<img`` tag in nh3's output unless its ``src`` is an inline raster image. That output has
  every ``<`` of text and attribute values escaped, so each ``<img`` there opens a real
  element, and the step fails closed: a tag it cannot read is replaced, never kept.

Parsing as a browser does differs from the standard-library parser this replaced only where
that one read HTML unlike a browser: ``<embed>`` is empty (the old parser dropped everything
after it), and an HTML tag such as ``<p>`` inside ``<svg>`` or ``<math>`` ends that element,
so its text is kept where a browser would show it.
"""

from __future__ import annotations

import re
from functools import cache
from html import escape, unescape
from typing import Any

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
DROP_CONTENT = frozenset(
    {"script", "style", "iframe", "object", "embed", "noscript", "template", "svg", "math"}
)
ALLOWED_ATTRS = frozenset(
    {"href", "src", "alt", "title", "colspan", "rowspan", "align", "start", "class", "open"}
)
URL_SCHEMES = frozenset({"http", "https", "mailto", "data"})  # data: only as an image, below
LINK_REL = "noopener noreferrer nofollow"
INLINE_IMAGES = ("data:image/png", "data:image/jpeg", "data:image/gif", "data:image/webp")
_LANGUAGE_CLASS = re.compile(r"language-[\w+#.-]+\Z")
_IGNORED_IN_URL = re.compile(r"[\x00-\x20\s]+")  # what browsers skip inside a URL's scheme
_IMG_TAG = re.compile(r"<img\b[^>]*>")
_ATTR = re.compile(r'\s([\w-]+)="([^"]*)"')


def _compact(value: str) -> str:
    return _IGNORED_IN_URL.sub("", value).lower()


def _inline_image(value: str) -> bool:
    url = _compact(value)
    return any(
        url.startswith(kind) and url[len(kind) : len(kind) + 1] in (";", ",")
        for kind in INLINE_IMAGES
    )


def _remote(value: str) -> bool:
    return _compact(value).startswith(("http:", "https:", "//"))


def _classes(value: str) -> str:
    """Only ``language-*`` classes: the notebook's own class names are not for model output."""
    return " ".join(c for c in value.split() if _LANGUAGE_CLASS.match(c))


def _attribute(tag: str, name: str, value: str) -> str | None:
    """nh3's ``attribute_filter``: called after nh3's own checks, for the rules they lack."""
    if name == "class":
        return _classes(value) or None
    if name == "src":  # an image on the web keeps it only until `_finish_image` makes a link
        return value if _inline_image(value) or (tag == "img" and _remote(value)) else None
    if name == "href" and _compact(value).startswith("data:"):
        return None
    return value


def _finish_image(match: re.Match[str]) -> str:
    """An inline raster image stays as nh3 wrote it. One on the web becomes a link to it; any
    other, its description only (a relative path means nothing in a notebook's output)."""
    found = {name: unescape(value) for name, value in _ATTR.findall(match.group())}
    src, alt = found.get("src", ""), found.get("alt", "")
    if _inline_image(src):
        return match.group()
    if _remote(src):
        label = escape(f"image: {alt or src}", quote=False)
        return f'<a href="{escape(src, quote=True)}" rel="{LINK_REL}">{label}</a>'
    return escape(f"image: {alt}" if alt else "image", quote=False)


@cache
def _cleaner() -> Any:
    import nh3  # on first use: `import lion_nb` stays cheap

    return nh3.Cleaner(
        tags=set(ALLOWED_TAGS),
        clean_content_tags=set(DROP_CONTENT),
        attributes={"*": set(ALLOWED_ATTRS)},
        attribute_filter=_attribute,
        url_schemes=set(URL_SCHEMES),
        link_rel=LINK_REL,
        strip_comments=True,
    )


def sanitize_html(html: str) -> str:
    """``html`` with only allowlisted tags, attributes and URL schemes kept."""
    return _IMG_TAG.sub(_finish_image, _cleaner().clean(html))
