"""Plain JSON data from anything, so that a branch can always be saved and printed.

Tool results, metadata and log entries hold whatever Python code put there: bytes, sets,
dates, objects of any class -- even one whose ``__str__`` raises. `json_safe` turns a value
into data that ``json.dumps`` accepts and that prints, and reports every replacement:

- ``str``, ``int``, ``float``, ``bool`` and ``None`` stay; dict keys become strings; tuples
  and sets become lists;
- bytes become their text when they are UTF-8, else ``"<N bytes, base64: ...>"`` (up to
  `MAX_BYTES`; longer ones are summarised, not kept);
- pydantic models are dumped; dates, UUIDs, enums, paths, decimals and dataclasses take
  pydantic's JSON form;
- anything else becomes its ``str()``, else its ``repr()``, else ``"<unprintable T>"``;
- nesting deeper than `MAX_DEPTH` levels (pydantic refuses to serialize past 255) and
  cycles become a marker string.

A value that is plain data already comes back as the very same object, so the common case
copies nothing.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, cast

from ..shapes import JsonObject

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["MAX_BYTES", "MAX_DEPTH", "dump_safely", "json_safe", "text_of"]

MAX_DEPTH = 100
MAX_BYTES = 64 * 1024
_MAX_NOTES = 20
_SCALARS = (str, int, float, bool, type(None))


# Any: plain JSON data: a dict, list, str, number, bool or None
def json_safe(value: object, notes: list[dict[str, str]] | None = None) -> Any:
    """``value`` as plain JSON data; each replacement is appended to ``notes`` (at most 20)
    as ``{"at": path, "was": type name, "now": what it became}``."""
    return _Walk(notes).convert(value, "$", 0, ())


def dump_safely(model: BaseModel, mode: str = "json") -> JsonObject:
    """``model.model_dump(mode=mode)``; in JSON mode, when pydantic cannot serialize some
    value (bytes that are not UTF-8, an unknown object, nesting past its limit), the Python
    dump made plain by `json_safe` instead -- saving never fails on what a field holds."""
    if mode == "python":
        return model.model_dump(mode="python")
    try:
        return model.model_dump(mode=mode)
    except Exception:
        # a dict comes back a dict from `json_safe` (only its values are replaced)
        return cast("dict[str, Any]", json_safe(model.model_dump(mode="python")))


class _Walk:
    __slots__ = ("notes",)

    def __init__(self, notes: list[dict[str, str]] | None):
        self.notes = notes

    def note(self, at: str, was: Any, now: str) -> None:
        if self.notes is not None and len(self.notes) < _MAX_NOTES:
            self.notes.append({"at": at, "was": type(was).__name__, "now": now})

    def convert(self, value: Any, at: str, depth: int, path: tuple[int, ...]) -> Any:
        if type(value) in _SCALARS:
            return value
        if isinstance(value, (dict, list, tuple, set, frozenset)):
            if depth >= MAX_DEPTH:
                self.note(at, value, "a marker: nested too deeply")
                return f"<{type(value).__name__} nested more than {MAX_DEPTH} levels deep>"
            if id(value) in path:
                self.note(at, value, "a marker: it contains itself")
                return f"<{type(value).__name__} that contains itself>"
            inner = (*path, id(value))
            if isinstance(value, dict):
                return self._dict(value, at, depth, inner)
            return self._list(value, at, depth, inner)
        return self._leaf(value, at, depth, path)

    def _dict(self, value: dict[Any, Any], at: str, depth: int, path: tuple[int, ...]) -> Any:
        out: dict[str, Any] = {}
        changed = type(value) is not dict
        for key, item in value.items():
            name = key if isinstance(key, str) else self._key(key, at)
            new = self.convert(item, f"{at}.{name}", depth + 1, path)
            changed = changed or new is not item or name is not key
            out[name] = new
        return out if changed else value

    def _list(self, value: Any, at: str, depth: int, path: tuple[int, ...]) -> Any:
        if not isinstance(value, list):
            self.note(at, value, "a list")
        out = [self.convert(item, f"{at}[{i}]", depth + 1, path) for i, item in enumerate(value)]
        unchanged = type(value) is list and all(
            new is old for new, old in zip(out, value, strict=True)
        )
        return value if unchanged else out

    def _key(self, key: Any, at: str) -> str:
        text = text_of(key)
        self.note(f"{at}.{text}", key, "a string key")
        return text

    def _leaf(self, value: Any, at: str, depth: int, path: tuple[int, ...]) -> Any:
        if isinstance(value, bool):
            return bool(value)
        for base in (str, int, float):  # a subclass: its plain value, whatever it overrides
            if isinstance(value, base):
                return getattr(base, f"__{base.__name__}__")(value)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return self._bytes(bytes(value), at, value)
        from pydantic import BaseModel
        from pydantic_core import to_jsonable_python

        plain: Any
        try:
            if isinstance(value, BaseModel):
                plain = value.model_dump(mode="python")
            else:
                plain = to_jsonable_python(value)
        except Exception:
            text = text_of(value)
            printable = not text.startswith("<unprintable ")
            self.note(at, value, "its text" if printable else "a marker: it cannot be printed")
            return text
        if type(plain) in _SCALARS:
            return plain
        return self.convert(plain, at, depth, path)

    def _bytes(self, data: bytes, at: str, original: Any) -> str:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            self.note(at, original, "UTF-8 text")
            return text
        if len(data) > MAX_BYTES:
            self.note(at, original, "a size (too large to keep)")
            return f"<{len(data)} bytes, not kept>"
        self.note(at, original, "base64 text")
        return f"<{len(data)} bytes, base64: {base64.b64encode(data).decode('ascii')}>"


def text_of(value: object) -> str:
    """``str(value)``, else ``repr(value)``, else a marker; never raises."""
    for render in (str, repr):
        try:
            text = render(value)
        except Exception:
            continue
        if isinstance(text, str):
            return text
    return f"<unprintable {type(value).__name__}>"
