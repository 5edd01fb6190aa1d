"""``parse`` and ``interpret`` calls to the parse model are model-call spans like chat's, as a
real loopback OTLP/HTTP collector receives them, marked with their purpose; a failed call's
span says so."""

from __future__ import annotations

import anyio
import pytest
from pydantic import BaseModel

import lion_nb.tracing as tracing
from lion_nb import Branch, iModel
from lion_nb.errors import ExecutionError
from lion_nb.operations.interpret_op import interpret
from lion_nb.operations.parse_op import parse
from lion_nb.operations.types import InterpretParam, ParseParam

pytestmark = pytest.mark.timeout(60)


class Person(BaseModel):
    name: str
    age: int


def replies(*texts):
    answers = list(texts)
    return iModel(provider="offline", model="function", function=lambda messages: answers.pop(0))


def test_parse_model_calls_are_chat_spans_marked_parse(collector):
    tracing.enable(collector.endpoint)
    branch = Branch(parse_model=replies("still not json", '{"name": "Ann", "age": 7}'))
    got = anyio.run(parse, branch, "Ann is seven", ParseParam(response_format=Person))
    assert got == Person(name="Ann", age=7)
    assert tracing.flush(5)
    spans = collector.spans
    assert [s.name for s in spans] == ["chat function", "chat function"]
    for span in spans:
        assert span.kind == 3  # CLIENT, as chat's
        assert span.attributes["gen_ai.operation.name"] == "chat"
        assert span.attributes["gen_ai.request.model"] == "function"
        assert span.attributes["gen_ai.conversation.id"] == str(branch.id)
        assert span.attributes["lion_nb.model_call.purpose"] == "parse"
        assert "gen_ai.usage.input_tokens" in span.attributes
        assert "gen_ai.input.messages" not in span.attributes  # content off by default


def test_interpret_call_is_a_chat_span_marked_interpret_and_failures_show(collector):
    tracing.enable(collector.endpoint)
    branch = Branch()
    param = InterpretParam(imodel=replies("A clear prompt."))
    assert anyio.run(interpret, branch, "rough ask", param) == "A clear prompt."

    def broken(messages):
        raise RuntimeError("model down")

    failing = iModel(provider="offline", model="function", function=broken)
    with pytest.raises(ExecutionError):
        anyio.run(interpret, branch, "rough ask", InterpretParam(imodel=failing))
    assert tracing.flush(5)
    ok, failed = collector.spans
    assert ok.name == failed.name == "chat function"
    assert ok.attributes["lion_nb.model_call.purpose"] == "interpret"
    assert ok.attributes["gen_ai.conversation.id"] == str(branch.id)
    assert ok.status_code == 0 and "error.type" not in ok.attributes
    assert failed.attributes["lion_nb.model_call.purpose"] == "interpret"
    assert failed.status_code == 2  # ERROR
    assert failed.attributes["error.type"]
