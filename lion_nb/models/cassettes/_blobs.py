"""Images and files in a cassette, written once by content hash.

Every request of a conversation carries its whole history, so an image attached to the first
turn is in every later request. A cassette keeps each ``data:`` URL once, on a line of its
own (``{"kind": "blob", "hash": ..., "data": "data:..."}``) written before the first
exchange that needs it; the exchanges hold ``lion-blob:sha256:<hash>`` in its place (the
hash of the URL's text, `lion_nb.models.media.blob_ref`). Requests are matched in that
packed form, so a line recorded with the URL inline (an older cassette) matches as well.
"""

from __future__ import annotations

from typing import Any

from ..media import blob_ref

__all__ = ["BLOB", "blob_line", "check_blob", "pack"]

BLOB = "blob"
_SHORT = 256  # shorter URLs stay inline: a reference would not save anything


def pack(value: Any, blobs: dict[str, str]) -> Any:
    """``value`` (a request, as JSON data) with every long ``data:`` URL in it replaced by
    its reference, each URL added to ``blobs`` by hash. Parts without one are the same
    objects (nothing copied)."""
    if isinstance(value, str):
        if value.startswith("data:") and len(value) > _SHORT:
            ref, digest = blob_ref(value)
            blobs.setdefault(digest, value)
            return ref
        return value
    if isinstance(value, dict):
        out = {k: pack(v, blobs) for k, v in value.items()}
        return value if all(out[k] is value[k] for k in value) else out
    if isinstance(value, list):
        items = [pack(v, blobs) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def blob_line(digest: str, url: str) -> dict[str, Any]:
    return {"kind": BLOB, "hash": digest, "data": url}


def check_blob(data: dict[str, Any]) -> tuple[str, str]:
    """``(hash, url)`` of a blob line, or `ValueError` naming what is wrong."""
    url, digest = data.get("data"), data.get("hash")
    if not isinstance(url, str) or not url.startswith("data:"):
        raise ValueError("`data` of a blob line is a `data:` URL")
    if digest != blob_ref(url)[1]:
        raise ValueError("`hash` of a blob line is the SHA-256 of its `data`")
    return digest, url
