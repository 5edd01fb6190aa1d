"""Numbers a provider reports are not trusted: a cost or a token count that is not a finite
number >= 0 (or that no real call could have) never lowers, poisons or stops the ledger, and
a budget still stops the call that would cross it (ADR-0107, D7). Against real providers: the
fake CLI executables run as subprocesses, and the loopback HTTP server."""

from __future__ import annotations

import json
import logging
import math
from contextlib import aclosing
from pathlib import Path

import anyio
import pytest

from lion_nb import Budget, BudgetExceeded, Session, iModel
from lion_nb.errors import ConfigurationError, ExecutionError, ProviderError
from lion_nb.runtime.budget import budget_scope
from lion_nb.runtime.ledger import AFTER_RECORD
from lion_nb.tokens import estimate_tokens
from tests.fakes.cli import FIXTURES, FakeCLI, fake_cli_on_path
from tests.fakes.http_server import Script, anthropic_message, openai_completion

RESULT_USAGE = {
    "input_tokens": 9,
    "cache_creation_input_tokens": 3300,
    "cache_read_input_tokens": 32563,
    "output_tokens": 88,
}
#: the table price of RESULT_USAGE for claude-sonnet-4-5: 9 * 3 + 3300 * 3.75 + 32563 * 0.3
#: + 88 * 15 dollars per million tokens
TABLE_USD = (9 * 3 + 3300 * 3.75 + 32563 * 0.3 + 88 * 15) / 1e6


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeCLI:
    return fake_cli_on_path(monkeypatch, tmp_path)


def claude_reporting(fakes: FakeCLI, cost_text: str) -> None:
    """The fake `claude` replays its tool run, its result line reporting ``cost_text``
    (JSON text, so that ``NaN`` and ``-Infinity`` go over the pipe as the CLI would print
    them) as ``total_cost_usd``."""
    lines = (FIXTURES / "claude_tool_run.jsonl").read_text().splitlines()
    result = json.loads(lines[-1])
    result["usage"] = dict(RESULT_USAGE)
    result["total_cost_usd"] = "@COST@"
    lines[-1] = json.dumps(result).replace('"@COST@"', cost_text)
    fakes.replay(lines)


def runs_until_stopped(branch, most: int) -> tuple[int, BaseException | None]:
    async def main():
        done = 0
        try:
            for i in range(most):
                async with aclosing(branch.run(f"count, take {i}")) as stream:
                    async for _ in stream:
                        pass
                done += 1
        except (BudgetExceeded, ConfigurationError) as exc:
            return done, exc
        return done, None

    return anyio.run(main)


@pytest.mark.parametrize("cost_text", ["NaN", "-100", "-Infinity", "Infinity", '"0.5"', "1e400"])
def test_a_cli_cost_that_is_not_a_finite_number_at_least_zero_is_priced_from_the_table(
    fakes, cost_text
):
    claude_reporting(fakes, cost_text)
    session = Session()
    branch = session.default_branch
    branch.chat_model = iModel(provider="claude_code", model="claude-sonnet-4-5")
    session.budget = Budget(usd=0.04, warn_at=None)
    with pytest.warns(UserWarning, match="total_cost_usd"):
        done, error = runs_until_stopped(branch, 6)
    # a run at the table's $0.0235 leaves room under $0.04 for a second; not for a third
    assert (done, type(error)) == (2, BudgetExceeded), (done, error)
    assert len(fakes.records()) == 2
    spent = session.cost().usd
    assert spent == pytest.approx(2 * TABLE_USD) and math.isfinite(spent)
    final = branch.messages[-1]
    assert final.metadata["cost_usd"] == pytest.approx(TABLE_USD)


def test_an_unpriced_cli_model_whose_cost_is_refused_is_unpriced_and_the_budget_still_stops(
    fakes,
):
    claude_reporting(fakes, "NaN")
    session = Session()
    branch = session.default_branch
    branch.chat_model = iModel(provider="claude_code", model="sonnet")  # not in the table
    with pytest.warns(UserWarning, match="total_cost_usd"):
        runs_until_stopped(branch, 1)
    assert branch.messages[-1].metadata["cost_usd"] is None
    cost = session.cost()
    assert cost.usd is None and cost.unpriced_calls == 1
    # a run whose price is unknown cannot be counted against dollars: the next one is refused
    with budget_scope(Budget(usd=1.0)):
        done, error = runs_until_stopped(branch, 1)
    assert done == 0 and isinstance(error, ConfigurationError)
    assert len(fakes.records()) == 1


def test_a_cli_cost_that_is_a_finite_number_at_least_zero_is_kept(fakes):
    claude_reporting(fakes, "0.02")
    session = Session()
    branch = session.default_branch
    branch.chat_model = iModel(provider="claude_code", model="claude-sonnet-4-5")
    session.budget = Budget(usd=0.03, warn_at=None)
    done, error = runs_until_stopped(branch, 6)
    assert (done, type(error)) == (2, BudgetExceeded)
    assert session.cost().usd == pytest.approx(0.04)


# -- token counts over HTTP ------------------------------------------------------------------------
FIVE = {"input": 5.0, "output": 5.0}
KEY = "sk-test-untrusted-abcdef"


def openai_model(fake) -> iModel:
    return iModel(
        provider="openai", model="gpt-4o-mini", base_url=fake.openai_url, api_key=KEY, price=FIVE
    )


def anthropic_model(fake, **kw) -> iModel:
    return iModel(
        provider="anthropic",
        model="claude-sonnet-4-5",
        base_url=fake.anthropic_url,
        api_key=KEY,
        price=FIVE,
        **kw,
    )


def chats_until_stopped(branch, most: int) -> tuple[int, list[BaseException]]:
    async def main():
        done, errors = 0, []
        for i in range(most):
            try:
                await branch.communicate(f"step {i}")
                done += 1
            except BudgetExceeded as exc:
                errors.append(exc)
                break
            except ExecutionError as exc:  # the call failed: its cause is the provider's error
                assert isinstance(exc.__cause__, ProviderError), exc
                errors.append(exc.__cause__)
        return done, errors

    return anyio.run(main)


OPENAI_BAD = [
    {"prompt_tokens": -1_000_000_000, "completion_tokens": 1000},
    {"prompt_tokens": 10, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 4e9}},
    {"prompt_tokens": 1000, "completion_tokens": -5000},
    {"prompt_tokens": 10**30, "completion_tokens": 1},
]


@pytest.mark.parametrize("usage", OPENAI_BAD, ids=["negative", "cached>prompt", "neg-out", "huge"])
def test_openai_counts_no_call_could_have_are_a_provider_error_never_a_negative_price(
    http_fake, usage
):
    body = {**openai_completion("ok"), "usage": usage}
    http_fake.routes.append(
        lambda rec: Script(body=body) if rec.path.endswith("/chat/completions") else None
    )
    session = Session()
    branch = session.default_branch
    branch.chat_model = openai_model(http_fake)
    branch.budget = Budget(usd=0.05, warn_at=None)
    done, errors = chats_until_stopped(branch, 20)
    assert done == 0 and len(errors) == 20
    assert all(isinstance(e, ProviderError) and "usage" in str(e) for e in errors)
    assert session.cost().usd == 0 and branch.cost().calls == 0
    assert len(branch.messages) == 0  # nothing of a refused answer is recorded


def test_an_anthropic_negative_input_count_is_a_provider_error(http_fake):
    message = anthropic_message("ok")
    message["usage"] = {"input_tokens": -1_000_000_000, "output_tokens": 1000}
    http_fake.routes.append(
        lambda rec: Script(body=message) if rec.path.endswith("/v1/messages") else None
    )
    session = Session()
    branch = session.default_branch
    branch.chat_model = anthropic_model(http_fake)
    branch.budget = Budget(usd=0.05, warn_at=None)
    done, errors = chats_until_stopped(branch, 5)
    assert done == 0 and all(isinstance(e, ProviderError) for e in errors)
    assert session.cost().usd == 0


def test_good_counts_beside_bad_ones_still_stop_at_the_budget(http_fake):
    """A refused answer costs the ledger nothing; the good ones count and the budget stops."""
    good = openai_completion("ok", prompt_tokens=1000, completion_tokens=1000)  # $0.01
    bad = {**good, "usage": {"prompt_tokens": -1_000_000, "completion_tokens": 5}}
    turns = iter([good, bad] * 20)
    http_fake.routes.append(
        lambda rec: Script(body=next(turns)) if rec.path.endswith("/chat/completions") else None
    )
    session = Session()
    branch = session.default_branch
    branch.chat_model = openai_model(http_fake)
    branch.budget = Budget(usd=0.05, warn_at=None)
    done, errors = chats_until_stopped(branch, 40)
    # Four good calls spend $0.04; the fifth's worst case starts from the last real count
    # (1,000 input tokens), so $0.04 + $0.0101 would cross $0.05: it is not started.
    assert isinstance(errors[-1], BudgetExceeded) and done == 4
    assert session.cost().usd == pytest.approx(0.04)


# -- an Anthropic stream without its final usage -----------------------------------------------------
def stream_without_message_delta(text: str) -> list[str]:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 20, "output_tokens": 1},
        },
    }
    events = [
        ("message_start", start),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    for i in range(0, len(text), 400):
        delta = {"type": "text_delta", "text": text[i : i + 400]}
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        )
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return [f"event: {name}\ndata: {json.dumps(data)}" for name, data in events]


def test_an_anthropic_stream_whose_final_usage_never_came_is_ledgered_from_its_text(http_fake):
    text = " ".join(f"word{i}" for i in range(2500))
    for _ in range(6):
        http_fake.push_sse(stream_without_message_delta(text))
    session = Session()
    branch = session.default_branch
    branch.chat_model = anthropic_model(http_fake, stream=True)

    async def main():
        for i in range(6):
            await branch.communicate(f"write {i}")

    anyio.run(main)
    cost = session.cost()
    expected = estimate_tokens(text)
    assert expected > 2500
    assert cost.output_tokens == 6 * expected  # not 6 * the placeholder 1
    usage = branch.messages[-1].metadata["usage"]
    assert usage["estimated"] is True and usage["input_tokens"] == 20
    assert all(row["estimated"] for row in session.costs())


def test_an_anthropic_stream_with_its_final_usage_keeps_the_reported_count(http_fake):
    events = stream_without_message_delta("Hello there.")
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 7},
    }
    events.insert(-1, f"event: message_delta\ndata: {json.dumps(delta)}")
    http_fake.push_sse(events)
    branch = Session().default_branch
    branch.chat_model = anthropic_model(http_fake, stream=True)
    anyio.run(branch.communicate, "hi")
    usage = branch.messages[-1].metadata["usage"]
    assert usage["output_tokens"] == 7 and "estimated" not in usage


# -- budget limits ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value",
    [math.nan, math.inf, -math.inf, -1, -0.01, 10**400],
    ids=["nan", "inf", "-inf", "-1", "-0.01", "10**400"],
)
@pytest.mark.parametrize("name", ["usd", "tokens"])
def test_a_budget_limit_that_is_not_a_finite_number_at_least_zero_is_refused(name, value):
    with pytest.raises(ConfigurationError, match=f"Budget\\({name}="):
        Budget(**{name: value})
    budget = Budget(usd=1.0, tokens=1000)
    with pytest.raises(ConfigurationError, match=f"Budget\\({name}="):
        setattr(budget, name, value)  # raising a limit later is checked the same way
    assert (budget.usd, budget.tokens) == (1.0, 1000)


def test_a_budget_of_nan_dollars_given_as_a_number_is_refused():
    with pytest.raises(ConfigurationError):
        Budget.of(math.nan)


# -- the ledger's hooks -----------------------------------------------------------------------------
def test_a_failing_ledger_hook_is_logged_and_never_breaks_the_call(http_fake, caplog):
    thousand = openai_completion("ok", prompt_tokens=1000, completion_tokens=1000)
    http_fake.routes.append(
        lambda rec: Script(body=thousand) if rec.path.endswith("/chat/completions") else None
    )
    seen = []

    def broken(branch, session, usd, tokens):
        raise RuntimeError("a broken hook")

    def counting(branch, session, usd, tokens):
        seen.append(usd)

    AFTER_RECORD[:0] = [broken]
    AFTER_RECORD.append(counting)
    try:
        session = Session()
        branch = session.default_branch
        branch.chat_model = openai_model(http_fake)
        branch.budget = Budget(usd=0.03, warn_at=None)
        with caplog.at_level(logging.WARNING, logger="lion_nb.ledger"):
            done, errors = chats_until_stopped(branch, 10)
    finally:
        AFTER_RECORD.remove(broken)
        AFTER_RECORD.remove(counting)
    # every call went through and was counted by the hooks after the broken one ...
    assert seen == [pytest.approx(0.01)] * 2
    assert "a broken hook" in caplog.text
    # ... and the budget's own refusal still stops the call that would cross it (the third's
    # worst case starts from the last real count: $0.02 + $0.0101 would cross $0.03)
    assert done == 2 and isinstance(errors[-1], BudgetExceeded)


def test_a_budget_refusal_raised_by_a_hook_still_stops_the_call(http_fake):
    http_fake.routes.append(
        lambda rec: (
            Script(body=openai_completion("ok")) if rec.path.endswith("/chat/completions") else None
        )
    )

    def refusing(branch, session, usd, tokens):
        raise BudgetExceeded("stop here")

    AFTER_RECORD.append(refusing)
    try:
        branch = Session().default_branch
        branch.chat_model = openai_model(http_fake)
        with pytest.raises(BudgetExceeded, match="stop here"):
            anyio.run(branch.communicate, "hi")
    finally:
        AFTER_RECORD.remove(refusing)


# -- a ledger rebuilt from stored messages ------------------------------------------------------------
@pytest.mark.parametrize("stored", [math.nan, -math.inf, -100.0, math.inf, "0.5", True])
def test_a_stored_price_that_is_not_a_finite_number_at_least_zero_is_rebuilt_as_unpriced(stored):
    """A session file written elsewhere (or edited) is read back with the same rule: a bad
    price is not added, it makes the call unpriced, so a dollar budget fails closed."""
    session = Session()
    branch = session.default_branch
    usage = {"input_tokens": -5000, "output_tokens": 10, "cache_read_tokens": math.nan}
    for price in (0.01, stored):
        branch.msgs.add_message(
            assistant_response="ok", metadata={"usage": usage, "cost_usd": price, "model": "m"}
        )
    cost = branch.cost()
    assert cost.calls == 2 and cost.usd is None and cost.unpriced_calls == 1
    assert (cost.input_tokens, cost.output_tokens, cost.cache_read_tokens) == (0, 20, 0)
    session.budget = Budget(usd=1.0)
    branch.chat_model = iModel(provider="offline", model="auto")
    with pytest.raises(ConfigurationError, match="had no price"):
        anyio.run(branch.communicate, "hi")


@pytest.mark.parametrize("reported", [math.nan, -1.0, 10**400], ids=["nan", "-1", "10**400"])
def test_any_cli_runs_reported_cost_goes_through_the_ledgers_check(reported):
    from lion_nb.models.stream import StreamChunk

    result = StreamChunk(
        type="result",
        metadata={"usage": {"input_tokens": 5, "output_tokens": 2}, "cost_usd": reported},
    )
    model = iModel(
        provider="offline_cli",
        model="scripted",
        turns=[[{"type": "text", "content": "hi"}, result.model_dump()]],
    )
    branch = Session().default_branch
    branch.chat_model = model

    async def main():
        async for _ in branch.run("go"):
            pass

    with pytest.warns(UserWarning, match="reported a cost of"):
        anyio.run(main)
    cost = branch.cost()
    assert cost.usd == 0.0 and cost.input_tokens == 5  # the offline agent is free
    assert branch.messages[-1].metadata["cost_usd"] == 0.0
