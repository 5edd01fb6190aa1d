"""Prices: the genai-prices table (exactly), `price=`, free local models, unpriced models,
the batch discount."""

from __future__ import annotations

import subprocess
import sys

import anyio
import pytest
from genai_prices import Usage, calc_price

from lion_nb import Session, iModel
from lion_nb.errors import ConfigurationError
from tests.fakes.http_server import anthropic_message, openai_completion

KEY = "sk-test-cost-abcdef"


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _table_price(usage: dict, model: str, provider: str) -> float:
    return float(
        calc_price(
            Usage(
                input_tokens=usage["input_tokens"],
                output_tokens=usage["output_tokens"],
                cache_read_tokens=usage["cache_read_tokens"],
                cache_write_tokens=usage["cache_write_tokens"],
            ),
            model,
            provider_id=provider,
        ).total_price
    )


def _talk(branch, n: int) -> None:
    async def main():
        for i in range(n):
            await branch.communicate(f"question {i}")
        await branch.chat_model.aclose()

    anyio.run(main)


OPENAI_USAGES = [
    {"prompt_tokens": 1200, "completion_tokens": 300},
    {
        "prompt_tokens": 5000,
        "completion_tokens": 40,
        "prompt_tokens_details": {"cached_tokens": 4096},
    },
]
ANTHROPIC_USAGES = [
    {"input_tokens": 900, "output_tokens": 120},
    {
        "input_tokens": 30,
        "output_tokens": 80,
        "cache_read_input_tokens": 12000,
        "cache_creation_input_tokens": 700,
    },
]


@pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-4o"])
def test_openai_cost_is_the_table_price_of_each_usage(http_fake, model):
    for usage in OPENAI_USAGES:
        body = openai_completion("ok")
        body["usage"] = {**usage, "total_tokens": usage["prompt_tokens"] + 1}
        http_fake.push_json(body)
    session = Session()
    branch = session.default_branch
    branch.chat_model = iModel(
        provider="openai", model=model, base_url=http_fake.openai_url, api_key=KEY
    )
    _talk(branch, len(OPENAI_USAGES))
    rows = session.costs()
    expected = sum(_table_price(r, model, "openai") for r in rows)
    cost = branch.cost()
    assert cost.calls == 2 and cost.unpriced_calls == 0
    assert cost.cache_read_tokens == 4096
    assert cost.input_tokens == 6200  # cached input counted too
    assert _close(cost.usd, expected) and expected > 0
    assert _close(session.cost().usd, expected)


def test_anthropic_cost_is_the_table_price_of_each_usage(http_fake):
    model = "claude-sonnet-4-5"
    for usage in ANTHROPIC_USAGES:
        body = anthropic_message("ok")
        body["usage"] = usage
        http_fake.push_json(body)
    branch = Session().default_branch
    branch.chat_model = iModel(
        provider="anthropic", model=model, base_url=http_fake.url, api_key=KEY
    )
    _talk(branch, 2)
    cost = branch.cost()
    assert (cost.cache_read_tokens, cost.cache_write_tokens) == (12000, 700)
    assert cost.input_tokens == 900 + 30 + 12000 + 700
    usages = [
        {
            "input_tokens": 900,
            "output_tokens": 120,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
        },
        {
            "input_tokens": 12730,
            "output_tokens": 80,
            "cache_read_tokens": 12000,
            "cache_write_tokens": 700,
        },
    ]
    expected = sum(_table_price(u, model, "anthropic") for u in usages)
    assert _close(cost.usd, expected)


def test_a_given_price_is_followed_and_cache_rates_default_to_input(http_fake):
    body = openai_completion("ok")
    body["usage"] = {
        "prompt_tokens": 2_000_000,
        "completion_tokens": 1_000_000,
        "prompt_tokens_details": {"cached_tokens": 1_000_000},
    }
    http_fake.push_json(body)
    body2 = anthropic_message("ok")
    body2["usage"] = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 1_000_000}
    http_fake.push_json(body2)
    branch = Session().default_branch
    branch.chat_model = iModel(
        provider="openai",
        model="my-finetune",
        base_url=http_fake.openai_url,
        api_key=KEY,
        price={"input": 2.0, "output": 8.0, "cache_read": 0.5},
    )
    _talk(branch, 1)
    assert _close(branch.cost().usd, 2.0 + 0.5 + 8.0)
    other = Session().default_branch
    other.chat_model = iModel(
        provider="anthropic",
        model="mine",
        base_url=http_fake.url,
        api_key=KEY,
        price={"input": 3.0, "output": 15.0},
    )
    _talk(other, 1)
    assert _close(other.cost().usd, 3.0)  # no cache_read rate: the input rate


def test_an_unknown_model_without_a_price_is_unpriced_never_zero(http_fake):
    http_fake.push_json(openai_completion("ok"))
    branch = Session().default_branch
    branch.chat_model = iModel(
        provider="openai", model="no-such-model-xyz", base_url=http_fake.openai_url, api_key=KEY
    )
    _talk(branch, 1)
    cost = branch.cost()
    assert cost.usd is None
    assert cost.calls == 1 and cost.unpriced_calls == 1
    assert "unpriced" in cost.line() and "price=" in cost.line()


def test_local_presets_and_offline_models_are_free(http_fake):
    http_fake.push_json(openai_completion("ok", prompt_tokens=500, completion_tokens=500))
    branch = Session().default_branch
    branch.chat_model = iModel(provider="llamacpp", model="qwen", base_url=http_fake.openai_url)
    _talk(branch, 1)
    assert branch.cost().usd == 0.0 and branch.cost().calls == 1
    offline = Session().default_branch
    _talk(offline, 2)
    assert offline.cost().usd == 0.0 and offline.cost().calls == 2
    assert iModel(provider="ollama", model="x", base_url="http://10.0.0.5:11434/v1").pricer.priced
    assert iModel(provider="ollama", model="x", price=0).pricer.cost({"input_tokens": 9}) == 0.0
    # a local preset on a public address is not assumed free
    remote = iModel(provider="vllm", model="x", base_url="https://vllm.example.com/v1")
    assert remote.pricer.source == "unpriced"


@pytest.mark.parametrize(
    "price",
    [{"input": -1, "output": 1}, {"input": 1}, {"inp": 1, "output": 2}, "cheap", 0.5],
)
def test_a_bad_price_is_refused_with_the_fix(price):
    with pytest.raises(ConfigurationError, match=r"price="):
        iModel(provider="offline", model="auto", price=price)


def test_price_and_cache_survive_to_dict():
    model = iModel(provider="openai", model="m", price={"input": 1, "output": 2}, cache=False)
    again = iModel.from_dict(model.to_dict())
    assert again.pricer.cost({"input_tokens": 1_000_000, "output_tokens": 0}) == 1.0
    assert again.cache is False


def test_a_provider_batch_is_discounted(http_fake):
    from tests.fakes.batch_api import BatchEmulator

    BatchEmulator(http_fake)  # answers each request with 10 input and 4 output tokens
    session = Session()
    session.default_branch.chat_model = iModel(
        provider="openai", model="gpt-4o-mini", base_url=http_fake.openai_url, api_key=KEY
    )

    async def main():
        run = session.map(["a", "b"], "Say {item}", via="batch", poll_interval=0.01)
        await run
        return run

    run = anyio.run(main)
    assert [r.status for r in run.items] == ["done", "done"]
    one = _table_price(
        {"input_tokens": 10, "output_tokens": 4, "cache_read_tokens": 0, "cache_write_tokens": 0},
        "gpt-4o-mini",
        "openai",
    )
    assert _close(session.cost().usd, 2 * one * 0.5)


def test_import_lion_nb_does_not_import_genai_prices():
    code = (
        "import sys, lion_nb; lion_nb.Session; lion_nb.Budget; print('genai_prices' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
