"""The notebook's errors, kept so a prompt can quote them and ``%lion explain`` can explain them.

A ``post_run_cell`` hook records each failing cell: its execution count, its source and the
traceback as plain text (IPython's own frames dropped, so the user's code comes first). Errors
raised by lion cells themselves are not recorded: explaining a mistyped option to a model
helps no one. ``{Err}`` / ``{error}`` in a prompt is the last one, ``{Err[7]}`` that of cell 7.

Errors are kept as raised, keys included: they are scrubbed of secrets where they enter a
prompt (`interpolate`, and ``LionMagics.turn`` for ``%lion explain``), against the keys known
then, which may be more than those known when the cell failed.
"""

from __future__ import annotations

import traceback
from collections import OrderedDict
from dataclasses import dataclass

from IPython.core.error import UsageError

__all__ = ["CellError", "ErrorLog"]

_KEEP = 50


@dataclass(frozen=True, slots=True)
class CellError:
    """One failing cell."""

    execution_count: int | None
    source: str
    error_type: str
    message: str
    traceback: str

    def __str__(self) -> str:
        return self.traceback


class ErrorLog:
    """The last errors by execution count. ``str()`` is the last traceback ('' when none)."""

    def __init__(self) -> None:
        self._errors: OrderedDict[int | None, CellError] = OrderedDict()

    @property
    def last(self) -> CellError | None:
        return next(reversed(self._errors.values()), None)

    def record(self, exc: BaseException, *, execution_count: int | None, source: str) -> None:
        if _is_lion_cell(source):
            return
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename.endswith("interactiveshell.py"):
            tb = tb.tb_next
        text = "".join(traceback.format_exception(type(exc), exc, tb))
        entry = CellError(execution_count, source, type(exc).__name__, str(exc), text)
        self._errors.pop(execution_count, None)
        self._errors[execution_count] = entry
        while len(self._errors) > _KEEP:
            self._errors.popitem(last=False)

    def on_post_run_cell(self, result) -> None:
        """IPython ``post_run_cell`` hook."""
        exc = result.error_in_exec or result.error_before_exec
        if exc is None:
            return
        info = getattr(result, "info", None)
        source = getattr(info, "raw_cell", "") or ""
        self.record(exc, execution_count=result.execution_count, source=source)

    def __getitem__(self, count: int) -> CellError:
        try:
            return self._errors[count]
        except KeyError:
            known = ", ".join(str(k) for k in self._errors if k is not None) or "none"
            raise UsageError(
                f"`Err[{count}]`: cell {count} raised no recorded error (cells with errors: {known})."
            ) from None

    def __str__(self) -> str:
        last = self.last
        return last.traceback if last is not None else ""

    def __len__(self) -> int:
        return len(self._errors)

    def __repr__(self) -> str:
        return f"ErrorLog({len(self._errors)} errors)"


def _is_lion_cell(source: str) -> bool:
    head = source.lstrip()
    return head.startswith(("%%lion", "%lion"))
