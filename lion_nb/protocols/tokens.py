"""Token counts for budgets, computed offline with no vocabulary file.

The count approximates a byte-pair tokenizer of the GPT-4 family (cl100k / o200k): text is cut
into words, numbers, punctuation runs and whitespace the way those tokenizers pre-split it;
a common word (up to seven letters) is one token, a longer one one per five letters, numbers
one per three digits, punctuation one per two marks, and non-Latin text about one token per
character. On English prose it lands
within about 10-15 % of the real tokenizer, which is what a context budget needs; it is not
a billing figure. Nothing is downloaded, ever.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from typing import Any

__all__ = ["estimate_message_tokens", "estimate_tokens"]

_PIECES = re.compile(r"""'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+""", re.UNICODE)
_PER_MESSAGE = 4  # role and separators in chat formats


def estimate_tokens(text: Any) -> int:
    """Approximate tokens in ``text`` (non-strings are counted as their JSON)."""
    if text is None:
        return 0
    if not isinstance(text, str):
        text = json.dumps(text, ensure_ascii=False, default=str)
    if not text:
        return 0
    total = 0
    for piece in _PIECES.findall(text):
        word = piece.strip()
        n = len(word)
        if n == 0:
            total += 1 if len(piece) > 1 else 0
        elif not word.isascii():
            total += max(1, n * 3 // 4)
        elif word[0].isalpha():
            total += 1 if n <= 7 else (n + 4) // 5
        elif word[0].isdigit():
            total += (n + 2) // 3
        else:
            total += (n + 1) // 2
    return total


_CACHE: OrderedDict[int, tuple[dict, Any, int]] = OrderedDict()
_CACHE_SIZE = 50_000
# [length, messages, total] of the last history counted: a conversation's
# next request is usually that history plus a few messages, so only those are counted.
_LAST_PREFIX: list[Any] = [0, [], 0]


def _message_tokens(msg: dict[str, Any]) -> int:
    content = msg.get("content")
    total = _PER_MESSAGE + estimate_tokens(content)
    for call in msg.get("tool_calls") or ():
        total += estimate_tokens(call.get("function", {}).get("arguments", ""))
    return total


def estimate_message_tokens(messages: list[dict[str, Any]]) -> int:
    """Approximate prompt tokens of an OpenAI-style message list.

    Counts are cached per message dict (by identity, checked against the content object),
    and the last history's total is reused when the new list starts with the same messages
    (compared element by element, identity first), because a conversation's rendered history
    is the same dicts turn after turn: a request costs its new messages, not the whole
    history again. Message dicts are treated as immutable once counted.
    """
    n, history, counted = _LAST_PREFIX
    start, total = 0, 2
    if n and len(messages) >= n and messages[:n] == history:
        start, total = n, counted  # the same history as last time, plus new messages
    cache = _CACHE
    for msg in messages[start:] if start else messages:
        key = id(msg)
        hit = cache.get(key)
        if hit is not None and hit[0] is msg and hit[1] is msg.get("content"):
            total += hit[2]
            continue
        tokens = _message_tokens(msg)
        cache[key] = (msg, msg.get("content"), tokens)
        if len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)
        total += tokens
        if len(messages) > 1 and msg is messages[-2]:
            # remember the history without the newest message (the new instruction, which
            # is rendered afresh once it is recorded)
            _LAST_PREFIX[:] = [len(messages) - 1, messages[:-1], total]
    return total
