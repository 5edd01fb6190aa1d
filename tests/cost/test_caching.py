"""Prompt caching: Anthropic breakpoints read back by a fake that accounts for the cache as
the API does, OpenAI's `prompt_cache_key`, and `cache=False`."""

from __future__ import annotations

import anyio

from lion_nb import Session, iModel
from tests.fakes.anthropic_cache import AnthropicCache
from tests.fakes.http_server import openai_completion

KEY = "sk-test-cache-abcdef"
SYSTEM = ("You are a careful assistant for a long notebook session. " * 800)[:40_000]


def claude(fake, **kw) -> iModel:
    return iModel(
        provider="anthropic", model="claude-sonnet-4-5", base_url=fake.url, api_key=KEY, **kw
    )


def test_twenty_turns_read_the_history_from_the_cache(http_fake):
    cache = AnthropicCache(http_fake)
    session = Session()
    branch = session.default_branch
    branch.chat_model = claude(http_fake)
    branch.msgs.add_message(system=SYSTEM)

    async def main():
        for turn in range(20):
            await branch.communicate(f"Turn {turn}: note the figure {turn * 7}.")
        await branch.chat_model.aclose()

    anyio.run(main)
    assert len(cache.usages) == 20
    for usage in cache.usages[1:]:
        total = (
            usage["input_tokens"]
            + usage["cache_read_input_tokens"]
            + usage["cache_creation_input_tokens"]
        )
        assert usage["cache_read_input_tokens"] >= 0.8 * total
    # each turn reads what the turn before it wrote, beyond the system prompt
    assert cache.usages[-1]["cache_read_input_tokens"] > cache.usages[1]["cache_read_input_tokens"]
    cost = branch.cost()
    assert cost.cache_read_tokens == sum(u["cache_read_input_tokens"] for u in cache.usages)
    assert cost.cache_write_tokens == sum(u["cache_creation_input_tokens"] for u in cache.usages)
    assert cost.output_tokens == sum(u["output_tokens"] for u in cache.usages)
    assert cost.input_tokens == sum(
        u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
        for u in cache.usages
    )
    for rec in http_fake.requests:
        marks = [
            b
            for b in [
                *rec.body.get("system", []),
                *(c for m in rec.body["messages"] for c in m["content"]),
            ]
            if "cache_control" in b
        ]
        assert 1 <= len(marks) <= 4


def test_cache_false_sends_no_breakpoints_and_reads_nothing(http_fake):
    cache = AnthropicCache(http_fake)
    branch = Session().default_branch
    branch.chat_model = claude(http_fake, cache=False)
    branch.msgs.add_message(system=SYSTEM)

    async def main():
        for turn in range(3):
            await branch.communicate(f"Turn {turn}")
        await branch.chat_model.aclose()

    anyio.run(main)
    assert all(u["cache_read_input_tokens"] == 0 for u in cache.usages)
    assert all(isinstance(r.body["system"], str) for r in http_fake.requests)
    assert branch.cost().cache_read_tokens == 0


def test_tools_get_a_breakpoint_and_there_are_never_more_than_four(http_fake):
    AnthropicCache(http_fake)
    branch = Session().default_branch
    branch.chat_model = claude(http_fake)
    branch.msgs.add_message(system=SYSTEM)

    def lookup(city: str) -> str:
        """Look a city up."""
        return city

    async def main():
        for turn in range(3):
            await branch.operate(instruction=f"Turn {turn}", tools=[lookup])
        await branch.chat_model.aclose()

    anyio.run(main)
    last = http_fake.requests[-1].body
    assert "cache_control" in last["tools"][-1]
    marks = sum("cache_control" in b for m in last["messages"] for b in m["content"])
    assert marks == 2 and len(last["system"]) == 1  # tools, system, previous and latest turn


def test_openai_gets_a_stable_prompt_cache_key_per_branch(http_fake):
    for _ in range(4):
        http_fake.push_json(openai_completion("ok"))
    session = Session()
    one = session.default_branch
    one.chat_model = iModel(
        provider="openai", model="gpt-4o-mini", base_url=http_fake.openai_url, api_key=KEY
    )
    two = session.new_branch(chat_model=one.chat_model)

    async def main():
        await one.communicate("a")
        await one.communicate("b")
        await two.communicate("c")

    anyio.run(main)
    keys = [r.body.get("prompt_cache_key") for r in http_fake.requests]
    assert keys[0] == keys[1] == str(one.id) and keys[2] == str(two.id)


def test_a_changed_system_prompt_is_named_as_the_cache_break(http_fake):
    AnthropicCache(http_fake)
    branch = Session().default_branch
    branch.chat_model = claude(http_fake)
    branch.msgs.add_message(system=SYSTEM)

    async def main():
        await branch.communicate("one")
        await branch.communicate("two")
        branch.msgs.add_message(system=SYSTEM + " Today is Tuesday.")
        await branch.communicate("three")
        await branch.chat_model.aclose()

    anyio.run(main)
    notes = [
        m.metadata.get("cache_note") for m in branch.messages if m.kind == "assistant_response"
    ]
    assert notes[:2] == [None, None]
    assert "system prompt changed" in notes[2]
