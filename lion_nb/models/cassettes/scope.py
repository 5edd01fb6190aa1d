"""Which cassette a model call goes through: one rule for code, notebooks and CI.

For each call of a model that reaches outside the process, the first of these applies:

1. the model's own cassette: ``iModel(..., cassette="calls.jsonl")``;
2. the innermost ``with cassette(path, mode=...)`` around the call (a context variable, so
   it follows the call into tasks, and concurrent contexts do not see each other's);
3. the process-wide cassette set by `use_cassette` -- what ``%lion cassette PATH`` sets, so
   it covers every model of the notebook, models created later by ``--model`` included
   (process-wide rather than a context variable, because a notebook turn may run on a worker
   thread's loop);
4. none: the call is live -- unless ``LION_NB_CASSETTE_MODE=none``, which turns that live
   call into an immediate `CassetteError`, so a notebook that would reach the network in CI
   fails at once instead of hanging or spending.

The offline providers are local and deterministic: their calls are never recorded, never
replayed and never blocked. So is any endpoint that answers in-process (``in_process =
True``), such as the batch service's request capture and result decoding, whose batch is
recorded as a whole (`_batches`).
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._format import LOCAL_PROVIDERS
from ._modes import ENV_MODE
from .recording import Cassette, CassetteError, forced_mode

__all__ = ["as_cassette", "cassette", "cassette_for", "current_cassette", "use_cassette"]

_context: contextvars.ContextVar[Cassette | None] = contextvars.ContextVar(
    "lion_nb_cassette", default=None
)
_process: Cassette | None = None


def as_cassette(value: object, mode: str = "once") -> Cassette | None:
    """A `Cassette` from a path (opened in ``mode``), a `Cassette` as is, ``None`` as is."""
    if value is None or isinstance(value, Cassette):
        return value
    if isinstance(value, (str, os.PathLike)):
        return Cassette(value, mode)
    raise CassetteError(
        f"`cassette=` takes a path to a .jsonl file or a `Cassette`, not {type(value).__name__}."
    )


@contextmanager
def cassette(path: str | os.PathLike[str] | Cassette, mode: str = "once") -> Iterator[Cassette]:
    """Record or replay every model call made inside the block (see `Cassette` for modes)."""
    tape = as_cassette(path, mode)
    assert tape is not None
    token = _context.set(tape)
    try:
        yield tape
    finally:
        _context.reset(token)


def use_cassette(
    path: str | os.PathLike[str] | Cassette | None, mode: str = "once"
) -> Cassette | None:
    """Set (or with ``None`` clear) the process-wide cassette; returns it."""
    global _process
    _process = as_cassette(path, mode)
    return _process


def current_cassette() -> Cassette | None:
    """The cassette a call made here would use, absent one on the model itself."""
    tape = _context.get()
    return tape if tape is not None else _process


# Any: an iModel (which imports this module) or a stand-in with `endpoint`
def cassette_for(imodel: Any) -> Cassette | None:
    """The cassette for a call of ``imodel``, or ``None`` for a live call.

    Raises `CassetteError` when ``LION_NB_CASSETTE_MODE=none`` forbids the live call."""
    endpoint = imodel.endpoint
    if endpoint.provider in LOCAL_PROVIDERS or getattr(endpoint, "in_process", False):
        return None
    tape = getattr(imodel, "cassette", None)
    if tape is None:
        tape = current_cassette()
    if tape is None and forced_mode() == "none":
        raise CassetteError(
            f"`{ENV_MODE}=none` forbids live model calls, and no cassette covers this call to "
            f"`{imodel.provider}/{imodel.model}`. Record one (`%lion cassette PATH`, or "
            '`with cassette("calls.jsonl"):` in code) with the provider\'s key set, or '
            f"unset `{ENV_MODE}` to call the provider."
        )
    return tape
