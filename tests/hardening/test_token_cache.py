"""The token count cache lives with the branch: deleting a branch frees its text.

A module-level cache of rendered messages (and of the last history counted) once kept a
deleted branch's content alive: ~100 MB after ``del branch``. Counts now live on the
branch's own rendered messages, and the memo of the last history is held weakly.
"""

from __future__ import annotations

import gc
import tracemalloc
import weakref

import anyio

from lion_nb import Branch
from lion_nb.tokens import estimate_message_tokens

MB = 1024 * 1024


def big_branch() -> Branch:
    branch = Branch(system="Be brief.")
    for i in range(40):
        branch.msgs.add_message(instruction="x" * 1_000_000 + str(i))  # 1 MB each
    anyio.run(branch.communicate, "one more")  # renders and counts the whole history twice
    return branch


def test_a_deleted_branch_leaves_no_content_behind():
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        branch = big_branch()
        held = tracemalloc.get_traced_memory()[0] - base
        probe = weakref.ref(branch.messages[1])
        del branch
        gc.collect()
        left = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    print(f"\nheld with the branch: {held / MB:.1f} MB; left after del + gc: {left / MB:.1f} MB")
    assert held > 30 * MB  # the content was really there
    assert probe() is None  # its messages are gone
    assert left < 4 * MB


def test_counts_are_still_reused_turn_after_turn():
    branch = Branch()
    for i in range(30):
        branch.msgs.add_message(instruction=f"question {i}")
        branch.msgs.add_message(assistant_response=f"answer {i}")
    history = branch.msgs.chat_messages()
    fresh = estimate_message_tokens([dict(m) for m in history])
    assert estimate_message_tokens(history) == fresh
    longer = [*history, {"role": "user", "content": "and?"}]
    assert estimate_message_tokens(longer) == estimate_message_tokens([dict(m) for m in longer])
    # an edited message is counted again, not taken from a stale count
    branch.messages[3].response = "a much longer answer " * 50
    edited = branch.msgs.chat_messages()
    assert estimate_message_tokens(edited) == estimate_message_tokens([dict(m) for m in edited])
    assert estimate_message_tokens(edited) > fresh
