"""Which offered tools the offline ``auto`` model calls, and with what arguments.

A model with no understanding must not act on its own: a made-up call of every offered tool
ran ``clear_notes`` on a real server for "Add a note that says hi." So the auto model calls
a tool only when the instruction names it (``use get_time``, ``call add_note "buy milk"``)
or the request forces it (a named ``tool_choice``), and only with arguments it can point to
in the instruction:

- ``param=value`` / ``param: value`` after the tool's name, for any parameter;
- quoted strings (``"..."``, ``'...'``, ``“...”``), in order, for required string parameters;
- a value of an ``enum`` that appears in the text, numbers in order for numeric ones;
- for one remaining required string, the words after the tool's name (``use get_time for
  Europe/Paris`` gives ``Europe/Paris``).

A required argument it cannot find means no call: the answer says which one is missing.
A tool whose name or description speaks of deleting (delete, clear, remove, drop, reset,
kill, destroy, overwrite, wipe, erase, purge, truncate) is never called, named or not;
`offline/scripted` and `offline/function` call whatever they are told to.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Plan", "destructive_word", "plan_tool_calls"]

_DESTRUCTIVE = re.compile(
    r"\b(delet(?:e|es|ed|ing)|clear(?:s|ed|ing)?|remov(?:e|es|ed|ing)|drop(?:s|ped|ping)?|"
    r"reset(?:s|ting)?|kill(?:s|ed|ing)?|destroy(?:s|ed|ing)?|overwrit(?:e|es|ing|ten)|overwrote|"
    r"wip(?:e|es|ed|ing)|eras(?:e|es|ed|ing)|purg(?:e|es|ed|ing)|truncat(?:e|es|ed|ing))\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(
    r"\"([^\"]*)\"|“([^”]*)”|‘([^’]*)’|(?:(?<=\s)|^)'([^']+)'(?=[\s.,;:!?)]|$)|`([^`]+)`"
)
_SENTENCE_END = re.compile(r"\n|(?<=[.!?])\s")
# where the words after a tool's name stop being its argument: "for Lisbon*,* then ..."
_CLAUSE_END = re.compile(r"[:;,\n]|[.!?](?:\s|$)")
_TRAIL = re.compile(r"(?:[\s,.!?]|\b(?:and|then|also|or|with)\b)+$", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w|\.\d)")
# words between a tool's name and its argument: "use get_time *for* Paris"
_LEAD = re.compile(
    r"^(?:[\s:,\-–—]|\b(?:tool|function|with|for|to|on|about|in|of|saying|says|that|"
    r"the|a|an|text|argument|arguments|input)\b)+",
    re.IGNORECASE,
)


@dataclass
class Plan:
    """The calls to make (tool schema, arguments) and why a named tool was not called."""

    calls: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def destructive_word(tool: dict[str, Any]) -> str | None:
    """The word in the tool's name or description that says it deletes or resets things."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(tool.get("name", "")))
    for text in (re.sub(r"[_\-.]+", " ", name), str(tool.get("description") or "")):
        match = _DESTRUCTIVE.search(text)
        if match:
            return match.group(1).lower()
    return None


def plan_tool_calls(question: str, tools: list[dict[str, Any]], forced: str | None) -> Plan:
    """The calls ``question`` asks for among ``tools`` (``forced``: a tool the request
    requires, as if named)."""
    plan = Plan()
    spots = {t["name"]: _mention(question, t["name"]) for t in tools}
    named = [t for t in tools if spots[t["name"]] is not None or t["name"] == forced]
    named.sort(key=lambda t: -1 if (spot := spots[t["name"]]) is None else spot)
    starts = sorted(s for s in spots.values() if s is not None)
    for tool in named:
        name = tool["name"]
        word = destructive_word(tool)
        if word is not None:
            plan.notes.append(
                f"`{name}` looks destructive (“{word}”), so the offline model never calls it "
                "(a real model or `offline/scripted` can)."
            )
            continue
        start = spots[name]
        if start is None:  # forced, not named: the whole instruction is its text
            segment, rest = question, ""
        else:  # its own stretch of the text when several tools are named
            after = start + len(name)
            end = min([s for s in starts if s > start] + [len(question)])
            rest = _SENTENCE_END.split(question[after:end], maxsplit=1)[0]
            segment = question if len(named) == 1 else question[after:end]
        args, missing = _arguments(tool, segment, rest)
        if missing:
            listed = ", ".join(f"`{m}`" for m in missing)
            plan.notes.append(
                f"`{name}` needs {listed}, which the instruction does not give (write e.g. "
                f'`{name} {missing[0]}="..."`).'
            )
            continue
        plan.calls.append((tool, args))
    return plan


def _mention(text: str, name: str) -> int | None:
    match = re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", text)
    return match.end() - len(name) if match else None


def _kind(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None:
        for option in schema.get("anyOf") or schema.get("oneOf") or ():
            if isinstance(option, dict) and option.get("type") not in (None, "null"):
                return _kind(option)
        if "enum" in schema:
            return "enum"
    return str(kind or "string")


def _arguments(tool: dict[str, Any], segment: str, rest: str) -> tuple[dict[str, Any], list[str]]:
    params = tool.get("parameters") or {}
    props: dict[str, Any] = params.get("properties") or {}
    required = [r for r in params.get("required") or () if r in props]
    args: dict[str, Any] = {}
    taken: list[tuple[int, int]] = []  # spans of the segment used by `param=value`
    for name, schema in props.items():
        match = re.search(
            rf"(?<![\w]){re.escape(name)}\s*[=:]\s*(\"[^\"]*\"|“[^”]*”|'[^']*'|[^\s,;]+)", segment
        )
        if match:
            value = _convert(
                match.group(1).strip("\"'“”"), schema if isinstance(schema, dict) else {}
            )
            if value is not None:
                args[name] = value
                taken.append(match.span())
    free = "".join(
        c if not any(a <= i < b for a, b in taken) else " " for i, c in enumerate(segment)
    )
    quoted = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(free)]
    numbers = _NUMBER.findall(_QUOTED.sub(" ", free))
    for name in required:
        if name in args:
            continue
        schema = props[name] if isinstance(props[name], dict) else {}
        kind = _kind(schema)
        enum = schema.get("enum") or next(
            (
                o.get("enum")
                for o in schema.get("anyOf") or ()
                if isinstance(o, dict) and "enum" in o
            ),
            None,
        )
        if enum:
            hit = next(
                (v for v in enum if re.search(rf"(?<!\w){re.escape(str(v))}(?!\w)", free)), None
            )
            if hit is not None:
                args[name] = hit
        elif kind in ("integer", "number") and numbers:
            args[name] = _convert(numbers.pop(0), schema)
        elif kind == "string" and quoted:
            args[name] = quoted.pop(0)
    left = [n for n in required if n not in args]
    if len(left) == 1 and _kind(props[left[0]] or {}) == "string" and not taken and rest:
        words = _CLAUSE_END.split(_LEAD.sub("", rest), maxsplit=1)[0]
        words = _TRAIL.sub("", words).strip()
        if words:
            args[left[0]] = words
    return args, [n for n in required if n not in args]


def _convert(text: str, schema: dict[str, Any]) -> Any:
    """``text`` as a value of ``schema``'s type; ``None`` when it is not one."""
    kind = _kind(schema)
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            value = float(text)
            return int(value) if value.is_integer() and "." not in text else value
    except ValueError:
        return None
    if kind == "boolean":
        return {"true": True, "yes": True, "false": False, "no": False}.get(text.lower())
    if kind in ("array", "object"):
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, list if kind == "array" else dict) else None
    return text
