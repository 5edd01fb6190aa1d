"""Properties of the ledger under any numbers a provider could send (ADR-0107, D7).

Usage in every provider's shape -- an OpenAI chat ``usage`` with its cached and reasoning
details, an Anthropic ``usage`` with its cache reads and writes, a CLI's result line (Claude
Code's ``usage`` and ``total_cost_usd``, Codex's and Gemini's counts) -- made of any JSON
value (integers of any size, floats, NaN, infinities, negatives, strings, booleans, null) is
read by the same normalisation functions the endpoints use, and every usage they accept is
recorded against a budget. Whatever came in:

- a usage is either refused (``ValueError``: the HTTP endpoints turn it into a
  `ProviderError`) or holds whole counts >= 0, with no cached part larger than its input;
- no recorded call is priced below zero, NaN or infinity, and no total ever is;
- a budget whose limit the spend has reached stops the next call (`BudgetExceeded`, or the
  fail-closed `ConfigurationError` when a call had no price).

`test_untrusted_numbers` drives the same cases end to end through real providers.
"""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lion_nb import Budget, BudgetExceeded, Session, iModel
from lion_nb.errors import ConfigurationError
from lion_nb.models.usage import USAGE_KEYS, anthropic_usage, openai_usage
from lion_nb.runtime.budget import check_budgets
from lion_nb.runtime.ledger import record_call

_PROPERTY = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

#: any JSON number, or a value of another JSON type where a number belongs
NUMBER = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**7),
    st.integers(),
    st.sampled_from([0, 1, 2**53, 2**53 + 1, 10**30, 10**400, -(10**400)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e300, -1e300, 5e-324]),
    st.text(max_size=6),
    st.sampled_from(["12", "1e5", "NaN", "-3"]),
    st.booleans(),
    st.none(),
)


def fields(**names: st.SearchStrategy) -> st.SearchStrategy:
    """A dict with any subset of ``names``."""
    return st.fixed_dictionaries({}, optional=names)


OPENAI = fields(
    prompt_tokens=NUMBER,
    completion_tokens=NUMBER,
    total_tokens=NUMBER,
    prompt_tokens_details=st.one_of(fields(cached_tokens=NUMBER), NUMBER),
    completion_tokens_details=st.one_of(fields(reasoning_tokens=NUMBER), NUMBER),
)
ANTHROPIC = fields(
    input_tokens=NUMBER,
    output_tokens=NUMBER,
    cache_read_input_tokens=NUMBER,
    cache_creation_input_tokens=NUMBER,
)
CLAUDE = st.tuples(ANTHROPIC, NUMBER)  # a result line's usage and its total_cost_usd
CODEX = fields(
    input_tokens=NUMBER,
    output_tokens=NUMBER,
    cached_input_tokens=NUMBER,
    reasoning_output_tokens=NUMBER,
)
GEMINI = fields(input_tokens=NUMBER, output_tokens=NUMBER, total_tokens=NUMBER, cached=NUMBER)

#: one call: (provider shape, what it reported)
CALL = st.one_of(
    st.tuples(st.just("openai"), OPENAI),
    st.tuples(st.just("anthropic"), ANTHROPIC),
    st.tuples(st.just("claude"), CLAUDE),
    st.tuples(st.just("codex"), CODEX),
    st.tuples(st.just("gemini"), GEMINI),
)


#: the CLI agents' endpoints, whose translators read their result lines
CLIS = {name: iModel(provider=name).endpoint for name in ("claude_code", "codex", "gemini_cli")}


def cli_result(provider: str, event: dict):
    """The result chunk's ``(usage, cost_usd)`` of one line, read as a run reads it."""
    (chunk,) = [c for c in CLIS[provider].new_translator().feed(event) if c.type == "result"]
    return chunk.metadata.get("usage") or {}, chunk.metadata.get("cost_usd")


def normalize(shape: str, raw):
    """``(usage, reported_usd)`` as the endpoint reads them; ``ValueError``: refused."""
    if shape == "openai":
        return openai_usage(raw), None
    if shape == "anthropic":
        return anthropic_usage(raw), None
    if shape == "claude":
        usage, cost = raw
        return cli_result("claude_code", {"type": "result", "usage": usage, "total_cost_usd": cost})
    if shape == "codex":
        return cli_result("codex", {"type": "turn.completed", "usage": raw})
    return cli_result("gemini_cli", {"type": "result", "stats": raw})


def account(branch, imodel, usage, reported):
    """What a CLI run does with its result line's cost (`Branch.run`'s accounting)."""
    if isinstance(reported, (int, float)) and not isinstance(reported, bool):
        return record_call(branch, imodel, usage, usd=float(reported))
    return record_call(branch, imodel, usage)


#: a price of our own, and the table's (with its tiers by input size)
MODELS = {
    "given": iModel(
        provider="openai",
        model="gpt-4o-mini",
        api_key="sk-prop-abcdef",
        price={"input": 3.0, "output": 15.0},
    ),
    "table": iModel(provider="claude_code", model="claude-sonnet-4-5"),
}
REQUEST = SimpleNamespace(messages=[{"role": "user", "content": "hi"}], tools=None, options={})


def check_usage(usage: dict) -> None:
    if not usage:
        return
    for key in USAGE_KEYS:
        assert type(usage[key]) is int and usage[key] >= 0, (key, usage)
    assert usage["cache_read_tokens"] + usage["cache_write_tokens"] <= usage["input_tokens"]


def finite_at_least_zero(usd) -> bool:
    return isinstance(usd, float) and math.isfinite(usd) and usd >= 0


@_PROPERTY
@given(
    calls=st.lists(CALL, min_size=1, max_size=6),
    model=st.sampled_from(sorted(MODELS)),
    raw_cost=st.booleans(),
    limit=st.floats(min_value=0, max_value=10.0),
    token_limit=st.integers(min_value=0, max_value=10**6),
)
def test_the_ledger_never_goes_below_zero_nor_nan_and_a_reached_budget_stops(
    calls, model, raw_cost, limit, token_limit
):
    imodel = MODELS[model]
    session = Session()
    branch = session.default_branch
    for shape, raw in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                usage, reported = normalize(shape, raw)
            except ValueError:
                continue  # refused: an HTTP endpoint's `ProviderError`, nothing recorded
            check_usage(usage)
            if raw_cost and shape == "claude":
                # the ledger's own gate, for a figure no translator checked
                reported = raw[1]
                kw = {} if reported is None else {"usd": reported}
                usd = record_call(branch, imodel, usage, **kw)
            else:
                usd = account(branch, imodel, usage, reported)
        assert usd is None or finite_at_least_zero(usd), usd
        for cost in (branch.cost(), session.cost()):
            assert cost.usd is None or finite_at_least_zero(cost.usd), cost
            assert min(cost.input_tokens, cost.output_tokens, cost.cache_read_tokens) >= 0
    for row in session.costs():
        assert row["usd"] is None or finite_at_least_zero(row["usd"]), row

    spent = session.cost()
    session.budget = Budget(usd=limit, warn_at=None)
    if spent.usd is None:
        if spent.calls:
            with pytest.raises(ConfigurationError):  # fails closed
                check_budgets(branch, imodel, REQUEST)
    elif spent.usd >= limit:
        with pytest.raises(BudgetExceeded):
            check_budgets(branch, imodel, REQUEST)
    session.budget = Budget(tokens=token_limit, warn_at=None)
    if spent.tokens >= token_limit:
        with pytest.raises(BudgetExceeded):
            check_budgets(branch, imodel, REQUEST)
