"""Reading data that anyone could have edited: saved branches, sessions and model specs.

A dict handed to ``from_dict`` comes from a file, a store or a colleague's notebook, so
loading treats it as untrusted input:

- every malformed field becomes a `ConfigurationError` that names the field -- never a bare
  ``TypeError``, ``AttributeError`` or ``RecursionError`` from deep inside the loader;
- no message echoes more than a short, depth-limited picture of the input (`short_repr`) and
  no message is longer than `MAX_MESSAGE` characters: a huge or deeply nested value must not
  make the error itself fail, nor flood a notebook cell;
- pydantic validation errors are summarised from their structured form (where and what),
  never from ``str(exc)``, which repeats the whole offending input.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import ConfigurationError, LionError

__all__ = [
    "LOAD_ERRORS",
    "MAX_MESSAGE",
    "bounded",
    "check_depth",
    "loading",
    "short_repr",
    "validation_detail",
]

MAX_MESSAGE = 600
#: what a loader may meet in malformed data (pydantic's ValidationError is a ValueError)
LOAD_ERRORS = (
    ValueError,
    TypeError,
    AttributeError,
    KeyError,
    IndexError,
    OverflowError,
    RecursionError,
    LionError,
)
_REPR = reprlib.Repr()
_REPR.maxlevel = 2
_REPR.maxstring = 40
_REPR.maxother = 40
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 4


def bounded(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 40]}... ({len(text) - limit + 40} more characters)"


def short_repr(value: Any, limit: int = 80) -> str:
    """A short picture of any value; never raises, never recurses deeper than two levels."""
    try:
        text = _REPR.repr(value)
    except Exception:  # a __repr__ that raises, or one that recurses without end
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validation_detail(exc: BaseException) -> str:
    """Where and what of the first problem in ``exc``, without echoing the input."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors(include_url=False, include_input=False, include_context=False)[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            what = str(first.get("msg", "invalid"))
            return bounded(f"`{where}`: {what}" if where else what, 300)
        except Exception:
            pass
    if isinstance(exc, RecursionError):
        return "it is nested too deeply"
    try:
        text = str(exc)
    except Exception:
        text = ""
    return bounded(text.splitlines()[0] if text else type(exc).__name__, 300)


def check_depth(value: Any, field: str, limit: int, *, what: str = "A serialized value") -> None:
    """Refuse ``value`` if its dicts and lists nest deeper than ``limit`` (iteratively: a
    check must not itself run out of stack)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            raise ConfigurationError(
                f"{what} has a `{field}` nested more than {limit} levels deep; nothing saved "
                "by lion_nb nests that deeply. Pass the dict from `to_dict()` unchanged."
            )
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)


@contextmanager
def loading(
    what: str, field: str, hint: str = "Pass the dict from `to_dict()` unchanged."
) -> Iterator[None]:
    """Turn any failure while loading ``field`` into a `ConfigurationError` naming it.

    ``what`` names the thing being loaded ("A serialized branch"), ``field`` the part, as it
    should read ("`endpoint`"). A `ConfigurationError` raised inside keeps its own words
    (prefixed with the field unless they name it already, and bounded).
    """
    try:
        yield
    except ConfigurationError as exc:
        text = str(exc)
        if field in text and len(text) <= MAX_MESSAGE:
            raise
        raise ConfigurationError(bounded(f"{what} has a malformed {field}: {text}")) from exc
    except LOAD_ERRORS as exc:
        raise ConfigurationError(
            bounded(f"{what} has a malformed {field}: {validation_detail(exc)}. {hint}")
        ) from exc
