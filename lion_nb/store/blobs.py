"""Images and files kept once, by content hash, however many messages carry them.

A notebook turn that attaches a figure sends it again with every later request, and a branch
that repeats one image in 200 messages would otherwise hold 200 copies of it. So where the
store, a cassette or a JSON export writes a message, each ``data:`` URL in its ``images`` and
in its file parts' ``file_data`` becomes a reference, ``lion-blob:sha256:<hex>`` (the SHA-256
of the URL's text, so the same URL is the same blob and reads back exactly as written), and
the URL itself is kept once beside the messages. Reading puts every URL back before anyone
sees the message, each checked against its hash first (`verify`): a row edited or planted
under another's hash is a damaged session, never an image shown or sent. Only those two
fields are replaced: a reference written by a user in a message's text stays text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from ..models.media import BLOB_PREFIX as PREFIX
from ..models.media import blob_ref as ref_of

__all__ = [
    "PREFIX",
    "find_refs",
    "pack_message",
    "ref_of",
    "unpack_message",
    "unpack_messages",
    "verify",
]

_REF = re.compile(re.escape(PREFIX) + r"([0-9a-f]{64})")


def find_refs(text: str) -> set[str]:
    """The hashes referenced anywhere in ``text`` (JSON of messages)."""
    return set(_REF.findall(text)) if PREFIX in text else set()


def verify(blobs: Mapping[str, str], session_id: str, path: Any) -> None:
    """Check each blob read for session ``session_id`` against its hash (one SHA-256 of its
    text, read once); a mismatch is a `StoreCorruptError` naming the blob and the session."""
    bad = sorted(digest for digest, url in blobs.items() if ref_of(url)[1] != digest)
    if not bad:
        return
    from .errors import StoreCorruptError

    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    short = session_id[:8]
    raise StoreCorruptError(
        f"Saved session `{short}` in `{path}` is damaged: its attached image or file "
        f"`{PREFIX}{bad[0]}`{more} does not match its hash (the row was changed outside "
        f"lion_nb), so it is not used. Delete the session with `%lion sessions --delete "
        f"{short}` (`SessionStore.delete`); sessions that do not attach it are unaffected.",
        path=path,
    )


def _swap(data: dict[str, Any], fn: Callable[[Any], Any]) -> bool:
    """Apply ``fn`` to each image URL and file URL of one message's data, in place."""
    changed = False
    images = data.get("images")
    if isinstance(images, list):
        new = [fn(url) for url in images]
        if new != images:
            data["images"], changed = new, True
    files = data.get("files")
    if isinstance(files, list):
        out = []
        for part in files:
            info = part.get("file") if isinstance(part, dict) else None
            if isinstance(info, dict) and "file_data" in info:
                url = fn(info["file_data"])
                if url is not info["file_data"]:
                    part = {**part, "file": {**info, "file_data": url}}
                    changed = True
            out.append(part)
        if changed:
            data["files"] = out
    return changed


def pack_message(data: dict[str, Any], blobs: MutableMapping[str, str]) -> dict[str, Any]:
    """``data`` (one message as JSON data) with its ``data:`` URLs replaced by references;
    the URLs are added to ``blobs`` by hash. Returns ``data`` itself when it holds none."""
    if data.get("kind") != "instruction" or not (data.get("images") or data.get("files")):
        return data

    def pack(url: Any) -> Any:
        if not (isinstance(url, str) and url.startswith("data:")):
            return url
        ref, digest = ref_of(url)
        blobs.setdefault(digest, url)
        return ref

    copy = dict(data)
    return copy if _swap(copy, pack) else data


def _unpacker(blobs: Mapping[str, str]) -> Callable[[Any], Any]:
    def unpack(value: Any) -> Any:
        if isinstance(value, str) and value.startswith(PREFIX):
            url = blobs.get(value[len(PREFIX) :])
            if url is None:
                raise KeyError(f"an attached image or file (`{value[:30]}…`) is missing")
            return url
        return value

    return unpack


def unpack_message(data: dict[str, Any], blobs: Mapping[str, str]) -> dict[str, Any]:
    """The inverse of `pack_message`: references in ``data`` replaced by their URLs (a copy
    when any were). A reference with no blob is a `KeyError` naming it."""
    if data.get("kind") != "instruction" or not (data.get("images") or data.get("files")):
        return data
    copy = dict(data)
    return copy if _swap(copy, _unpacker(blobs)) else data


def unpack_messages(messages: list[Any], blobs: Mapping[str, str]) -> None:
    """Put the URLs back into loaded `Instruction` objects, in place and without counting
    it as an edit (a restored message is as it was saved)."""
    unpack = _unpacker(blobs)
    for message in messages:
        if getattr(message, "kind", None) != "instruction":
            continue
        fields = message.__dict__
        if not (fields.get("images") or fields.get("files")):
            continue
        data = {"kind": "instruction", "images": fields.get("images"), "files": fields.get("files")}
        if _swap(data, unpack):
            fields["images"], fields["files"] = data["images"], data["files"]
