"""A branch as a file or a table: JSON, Markdown, and a pandas DataFrame.

- JSON is the branch's projection (``to_dict(mode="json")``, ADR-0016 D2): what
  `Branch.from_dict` reads back.
- Markdown is the transcript the session explorer downloads (one transcript format for
  both; `lion_nb.rendering.transcript`, below the store, so the store imports no widget
  code).
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


def to_markdown(branch: Branch) -> str:
    """The branch as a readable Markdown transcript (the explorer's)."""
    from ..models.secrets import scrub
    from ..rendering.transcript import markdown_transcript

    return scrub(markdown_transcript(branch))


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
    text = to_json(branch) if kind == "json" else to_markdown(branch)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
