"""What a batch runs over and what it hands back: items, per-item prompts, results, cost.

- **Items.** Any iterable but text (iterating a string would run one item per character,
  which is never what was meant). A pandas ``DataFrame`` gives one item per row, as a dict of
  column to value; a ``Series`` one item per value. pandas is never imported: it is
  recognized by the type's module, so it stays optional.
- **Prompts.** ``instruction`` is a function ``item -> text``, or a template in which
  ``{item}``, ``{item.attr}``, ``{item[key]}`` (chains of both) and ``{index}`` are filled in
  per item; ``{{`` and ``}}`` are literal braces, and every other brace stays as written, so
  JSON examples in a prompt need no escaping. Only attribute and item lookups happen -- no
  calls, no expressions -- so a template cannot run code. Inserted values are scrubbed of
  known secrets, as the notebook's own interpolation does.
- **Results.** Values in input order: a list, or -- for a DataFrame or Series -- a copy of
  it as a DataFrame with a new column (and ``<column>_error`` when some items failed). The
  input is never modified.
- **Cost.** A response's reported ``cost_usd`` is used as is; otherwise, when a ``price`` is
  given (dollars per million input and output tokens), the cost is estimated from its usage;
  the offline models cost nothing. Anything else is unknown (``None``), never 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError

__all__ = [
    "Price",
    "TemplateError",
    "as_items",
    "describe",
    "message_cost",
    "render",
    "shape_output",
]

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{(item|index)((?:\.[A-Za-z_]\w*|\[[^\[\]{}]*\])*)\}")
_STEP = re.compile(r"\.([A-Za-z_]\w*)|\[([^\[\]{}]*)\]")
_FREE = ("offline", "offline_cli")


class TemplateError(ConfigurationError):
    """A placeholder that cannot be filled for an item."""


# -- items -----------------------------------------------------------------------------------
def _pandas_kind(data: Any) -> str | None:
    module = type(data).__module__ or ""
    if not module.startswith("pandas"):
        return None
    name = type(data).__name__
    return {"DataFrame": "frame", "Series": "series"}.get(name)


def as_items(data: Any) -> tuple[list[Any], str]:
    """``(items, kind)``: kind is ``list``, ``frame`` or ``series``."""
    kind = _pandas_kind(data)
    if kind == "frame":
        return data.to_dict(orient="records"), kind
    if kind == "series":
        return data.tolist(), kind
    if isinstance(data, (str, bytes)):
        raise ConfigurationError(
            "`map` takes a collection of items, not one text (that would run one item per "
            "character). Wrap it in a list: `session.map([text], ...)`."
        )
    if not isinstance(data, Iterable):
        raise ConfigurationError(
            f"`map` takes an iterable of items (a list, a DataFrame, a Series, ...); got "
            f"{type(data).__name__}."
        )
    return list(data), "list"


def describe(item: Any, limit: int = 60) -> str:
    """A short label for an item (progress views, result tables)."""
    label = getattr(item, "model", None) if hasattr(item, "provider") else None
    if label is not None:
        return f"{item.provider}/{item.model}"
    text = item if isinstance(item, str) else _text(item)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- prompts ---------------------------------------------------------------------------------
def render(instruction: Any, item: Any, index: int) -> Any:
    """The prompt for one item (see the module docstring)."""
    if instruction is None:
        return _scrubbed(_text(item))
    if callable(instruction):
        return instruction(item)
    if not isinstance(instruction, str):
        return instruction  # an Instruction or a mapping: sent as given, to every item

    def fill(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "{{":
            return "{"
        if whole == "}}":
            return "}"
        if match.group(1) == "index":
            if match.group(2):
                raise TemplateError(f"`{whole}`: `index` is a number; write `{{index}}`.")
            return str(index)
        return _scrubbed(_text(_lookup(item, match.group(2), whole, index)))

    return _PLACEHOLDER.sub(fill, instruction)


def _lookup(value: Any, path: str, whole: str, index: int) -> Any:
    for step in _STEP.finditer(path):
        attr, key = step.group(1), step.group(2)
        try:
            if attr is not None:
                if isinstance(value, Mapping) and attr in value:
                    value = value[attr]
                else:
                    value = getattr(value, attr)
            else:
                key = key.strip().strip("'\"")
                value = value[int(key)] if key.lstrip("-").isdigit() else value[key]
        except (AttributeError, KeyError, IndexError, TypeError) as exc:
            raise TemplateError(
                f"`{whole}` cannot be filled for item {index} ({type(exc).__name__}: {exc}). "
                "Check the placeholder against the items, or pass a function "
                "`instruction=lambda item: ...`."
            ) from None
    return value


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    dump = getattr(value, "model_dump_json", None)
    if callable(dump) and not isinstance(value, type):
        try:
            return dump()
        except Exception:
            pass
    if isinstance(value, (dict, list, tuple)):
        try:
            return json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return repr(value)
    return str(value)


def _scrubbed(text: str) -> str:
    from ..models.secrets import scrub

    return scrub(text)


# -- results ---------------------------------------------------------------------------------
def shape_output(
    source: Any, kind: str, values: list[Any], errors: list[str | None], column: str
) -> Any:
    """``values`` as a list, or as a new column of a copy of the DataFrame / Series."""
    if kind == "list":
        return list(values)
    frame = source.copy() if kind == "frame" else source.to_frame()
    if column in frame.columns:
        raise ConfigurationError(
            f"`column={column!r}` is already a column of the data; pass another `column=`."
        )
    frame[column] = values
    if any(e is not None for e in errors):
        frame[f"{column}_error"] = errors
    return frame


# -- cost --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Price:
    """Dollars per million input and output tokens; ``discount`` multiplies both."""

    input: float
    output: float
    discount: float = 1.0

    @classmethod
    def of(cls, value: Any) -> Price | Callable[[dict], float] | None:
        if value is None or callable(value) or isinstance(value, Price):
            return value
        if isinstance(value, Mapping):
            value = (value.get("input"), value.get("output"))
        if (
            isinstance(value, (tuple, list))
            and len(value) == 2
            and all(isinstance(v, (int, float)) and v >= 0 for v in value)
        ):
            return cls(float(value[0]), float(value[1]))
        raise ConfigurationError(
            "`price=`: give dollars per million tokens as `(input, output)`, "
            '`{"input": ..., "output": ...}`, or a function `usage -> dollars`.'
        )

    def cost(self, usage: Mapping[str, Any]) -> float:
        inp = float(usage.get("input_tokens") or 0)
        out = float(usage.get("output_tokens") or 0)
        return (inp * self.input + out * self.output) / 1e6 * self.discount


def tokens_of(usage: Any) -> int | None:
    if not isinstance(usage, Mapping):
        return None
    total = usage.get("total_tokens")
    if isinstance(total, (int, float)) and not isinstance(total, bool):
        return int(total)
    parts = [usage.get(k) for k in ("input_tokens", "output_tokens")]
    numbers = [p for p in parts if isinstance(p, (int, float)) and not isinstance(p, bool)]
    return int(sum(numbers)) if numbers else None


def message_cost(messages: Iterable[Any], price: Any, discount: float = 1.0) -> tuple[int, Any]:
    """``(tokens, cost_usd or None)`` of the model responses among ``messages``."""
    tokens, cost, known = 0, 0.0, True
    seen = False
    for message in messages:
        if getattr(message, "kind", None) != "assistant_response":
            continue
        seen = True
        meta = message.metadata or {}
        usage = meta.get("usage")
        tokens += tokens_of(usage) or 0
        reported = meta.get("cost_usd")
        provider = str(meta.get("model") or "").partition("/")[0]
        if isinstance(reported, (int, float)) and not isinstance(reported, bool):
            cost += float(reported)
        elif provider in _FREE:
            continue
        elif isinstance(price, Price) and isinstance(usage, Mapping):
            cost += Price(price.input, price.output, price.discount * discount).cost(usage)
        elif callable(price) and isinstance(usage, Mapping):
            cost += float(price(dict(usage))) * discount
        else:
            known = False
    return tokens, (cost if known and seen else (0.0 if not seen else None))
