"""The grid's axes: cases, prompts and models, each with a stable label.

- **Cases** are dicts (a DataFrame gives one per row). A case's id is its ``id`` field when
  it has one, else its position, so a comparison with an earlier run matches cases even
  when the list was reordered -- give ids for that.
- **Prompts** are a template, a list of them, or a dict ``{label: template}``. Labels are
  what a later run is compared by, so a prompt that changed keeps its label (``prompt 1``,
  ``prompt 2``, ... or the dict's keys). A template's ``{name}`` is the case's field
  ``name`` (``{name.attr}``, ``{name[key]}`` reach inside it), ``{case}`` is the whole case
  and ``{index}`` its position; ``{{`` and ``}}`` are braces; any other brace stays as
  written (JSON examples need no escaping). A name the case lacks is an error naming the
  placeholder and the case's fields, raised before any call. Inserted values are scrubbed
  of known secrets, as ``map`` does. A prompt may also be a function ``case -> text``.
- **Models**: iModels or ``"provider/model"`` strings, a list or a dict ``{label: model}``;
  labels default to ``provider/model``, numbered when two would be the same.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError

__all__ = ["Cell", "case_id", "fill", "label_models", "label_prompts", "load_cases"]

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*|\[[^\[\]{}]*\])*)\}")


@dataclass(frozen=True, slots=True)
class Cell:
    """One cell of the grid: prompt, model, case and repeat (positions)."""

    index: int
    p: int
    m: int
    c: int
    r: int


def load_cases(cases: Any) -> list[Any]:
    from ..session._batch_items import as_items

    if isinstance(cases, Mapping):
        raise ConfigurationError(
            "`cases=`: give a list of cases (dicts) or a DataFrame, not one dict. "
            "Wrap it in a list: `[case]`."
        )
    items, _kind = as_items(cases)
    if not items:
        raise ConfigurationError("`cases=` is empty: give at least one case.")
    return items


def case_id(case: Any, index: int) -> Any:
    if isinstance(case, Mapping) and case.get("id") is not None:
        value = case["id"]
        return value if isinstance(value, (str, int)) else str(value)
    return index


def label_prompts(prompt: Any) -> tuple[list[str], list[Any]]:
    if prompt is None:
        raise ConfigurationError(
            "`prompt=`: give the template each case fills, e.g. "
            "`prompt='Answer briefly: {question}'` (or several, to compare them)."
        )
    if isinstance(prompt, Mapping):
        labels, prompts = [str(k) for k in prompt], list(prompt.values())
    elif isinstance(prompt, (list, tuple)):
        prompts = list(prompt)
        labels = (
            ["prompt"] if len(prompts) == 1 else [f"prompt {i + 1}" for i in range(len(prompts))]
        )
    else:
        labels, prompts = ["prompt"], [prompt]
    if not prompts:
        raise ConfigurationError("`prompt=` is empty: give at least one template.")
    for p in prompts:
        if not (isinstance(p, str) or callable(p)):
            raise ConfigurationError(
                f"`prompt=`: {p!r} is neither a template (text) nor a function `case -> text`."
            )
    return labels, prompts


def label_models(models: Any, default: Any) -> tuple[list[str], list[Any]]:
    from ..session._batch_items import describe
    from ..session.branch import _as_model

    if models is None:
        models = [default]
    if isinstance(models, Mapping):
        labels = [str(k) for k in models]
        resolved = [_as_model(m, "models") for m in models.values()]
    else:
        if isinstance(models, str) or hasattr(models, "provider"):
            models = [models]
        resolved = [_as_model(m, "models") for m in models]
        base = [describe(m) for m in resolved]
        labels = [
            f"{label} #{base[: i + 1].count(label)}" if base.count(label) > 1 else label
            for i, label in enumerate(base)
        ]
    if not resolved:
        raise ConfigurationError("`models=` is empty: give at least one model.")
    return labels, resolved


def fill(template: Any, case: Any, index: int) -> Any:
    """The prompt for one case (see the module docstring)."""
    from ..session._batch_items import TemplateError, _lookup, _scrubbed, _text

    if callable(template):
        return template(case)

    def one(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole in ("{{", "}}"):
            return whole[0]
        name, path = match.group(1), match.group(2)
        if name == "index" and not path:
            return str(index)
        if name in ("case", "item"):
            value = case
        elif isinstance(case, Mapping) and name in case:
            value = case[name]
        elif not isinstance(case, Mapping) and hasattr(case, name):
            value = getattr(case, name)
        else:
            fields = ", ".join(f"`{k}`" for k in case) if isinstance(case, Mapping) else "none"
            raise TemplateError(
                f"`{whole}`: case {index} has no field `{name}` (its fields: {fields}). "
                "Use a field of the cases, `{case}` for the whole case, or `{{` `}}` for "
                "literal braces."
            )
        return _scrubbed(_text(_lookup(value, path, whole, index)))

    return _PLACEHOLDER.sub(one, template)
