"""One-pass interpolation of ``{...}`` in a cell's prompt.

The rule, in the order it is applied to each brace:

1. ``{{`` and ``}}`` are literal ``{`` and ``}``.
2. ``{name}`` -- a bare identifier -- is looked up in the notebook namespace (then ``Err`` /
   ``error``, the notebook's last error with its traceback). A name that is not there is a
   `UsageError` naming it, with the fix (define it, or double the braces).
3. ``{expression}`` -- anything that parses as a Python expression *and uses at least one
   name* (``{df.shape}``, ``{In[3]}``, ``{Out[4]}``, ``{Err[7]}``, ``{len(rows)}``) -- is
   evaluated in the notebook namespace. A missing name or a failing expression is a
   `UsageError` that shows the expression and the reason.
4. Anything else between braces is left exactly as written: ``{'a': 1}`` and
   ``{"k": [1, 2]}`` do not parse as expressions, ``{1, 2}`` uses no name, an unmatched
   ``{`` matches nothing.

The text is scanned once, left to right. An inserted value is copied into the result and
never looked at again, so a variable holding ``"{secret}"`` inserts those eight characters,
not the value of ``secret`` (the double interpolation that leaks values in other tools).

Every inserted value is scrubbed of secrets (`lion_nb.models.secrets.scrub`: the keys of the
process's models and the environment's key variables, each replaced by ``****``). This is the
one place where the notebook's values -- ``{Err}``, ``{In[n]}``, ``{Out[n]}``, ``{var}`` --
enter a prompt, so a key that a cell, a traceback or a variable holds never reaches the model,
the branch or a saved session.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Any

from IPython.core.error import UsageError

from ..models.secrets import scrub

__all__ = ["format_value", "interpolate"]

_NOT_AN_EXPRESSION = object()


def interpolate(
    text: str, namespace: Mapping[str, Any], specials: Mapping[str, Any] | None = None
) -> str:
    """``text`` with every ``{...}`` resolved by the rule in the module docstring."""
    if "{" not in text and "}" not in text:
        return text
    specials = specials or {}
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "{":
            if text.startswith("{{", i):
                out.append("{")
                i += 2
                continue
            end = _matching_brace(text, i)
            if end < 0:
                out.append("{")
                i += 1
                continue
            value = _resolve(text[i + 1 : end], namespace, specials)
            out.append(text[i : end + 1] if value is _NOT_AN_EXPRESSION else scrub(value))
            i = end + 1
        elif ch == "}":
            out.append("}")
            i += 2 if text.startswith("}}", i) else 1
        else:
            j = _next_brace(text, i)
            out.append(text[i:j])
            i = j
    return "".join(out)


def _next_brace(text: str, start: int) -> int:
    a, b = text.find("{", start), text.find("}", start)
    candidates = [k for k in (a, b) if k >= 0]
    return min(candidates) if candidates else len(text)


def _matching_brace(text: str, start: int) -> int:
    """Index of the ``}`` closing the ``{`` at ``start`` (nesting and quotes aware), or -1."""
    depth, quote, i = 0, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _resolve(inner: str, namespace: Mapping[str, Any], specials: Mapping[str, Any]) -> Any:
    source = inner.strip()
    if not source:
        return _NOT_AN_EXPRESSION
    if source.isidentifier():
        if source in namespace:
            return format_value(namespace[source])
        if source in specials:
            return format_value(_special(source, specials))
        raise UsageError(
            f"`{{{source}}}`: no variable named `{source}` in the notebook namespace. "
            f"Define it in a cell above, or write `{{{{{source}}}}}` for literal braces "
            "(`--raw` turns interpolation off for the cell)."
        )
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError):
        return _NOT_AN_EXPRESSION
    if not any(isinstance(node, ast.Name) for node in ast.walk(tree)):
        return _NOT_AN_EXPRESSION
    scope = {k: v for k, v in specials.items() if k not in namespace}
    try:
        value = eval(compile(tree, "<lion prompt>", "eval"), dict(namespace), scope)
    except NameError as exc:
        name = getattr(exc, "name", None) or str(exc)
        raise UsageError(
            f"`{{{source}}}`: no variable named `{name}` in the notebook namespace. Define "
            "it in a cell above, or double the braces for literal text."
        ) from None
    except UsageError:
        raise
    except Exception as exc:
        raise UsageError(
            f"`{{{source}}}` could not be evaluated: {type(exc).__name__}: {exc}. Fix the "
            "expression, or double the braces for literal text."
        ) from None
    return format_value(value)


def _special(name: str, specials: Mapping[str, Any]) -> Any:
    value = specials[name]
    text = str(value)
    if not text:
        raise UsageError(f"`{{{name}}}`: no error has been raised in this notebook yet.")
    return text


def format_value(value: Any) -> str:
    """How a value reads inside a prompt: text as is, models and containers as JSON."""
    if isinstance(value, str):
        return value
    dump = getattr(value, "model_dump_json", None)
    if callable(dump) and not isinstance(value, type):
        try:
            return dump(indent=2)
        except Exception:
            pass
    if isinstance(value, (dict, list, tuple)):
        try:
            return json.dumps(value, indent=2, ensure_ascii=False)
        except (TypeError, ValueError):
            return repr(value)
    return str(value)
