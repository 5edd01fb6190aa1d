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
import weakref
from typing import Any

__all__ = ["RenderedMessage", "estimate_message_tokens", "estimate_tokens"]

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


class RenderedMessage(dict):
    """A chat message a branch rendered for its requests: a plain dict to every reader, that
    also remembers its token count. The count -- and the memo of the history it ends --
    lives with the message, so it lives and dies with the branch that rendered it; nothing
    global keeps a branch's content alive (a module-level cache once kept ~100 MB of deleted
    branches' text)."""

    __slots__ = ("__weakref__", "_counted", "_history")


# A weak reference to the newest message of the last history counted, which holds that
# history and its total: a conversation's next request is usually that history plus a few
# messages, so only those are counted. Weak: a deleted branch's history is freed.
_LAST: list[Any] = [None]


def _message_tokens(msg: dict[str, Any]) -> int:
    content = msg.get("content")
    total = _PER_MESSAGE + estimate_tokens(content)
    for call in msg.get("tool_calls") or ():
        total += estimate_tokens(call.get("function", {}).get("arguments", ""))
    return total


def _tokens_of(msg: dict[str, Any]) -> int:
    if type(msg) is not RenderedMessage:
        return _message_tokens(msg)
    content = msg.get("content")
    try:
        seen, tokens = msg._counted
    except AttributeError:
        seen = tokens = None
    if tokens is None or seen is not content:
        tokens = _message_tokens(msg)
        msg._counted = (content, tokens)
    return tokens


def estimate_message_tokens(messages: list[dict[str, Any]]) -> int:
    """Approximate prompt tokens of an OpenAI-style message list.

    A branch's rendered messages (`RenderedMessage`) carry their own counts (checked
    against their content object), and the last history's total is reused when the new list
    starts with the same messages (compared element by element, identity first), because a
    conversation's rendered history is the same dicts turn after turn: a request costs its
    new messages, not the whole history again. Message dicts are treated as immutable once
    counted.
    """
    start, total = 0, 2
    ref = _LAST[0]
    anchor = ref() if ref is not None else None
    if anchor is not None and hasattr(anchor, "_history"):
        history, counted = anchor._history
        n = len(history)
        if len(messages) >= n and messages[n - 1] is anchor and messages[:n] == history:
            start, total = n, counted  # the same history as last time, plus new messages
    for i in range(start, len(messages)):
        total += _tokens_of(messages[i])
        if i == len(messages) - 2 and type(messages[i]) is RenderedMessage:
            # remember the history without the newest message (the new instruction, which
            # is rendered afresh once it is recorded), on that history's own last message
            previous = _LAST[0]() if _LAST[0] is not None else None
            if previous is not None:
                del previous._history  # one memo at a time, not one per turn
            anchor = messages[i]
            anchor._history = (messages[: i + 1], total)
            _LAST[0] = weakref.ref(anchor)
    return total
