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

The text is scanned once, left to right, in time linear in its length (`_closing_braces`).
An inserted value is copied into the result and never looked at again, so a variable holding
``"{secret}"`` inserts those eight characters, not the value of ``secret`` (the double
interpolation that leaks values in other tools).

Whatever the text, the result is the prompt or a `UsageError`: a value that cannot be turned
into text, an error whose message cannot be shown, an expression nested too deeply to parse
(a 100,000-character one) -- each is one line that says what to do, quoting at most 80
characters of the expression.

With an `Attached` collector (what a ``%%lion`` turn passes), each value goes through
`lion_nb.context.to_content` within the collector's token budget: a DataFrame becomes its
schema, statistics and a sample, a figure or an image becomes an attached image (a line in
the text says where), a long string or list is trimmed with a marker; the collector gathers
the images and files and a line per converted value for the turn view ("`df`: 1,000,000 ×
12, 10-row sample, 412 tokens"). Without one, values are text as `format_value` makes it.

Every inserted value is scrubbed of secrets (`lion_nb.models.secrets.scrub`: the keys of the
process's models and the environment's key variables, each replaced by ``****``). This is the
one place where the notebook's values -- ``{Err}``, ``{In[n]}``, ``{Out[n]}``, ``{var}`` --
enter a prompt, so a key that a cell, a traceback or a variable holds never reaches the model,
the branch or a saved session.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from IPython.core.error import UsageError

from ...models.secrets import scrub

__all__ = ["Attached", "format_value", "interpolate"]

_NOT_AN_EXPRESSION = object()
_BRACE = re.compile(r"\{\{|\}\}|[{}]")
_SPECIAL = re.compile(r"[{}'\"\\]")
_SHOWN = 80  # characters of an expression quoted in an error


@dataclass(slots=True)
class Attached:
    """What a turn's interpolation attached: images, files, and what each value became."""

    budget: int | None = None  # tokens per value (None: the conversion's default)
    vision: bool = True  # whether the model reads images (told to ``_ai_repr_``)
    images: list[str] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    report: list[str] = field(default_factory=list)

    def add(self, shown: str, value: Any) -> str:
        """``value`` converted; its images and files kept here; its text returned."""
        from ...context import to_content

        content = to_content(value, name=shown, budget=self.budget, vision=self.vision)
        self.images += content.images
        self.files += content.files
        if content.summary:
            self.report.append(content.describe(shown))
        return content.text


def interpolate(
    text: str,
    namespace: Mapping[str, Any],
    specials: Mapping[str, Any] | None = None,
    attached: Attached | None = None,
) -> str:
    """``text`` with every ``{...}`` resolved by the rule in the module docstring."""
    if "{" not in text and "}" not in text:
        return text
    specials = specials or {}
    closing = _closing_braces(text)
    out: list[str] = []
    i = 0
    while (found := _BRACE.search(text, i)) is not None:
        start, token = found.start(), found.group()
        out.append(text[i:start])
        i = found.end()
        if token != "{":  # "{{", "}}" and a lone "}" stand for one brace
            out.append(token[0])
            continue
        end = closing.get(start, -1)
        if end < 0:  # unmatched: a literal brace
            out.append("{")
            continue
        value = _resolve(text[start + 1 : end], namespace, specials, attached)
        out.append(text[start : end + 1] if value is _NOT_AN_EXPRESSION else scrub(value))
        i = end + 1
    out.append(text[i:])
    return "".join(out)


def _closing_braces(text: str) -> dict[int, int]:
    """For each ``{`` in ``text``: the index of the ``}`` that closes it (nesting and quotes
    aware), or -1.

    Scanning forward from every ``{`` costs quadratic time when many are unmatched (a 40 KB
    cell took half a minute), so the scans are computed together, right to left, in linear
    time. A scan's outcome from a position depends only on that position and whether it is
    inside a quote, so ``none[k]`` / ``single[k]`` / ``double[k]`` hold the outcome of a scan
    at the k-th brace, quote or backslash (outside quotes, in ``'...'``, in ``"..."``): the
    index (into ``marks``) of the closing ``}``, or -1. Other characters change nothing."""
    marks = [m.start() for m in _SPECIAL.finditer(text)]
    count = len(marks)
    none, single, double = [-1] * (count + 1), [-1] * (count + 1), [-1] * (count + 1)
    for k in range(count - 1, -1, -1):
        pos, ch = marks[k], text[marks[k]]
        if ch == "}":
            none[k] = k
        elif ch == "{":  # a nested pair: continue after its closing brace
            inner = none[k + 1]
            none[k] = -1 if inner < 0 else none[inner + 1]
        elif ch == "'":
            none[k] = single[k + 1]
        elif ch == '"':
            none[k] = double[k + 1]
        else:  # a backslash means nothing outside quotes
            none[k] = none[k + 1]
        # inside a quote, a backslash skips the next character
        after_escape = k + 2 if k + 1 < count and marks[k + 1] == pos + 1 else k + 1
        for state, quote in ((single, "'"), (double, '"')):
            if ch == "\\":
                state[k] = state[after_escape]
            elif ch == quote:
                state[k] = none[k + 1]
            else:
                state[k] = state[k + 1]
    return {
        pos: (marks[none[k + 1]] if none[k + 1] >= 0 else -1)
        for k, pos in enumerate(marks)
        if text[pos] == "{"
    }


def _shown(source: str) -> str:
    """``source`` as quoted in an error message: at most `_SHOWN` characters."""
    return source if len(source) <= _SHOWN else source[: _SHOWN - 1] + "…"


def _resolve(
    inner: str,
    namespace: Mapping[str, Any],
    specials: Mapping[str, Any],
    attached: Attached | None = None,
) -> Any:
    source = inner.strip()
    if not source:
        return _NOT_AN_EXPRESSION
    shown = _shown(source)
    if source.isidentifier():
        if source in namespace:
            return _inserted(shown, namespace[source], attached)
        if source in specials:
            return _inserted(shown, _special(source, specials), attached)
        raise UsageError(
            f"`{{{shown}}}`: no variable named `{shown}` in the notebook namespace. "
            f"Define it in a cell above, or write `{{{{{shown}}}}}` for literal braces "
            "(`--raw` turns interpolation off for the cell)."
        )
    try:
        with warnings.catch_warnings():  # `{'\d'}` is prose to keep, not code to warn about
            warnings.simplefilter("ignore")
            tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError):
        return _NOT_AN_EXPRESSION
    except (MemoryError, RecursionError):  # the parser gives up on very deep nesting
        raise UsageError(
            f"`{{{shown}}}` ({len(source):,} characters) is nested too deeply to read as an "
            "expression. Compute it in a cell above and write `{name}`, or double the braces "
            "for literal text (`--raw` turns interpolation off for the cell)."
        ) from None
    if not any(isinstance(node, ast.Name) for node in ast.walk(tree)):
        return _NOT_AN_EXPRESSION
    scope = {k: v for k, v in specials.items() if k not in namespace}
    try:
        value = eval(compile(tree, "<lion prompt>", "eval"), dict(namespace), scope)
    except NameError as exc:
        name = _shown(str(getattr(exc, "name", None) or _describe(exc)))
        raise UsageError(
            f"`{{{shown}}}`: no variable named `{name}` in the notebook namespace. Define "
            "it in a cell above, or double the braces for literal text."
        ) from None
    except UsageError:
        raise
    except Exception as exc:  # RecursionError and MemoryError included
        raise UsageError(
            f"`{{{shown}}}` could not be evaluated: {_describe(exc)}. Fix the "
            "expression, or double the braces for literal text."
        ) from None
    return _inserted(shown, value, attached)


def _inserted(shown: str, value: Any, attached: Attached | None = None) -> str:
    """``value`` as text for the prompt; a value that cannot be shown is a `UsageError`."""
    try:
        return format_value(value) if attached is None else attached.add(shown, value)
    except Exception as exc:
        raise UsageError(
            f"`{{{shown}}}`: the value could not be turned into text ({_describe(exc)}). "
            f"Insert something printable, e.g. `{{repr({shown})}}` or an attribute of it."
        ) from None


def _describe(exc: BaseException) -> str:
    """``TypeName: message`` of an error, bounded, even when its message cannot be made."""
    try:
        message = str(exc)
    except Exception:
        message = "(its message could not be shown)"
    message = message if len(message) <= 300 else message[:299] + "…"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


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
