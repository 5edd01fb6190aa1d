"""Where provider batches are remembered, so that one outlives the kernel that submitted it.

A provider batch can take up to 24 hours; a kernel rarely lives that long. When a batch is
submitted, its record -- the provider's batch id, the model's settings (never a key), the
source branch's projection, and each item's custom id, branch id, name and prompt -- is
written at once; ``session.resume_batch(batch_id)`` reads it back.

Records go to the session store when one offers a place for them (a ``batch_records``
attribute on ``session.store`` with ``save(record)``, ``load(batch_id)``, ``list()`` and
``delete(batch_id)``: the seam is `book_for`), and otherwise to one small JSON file per
batch in ``batches/`` under ``$LION_HOME`` when it is set, else under the session store's
folder (``.lion_nb/`` beside the notebook, or wherever ``LION_NB_STORE`` /
``%config LionMagics.store_path`` put it), so a notebook's batches live beside its saved
conversations. A file is written whole to a temporary name and renamed, so a crash never
leaves half a record. The items' answers themselves are recorded on their branches, which
the store autosaves like any other.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from pathlib import Path
from typing import Any, Protocol

from .._files import write_atomically
from ..errors import ConfigurationError

__all__ = [
    "FileRecords",
    "RecordBook",
    "book_for",
    "jsonable",
    "loaded_kwargs",
    "price_pair",
    "records_dir",
    "saved_kwargs",
]

VERSION = 1
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


class RecordBook(Protocol):
    def save(self, record: dict[str, Any]) -> None: ...

    def load(self, batch_id: str) -> dict[str, Any]: ...

    def list(self) -> list[dict[str, Any]]: ...

    def delete(self, batch_id: str) -> None: ...


def records_dir() -> Path:
    home = os.environ.get("LION_HOME")
    if home:
        return Path(home) / "batches"
    from ..store_location import store_dir

    return store_dir() / "batches"


class FileRecords:
    """One JSON file per batch in ``folder`` (default: `records_dir`)."""

    def __init__(self, folder: str | Path | None = None):
        self.folder = Path(folder) if folder is not None else records_dir()

    def _path(self, batch_id: str) -> Path:
        name = _SAFE.sub("_", str(batch_id))[:200]
        if not name.strip("._"):
            raise ConfigurationError(f"`{batch_id!r}` is not a batch id.")
        return self.folder / f"{name}.json"

    def save(self, record: dict[str, Any]) -> None:
        from ..store_location import ensure_dir

        ensure_dir(self.folder.parent)  # a store folder made here ignores itself in git
        path = self._path(record["batch_id"])
        # makes the folder; saves from two threads never share a temporary file
        write_atomically(path, json.dumps(record, ensure_ascii=False, default=str))

    def load(self, batch_id: str) -> dict[str, Any]:
        path = self._path(batch_id)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            known = ", ".join(f"`{r['batch_id']}`" for r in self.list()) or "none"
            raise ConfigurationError(
                f"No saved batch `{batch_id}` in `{self.folder}` (saved batches: {known}). "
                "Batches are remembered in `batches/` under `$LION_HOME`, else under the "
                "session store's folder; run from the notebook's folder, or set the same "
                "`LION_HOME`."
            ) from None
        except (OSError, ValueError) as exc:
            raise ConfigurationError(
                f"The record of batch `{batch_id}` (`{path}`) cannot be read: {exc}."
            ) from None
        if not isinstance(record, dict) or record.get("version") != VERSION:
            raise ConfigurationError(
                f"The record of batch `{batch_id}` (`{path}`) was written by another version "
                "of lion_nb and cannot be resumed here."
            )
        return record

    def list(self) -> list[dict[str, Any]]:
        """A summary of every record: batch id, provider, run name, state, item count."""
        out = []
        for path in sorted(self.folder.glob("*.json")) if self.folder.exists() else ():
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(record, dict) and "batch_id" in record:
                out.append(
                    {
                        "batch_id": record["batch_id"],
                        "provider": record.get("provider"),
                        "run": record.get("run"),
                        "state": record.get("state"),
                        "items": len(record.get("items") or ()),
                        "created_at": record.get("created_at"),
                    }
                )
        return out

    def delete(self, batch_id: str) -> None:
        self._path(batch_id).unlink(missing_ok=True)
        self._path(batch_id).with_suffix(".items.jsonl").unlink(missing_ok=True)

    def save_lines(self, batch_id: str, rows: Any) -> None:
        """A job's items, one JSON line each, written as they come (never held whole)."""
        from ..store_location import ensure_dir

        ensure_dir(self.folder.parent)
        path = self._path(batch_id).with_suffix(".items.jsonl")
        write_atomically(
            path, (json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows)
        )

    def read_lines(self, batch_id: str) -> Any:
        """The lines `save_lines` wrote, one at a time (none when there are none)."""
        path = self._path(batch_id).with_suffix(".items.jsonl")
        if not path.exists():
            return
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                yield json.loads(line)


def book_for(session: Any) -> RecordBook:
    """The session store's batch records when it has them, else the JSON files."""
    store = getattr(session, "store", None)
    records = getattr(store, "batch_records", None)
    if records is not None:
        return records
    return FileRecords()


# -- saving keyword arguments ----------------------------------------------------------------------
def saved_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments as JSON: classes (a response format) by import path."""
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in ("operation",):
            continue
        if isinstance(value, type):
            out[key] = {"__class__": f"{value.__module__}:{value.__qualname__}"}
            continue
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            out[key] = {"__unsaved__": type(value).__name__}
        else:
            out[key] = value
    return out


def loaded_kwargs(saved: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in saved.items():
        if key in given:
            continue
        if isinstance(value, dict) and "__class__" in value:
            module, _, name = value["__class__"].partition(":")
            try:
                obj: Any = importlib.import_module(module)
                for part in name.split("."):
                    obj = getattr(obj, part)
            except (ImportError, AttributeError):
                raise ConfigurationError(
                    f"The batch was submitted with `{key}={name}`, which cannot be imported "
                    f"now (from `{module}`). Define it again, or pass `{key}=` to "
                    "`resume_batch`."
                ) from None
            out[key] = obj
        elif isinstance(value, dict) and "__unsaved__" in value:
            raise ConfigurationError(
                f"The batch was submitted with a `{key}=` ({value['__unsaved__']}) that could "
                f"not be saved; pass `{key}=` to `resume_batch` again."
            )
        else:
            out[key] = value
    return {**out, **given}


def jsonable(item: Any) -> Any:
    from ._batch_items import describe

    try:
        json.dumps(item)
    except (TypeError, ValueError):
        return describe(item, limit=200)
    return item


def price_pair(price: Any) -> tuple[float, float] | None:
    from ._batch_items import Price

    return (price.input, price.output) if isinstance(price, Price) else None
