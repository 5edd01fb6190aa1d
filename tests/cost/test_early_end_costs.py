"""Calls that end early are billed, and a budget's worst case holds: a stream cut short, a
cancelled turn, an answer cut by ``max_tokens`` with no usage, the input estimate of a
conversation, and a call with no ``max_tokens`` under a budget -- against the real loopback
server (and a slow offline model for the cancellation)."""

from __future__ import annotations

import warnings
from pathlib import Path

import anyio
import pytest

import lion_nb
from lion_nb import Budget, BudgetExceeded, Session, iModel
from lion_nb.errors import ExecutionError, StreamInterruptedError
from lion_nb.models.endpoints.base import streaming_to
from lion_nb.runtime.budget import BudgetWarning
from lion_nb.tokens import estimate_message_tokens
from tests.fakes.http_server import Script, openai_completion, openai_deltas

KEY = "sk-test-early-cost-0123456789"
FIVE = {"input": 5.0, "output": 5.0}
WORDS = ["word "] * 2500  # about 2,500 output tokens


def model(fake, **kw) -> iModel:
    return iModel(
        provider="openai", model="gpt-4o-mini", base_url=fake.openai_url, api_key=KEY, **kw
    )


def completions(fake) -> list:
    return [r for r in fake.requests if r.path.endswith("/chat/completions")]


def always(fake, make) -> None:
    fake.routes.append(lambda rec: make(rec) if rec.path.endswith("/chat/completions") else None)


def cut_turn(branch, instruction: str, error: type[BaseException], verb: str = "communicate"):
    """One turn of ``branch`` whose stream is cut short, streamed, ending in ``error``."""

    async def main():
        with streaming_to(lambda _t: None), pytest.raises(error):
            await getattr(branch, verb)(instruction)

    anyio.run(main)


# -- a stream cut short is billed, estimated -----------------------------------------------------
def test_a_stream_cut_short_is_recorded_with_an_estimated_usage(http_fake):
    always(http_fake, lambda rec: Script(events=openai_deltas(WORDS), cut_after=len(WORDS)))
    branch = Session().default_branch
    branch.chat_model = model(http_fake, price=FIVE)

    cut_turn(branch, "Write a lot.", StreamInterruptedError)
    cost = branch.cost()
    assert cost.calls == 1 and cost.output_tokens >= 2500 and cost.usd > 0
    rows = branch.spend.ledger.as_rows()
    assert rows[0]["estimated"] is True
    answer = branch.messages[-1]
    assert answer.metadata["incomplete"] is True
    assert answer.metadata["usage"]["estimated"] is True
    assert answer.metadata["cost_usd"] == pytest.approx(cost.usd)


ANTHROPIC_CUT = [
    'event: message_start\ndata: {"type": "message_start", "message": {"id": "m", '
    '"role": "assistant", "model": "claude-sonnet-4-5", "content": [], '
    '"usage": {"input_tokens": 4000, "cache_read_input_tokens": 1000, "output_tokens": 1}}}',
    'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, '
    '"content_block": {"type": "text", "text": ""}}',
    'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, '
    '"delta": {"type": "text_delta", "text": "The first half of "}}',
    'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, '
    '"delta": {"type": "text_delta", "text": "the answer"}}',
]


def test_a_cut_anthropic_stream_is_billed_on_the_input_count_it_reported(http_fake):
    http_fake.push_sse(ANTHROPIC_CUT, cut_after=len(ANTHROPIC_CUT))  # no message_stop
    branch = Session().default_branch
    branch.chat_model = iModel(
        provider="anthropic",
        model="claude-sonnet-4-5",
        base_url=http_fake.anthropic_url,
        api_key=KEY,
        price=FIVE,
    )

    cut_turn(branch, "Say something.", StreamInterruptedError)
    cost = branch.cost()
    assert cost.calls == 1
    assert cost.input_tokens == 5000 and cost.cache_read_tokens == 1000  # the server's count
    assert cost.output_tokens >= 4  # estimated from the text kept
    assert branch.messages[-1].metadata["usage"]["estimated"] is True


def test_a_restored_branch_counts_the_cut_call_again(http_fake):
    from lion_nb import Branch

    http_fake.push_sse(openai_deltas(["half ", "an ", "answer"]), cut_after=2)
    branch = Session().default_branch
    branch.chat_model = model(http_fake, price=FIVE)

    cut_turn(branch, "Say something.", StreamInterruptedError)
    restored = Branch.from_dict(branch.to_dict())
    assert restored.cost().calls == 1
    assert restored.cost().usd == pytest.approx(branch.cost().usd)
    assert restored.cost().output_tokens == branch.cost().output_tokens


def test_cut_streams_count_against_a_token_budget(http_fake):
    always(http_fake, lambda rec: Script(events=openai_deltas(WORDS), cut_after=len(WORDS)))
    branch = Session().default_branch
    branch.chat_model = model(http_fake)
    branch.budget = Budget(tokens=3000, warn_at=None)

    async def main():
        with streaming_to(lambda _t: None), pytest.raises(BudgetExceeded, match="3,000 tokens"):
            for _ in range(6):
                with pytest.raises(StreamInterruptedError):
                    await branch.communicate("Write a lot.")

    anyio.run(main)
    assert len(completions(http_fake)) == 1  # the second would need 2,500 more: refused
    assert 2500 <= branch.cost().tokens <= 3000


def test_a_plain_chat_cut_short_is_billed_too(http_fake):
    http_fake.push_sse(openai_deltas(["half ", "an ", "answer"]), cut_after=2)
    branch = Session().default_branch
    branch.chat_model = model(http_fake, price=FIVE)

    cut_turn(branch, "Say something.", ExecutionError, verb="chat")
    assert len(branch.messages) == 0  # chat records no message (ADR-0021 D3)
    assert branch.cost().calls == 1 and branch.cost().output_tokens >= 2


def test_a_stream_cut_before_any_text_bills_nothing(http_fake):
    http_fake.push_sse(openai_deltas(["never"]), cut_after=0)
    branch = Session().default_branch
    branch.chat_model = model(http_fake, price=FIVE)

    cut_turn(branch, "Say something.", ExecutionError)
    assert branch.cost().calls == 0 and len(branch.messages) == 0


# -- a cancelled turn is billed for the text it kept ---------------------------------------------
def test_a_cancelled_turn_is_billed_for_the_text_it_kept():
    words = " ".join(f"word{i}" for i in range(200))
    slow = iModel(provider="offline", model="scripted", responses=[words], delay=0.02, price=FIVE)
    session = Session()
    branch = session.new_branch(chat_model=slow)
    seen: list[str] = []

    async def main():
        arrived = anyio.Event()

        def sink(fragment: str) -> None:
            seen.append(fragment)
            if len(seen) >= 5:
                arrived.set()

        async def turn():
            with streaming_to(sink):
                await branch.communicate("Write it all.")

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn)
            await arrived.wait()
            tg.cancel_scope.cancel()

    anyio.run(main)
    answer = branch.messages[-1]
    assert answer.metadata["incomplete_reason"] == "interrupted"
    assert branch.cost().calls == session.cost().calls == 1
    row = session.costs()[0]
    assert row["estimated"] is True and row["output_tokens"] >= 5
    assert answer.metadata["usage"]["estimated"] is True


# -- an answer cut by max_tokens with no usage -------------------------------------------------
def test_an_estimate_for_an_answer_cut_by_max_tokens_is_at_least_max_tokens(http_fake):
    http_fake.push_sse(openai_deltas(["a", "b"], finish_reason="length"))  # no usage chunk
    branch = Session().default_branch
    branch.chat_model = model(http_fake, price=FIVE)

    async def main():
        with streaming_to(lambda _t: None):
            await branch.communicate("Say a lot.", max_tokens=50)

    anyio.run(main)
    usage = branch.messages[-1].metadata["usage"]
    assert usage["estimated"] is True and usage["output_tokens"] >= 50
    assert branch.cost().output_tokens >= 50


# -- the input estimate of a conversation --------------------------------------------------------
OVERHEAD = 200  # the server's chat template: tokens its count has beyond the messages


def counting_server(rec) -> Script:
    """A server whose count is the messages' (as estimated here) plus its template."""
    prompt = OVERHEAD + estimate_message_tokens(rec.body["messages"])
    return Script(body=openai_completion("ok " * 10, prompt_tokens=prompt, completion_tokens=20))


def test_a_token_budget_holds_over_a_conversation_on_the_servers_counts(http_fake):
    always(http_fake, counting_server)
    branch = Session().default_branch
    branch.chat_model = model(http_fake)
    branch.budget = Budget(tokens=1500, warn_at=None)

    async def main():
        with pytest.raises(BudgetExceeded) as caught:
            for i in range(50):
                await branch.communicate(f"Step {i}: go on with the plan.", max_tokens=20)
        return caught.value

    error = anyio.run(main)
    assert branch.cost().tokens <= 1500
    assert branch.cost().calls >= 3  # the budget was used, not refused from the start
    assert error.limit == "tokens" and "1,500 tokens" in str(error)
    assert "Budget(tokens=" in str(error) and "usd=" not in str(error)


# -- a call with no max_tokens under a budget ------------------------------------------------------
def honoring_max_tokens(rec) -> Script:
    """A server that writes 5,000 tokens unless ``max_tokens`` stops it sooner."""
    out = min(rec.body.get("max_tokens") or 5000, 5000)
    prompt = estimate_message_tokens(rec.body["messages"])
    return Script(body=openai_completion("long " * 50, prompt_tokens=prompt, completion_tokens=out))


def test_a_call_without_max_tokens_gets_one_that_fits_the_dollar_budget(http_fake):
    always(http_fake, honoring_max_tokens)
    branch = Session().default_branch
    branch.chat_model = model(http_fake, price={"input": 1.0, "output": 10.0})
    branch.budget = Budget(usd=0.01, warn_at=None)

    async def main():
        with pytest.raises(BudgetExceeded) as caught:
            for _ in range(10):
                await branch.communicate("Write as much as you like.")
        return caught.value

    error = anyio.run(main)
    sent = [r.body.get("max_tokens") for r in completions(http_fake)]
    assert sent and all(isinstance(n, int) and n < 1000 for n in sent)
    assert branch.cost().usd <= 0.01  # a server writing 5,000 tokens would have spent $0.05
    assert error.where == "branch"


def test_a_call_that_fits_too_little_output_is_refused_with_the_number(http_fake):
    always(http_fake, honoring_max_tokens)
    branch = Session().default_branch
    branch.chat_model = model(http_fake, price={"input": 1.0, "output": 10.0})
    branch.budget = Budget(usd=0.0001, warn_at=None)  # input fits, 16 output tokens do not

    async def main():
        await branch.communicate("Write as much as you like.")

    with pytest.raises(BudgetExceeded, match=r"room for \d output tokens") as caught:
        anyio.run(main)
    assert caught.value.limit == "usd" and not completions(http_fake)


def test_a_budget_warning_is_one_line_attributed_outside_lion_nb(http_fake):
    always(http_fake, lambda rec: Script(body=openai_completion("ok", prompt_tokens=1000)))
    branch = Session().default_branch
    branch.chat_model = model(http_fake, price=FIVE)
    branch.budget = Budget(usd=0.012, warn_at=0.4)

    async def main():
        for _ in range(2):
            await branch.communicate("hi", max_tokens=10)

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        anyio.run(main)
    (warning,) = [w for w in seen if issubclass(w.category, BudgetWarning)]
    package = str(Path(lion_nb.__file__).parent)
    assert not warning.filename.startswith(package), warning.filename
    assert "\n" not in str(warning.message)
