"""Files as context: ``%%lion --file PATH`` and the verbs' ``files=`` / ``images=``.

A file is read once and sent as what it is: a PDF as a document (a file part; the path is
kept for the CLI agents, which read files themselves), a PNG, JPEG, GIF or WebP as an image,
UTF-8 text as text inside the prompt (fitted to the budget with a marker), anything else
refused with the reason. The limits (`content.LIMITS`: the providers' 32 MB for a PDF and
20 MB for an image, and 8 MB for a text file) are checked on the file's size before it is
read, and the read stops one byte past the limit, so a file of gigabytes -- or one that grows
while it is read -- costs a few kilobytes. A path that is not a regular file (a folder, a
named pipe, a device, a socket) is refused for what it is, told by ``os.stat``: a named pipe
is never opened, since opening one waits for a writer.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from ..models.media import IMAGE_TYPES, file_part, pdf_pages, sniff
from .content import Content, check_size, fit_text, image_content, limit_of

__all__ = ["as_file_parts", "as_image_urls", "attachment_paths", "load_bytes", "load_file"]

_HEAD = 4096  # bytes read to tell a file's kind (and so its limit) before the rest
_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(path: Any, mode: int) -> ValueError:
    what = next((name for test, name in _KINDS if test(mode)), "a special file")
    return ValueError(
        f"`{path}`: {what}, not a regular file. Give the path of a file (save what it holds "
        "to one first)."
    )


def _unreadable(path: Any, exc: OSError) -> OSError:
    reason = exc.strerror or type(exc).__name__
    return type(exc)(f"`{path}`: cannot be read ({reason}). Check the path and its permissions.")


def _read(where: Path, path: Any, name: str) -> bytes:
    """The bytes of the regular file at ``where``, its size checked against its kind's limit
    first and the read bounded by it (see the module docstring)."""
    try:
        mode = os.stat(where).st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None
    except OSError as exc:  # a loop of links, a name too long, no permission
        raise _unreadable(path, exc) from None
    if mode is None or stat.S_ISDIR(mode):
        what = "a folder, not a file" if mode is not None else "not found"
        raise FileNotFoundError(
            f"`{path}`: {what}. Give the path of a file (relative to the notebook's folder, "
            f"{Path.cwd()}, or absolute)."
        )
    if not stat.S_ISREG(mode):
        raise _not_regular(path, mode)
    nonblocking = getattr(os, "O_NONBLOCK", 0)  # a file swapped for a pipe since: no wait
    try:
        fd = os.open(where, os.O_RDONLY | getattr(os, "O_BINARY", 0) | nonblocking)
    except OSError as exc:
        raise _unreadable(path, exc) from None
    with open(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(path, info.st_mode)
        if nonblocking:
            os.set_blocking(fd, True)
        head = f.read(_HEAD)
        kind = sniff(head)
        check_size(kind, info.st_size, name)
        data = head + f.read((limit_of(kind) or 0) + 1 - len(head))
    check_size(kind, len(data), name)  # it grew since it was measured
    return data


def load_file(path: str | os.PathLike[str], *, budget: int | None = None) -> Content:
    """The file at ``path`` as content (see the module docstring)."""
    where = Path(path).expanduser()
    data = _read(where, path, where.name)
    return load_bytes(where.name, data, budget=budget, path=str(where.resolve()))


def load_bytes(
    name: str, data: bytes, *, budget: int | None = None, path: str | None = None
) -> Content:
    """A file's bytes as content, as `load_file` reads them (a file picked in `Chat` has a
    name and bytes, no path)."""
    from .convert import DEFAULT_BUDGET

    budget = DEFAULT_BUDGET if budget is None else budget
    kind = sniff(data)
    check_size(kind, len(data), name)
    if kind == "application/pdf":
        pages = pdf_pages(data)
        count = f"{pages} page{'s' if pages != 1 else ''}" if pages else "PDF"
        return Content(
            text=f"[PDF: `{name}`, {count}, attached]",
            files=[file_part(name, data, kind, path=path)],
            summary=f"PDF, {count}",
        )
    if kind in IMAGE_TYPES:
        return image_content(data, name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\x00" in text:
        raise ValueError(
            f"`{path or name}`: not a PDF, an image (PNG, JPEG, GIF, WebP) or UTF-8 text, so it "
            "cannot be sent. Convert it to one of those first (e.g. export it as PDF)."
        )
    body = fit_text(text, budget)
    lines = text.count("\n") + (not text.endswith("\n"))
    cut = "" if body is text else ", trimmed"
    return Content(
        text=f"File `{name}`:\n```\n{body.rstrip()}\n```",
        summary=f"text, {lines:,} lines{cut}",
    )


def _check_url(url: Any, name: str | None) -> None:
    """The size limit of a ``data:`` URL's kind, on its length (it is not decoded)."""
    if not (isinstance(url, str) and url.startswith("data:")):
        return
    meta, _, body = url[5:].partition(",")
    kind = meta.split(";")[0] or None
    if kind and limit_of(kind) is not None:
        size = len(body) * 3 // 4 - body[-2:].count("=") if ";base64" in meta else len(body)
        check_size(kind, size, name)


def as_file_parts(files: Any, *, budget: int | None = None) -> Content:
    """The verbs' ``files=``: paths (or bytes, file parts, anything `to_content` attaches) as one
    `Content` -- text files' text, images and documents -- in the order given."""
    from .convert import to_content

    out = Content()
    texts: list[str] = []
    for item in [files] if isinstance(files, (str, os.PathLike)) else list(files or ()):
        if isinstance(item, dict) and item.get("type") == "file":  # a file part already
            info = item.get("file") or {}
            _check_url(info.get("file_data"), info.get("filename"))
            out.files.append(item)
            continue
        if isinstance(item, Content):  # a file read already (`load_bytes`)
            got = item
        elif isinstance(item, (str, os.PathLike)):
            got = load_file(item, budget=budget)
        else:
            got = to_content(item, budget=budget)
            if not (got.images or got.files):
                raise TypeError(
                    f"`files=`: a {type(item).__name__} is not a file; give a path, PDF or "
                    "image bytes, or pass the value as `context=`."
                )
        if got.text and not (got.images or got.files):
            texts.append(got.text)
        out.images += got.images
        out.files += got.files
    out.text = "\n\n".join(texts)
    return out


def as_image_urls(images: Any) -> list[str]:
    """The verbs' ``images=``: URLs (``data:`` or http(s)) as they are, image files by path,
    and any value `to_content` makes an image of (a figure, a PIL image, PNG bytes)."""
    from .convert import to_content

    urls: list[str] = []
    for item in [images] if isinstance(images, (str, os.PathLike)) else list(images or ()):
        if isinstance(item, str) and item.startswith(("data:", "http://", "https://")):
            _check_url(item, None)
            urls.append(item)
            continue
        got = load_file(item) if isinstance(item, (str, os.PathLike)) else to_content(item)
        if not got.images:
            raise TypeError(
                f"`images=`: {str(item)[:60]!r} is not an image (PNG, JPEG, GIF or WebP); "
                "give image URLs, image files, figures, PIL images or image bytes."
            )
        urls += got.images
    return urls


def attachment_paths(images: Any, files: Any) -> list[str]:
    """Paths a CLI agent can read for an instruction's images and files: a file's own path
    when it came from one, else a copy written once, by content hash, to a folder of the
    system's temporary directory (agents read files; they take no ``data:`` URLs)."""
    import tempfile

    from ..models.media import content_hash, read_data_url

    folder = Path(tempfile.gettempdir()) / "lion_nb_attachments"
    paths: list[str] = []
    items = [(url, None, None) for url in images or ()]
    for part in files or ():
        info = part.get("file") or {}
        items.append((info.get("file_data"), info.get("path"), info.get("filename")))
    for url, path, filename in items:
        if path and Path(path).is_file():
            paths.append(str(path))
            continue
        decoded = read_data_url(url)
        if decoded is None:
            if isinstance(url, str) and url.startswith(("http://", "https://")):
                paths.append(url)
            continue
        kind, data = decoded
        suffix = Path(filename).suffix if filename else "." + kind.split("/")[-1]
        target = folder / f"{content_hash(data)[:16]}{suffix}"
        if not target.exists():
            folder.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        paths.append(str(target))
    return paths
