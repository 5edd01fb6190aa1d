"""A made-up JSON value that validates against a JSON schema: the offline model's answers.

``example_for(schema)`` is deterministic (the same schema always gives the same value), so
offline runs can be asserted on and notebooks re-run to the same output. It covers what
pydantic models and tool signatures produce: ``$ref`` / ``$defs``, objects with
``required`` / ``properties`` / ``additionalProperties``, arrays (``minItems``,
``maxItems``, ``uniqueItems``, ``prefixItems``), strings (``enum``, ``const``, ``format``,
``pattern``, lengths), integers and numbers with (exclusive) bounds and ``multipleOf``,
booleans, null, ``anyOf`` / ``oneOf`` / ``allOf`` and ``default``.

Decisions:

- A non-null ``default`` is used as given; a ``None`` default is not, so optional fields are
  filled in and the example shows the shape of the data.
- Unions take their first non-null branch, arrays one item (or ``minItems``), so the answer
  is small but shows every field.
- Recursive schemas end: past a depth only required properties, ``minItems`` items and the
  null branch of a union are made.
- A ``pattern`` is satisfied by walking the parsed regular expression; the result is checked
  with ``re.search`` and replaced by a plain value if the walk could not honour it.
"""

from __future__ import annotations

import copy
import datetime as dt
import math
import re
import sys
from typing import Any

__all__ = ["example_for"]

_DEEP = 6  # nesting depth after which only what is required is made
_GIVE_UP = 40  # a schema that requires infinite nesting has no instance; stop with null
_REF_HOPS = 32

_FORMATS: dict[str, str] = {
    "date-time": "2024-01-01T12:00:00Z",
    "date": "2024-01-01",
    "time": "12:00:00Z",
    "duration": "PT1H",
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "name-email": "User <user@example.com>",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "iri": "https://example.com/",
    "uri-reference": "https://example.com/",
    "iri-reference": "https://example.com/",
    "multi-host-uri": "https://example.com/",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "ipvanyaddress": "192.0.2.1",
    "ipvanyinterface": "192.0.2.1/24",
    "ipvanynetwork": "192.0.2.0/24",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "uuid1": "00000000-0000-1000-8000-000000000000",
    "uuid3": "00000000-0000-3000-8000-000000000000",
    "uuid4": "00000000-0000-4000-8000-000000000000",
    "uuid5": "00000000-0000-5000-8000-000000000000",
    "binary": "example",
    "base64": "ZXhhbXBsZQ==",
    "base64url": "ZXhhbXBsZQ==",
    "json-string": "{}",
    "path": "example.txt",
    "file-path": "example.txt",
    "directory-path": ".",
    "password": "example",
    "regex": "^example$",
    "json-pointer": "/example",
}


def example_for(schema: Any, *, hint: str = "value") -> Any:
    """A value valid against ``schema`` (``$ref`` resolved against the schema itself)."""
    return _Maker(schema if isinstance(schema, dict) else {}).make(schema, hint, 0, 0)


class _Maker:
    def __init__(self, root: dict[str, Any]):
        self.root = root
        self.expanding: list[str] = []  # the $refs being made, outermost first

    def loops(self, schema: Any) -> bool:
        """Whether ``schema`` refers back to a definition already being made (recursion)."""
        return isinstance(schema, dict) and schema.get("$ref") in self.expanding

    # -- references and combinators --------------------------------------------------------------
    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        hops = 0
        while isinstance(schema.get("$ref"), str) and hops < _REF_HOPS:
            target = self._lookup(schema["$ref"])
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **siblings}
            hops += 1
        return schema

    def _lookup(self, ref: str) -> dict[str, Any]:
        if not ref.startswith("#"):
            return {}
        node: Any = self.root
        for part in ref[1:].split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return {}
        return node if isinstance(node, dict) else {}

    def merge_all_of(self, schema: dict[str, Any]) -> dict[str, Any]:
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            part = self.resolve(part) if isinstance(part, dict) else {}
            if "allOf" in part:
                part = self.merge_all_of(part)
            for key, value in part.items():
                if key == "properties":
                    merged["properties"] = {**merged.get("properties", {}), **value}
                elif key == "required":
                    merged["required"] = sorted({*merged.get("required", []), *value})
                elif key in ("minimum", "exclusiveMinimum", "minLength", "minItems"):
                    merged[key] = max(value, merged.get(key, value))
                elif key in ("maximum", "exclusiveMaximum", "maxLength", "maxItems"):
                    merged[key] = min(value, merged.get(key, value))
                else:
                    merged.setdefault(key, value)
        return merged

    # -- values ---------------------------------------------------------------------------------
    def make(self, schema: Any, hint: str, depth: int, index: int) -> Any:
        if schema is True or not isinstance(schema, dict):
            return f"example {hint}" if schema is not False else None
        if depth > _GIVE_UP:
            return None
        ref = schema.get("$ref")
        if not isinstance(ref, str):
            return self._make(schema, hint, depth, index)
        if ref in self.expanding:
            depth = max(depth, _DEEP)
        self.expanding.append(ref)
        try:
            return self._make(schema, hint, depth, index)
        finally:
            self.expanding.pop()

    def _make(self, schema: dict[str, Any], hint: str, depth: int, index: int) -> Any:
        s = self.resolve(schema)
        if "allOf" in s:
            s = self.merge_all_of(s)
        if "const" in s:
            return copy.deepcopy(s["const"])
        if s.get("enum"):
            return copy.deepcopy(s["enum"][index % len(s["enum"])])
        if s.get("default") is not None and index == 0:
            return copy.deepcopy(s["default"])
        for key in ("anyOf", "oneOf"):
            if isinstance(s.get(key), list) and s[key]:
                branch = self._pick_branch(s[key], depth)
                rest = {k: v for k, v in s.items() if k not in (key, "default")}
                return self.make({**rest, **self.resolve(branch)}, hint, depth, index)
        kind = s.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null"] or ["null"]
            kind = "null" if depth >= _DEEP and "null" in kind else kinds[0]
        if kind is None:
            kind = _infer_type(s)
        maker = getattr(self, f"_make_{kind}", None)
        if maker is None:
            return f"example {hint}"
        return maker(s, hint, depth, index)

    def _pick_branch(self, branches: list[Any], depth: int) -> Any:
        resolved = [self.resolve(b) if isinstance(b, dict) else {} for b in branches]
        is_null = [b.get("type") == "null" for b in resolved]
        wanted = next((b for b, null in zip(branches, is_null, strict=True) if not null), None)
        if (depth >= _DEEP or self.loops(wanted)) and any(is_null):
            return branches[is_null.index(True)]
        for branch, null in zip(branches, is_null, strict=True):
            if not null:
                return branch
        return branches[0]

    def _make_null(self, s: dict[str, Any], hint: str, depth: int, index: int) -> None:
        return None

    def _make_boolean(self, s: dict[str, Any], hint: str, depth: int, index: int) -> bool:
        return index % 2 == 0

    def _make_object(self, s: dict[str, Any], hint: str, depth: int, index: int) -> dict[str, Any]:
        props: dict[str, Any] = s.get("properties") or {}
        required = set(s.get("required") or ())
        deep = depth >= _DEEP
        out: dict[str, Any] = {}
        for name, sub in props.items():
            if deep and name not in required:
                continue
            out[name] = self.make(sub, name, depth + 1, 0)
        extra = s.get("additionalProperties", True)
        extra_schema = extra if isinstance(extra, dict) else {}
        for name in sorted(required - out.keys()):
            out[name] = self.make(extra_schema, name, depth + 1, 0)
        wanted = s.get("minProperties", 0)
        open_map = "properties" not in s and isinstance(extra, dict)  # dict[str, X]
        if open_map and not deep and "propertyNames" not in s and s.get("maxProperties", 1):
            wanted = max(wanted, 1)
        n = 0
        while len(out) < wanted and extra is not False:
            n += 1
            key = f"{hint}_{n}" if hint and hint != "value" else f"key_{n}"
            out[key] = self.make(extra_schema, key, depth + 1, n - 1)
        return out

    def _make_array(self, s: dict[str, Any], hint: str, depth: int, index: int) -> list[Any]:
        prefix = s.get("prefixItems") or []
        items = s.get("items", {})
        if isinstance(items, list):  # draft-04 tuple form
            prefix, items = items, s.get("additionalItems", {})
        low = s.get("minItems", 0)
        small = depth >= _DEEP or self.loops(items)
        n = max(low, len(prefix)) if small else max(low, len(prefix), 1)
        if items is False:
            n = len(prefix)
        if "maxItems" in s:
            n = min(n, s["maxItems"])
        out: list[Any] = []
        if "contains" in s and n > 0:
            out.append(self.make(s["contains"], hint, depth + 1, 0))
        for i in range(len(out), n):
            sub = prefix[i] if i < len(prefix) else items
            out.append(self.make(sub, _singular(hint), depth + 1, i))
        return out

    def _make_string(self, s: dict[str, Any], hint: str, depth: int, index: int) -> str:
        fmt = s.get("format")
        if fmt in ("date", "date-time"):
            day = dt.date(2024, 1, 1) + dt.timedelta(days=index)
            text = day.isoformat() + ("T12:00:00Z" if fmt == "date-time" else "")
        elif fmt in _FORMATS:
            text = _FORMATS[fmt]
        else:
            label = re.sub(r"[_\s]+", " ", hint).strip() or "value"
            text = f"example {label}" + (f" {index + 1}" if index else "")
        pattern = s.get("pattern")
        if isinstance(pattern, str):
            return _string_for_pattern(pattern, text, s)
        low, high = s.get("minLength", 0), s.get("maxLength")
        if len(text) < low:
            text += "x" * (low - len(text))
        if high is not None and len(text) > high:
            text = text[:high]
        return text

    def _make_integer(self, s: dict[str, Any], hint: str, depth: int, index: int) -> int:
        low, high = _bounds(s, integer=True)
        value = low if low is not None else (min(1, high) if high is not None else 1)
        value += index
        if high is not None and value > high:
            value = high
        step = s.get("multipleOf")
        if step:
            value = int(math.ceil(value / step) * step)
            if high is not None and value > high:
                value = int(math.floor(high / step) * step)
        return int(value)

    def _make_number(self, s: dict[str, Any], hint: str, depth: int, index: int) -> float | int:
        low, high = _bounds(s, integer=False)
        if low is not None and high is not None:
            value = low if low < high else high
        elif low is not None:
            value = low
        elif high is not None:
            value = min(1.5, high)
        else:
            value = 1.5
        value += index
        if high is not None and value > high:
            value = high
        step = s.get("multipleOf")
        if step:
            value = math.ceil(value / step - 1e-9) * step
            value = round(value, 10)
            if float(value).is_integer():
                value = int(value)
        return value


def _bounds(s: dict[str, Any], *, integer: bool) -> tuple[float | None, float | None]:
    """Inclusive (low, high) from minimum / maximum / exclusive bounds (draft-04 and later)."""
    low: float | None = s.get("minimum")
    high: float | None = s.get("maximum")
    step_low: float
    step_high: float
    ex_low, ex_high = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
    if ex_low is True and low is not None:  # draft-04 boolean form
        ex_low, low = low, None
    if ex_high is True and high is not None:
        ex_high, high = high, None
    if isinstance(ex_low, (int, float)) and not isinstance(ex_low, bool):
        limit = ex_high if isinstance(ex_high, (int, float)) and ex_high is not True else None
        limit = high if limit is None else limit
        if integer:
            step_low = math.floor(ex_low) + 1
        elif limit is not None:
            step_low = ex_low + (limit - ex_low) / 2
        else:
            step_low = ex_low + 1
        low = step_low if low is None else max(low, step_low)
    if isinstance(ex_high, (int, float)) and not isinstance(ex_high, bool):
        if integer:
            step_high = math.ceil(ex_high) - 1
        else:
            base = low if low is not None else ex_high - 1
            step_high = base + (ex_high - base) / 2 if base < ex_high else ex_high - 1
        high = step_high if high is None else min(high, step_high)
    if integer:
        low = math.ceil(low) if low is not None else None
        high = math.floor(high) if high is not None else None
    return low, high


def _infer_type(s: dict[str, Any]) -> str:
    if any(k in s for k in ("properties", "required", "additionalProperties", "minProperties")):
        return "object"
    if any(k in s for k in ("items", "prefixItems", "minItems", "maxItems", "contains")):
        return "array"
    if any(k in s for k in ("pattern", "format", "minLength", "maxLength")):
        return "string"
    if any(k in s for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
        return "number"
    return "string"


def _singular(hint: str) -> str:
    return hint[:-1] if len(hint) > 3 and hint.endswith("s") and not hint.endswith("ss") else hint


# -- patterns -------------------------------------------------------------------------------------
def _string_for_pattern(pattern: str, fallback: str, s: dict[str, Any]) -> str:
    candidates = []
    try:
        candidates.append(_walk_pattern(pattern))
    except Exception:  # an unusual regex: fall back to plain candidates below
        pass
    candidates += [fallback, "example", "a", "A", "0", "1", ""]
    low, high = s.get("minLength", 0), s.get("maxLength")
    for text in candidates:
        try:
            ok = re.search(pattern, text) is not None
        except re.error:
            return fallback
        if ok and len(text) >= low and (high is None or len(text) <= high):
            return text
    return candidates[0]


def _walk_pattern(pattern: str) -> str:
    if sys.version_info >= (3, 11):
        import re._parser as sre_parse
    else:  # pragma: no cover - Python 3.10
        import sre_parse
    groups: dict[int, str] = {}
    return _walk(sre_parse.parse(pattern), groups)


_CATEGORY = {
    "CATEGORY_DIGIT": "0",
    "CATEGORY_NOT_DIGIT": "a",
    "CATEGORY_WORD": "a",
    "CATEGORY_NOT_WORD": "-",
    "CATEGORY_SPACE": " ",
    "CATEGORY_NOT_SPACE": "a",
}


def _walk(parsed: Any, groups: dict[int, str]) -> str:
    out: list[str] = []
    for op, arg in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "NOT_LITERAL":
            out.append("a" if chr(arg) != "a" else "b")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_char_in(arg))
        elif name == "CATEGORY":
            out.append(_CATEGORY.get(str(arg), "a"))
        elif name == "BRANCH":
            out.append(_walk(arg[1][0], groups))
        elif name == "SUBPATTERN":
            text = _walk(arg[-1], groups)
            if arg[0] is not None:
                groups[arg[0]] = text
            out.append(text)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _high, item = arg
            out.append(_walk(item, groups) * low)
        elif name == "ATOMIC_GROUP":
            out.append(_walk(arg, groups))
        elif name == "GROUPREF":
            out.append(groups.get(arg, ""))
        # AT (anchors), ASSERT and ASSERT_NOT produce no text
    return "".join(out)


def _char_in(items: list[Any]) -> str:
    if items and str(items[0][0]) == "NEGATE":
        pattern_chars = set()
        for op, arg in items[1:]:
            if str(op) == "LITERAL":
                pattern_chars.add(chr(arg))
            elif str(op) == "RANGE":
                pattern_chars.update(chr(c) for c in range(arg[0], min(arg[1], arg[0] + 256) + 1))
        for c in "aA0_x-":
            if c not in pattern_chars:
                return c
        return "~"
    op, arg = items[0]
    name = str(op)
    if name == "LITERAL":
        return chr(arg)
    if name == "RANGE":
        return chr(arg[0])
    if name == "CATEGORY":
        return _CATEGORY.get(str(arg), "a")
    return "a"
