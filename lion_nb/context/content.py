"""`Content`, what a value becomes for a model, and the pieces every converter shares:
text fitted into a token budget, an image's bytes as an attached image, and a MIME bundle
(``_ai_repr_``'s dict, a rich display) read in the order a model prefers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..models.media import IMAGE_TYPES, data_url, file_part, image_size, read_data_url, sniff
from ..tokens import estimate_tokens

__all__ = [
    "LIMITS",
    "Content",
    "check_size",
    "fit_text",
    "from_bundle",
    "image_content",
    "limit_of",
    "text_content",
]

MB = 2**20
#: the largest image and PDF the providers take, and the largest text file read (its text is
#: fitted to the context budget, so more is never sent: the limit bounds what is read)
LIMITS = {"image": 20 * MB, "application/pdf": 32 * MB, "text": 8 * MB}
_WHAT = {"image": "an image", "application/pdf": "a PDF", "text": "a text file"}
_FIX = {
    "image": "Send a smaller image (fewer pixels, or JPEG rather than PNG).",
    "application/pdf": "Send a smaller PDF (fewer pages, or split it).",
    "text": "Attach the part you need (e.g. its last lines), or load it (e.g. with pandas) and "
    "pass the value in braces: only the context budget of it is sent anyway.",
}


def _group(kind: str | None) -> str:
    """The key of `LIMITS` a media type falls under (None: text)."""
    return "text" if kind is None else "image" if kind.startswith("image/") else kind


def limit_of(kind: str | None) -> int | None:
    """The most bytes a ``kind`` (a media type; None for text) may have, or None."""
    return LIMITS.get(_group(kind))


def check_size(kind: str | None, size: int, name: str | None = None) -> None:
    """A `ValueError` when ``size`` bytes of ``kind`` (a media type; None for text) are over
    its limit -- one check for every way an image, a PDF or a text file arrives."""
    limit = limit_of(kind)
    if limit is None or size <= limit:
        return
    group = _group(kind)
    label = f"`{name}`" if name else f"the {'PDF' if group == 'application/pdf' else group}"
    shown = f"{size / MB:,.1f} MB"
    if shown == f"{limit // MB}.0 MB":  # just over: the bytes say by how much
        shown = f"{size:,} bytes"
    raise ValueError(
        f"{label} is {shown}; {_WHAT[group]} can be at most {limit // MB} MB. {_FIX[group]}"
    )


@dataclass(slots=True)
class Content:
    """What one value became: ``text`` for the prompt, ``images`` (``data:`` URLs) and
    ``files`` (file parts) to attach, and ``summary`` -- a few words for the turn view."""

    text: str = ""
    images: list[str] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    summary: str = ""

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)

    def describe(self, name: str) -> str:
        """``"`df`: 1,000,000 × 12, 10-row sample, 412 tokens"`` (an image: ``"image 640×480"``)."""
        what = [self.summary] if self.summary else []
        if not (self.images or self.files) or not self.summary:
            what.append(f"{self.tokens:,} tokens")
        return f"`{name}`: " + ", ".join(what)


def from_bundle(result: Any, name: str | None, budget: int) -> Content:
    """A ``_ai_repr_`` / ``_repr_llm_`` / registered result as content: a string is text; a
    MIME dict gives its text (``text/plain``, ``text/markdown`` or JSON) and its images or
    PDF, all of them."""
    if isinstance(result, Content):
        return result
    if isinstance(result, str):
        return text_content(result, budget)
    if not isinstance(result, dict):
        raise TypeError(
            f"an AI representation must be a str or a dict of MIME type to value, got "
            f"{type(result).__name__}"
        )
    out = Content()
    for mime in ("text/markdown", "text/plain"):
        if isinstance(result.get(mime), str):
            out.text = fit_text(result[mime], budget)
            break
    else:
        if "application/json" in result:
            out.text = _json_text(result["application/json"], budget)
    for mime in IMAGE_TYPES:
        if mime in result:
            image = image_content(_as_bytes(result[mime]), name)
            out.images += image.images
            out.summary = image.summary
            if not out.text:
                out.text = image.text
    if "application/pdf" in result:
        data = _as_bytes(result["application/pdf"])
        check_size("application/pdf", len(data), name)
        out.files.append(file_part(f"{name or 'document'}.pdf", data, "application/pdf"))
        out.summary = out.summary or "PDF"
    if not (out.text or out.images or out.files):
        raise TypeError(
            f"an AI representation has no form lion_nb reads (keys: {sorted(result)[:6]}); "
            "give `text/plain`, `text/markdown`, `application/json`, an image type or "
            "`application/pdf`"
        )
    return out


def _as_bytes(value: Any) -> bytes:
    """Bytes from bytes, a base64 string (as Jupyter bundles hold them) or a ``data:`` URL."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        decoded = read_data_url(value)
        if decoded is not None:
            return decoded[1]
        import base64

        return base64.b64decode(value)
    raise TypeError(f"image or PDF data must be bytes or base64 text, not {type(value).__name__}")


def image_content(data: bytes, name: str | None, what: str = "image") -> Content:
    """One image (its bytes) as content: attached, with a line of text saying what it is."""
    kind = sniff(data)
    if kind not in IMAGE_TYPES:
        raise TypeError("the image data is not PNG, JPEG, GIF or WebP")
    check_size(kind, len(data), name)
    size = image_size(data)
    dims = f"{size[0]}×{size[1]}" if size else kind.split("/")[1].upper()
    label = f"`{name}`, " if name else ""
    return Content(
        text=f"[{what}: {label}{dims} pixels, attached]" if size else f"[{what}: {label}attached]",
        images=[data_url(data, kind)],
        summary=f"image {dims}",
    )


def text_content(text: str, budget: int) -> Content:
    fitted = fit_text(text, budget)
    summary = "" if fitted is text else f"text, {len(text):,} characters, trimmed"
    return Content(text=fitted, summary=summary)


def fit_text(text: str, budget: int) -> str:
    """``text`` if it fits ``budget`` tokens, else its head and tail around a marker that
    says how much was cut."""
    if len(text) <= budget * 2 or estimate_tokens(text) <= budget:
        return text
    keep = min(len(text), budget * 4)
    while keep > 40:
        head, tail = text[: keep * 2 // 3], text[len(text) - keep // 3 :]
        cut = len(text) - len(head) - len(tail)
        out = f"{head}\n[… {cut:,} of {len(text):,} characters cut …]\n{tail}"
        if estimate_tokens(out) <= budget:
            return out
        keep = keep * 3 // 4
    return f"[{len(text):,} characters, too long for the budget of {budget:,} tokens]"


def _json_text(value: Any, budget: int) -> str:
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return fit_text(text, budget)
