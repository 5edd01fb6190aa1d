"""Offline token estimates: close to GPT-4-family counts, cached without going stale."""

from __future__ import annotations

import pytest

from lion_nb.tokens import estimate_message_tokens, estimate_tokens


@pytest.mark.parametrize(
    ("text", "cl100k"),
    [
        ("Hello, world!", 4),
        ("The quick brown fox jumps over the lazy dog.", 10),
        ("I love machine learning.", 5),
        ("", 0),
    ],
)
def test_english_counts_are_close_to_the_real_tokenizer(text, cl100k):
    assert abs(estimate_tokens(text) - cl100k) <= 1


def test_longer_words_numbers_and_non_latin_text_cost_more():
    assert estimate_tokens("internationalization") > estimate_tokens("nation")
    assert estimate_tokens("1234567890") > estimate_tokens("12")
    assert estimate_tokens("日本語のテキスト") >= 5
    assert estimate_tokens({"a": [1, 2]}) == estimate_tokens('{"a": [1, 2]}')


def test_message_lists_count_overhead_and_tool_calls():
    plain = [{"role": "user", "content": "hello"}]
    call = {
        "id": "c",
        "type": "function",
        "function": {"name": "f", "arguments": '{"city": "Paris"}'},
    }
    with_call = [*plain, {"role": "assistant", "content": None, "tool_calls": [call]}]
    assert estimate_message_tokens(plain) == 2 + 4 + estimate_tokens("hello")
    assert estimate_message_tokens(with_call) > estimate_message_tokens(plain) + 4


def test_a_changed_history_is_never_counted_from_a_stale_cache():
    big = {"role": "user", "content": "word " * 1000}
    a, c, d = ({"role": "user", "content": t} for t in ("a", "c", "d"))
    first = estimate_message_tokens([a, big, c, d])
    small = {"role": "user", "content": "tiny"}
    second = estimate_message_tokens([a, small, c, d])
    assert second == estimate_message_tokens([dict(a), dict(small), dict(c), dict(d)])
    assert second < first / 10


def test_a_growing_history_reuses_its_count():
    history = [{"role": "user", "content": f"message {i}"} for i in range(50)]
    fresh = estimate_message_tokens([dict(m) for m in history])
    assert estimate_message_tokens(history) == fresh
    longer = [*history, {"role": "assistant", "content": "reply"}]
    assert estimate_message_tokens(longer) == estimate_message_tokens([dict(m) for m in longer])
