"""A branch's activity log: `Log` entries in a bounded in-memory `Pile`, written out on request.

Logs stay in memory by default. A notebook's folder must never fill up with files nobody
asked for, so nothing is written unless asked: `DataLogger.dump` writes to the path it is
given, else into ``persist_dir``, else into ``logs/`` in the session store's folder
(``.lion_nb/logs`` beside the notebook; `lion_nb.store_location`) -- never loose files in the
working directory. A notebook's autosave keeps each branch's logs in the store as well.

``capacity`` bounds memory: past it, the logger flushes everything to ``persist_dir`` when
one is configured (the file is written by a background thread, so logging from the event
loop never waits on the disk; a failed write is reported with the number of entries lost),
and otherwise drops the oldest entries. With ``auto_save_on_exit`` what is still in memory is
written when the process exits (to ``persist_dir``, else to the store's ``logs/`` folder).

Every dump (a file or ``to_dict``) passes log content through `redact`, and values under
key-like names (``api_key``, ``authorization``...) are masked, so a key that slipped into
a log entry is not written down.
"""

from __future__ import annotations

import atexit
import json
import logging
import re
import time
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from uuid import uuid4

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import to_jsonable_python

from ..models.secrets import redact
from ..shapes import JsonMapping, JsonObject
from .element import Element
from .pile import Pile

__all__ = ["DataLogger", "DataLoggerConfig", "Log", "default_log_dir", "dump_log"]

logger = logging.getLogger("lion_nb.logs")

_SECRET_KEY = re.compile(r"(?i)^(x-api-key|api[-_]?key|authorization|password|secret)$")


class Log(Element):
    """One logged event: free-form ``content``, with the Element's id and timestamp."""

    content: dict[str, Any] = Field(default_factory=dict)


class DataLoggerConfig(BaseModel):
    """Where (if anywhere) logs are written and how many are kept in memory."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    persist_dir: str | Path | None = None
    capacity: int | None = Field(default=1000, gt=0)
    extension: str = ".jsonl"
    auto_save_on_exit: bool = False

    @field_validator("extension")
    @classmethod
    def _dot(cls, v: str) -> str:
        v = v.strip()
        if not v.strip("."):
            raise ValueError("`extension` must name a file extension, such as `.jsonl`")
        return v if v.startswith(".") else "." + v


def _scrub(value: Any) -> Any:
    """``value`` with secrets redacted from every string and key-named values masked."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {
            k: "****" if isinstance(k, str) and _SECRET_KEY.match(k) and v else _scrub(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def dump_log(log: Log) -> JsonObject:
    """One entry as JSON data with its secrets redacted (what every dump writes)."""
    try:
        data: dict[str, Any] = to_jsonable_python(log.model_dump(), fallback=str)
    except Exception:  # bytes that are not UTF-8, a value whose str() raises, deep nesting
        from .jsonsafe import json_safe

        data = json_safe(log.model_dump())
    data["content"] = _scrub(data.get("content"))
    return data


_dump_log = dump_log


def default_log_dir() -> Path:
    """Where logs go when neither a path nor ``persist_dir`` is given: ``logs/`` in the
    session store's folder."""
    from ..store_location import store_dir

    return store_dir() / "logs"


def _save_at_exit(ref: weakref.ref[DataLogger]) -> None:
    data_logger = ref()
    if data_logger is None or not data_logger.logs:
        return
    try:
        data_logger.dump()
    except Exception:
        logger.warning("could not save logs at exit", exc_info=True)


class DataLogger:
    """Collects `Log` entries for one branch; writes JSON Lines only when told where."""

    def __init__(
        self,
        config: DataLoggerConfig | JsonMapping | None = None,
        logs: Pile[Log] | Iterable[Log | JsonMapping] | None = None,
    ):
        if config is None:
            config = DataLoggerConfig()
        elif not isinstance(config, DataLoggerConfig):
            config = DataLoggerConfig(**config)
        self.config = config
        if isinstance(logs, Pile):
            self.logs: Pile[Log] = logs  # the caller's pile, by identity
        else:
            self.logs = Pile(
                (
                    item if isinstance(item, Log) else Log.model_validate(item)
                    for item in logs or ()
                ),
                item_type=Log,
            )
        if config.auto_save_on_exit:
            atexit.register(_save_at_exit, weakref.ref(self))

    @property
    def persistent(self) -> bool:
        """Whether a ``persist_dir`` is configured (overflowing logs are flushed there
        rather than dropped)."""
        return self.config.persist_dir is not None

    def log(self, content: JsonMapping | BaseModel | Log) -> Log:
        """Record one entry and keep memory within ``capacity``."""
        if content.__class__ is dict:  # the common case, checked before any ABC
            entry = Log(content=content)  # validation copies the dict: the caller's stays theirs
        elif isinstance(content, Log):
            entry = content
        elif isinstance(content, BaseModel):
            entry = Log(content=content.model_dump())
        elif isinstance(content, Mapping):
            entry = Log(content=dict(content))
        else:
            raise TypeError(
                f"`DataLogger.log` takes a dict (or a pydantic model), got "
                f"`{type(content).__name__}`; wrap it, e.g. `{{'value': ...}}`."
            )
        self.logs.append(entry)
        capacity = self.config.capacity
        if capacity is not None and len(self.logs) > capacity:
            if self.persistent:
                self._flush_in_background()
            while len(self.logs) > capacity:  # no persist_dir
                self.logs.popleft()
        return entry

    def _flush_in_background(self) -> None:
        """Move the logs to ``persist_dir`` without blocking the caller (often the event
        loop): the lines are built here, the file is written by one writer thread."""
        target = self._target(None)
        lines = [json.dumps(_dump_log(log), ensure_ascii=False) for log in self.logs]
        self.logs.clear()
        _writer().submit(_append_lines, target, lines)

    def _target(self, path: str | Path | None) -> Path:
        if path is not None:
            target = Path(path)
            if target.is_dir():
                target = target / self._file_name()
            return target
        folder = self.config.persist_dir
        return (Path(folder) if folder is not None else default_log_dir()) / self._file_name()

    def _file_name(self) -> str:
        stamp = time.strftime("%Y%m%dT%H%M%S")
        return f"log_{stamp}_{uuid4().hex[:8]}{self.config.extension}"

    def dump(self, path: str | Path | None = None, clear: bool = True) -> Path | None:
        """Append the logs as JSON Lines to ``path`` (or a new file in ``persist_dir``, else in
        the store's ``logs/`` folder).

        Returns the file written, or ``None`` when there was nothing to write.
        """
        target = self._target(path)
        if not self.logs:
            return None
        lines = [json.dumps(_dump_log(log), ensure_ascii=False) for log in self.logs]
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
        if clear:
            self.logs.clear()
        return target

    def wait_for_writes(self) -> None:
        """Block until every background flush so far is on disk (for tests and exit)."""
        _writer().submit(lambda: None).result()

    async def adump(self, path: str | Path | None = None, clear: bool = True) -> Path | None:
        """`dump` in a worker thread, so the event loop is not blocked by file writes."""
        return await anyio.to_thread.run_sync(lambda: self.dump(path, clear))

    def clear(self) -> None:
        self.logs.clear()

    def __len__(self) -> int:
        return len(self.logs)

    def __repr__(self) -> str:
        where = self.config.persist_dir or "memory"
        return f"DataLogger(logs={len(self.logs)}, to={str(where)!r})"

    def to_dict(self, mode: str = "python") -> JsonObject:
        """The config and the logs (secrets redacted) as plain data."""
        config = self.config.model_dump(mode="json")
        return {"config": config, "logs": self.logs.to_dict(mode=mode, dump=_dump_log)}

    @classmethod
    def from_dict(cls, data: JsonMapping) -> DataLogger:
        """Rebuild from `to_dict` output."""
        logs = data.get("logs")
        pile = Pile.from_dict(logs, Log.model_validate, item_type=Log) if logs else None
        return cls(config=data.get("config"), logs=pile)


_WRITER: Any = None


def _writer() -> Any:
    """The one thread that writes overflowing logs, created on first use."""
    global _WRITER
    if _WRITER is None:
        from concurrent.futures import ThreadPoolExecutor

        _WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lion_nb-logs")
    return _WRITER


def _append_lines(target: Path, lines: list[str]) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
    except OSError:
        logger.warning("could not flush %d log entries to `%s`", len(lines), target, exc_info=True)
