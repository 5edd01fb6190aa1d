"""A branch as a file or a table: JSON, Markdown, and a pandas DataFrame.

- JSON is the branch's projection (``to_dict(mode="json")``, ADR-0016 D2): what
  `Branch.from_dict` reads back.
- Markdown is the transcript the session explorer downloads (one transcript format for
  both; `lion_nb.rendering.transcript`, below the store, so the store imports no widget
  code). Written to a file, a message's images and files go beside it, each once by content
  hash, in ``<name>_files/``, and the transcript links them; as text, they are described.
- JSON keeps images and files inline as ``data:`` URLs: the file is the branch's projection,
  which `Branch.from_dict` reads back as it is (the store keeps them once, `store.blobs`).
- The DataFrame has one row per message, in order. pandas is an optional extra
  (``pip install 'lion-nb[pandas]'``); without it `to_dataframe` says so.

Like ``%lion save``, every export is scrubbed of known secrets.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .rows import scrub_data

if TYPE_CHECKING:
    from ..session.branch import Branch

__all__ = ["COLUMNS", "export_branch", "message_rows", "to_dataframe", "to_json", "to_markdown"]

#: the DataFrame's columns, in order
COLUMNS = (
    "position", "id", "kind", "role", "created_at", "text", "sender", "recipient",
    "cell_id", "execution_count", "function", "arguments", "is_error", "model",
    "input_tokens", "output_tokens",
)  # fmt: skip

_SUFFIXES = {".json": "json", ".md": "markdown", ".markdown": "markdown"}
PANDAS_HINT = "pip install 'lion-nb[pandas]'"


def to_json(branch: Branch, *, indent: int | None = 2) -> str:
    """The branch's projection as JSON text (`Branch.from_dict(json.loads(text))` reads it)."""
    data = scrub_data(branch.to_dict(mode="json"))
    return json.dumps(data, indent=indent, ensure_ascii=False, default=str)


def to_markdown(branch: Branch, files: str | Path | None = None) -> str:
    """The branch as a readable Markdown transcript (the explorer's). Images and files are
    described in words; with ``files`` (a folder), each is written there once, by content
    hash, and linked relative to the folder's parent (where the ``.md`` file goes)."""
    from ..models.secrets import scrub
    from ..rendering.transcript import markdown_transcript

    return scrub(markdown_transcript(branch, attachments=_Attachments(files)))


class _Attachments:
    """The Markdown lines of a message's images and files, writing each file once."""

    def __init__(self, folder: str | Path | None):
        self.folder = Path(folder) if folder is not None else None

    def _write(self, url: str, name: str | None = None) -> str | None:
        from ..models.media import content_hash, read_data_url

        decoded = read_data_url(url)
        if self.folder is None or decoded is None:
            return None
        kind, data = decoded
        suffix = Path(name).suffix if name else ""
        if not suffix:
            suffix = "." + _SUFFIX.get(kind, "bin")
        target = self.folder / (content_hash(data)[:16] + suffix)
        if not target.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return f"{self.folder.name}/{target.name}"

    def __call__(self, message: Any) -> list[str]:
        from ..models.media import describe_file, describe_image

        lines = []
        for url in message.images or ():
            words = describe_image(url)
            link = self._write(url) if isinstance(url, str) else None
            if link is None and isinstance(url, str) and url.startswith(("https://", "http://")):
                link = url  # a link the message gave: kept as a link, as it was sent
            lines.append(f"![{_escape(words)}](<{link}>)" if link else f"*[{words}]*")
        for part in message.files or ():
            info = part.get("file") if isinstance(part, dict) else None
            info = info if isinstance(info, dict) else {}
            words = describe_file(part)
            name = str(info.get("filename") or "")
            link = self._write(info.get("file_data"), name)
            lines.append(f"[{_escape(words)}](<{link}>)" if link else f"*[{words}]*")
        return lines


_SUFFIX = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp",
           "application/pdf": "pdf", "text/plain": "txt"}  # fmt: skip


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _usage(message: Any) -> tuple[Any, Any]:
    usage = (message.metadata or {}).get("usage") or {}
    if not isinstance(usage, dict):
        return None, None
    inp = usage.get("input_tokens", usage.get("prompt_tokens"))
    out = usage.get("output_tokens", usage.get("completion_tokens"))
    return inp, out


def message_rows(branch: Branch) -> list[dict[str, Any]]:
    """One plain dict per message, with the `COLUMNS` keys (what the DataFrame holds)."""
    from ..models.secrets import scrub

    rows = []
    for position, message in enumerate(branch.messages):
        tag = (message.metadata or {}).get("lion") or {}
        inp, out = _usage(message)
        arguments = getattr(message, "arguments", None)
        rows.append(
            {
                "position": position,
                "id": str(message.id),
                "kind": message.kind,
                "role": message.role.value,
                "created_at": _dt.datetime.fromtimestamp(message.created_at),
                "text": scrub(message.rendered or ""),
                "sender": message.sender,
                "recipient": message.recipient,
                "cell_id": tag.get("cell_id") if isinstance(tag, dict) else None,
                "execution_count": tag.get("execution_count") if isinstance(tag, dict) else None,
                "function": getattr(message, "function", None),
                "arguments": (
                    scrub(json.dumps(arguments, ensure_ascii=False, default=str))
                    if arguments is not None
                    else None
                ),
                "is_error": getattr(message, "is_error", None),
                "model": (message.metadata or {}).get("model"),
                "input_tokens": inp,
                "output_tokens": out,
            }
        )
    return rows


def to_dataframe(branch: Branch) -> Any:
    """The branch's messages as a pandas DataFrame, one row per message (`COLUMNS`)."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(
            f"`to_dataframe` needs pandas, an optional extra of lion_nb: `{PANDAS_HINT}` "
            "(or `pip install pandas`). `message_rows(branch)` gives the same rows as dicts."
        ) from exc
    return pd.DataFrame(message_rows(branch), columns=list(COLUMNS))


def export_branch(branch: Branch, path: str | Path, fmt: str | None = None) -> Path:
    """Write ``branch`` to ``path`` as ``"json"`` or ``"markdown"`` (``fmt``, else from the
    suffix: ``.json``, ``.md``) and return the path written."""
    target = Path(path).expanduser()
    kind = fmt or _SUFFIXES.get(target.suffix.lower())
    if kind not in ("json", "markdown"):
        raise ValueError(
            f"Cannot tell the format of `{target}`: name a `.json` or `.md` file, or pass "
            '`fmt="json"` or `fmt="markdown"`.'
        )
    if kind == "json":
        text = to_json(branch)
    else:  # images and files beside it, in `<name>_files/`
        text = to_markdown(branch, files=target.parent / f"{target.stem}_files")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
