"""interpret: rewrite a rough request into a clear prompt with one unrecorded call.

Issue 3 item 4 (interpret) -> test
- one unrecorded call to the interpret model; domain, style and sample steer it
    -> test_interpret_is_unrecorded_and_steered
- the facade defaults to the parse model -> test_facade_defaults_to_the_parse_model
- a failed call raises ExecutionError (no key in the text) -> test_failed_call_raises_execution_error
- an empty rewrite gives the text back -> test_empty_rewrite_returns_the_text
"""

from __future__ import annotations

import anyio
import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import ExecutionError
from lion_nb.operations.interpret_op import interpret
from lion_nb.operations.types import InterpretParam


def _capture(reply="Rewritten prompt."):
    seen = []

    def f(messages):
        seen.append(messages)
        return reply

    return iModel(provider="offline", model="function", function=f), seen


def test_interpret_is_unrecorded_and_steered():
    model, seen = _capture()
    b = Branch(system="sys")
    b.msgs.add_message(instruction="earlier turn")
    param = InterpretParam(
        domain="biology", style="terse", sample_writing="Cells divide.", imodel=model
    )
    assert anyio.run(interpret, b, "tell me about mitosis pls", param) == "Rewritten prompt."
    (messages,) = seen
    assert [m["role"] for m in messages] == ["system", "user"]  # no branch history sent
    user = messages[1]["content"]
    for part in ("biology", "terse", "Cells divide.", "tell me about mitosis pls"):
        assert part in user
    assert [m.kind for m in b.messages] == ["system", "instruction"]


def test_facade_defaults_to_the_parse_model():
    model, seen = _capture("From the parse model.")
    b = Branch(parse_model=model)
    assert anyio.run(lambda: b.interpret("rough")) == "From the parse model."
    assert len(seen) == 1 and len(b.messages) == 0


def test_failed_call_raises_execution_error():
    failing = iModel(
        provider="offline", model="scripted", responses=[{"error": "down", "status": 503}]
    )
    b = Branch()
    with pytest.raises(ExecutionError, match=r"`interpret` with `offline/scripted` failed: .*down"):
        anyio.run(interpret, b, "x", InterpretParam(imodel=failing))


def test_empty_rewrite_returns_the_text():
    model, _ = _capture("   ")
    assert anyio.run(interpret, Branch(), "keep me", InterpretParam(imodel=model)) == "keep me"
