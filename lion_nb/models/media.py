"""Images and documents in requests: recognised by their bytes, described in words.

Every layer that meets an image or a file part -- the conversion of notebook values, the
messages, each provider's wire form, the offline models, the store -- reads it through these
functions, so a picture is the same picture everywhere: a ``data:`` URL (never a remote one),
its type and size read from the bytes' own header (PNG, JPEG, GIF, WebP; a PDF's page count),
and one sentence that describes it to a model that cannot see it. Nothing here decodes
pixels or imports an imaging library.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from typing import Any

from ..shapes import JsonObject

__all__ = [
    "BLOB_PREFIX",
    "IMAGE_TYPES",
    "blob_ref",
    "content_hash",
    "data_url",
    "describe_file",
    "describe_image",
    "file_part",
    "image_size",
    "pdf_pages",
    "read_data_url",
    "sniff",
    "text_only",
]

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_DATA_URL = re.compile(r"data:([\w.+-]+/[\w.+-]+)?((?:;[\w-]+=[^;,]*)*)(;base64)?,", re.ASCII)
_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


def sniff(data: bytes) -> str | None:
    """The media type that ``data`` starts like: an image type, ``application/pdf``, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.lstrip()[:5] == b"%PDF-":
        return "application/pdf"
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` in pixels from an image's header, or None when it cannot be read."""
    try:
        kind = sniff(data)
        if kind == "image/png" and data[12:16] == b"IHDR":
            return struct.unpack(">II", data[16:24])
        if kind == "image/gif":
            return struct.unpack("<HH", data[6:10])
        if kind == "image/webp":
            chunk = data[12:16]
            if chunk == b"VP8X":
                w = int.from_bytes(data[24:27], "little") + 1
                return w, int.from_bytes(data[27:30], "little") + 1
            if chunk == b"VP8L":
                bits = int.from_bytes(data[21:25], "little")
                return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
            if chunk == b"VP8 ":
                w, h = struct.unpack("<HH", data[26:30])
                return w & 0x3FFF, h & 0x3FFF
        if kind == "image/jpeg":
            return _jpeg_size(data)
    except (struct.error, IndexError, ValueError):
        return None
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return w, h
        i += 2 + length
    return None


def pdf_pages(data: bytes) -> int | None:
    """The number of pages of a PDF (its page objects counted), or None if not a PDF."""
    if sniff(data) != "application/pdf":
        return None
    return len(_PAGE.findall(data)) or None


def content_hash(data: bytes) -> str:
    """The SHA-256 of ``data``, hex: the name an image or file is kept under."""
    return hashlib.sha256(data).hexdigest()


#: how a stored message or a cassette line names a ``data:`` URL kept once beside it
BLOB_PREFIX = "lion-blob:sha256:"


def blob_ref(url: str) -> tuple[str, str]:
    """``(reference, hash)`` of a ``data:`` URL kept once by content hash (the store and the
    cassettes): the SHA-256 of the URL's text, so the same URL is the same blob and reads back
    exactly as written."""
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()
    return BLOB_PREFIX + digest, digest


def data_url(data: bytes, media_type: str | None = None) -> str:
    """``data:<type>;base64,...`` for ``data`` (its type sniffed when not given)."""
    kind = media_type or sniff(data) or "application/octet-stream"
    return f"data:{kind};base64," + base64.b64encode(data).decode("ascii")


def read_data_url(url: object) -> tuple[str, bytes] | None:
    """``(media type, bytes)`` of a base64 ``data:`` URL, or None for anything else."""
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    found = _DATA_URL.match(url)
    if found is None or not found.group(3):
        return None
    try:
        data = base64.b64decode(url[found.end() :], validate=False)
    except (binascii.Error, ValueError):
        return None
    return (found.group(1) or sniff(data) or "application/octet-stream"), data


def describe_image(url: object) -> str:
    """One sentence about an image given by URL: ``an image of 640×480 pixels (PNG)`` (no byte
    count: it changes with the encoder's version, and the sentence is what offline answers and
    saved notebooks show)."""
    decoded = read_data_url(url)
    if decoded is None:
        return "an image given by a link, not fetched"
    kind, data = decoded
    size = image_size(data)
    fmt = kind.split("/")[-1].upper()
    if size is None:
        return f"an image ({fmt})"
    return f"an image of {size[0]}×{size[1]} pixels ({fmt})"


def file_part(
    name: str, data: bytes, media_type: str | None = None, path: str | None = None
) -> JsonObject:
    """A file as a request part (OpenAI's ``file`` part: a name and a ``data:`` URL); the
    path it came from, when known, is kept for the CLI agents."""
    part: dict[str, Any] = {"filename": name, "file_data": data_url(data, media_type)}
    if path:
        part["path"] = path
    return {"type": "file", "file": part}


def describe_file(part: object) -> str:
    """One sentence about a file part: ``a PDF of 3 pages (report.pdf)``."""
    info = part.get("file") if isinstance(part, dict) else None
    info = info if isinstance(info, dict) else {}
    name = str(info.get("filename") or "a file")
    decoded = read_data_url(info.get("file_data"))
    if decoded is None:
        return f"a file ({name})"
    kind, data = decoded
    if kind == "application/pdf":
        pages = pdf_pages(data)
        count = f"{pages} page{'s' if pages != 1 else ''}" if pages else "unknown length"
        return f"a PDF of {count} ({name})"
    return f"a file of type {kind} ({name})"


def text_only(messages: list[JsonObject], why: str) -> list[JsonObject]:
    """``messages`` with every image and file part replaced by a text part describing it,
    followed by ``why`` (a model that cannot read them still learns what was there).
    Returns the list itself when nothing needed replacing."""
    out: list[dict[str, Any]] | None = None
    for i, msg in enumerate(messages):
        content = msg.get("content")
        if not isinstance(content, list) or not any(
            isinstance(p, dict) and p.get("type") in ("image_url", "file") for p in content
        ):
            if out is not None:
                out.append(msg)
            continue
        parts: list[Any] = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "image_url":
                ref = part.get("image_url")
                url = ref.get("url") if isinstance(ref, dict) else ref
                parts.append({"type": "text", "text": f"[{describe_image(url)}; {why}]"})
            elif kind == "file":
                parts.append({"type": "text", "text": f"[{describe_file(part)}; {why}]"})
            else:
                parts.append(part)
        if out is None:
            out = list(messages[:i])
        out.append({**msg, "content": parts})
    return out if out is not None else messages
