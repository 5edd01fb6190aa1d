"""Read a tool's description and its parameters' descriptions from a docstring.

Three common styles are understood, so existing functions describe themselves to a model
without being rewritten: Google (``Args:``), NumPy (``Parameters`` over a ``----`` rule) and
Sphinx (``:param name: text``). Anything else simply yields no parameter descriptions.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

__all__ = ["docstring_of", "first_paragraph", "param_docs"]

_GOOGLE = re.compile(
    r"(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Attributes)\s*:"
)
_NUMPY = {"Parameters", "Other Parameters", "Attributes"}
_RULE = re.compile(r"-{3,}")
_SPHINX = re.compile(r":param\s+(?:[^:\n]*\s)?(\w+)\s*:(.*?)(?=\n\s*:\w|\n\s*\n|\Z)", re.S)
_GOOGLE_ENTRY = re.compile(r"\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)")
_NUMPY_ENTRY = re.compile(r"\*{0,2}([\w, *]+?)\s*(?::\s*(.*))?")


def docstring_of(obj: Any) -> str:
    """The cleaned docstring of a function, a class (its own, not inherited) or a callable."""
    doc = obj.__doc__ if isinstance(obj, type) else getattr(obj, "__doc__", None)
    if not doc and not inspect.isroutine(obj) and not isinstance(obj, type):
        doc = type(obj).__doc__ or getattr(type(obj).__call__, "__doc__", None)
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


def first_paragraph(doc: str) -> str:
    """The summary: lines up to the first blank line or section header, joined."""
    lines: list[str] = []
    for line in doc.splitlines():
        text = line.strip()
        if not text or _GOOGLE.fullmatch(text) or text in _NUMPY or text.startswith(":param"):
            break
        lines.append(text)
    return " ".join(lines)


def param_docs(doc: str) -> dict[str, str]:
    """``{parameter: description}`` from every parameter section of ``doc``."""
    docs: dict[str, str] = {m.group(1): " ".join(m.group(2).split()) for m in _SPHINX.finditer(doc)}
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        head = lines[i].strip()
        numpy = head in _NUMPY and i + 1 < len(lines) and _RULE.fullmatch(lines[i + 1].strip())
        if numpy or _GOOGLE.fullmatch(head):
            i = _section(lines, i, bool(numpy), docs)
        else:
            i += 1
    return {name: text for name, text in docs.items() if text}


def _section(lines: list[str], start: int, numpy: bool, docs: dict[str, str]) -> int:
    """Read one section starting at its header; return the index of the line after it."""
    base = _indent(lines[start])
    i = start + (2 if numpy else 1)
    entry_indent: int | None = None
    current: list[str] = []
    while i < len(lines):
        text = lines[i].strip()
        if not text:
            i += 1
            continue
        indent = _indent(lines[i])
        next_is_rule = i + 1 < len(lines) and _RULE.fullmatch(lines[i + 1].strip())
        if indent < base or (indent == base and (not numpy or next_is_rule)):
            break
        entry_indent = indent if entry_indent is None else entry_indent
        if indent == entry_indent:
            m = (_NUMPY_ENTRY if numpy else _GOOGLE_ENTRY).fullmatch(text)
            current = [n.strip(" *") for n in m.group(1).split(",")] if m else []
            # a NumPy entry line carries the type; its description is on the next lines
            described = (m.group(2) or "") if m and not numpy else ""
            for name in current:
                docs[name] = described
        else:
            for name in current:
                docs[name] = f"{docs.get(name, '')} {text}".strip()
        i += 1
    return i


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
