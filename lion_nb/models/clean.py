"""Text entering lion_nb, made safe to keep: whole Unicode, and no known secret in it.

Two things in a text break or leak everything that later reads it, so they are dealt with
once, where text enters, rather than at every place that shows or writes it:

- **a lone surrogate** (``"\\ud800"``: half of a UTF-16 pair, which a JSON escape, a tool or
  a typed string can produce) is a Python ``str`` that cannot be encoded as UTF-8. Kept, it
  fails every later request, every save and every render of the branch. `whole_text`
  replaces each with U+FFFD (the replacement character), as decoding bad bytes with
  ``errors="replace"`` would. A proper pair (an emoji written as two escapes) is decoded by
  JSON into one character and is left alone.
- **a known secret** (the value of a key any `iModel` holds, or of a secret environment
  variable: `lion_nb.models.secrets.scrub`) is masked as ``****``. A provider that echoes its
  key, or an answer quoting one, then shows ``****`` in the branch, its widgets, its
  exports, the store and the batch records alike.

`clean_text` does both to one string; `clean_data` to every string (dict keys too) in JSON
data, returning the very same object when nothing changed, so the common case copies
nothing. `loads` is ``json.loads`` with lone surrogates replaced: the decoder every provider
answer passes through.

Where they are applied: every message's fields when it is made or assigned
(`lion_nb.protocols.messages`: typed text, instructions, tool results, answers, loaded
data), every stream chunk (`lion_nb.models.stream`) and every JSON answer a provider sends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from ..shapes import JsonObject
from .secrets import MASK, MIN_SCRUB, scrub_values

__all__ = ["clean_data", "clean_fields", "clean_text", "loads", "whole_data", "whole_text"]

_LONE = re.compile("[\ud800-\udfff]")
_REPLACEMENT = "\ufffd"


def whole_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (ASCII text: at no cost)."""
    if text.isascii() or not _LONE.search(text):
        return text
    return _LONE.sub(_REPLACEMENT, text)


def _mask(text: str, values: tuple[str, ...]) -> str:
    for value in values:  # longest first
        if value in text:
            text = text.replace(value, MASK)
    return text


def clean_text(text: str) -> str:
    """``text`` whole (`whole_text`) and with every known secret masked."""
    text = whole_text(text)
    if len(text) < MIN_SCRUB:
        return text
    return _mask(text, scrub_values())


# Any: the same shape as `value`, whatever it is
def clean_data(value: object) -> Any:
    """``value`` with `clean_text` applied to every string in it (dict keys too); the same
    object when nothing changed. Values other than str, dict, list and tuple are kept."""
    values = scrub_values()
    return _walk(value, values) if _dirty(value, values) else value


def clean_fields(
    fields: JsonObject,
    skip: frozenset[str] = frozenset(),
    values: tuple[str, ...] | None = None,
    names: Iterable[str] | None = None,
) -> None:
    """`clean_data` on each value of ``fields`` (an object's ``__dict__``) but those named in
    ``skip``, in place: what a model validator calls, once per object made. ``values`` are
    `scrub_values()` when the caller fetched them once for many objects; ``names``, when
    given, are the only fields looked at (those a model was given: its defaults hold no
    outside text)."""
    if values is None:
        values = scrub_values()
    for name in fields if names is None else names:
        value = fields[name]
        if value is None:  # most fields: passed at the cost of one comparison
            continue
        kind = value.__class__
        if kind in _KEPT:
            continue
        if kind is str:  # most others: looked at here, without a call
            if (value.isascii() and (not values or len(value) < MIN_SCRUB)) or name in skip:
                continue
            text = _text(value, values)
            if text is not value:
                fields[name] = text
        elif name in skip:
            continue
        elif (value or kind is not dict) and _dirty(value, values):
            fields[name] = _walk(value, values)


# Any: the same shape as `value`, whatever it is
def whole_data(value: object) -> Any:
    """``value`` with `whole_text` applied to every string in it; the same object when
    nothing changed."""
    return _walk(value, ()) if _dirty(value, ()) else value


_KEPT = frozenset({int, float, bool, type(None)})  # what a walk passes without a look


def _dirty(value: Any, values: tuple[str, ...]) -> bool:
    """Whether `_walk` would change anything in ``value``: a look that copies nothing, so
    the common case (whole text, no secret) costs no new dicts and lists."""
    cls = value.__class__
    if cls is dict:
        for key, item in value.items():
            if key.__class__ is str:
                if (not key.isascii() or (values and len(key) >= MIN_SCRUB)) and _text(
                    key, values
                ) is not key:
                    return True
            elif key.__class__ not in _KEPT and _dirty(key, values):
                return True
            kind = item.__class__
            if kind in _KEPT:
                continue
            if kind is str:
                if item.isascii() and (not values or len(item) < MIN_SCRUB):
                    continue
                if _text(item, values) is not item:
                    return True
            elif _dirty(item, values):
                return True
        return False
    if cls is list or cls is tuple:
        return any(item.__class__ not in _KEPT and _dirty(item, values) for item in value)
    if cls is str:
        return _text(value, values) is not value
    if isinstance(value, str):  # a subclass
        return _text(str.__str__(value), values) != value
    return False


def _text(text: str, values: tuple[str, ...]) -> str:
    if not text.isascii():
        text = whole_text(text)
    if values and len(text) >= MIN_SCRUB:
        for secret in values:  # longest first
            if secret in text:
                text = text.replace(secret, MASK)
    return text


def _walk(value: Any, values: tuple[str, ...]) -> Any:
    # only called once `_dirty` found something to change: the plain walk, not the fast look
    cls = value.__class__
    if cls is str:
        return _text(value, values)
    if cls is dict:
        out = {}
        changed = False
        for key, item in value.items():
            new_key = key if key.__class__ in _KEPT else _walk(key, values)
            new = item if item.__class__ in _KEPT else _walk(item, values)
            if new is not item or new_key is not key:
                changed = True
            out[new_key] = new
        return out if changed else value
    if cls is list or cls is tuple:
        items = [item if item.__class__ in _KEPT else _walk(item, values) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if cls is list else tuple(items)
    if isinstance(value, str):  # a subclass: its plain text
        text = _text(str.__str__(value), values)
        return value if text == value else text
    return value


# Any: any JSON value
def loads(raw: str | bytes) -> Any:
    """``json.loads(raw)`` with every lone surrogate in the result replaced (`whole_data`).
    Only a text holding a ``\\u`` escape is walked: no other way puts one in."""
    data = json.loads(raw)
    escaped = b"\\u" in raw if isinstance(raw, bytes) else "\\u" in raw
    if not escaped and (isinstance(raw, bytes) or raw.isascii()):
        return data
    return whole_data(data)
