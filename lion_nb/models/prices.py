"""What a model call costs, in US dollars, from its normalized usage (`lion_nb.models.usage`).

Prices come from `genai-prices` (the pydantic team's maintained table) with its bundled data:
no network at run time, and it is imported only when a model that needs it is first priced
(never at ``import lion_nb``). ``iModel(price=...)`` overrides or supplies a price: a dict of
dollars per million tokens (``input``, ``output``, ``cache_read``, ``cache_write``; a missing
cache rate falls back to the input rate) or ``0`` for free. The offline models and the local
presets (ollama, llamacpp, vllm, lmstudio) on a loopback or private address are free. A model
that is neither known nor given a price is *unpriced*: its cost is ``None``, never zero.

A model's price is resolved once, into a `Pricer`; pricing a call is then a few float
operations (the ledger's per-call budget is microseconds). A table entry made of plain token
rates (and tiers by input size) is computed here with the table's own rules -- uncached input
at the input rate, cache reads and writes at theirs -- and anything else (a per-request fee,
a character price) goes through ``genai_prices.calc_price`` itself.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigurationError
from ..shapes import JsonMapping

__all__ = [
    "BATCH_DISCOUNT",
    "FREE",
    "Pricer",
    "Rates",
    "check_price",
    "pricer_for",
]

#: the discount of each provider's batch API (`Session.map(via="batch")`)
BATCH_DISCOUNT = {"openai": 0.5, "anthropic": 0.5}
_LOCAL_PRESETS = frozenset({"ollama", "llamacpp", "vllm", "lmstudio"})
_FREE_PROVIDERS = frozenset({"offline", "offline_cli"})
#: provider name in lion_nb -> provider id in genai-prices
_TABLE_PROVIDER = {
    "openai": "openai",
    "anthropic": "anthropic",
    "claude_code": "anthropic",
    "codex": "openai",
    "gemini_cli": "google",
    "openrouter": "openrouter",
    "groq": "groq",
    "together": "together",
    "deepseek": "deepseek",
    "mistral": "mistral",
}
_PLAIN = {"input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok"}
#: table prices for things a chat call never reports: they cost nothing here
_UNREPORTED = {
    "web_searches_kcount",
    "storage_searches_kcount",
    "cache_write_1h_mtok",
    "input_audio_mtok",
    "output_audio_mtok",
    "cache_audio_read_mtok",
    "input_image_mtok",
    "output_image_mtok",
    "cache_image_read_mtok",
    "input_video_mtok",
    "output_video_mtok",
    "audio_hours",
    "input_audio_hours",
    "input_document_kpages",
    "input_annotated_document_kpages",
    "output_citation_mtok",
}
_PRICE_KEYS = ("input", "output", "cache_read", "cache_write")


@dataclass(frozen=True, slots=True)
class Rates:
    """Dollars per million tokens; ``tiers`` are ``(input_tokens_above, Rates)``, the highest
    tier crossed applying to the whole call (the table's "cliff" rule)."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    tiers: tuple[tuple[int, Rates], ...] = ()

    def for_input(self, input_tokens: int) -> Rates:
        for start, rates in reversed(self.tiers):
            if input_tokens > start:
                return rates
        return self


def _rates(values: Mapping[str, float]) -> Rates:
    """`Rates` from a map holding exactly its four prices."""
    return Rates(values["input"], values["output"], values["cache_read"], values["cache_write"])


class Pricer:
    """One model's price, resolved once. ``cost(usage)`` is dollars or ``None`` (unpriced)."""

    __slots__ = ("_table", "discount", "label", "rates", "source")

    def __init__(
        self,
        rates: Rates | None,
        source: str,
        label: str,
        *,
        discount: float = 1.0,
        # Any: a price table in any form `check_price` takes, or None
        table: Any = None,
    ):
        self.rates = rates
        #: ``given`` (``price=``), ``free``, ``table`` (genai-prices) or ``unpriced``
        self.source = source
        self.label = label
        self.discount = discount
        self._table = table  # (calc_price, model_ref, provider_id) for the slow path

    @property
    def priced(self) -> bool:
        return self.source != "unpriced"

    def discounted(self, discount: float) -> Pricer:
        return Pricer(
            self.rates,
            self.source,
            self.label,
            discount=self.discount * discount,
            table=self._table,
        )

    def cost(self, usage: JsonMapping | None) -> float | None:
        if self.source == "unpriced":
            return None
        if self.source == "free" or not usage:
            return 0.0
        inp = usage.get("input_tokens") or 0
        read = usage.get("cache_read_tokens") or 0
        write = usage.get("cache_write_tokens") or 0
        out = usage.get("output_tokens") or 0
        if self.rates is None:
            return self._table_cost(inp, read, write, out) * self.discount
        r = self.rates.for_input(inp) if self.rates.tiers else self.rates
        usd = (
            (inp - read - write) * r.input
            + read * r.cache_read
            + write * r.cache_write
            + out * r.output
        ) / 1e6
        return usd * self.discount

    def worst_case(self, input_tokens: int, max_tokens: int | None) -> float | None:
        """A bound on a call's cost before it is made: all input uncached at its rate,
        plus ``max_tokens`` of output when set."""
        if self.source == "unpriced":
            return None
        if self.source == "free":
            return 0.0
        if self.rates is None:
            return self._table_cost(input_tokens, 0, 0, max_tokens or 0) * self.discount
        r = self.rates.for_input(input_tokens)
        return (input_tokens * r.input + (max_tokens or 0) * r.output) / 1e6 * self.discount

    def _table_cost(self, inp: int, read: int, write: int, out: int) -> float:
        calc_price, model_ref, provider_id = self._table
        from genai_prices import Usage

        usage = Usage(
            input_tokens=inp, output_tokens=out, cache_read_tokens=read, cache_write_tokens=write
        )
        return float(calc_price(usage, model_ref, provider_id=provider_id).total_price)

    def __repr__(self) -> str:
        return f"Pricer({self.label!r}, source={self.source!r})"


FREE = Pricer(Rates(0.0, 0.0, 0.0, 0.0), "free", "free")


def check_price(price: object) -> Rates | None:
    """``price=`` as `Rates` (``0`` for free gives zero rates; ``None`` stays ``None``)."""
    if price is None:
        return None
    if isinstance(price, (int, float)) and not isinstance(price, bool) and price == 0:
        return Rates(0.0, 0.0, 0.0, 0.0)
    hint = (
        '`price=` takes dollars per million tokens, `{"input": 3.0, "output": 15.0}` (with '
        '`"cache_read"` and `"cache_write"` when they differ from the input rate), or `0` for free'
    )
    if not isinstance(price, Mapping):
        raise ConfigurationError(f"{hint}; got {price!r:.60}.")
    unknown = sorted(set(price) - set(_PRICE_KEYS))
    if unknown:
        raise ConfigurationError(f"{hint}; `{unknown[0]}` is not one of them.")
    if "input" not in price or "output" not in price:
        raise ConfigurationError(f"{hint}; `input` and `output` are both needed.")
    values = {}
    for key in _PRICE_KEYS:
        value = price.get(key, price["input"] if key.startswith("cache") else None)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise ConfigurationError(f"{hint}; `{key}` is {value!r:.40}, not a number >= 0.")
        values[key] = float(value)
    return _rates(values)


def is_local_address(url: str | None) -> bool:
    """Whether ``url`` points at this machine or a private network."""
    host = (urlsplit(url or "").hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost") or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_unspecified


# Any: any endpoint; only its provider and model are read
def pricer_for(provider: str, endpoint: Any, price: Rates | None) -> Pricer:
    """The `Pricer` of a model (see the module docstring for the order of the rules)."""
    model = getattr(endpoint, "model", "") or ""
    label = f"{provider}/{model}"
    if price is not None:
        free = price == Rates(0.0, 0.0, 0.0, 0.0)
        return Pricer(price, "free" if free else "given", label)
    if provider in _FREE_PROVIDERS or endpoint.provider in _FREE_PROVIDERS:
        return Pricer(FREE.rates, "free", label)
    preset = getattr(endpoint, "preset", None)
    if preset in _LOCAL_PRESETS and is_local_address(getattr(endpoint, "base_url", None)):
        return Pricer(FREE.rates, "free", label)
    table_provider = _TABLE_PROVIDER.get(preset or provider) or _TABLE_PROVIDER.get(provider)
    if table_provider is None or not model:
        return Pricer(None, "unpriced", label)
    return _from_table(model, table_provider, label)


def _from_table(model: str, provider_id: str, label: str) -> Pricer:
    from datetime import datetime, timezone

    import genai_prices
    from genai_prices import data_snapshot

    try:
        _, info = data_snapshot.get_snapshot().find_provider_model(model, None, provider_id, None)
    except LookupError:
        return Pricer(None, "unpriced", label)
    prices = info.get_prices(datetime.now(timezone.utc))
    values = {k: v for k, v in prices.__dict__.items() if v is not None and not k.startswith("_")}
    table = (genai_prices.calc_price, model, provider_id)
    if set(values) - _PLAIN - _UNREPORTED or "input_mtok" not in values:
        return Pricer(None, "table", label, table=table)
    return Pricer(_rates_of(values), "table", label, table=table)


def _rates_of(values: dict[str, Any]) -> Rates:
    """`Rates` from a table entry's token prices, tiers included."""

    def base(v: Any) -> float:
        return float(getattr(v, "base", v))

    def tiers(v: Any) -> dict[int, float]:
        return {t.start: float(t.price) for t in getattr(v, "tiers", ())}

    plain = {k: values.get(f"{k}_mtok") for k in _PRICE_KEYS}
    plain["output"] = plain["output"] if plain["output"] is not None else 0
    for key in ("cache_read", "cache_write"):
        if plain[key] is None:
            plain[key] = plain["input"]
    starts = sorted({s for v in plain.values() for s in tiers(v)})
    levels = []
    for start in starts:
        rates = {}
        for key, value in plain.items():
            crossed = [p for s, p in sorted(tiers(value).items()) if s <= start]
            rates[key] = crossed[-1] if crossed else base(value)
        levels.append((start, _rates(rates)))
    return Rates(**{k: base(v) for k, v in plain.items()}, tiers=tuple(levels))
