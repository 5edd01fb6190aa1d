"""ADR-0021 D3: chat, chat_and_record and the recording half of communicate.

ADR-0021 D3 clause -> test
- chat and communicate apply providers, build one request, call the model, clear the injection slot in a finally, log the call -> test_chat_logs_the_call_and_clears_the_slot_even_on_failure
- chat does not append the instruction or response -> test_chat_records_nothing
- chat raises ExecutionError on a FAILED call before reading a response -> test_failed_call_raises_execution_error_with_cause
- return_ins_res_message is the discriminator -> test_return_flag_discriminates_the_result, test_chat_text_is_masked_and_whole_as_the_response_message_holds_it
- communicate(clear_messages=True) clears first; appends instruction then response -> test_communicate_clears_then_appends_in_order
- communicate(skip_validation=True) returns the recorded text -> test_skip_validation_returns_the_recorded_text
- chat_and_record forces the flag, delegates once, appends in order, returns the text -> test_chat_and_record_forces_the_tuple_and_appends_in_order
- chat_and_record: a chat failure appends nothing -> test_chat_and_record_failure_appends_nothing
- chat_and_record: no rollback when the response append fails -> test_chat_and_record_keeps_instruction_when_response_append_fails
"""

from __future__ import annotations

import anyio
import pytest

from lion_nb import AssistantResponse, Branch, Instruction, iModel
from lion_nb.errors import ExecutionError, ServerError


def _scripted(*responses):
    return iModel(provider="offline", model="scripted", responses=list(responses))


def test_chat_records_nothing():
    b = Branch(chat_model=_scripted("hi"))
    assert anyio.run(b.chat, "hello") == "hi"
    assert len(b.messages) == 0


def test_return_flag_discriminates_the_result():
    b = Branch(chat_model=_scripted("a", "b"))
    assert anyio.run(b.chat, "x") == "a"

    async def pair():
        return await b.chat("x", return_ins_res_message=True)

    ins, res = anyio.run(pair)
    assert isinstance(ins, Instruction) and isinstance(res, AssistantResponse)
    assert res.response == "b" and ins.instruction == "x"


def test_failed_call_raises_execution_error_with_cause():
    b = Branch(chat_model=_scripted({"error": "upstream exploded", "status": 500}))
    with pytest.raises(ExecutionError, match="upstream exploded") as info:
        anyio.run(b.chat, "x")
    assert isinstance(info.value.__cause__, ServerError)
    assert len(b.messages) == 0


def test_chat_logs_the_call_and_clears_the_slot_even_on_failure():
    b = Branch(system="s", chat_model=_scripted("ok", {"error": "boom", "status": 503}))

    class P:
        name = "p"

        async def provide(self, branch, instruction):
            return "CTX"

    b.providers.register(P())
    anyio.run(b.chat, "x")
    assert b.logs[-1].content["status"] == "completed" and b._context_injection is None
    with pytest.raises(ExecutionError):
        anyio.run(b.chat, "y")
    assert b.logs[-1].content["status"] == "failed" and "boom" in b.logs[-1].content["error"]
    assert b._context_injection is None


def test_chat_sends_history_then_the_new_instruction():
    sent = []

    def reply(messages, **request):
        sent.append(messages)
        return "ok"

    b = Branch(
        system="sys", chat_model=iModel(provider="offline", model="function", function=reply)
    )
    anyio.run(b.communicate, "first")
    anyio.run(b.chat, "second")
    assert [m["role"] for m in sent[1]] == ["system", "user", "assistant", "user"]
    assert sent[1][-1]["content"] == "second"


def test_communicate_clears_then_appends_in_order():
    b = Branch(system="s", chat_model=_scripted("one", "two"))
    anyio.run(b.communicate, "a")

    async def go():
        return await b.communicate("b", clear_messages=True)

    assert anyio.run(go) == "two"
    assert [m.kind for m in b.messages] == ["system", "instruction", "assistant_response"]
    assert b.messages[1].instruction == "b" and b.messages[2].response == "two"


def test_skip_validation_returns_the_recorded_text():
    from pydantic import BaseModel

    class Out(BaseModel):
        n: int

    b = Branch(chat_model=_scripted("not json at all"))

    async def go():
        return await b.communicate("x", response_format=Out, skip_validation=True)

    assert anyio.run(go) == "not json at all"
    assert b.messages[-1].response == "not json at all"


def test_chat_and_record_forces_the_tuple_and_appends_in_order():
    b = Branch(chat_model=_scripted("answer"))
    calls = []
    original = Branch.chat

    async def spy(self, *args, **kwargs):
        calls.append(kwargs.get("return_ins_res_message"))
        return await original(self, *args, **kwargs)

    Branch.chat = spy
    try:

        async def go():
            return await b.chat_and_record("q", return_ins_res_message=False)

        assert anyio.run(go) == "answer"
    finally:
        Branch.chat = original
    assert calls == [True]
    assert [m.kind for m in b.messages] == ["instruction", "assistant_response"]


def test_chat_and_record_failure_appends_nothing():
    b = Branch(chat_model=_scripted({"error": "nope", "status": 500}))
    with pytest.raises(ExecutionError):
        anyio.run(b.chat_and_record, "q")
    assert len(b.messages) == 0


def test_chat_and_record_keeps_instruction_when_response_append_fails():
    b = Branch(chat_model=_scripted("answer"))
    original = b.msgs.a_add_message

    async def refuse_responses(**kwargs):
        if "assistant_response" in kwargs:
            raise RuntimeError("storage full")
        return await original(**kwargs)

    b.msgs.a_add_message = refuse_responses
    with pytest.raises(RuntimeError, match="storage full"):
        anyio.run(b.chat_and_record, "q")
    assert [m.kind for m in b.messages] == ["instruction"]


def test_include_token_usage_tells_the_model():
    sent = []

    def reply(messages, **request):
        sent.append(messages[-1]["content"])
        return "ok"

    b = Branch(chat_model=iModel(provider="offline", model="function", function=reply))

    async def go():
        await b.chat("hi", include_token_usage_to_model=True)

    anyio.run(go)
    assert "tokens so far" in sent[0]


def test_request_fields_become_a_response_format_for_the_model():
    requests = []

    def reply(messages, **request):
        requests.append(request)
        return '{"topic": "x"}'

    b = Branch(chat_model=iModel(provider="offline", model="function", function=reply))

    async def go():
        return await b.communicate("q", request_fields={"topic": "the topic"})

    assert anyio.run(go) == {"topic": "x"}
    assert requests[0]["response_format"]["schema"]["required"] == ["topic"]


def test_num_parse_retries_above_5_warns_even_without_a_response_format():
    b = Branch(chat_model=_scripted("plain"))

    async def go():
        return await b.communicate("x", num_parse_retries=10)

    with pytest.warns(UserWarning, match="above the limit of 5"):
        assert anyio.run(go) == "plain"


def test_an_execution_error_never_shows_a_secret():
    from lion_nb.models.secrets import Secret

    Secret("sk-live-should-never-show-0000")

    def leaky(messages, **request):
        raise RuntimeError("upstream said: key sk-live-should-never-show-0000 is invalid")

    b = Branch(chat_model=iModel(provider="offline", model="function", function=leaky))
    with pytest.raises(ExecutionError) as info:
        anyio.run(b.chat, "x")
    assert "sk-live-should-never-show-0000" not in str(info.value)
    assert "****" in str(info.value)


def test_negative_parse_retries_become_zero():
    from lion_nb.operations.communicate_op import clamp_parse_retries

    assert clamp_parse_retries(-3) == 0
    assert clamp_parse_retries(2) == 2


def test_chat_text_is_masked_and_whole_as_the_response_message_holds_it():
    from lion_nb.models.secrets import MASK, Secret

    key = "sk-test-chat-text-echo-0123456789"
    Secret(key)
    answer = f"the key is {key} \ud800"
    b = Branch(chat_model=_scripted(answer, answer))
    text = anyio.run(b.chat, "echo it")

    async def pair():
        return await b.chat("echo it", return_ins_res_message=True)

    _ins, res = anyio.run(pair)
    assert text == res.response == f"the key is {MASK} \ufffd"
