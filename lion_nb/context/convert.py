"""`to_content`: one value → the text, images and files a model reads, within a budget.

The order of preference (ADR-0110):

1. the object's ``_ai_repr_(**kwargs)`` -- the Jupyter proposal: a ``str``, or a dict of MIME
   type to value (``text/plain``, ``text/markdown``, ``application/json``, ``image/png``,
   ``image/jpeg``, ``image/gif``, ``image/webp``, ``application/pdf``). It is offered the
   keywords ``budget`` (tokens) and ``vision`` (whether the model reads images), those its
   signature takes;
2. its ``_repr_llm_()`` (a ``str``);
3. a function registered for its type or a base class (`register_ai_repr`), called the
   same way as ``_ai_repr_``;
4. the built-ins: pandas and polars frames and series, NumPy arrays, exceptions, matplotlib
   figures and artists, PIL images, ``IPython.display.Image``, image and PDF bytes, anything
   whose rich display has an ``image/png`` or ``image/jpeg`` form, pydantic models, then
   strings and containers, trimmed with a marker that says what was cut.

A built-in for a library's type is found by the modules of the value's classes, so pandas is
imported only to convert a value that is already a pandas object. Every text is scrubbed of
known secrets and fitted into the budget by the estimate of `lion_nb.tokens`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..models.secrets import scrub
from .content import Content, from_bundle, text_content

__all__ = ["DEFAULT_BUDGET", "Content", "register_ai_repr", "to_content"]

#: tokens one value may take in a prompt unless told otherwise
DEFAULT_BUDGET = 2000
_REGISTRY: dict[type, Callable[..., Any]] = {}


def register_ai_repr(type_: type, fn: Callable[..., Any] | None) -> None:
    """Convert values of ``type_`` (and its subclasses) with ``fn(value, **kwargs)``, which
    returns a ``str`` or a MIME dict like ``_ai_repr_``; for types you do not own. ``None``
    removes the registration."""
    if not isinstance(type_, type):
        raise TypeError(
            f"`register_ai_repr` takes a class first, got {type(type_).__name__}; e.g. "
            "`register_ai_repr(MyTable, lambda t, **kw: t.summary())`."
        )
    if fn is None:
        _REGISTRY.pop(type_, None)
        return
    if not callable(fn):
        raise TypeError(f"`register_ai_repr({type_.__name__}, ...)`: the function is not callable.")
    _REGISTRY[type_] = fn


def to_content(
    value: Any, *, name: str | None = None, budget: int | None = None, vision: bool = True
) -> Content:
    """``value`` as model content within ``budget`` tokens (see the module docstring)."""
    budget = DEFAULT_BUDGET if budget is None else max(int(budget), 50)
    content = _convert(value, name, budget, vision)
    content.text = scrub(content.text)
    return content


def _convert(value: Any, name: str | None, budget: int, vision: bool) -> Content:
    if isinstance(value, str):
        return text_content(value, budget)
    kw = {"budget": budget, "vision": vision}
    if not isinstance(value, type):
        own = getattr(type(value), "_ai_repr_", None)
        if callable(own):
            return from_bundle(_call(own, value, kw), name, budget)
        llm = getattr(type(value), "_repr_llm_", None)
        if callable(llm):
            return from_bundle(llm(value), name, budget)
        for cls in type(value).__mro__:
            fn = _REGISTRY.get(cls)
            if fn is not None:
                return from_bundle(_call(fn, value, kw), name, budget)
    from .builtins import builtin

    found = builtin(value, name, budget)
    if found is not None:
        return found
    return _plain(value, budget)


def _call(fn: Callable[..., Any], value: Any, kw: dict[str, Any]) -> Any:
    """``fn(value, **kw)`` with the keywords its signature takes."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return fn(value, **kw)
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return fn(value, **kw)
    names = {p.name for p in params}
    return fn(value, **{k: v for k, v in kw.items() if k in names})


def _plain(value: Any, budget: int) -> Content:
    """Pydantic models, containers and anything else, as text trimmed with a marker."""
    dump = getattr(value, "model_dump_json", None)
    if callable(dump) and not isinstance(value, type):
        try:
            return text_content(dump(indent=2), budget)
        except Exception:
            pass
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        from .containers import container_text

        return container_text(value, budget)
    return text_content(str(value), budget)
