"""Chat: send from Python and from the input box, stream, Stop, Undo, Re-run, Clear, errors,
operations, and the static fallback -- kernel-side, with the offline models."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from lion_nb import Branch, iModel
from lion_nb.widgets import Chat
from tests.waiting import until

KEY = "sk-test-" + "k9" * 12


def _scripted(*responses, **kw):
    return iModel(provider="offline", model="scripted", responses=list(responses), **kw)


def _function(f):
    return iModel(provider="offline", model="function", function=f)


def _branch(model=None, **kw) -> Branch:
    return Branch(name="main", system="Be brief.", chat_model=model or _scripted("hi"), **kw)


def _front_end(widget, method: str, payload: dict) -> None:
    """A message from the front end, as the kernel's comm delivers it."""
    key = "state" if method == "update" else "content"
    widget._handle_msg({"content": {"data": {"method": method, key: payload}}, "buffers": []})


def _type_and_enter(chat: Chat, text: str) -> None:
    _front_end(chat.input, "update", {"value": text})  # continuous_update: synced as typed
    _front_end(chat.input, "custom", {"event": "submit"})  # what the text box sends on Enter


def _kinds(branch: Branch) -> list[str]:
    return [m.kind for m in branch.messages]


def _user_texts(request_messages: list[dict]) -> list[str]:
    return [m["content"] for m in request_messages if m["role"] == "user"]


# -- sending -------------------------------------------------------------------------------------
def test_send_from_python_records_the_answer_and_shows_it():
    branch = _branch(_scripted("Hello **there**."))
    chat = Chat(branch)

    result = asyncio.run(chat.send("Say hello"))

    assert result == "Hello **there**."
    assert _kinds(branch) == ["system", "instruction", "assistant_response"]
    assert [e["role"] for e in chat.view.entries] == ["system", "user", "assistant"]
    assert "<strong>there</strong>" in chat.view.entries[-1]["html"]
    assert chat.view.status.startswith("done · communicate · ")
    assert not chat.running and chat.task.done()
    assert not chat.input.disabled and chat.stop_button.disabled


def test_enter_in_the_input_box_sends_what_was_typed():
    branch = _branch(_scripted("From the box."))
    chat = Chat(branch)

    async def main():
        _front_end(chat.input, "update", {"value": "typed, not sent"})
        assert chat.task is None  # a value change alone (leaving the box) sends nothing
        _type_and_enter(chat, "  Typed and sent  ")
        assert chat.running and chat.input.value == ""
        assert chat.input.disabled and chat.send_button.disabled and not chat.stop_button.disabled
        _front_end(chat.input, "custom", {"event": "submit"})  # Enter again while it runs
        first = chat.task
        assert await first == "From the box."
        assert chat.task is first  # the second Enter started nothing

    asyncio.run(main())
    assert [m.instruction for m in branch.messages if m.kind == "instruction"] == ["Typed and sent"]
    assert chat.view.entries[-1]["role"] == "assistant"
    assert "From the box." in chat.view.entries[-1]["html"]


def test_the_send_button_sends_and_python_refuses_a_second_run():
    release = asyncio.Event()

    async def slow(messages):
        await release.wait()
        return "done"

    branch = _branch(_function(slow))
    chat = Chat(branch)

    async def main():
        _front_end(chat.input, "update", {"value": "by button"})
        _front_end(chat.send_button, "custom", {"event": "click"})
        assert chat.running
        with pytest.raises(RuntimeError, match="in progress"):
            await chat.send("another")
        release.set()
        return await chat.task

    assert asyncio.run(main()) == "done"
    assert [m.instruction for m in branch.messages if m.kind == "instruction"] == ["by button"]


def test_streamed_fragments_reach_the_view_in_bounded_updates():
    words = [f"word{i}" for i in range(200)]
    branch = _branch(_scripted(" ".join(words), delay=0.002))
    chat = Chat(branch)
    chat.tick = 0.05
    shown: list[str] = []
    statuses: list[str] = []
    chat.view.observe(lambda change: shown.append(change["new"]), "stream_html")
    chat.view.observe(lambda change: statuses.append(change["new"]), "status")

    async def main():
        started = time.monotonic()
        await chat.send("Count")
        return time.monotonic() - started

    elapsed = asyncio.run(main())

    partial = [html for html in shown if html]
    assert len(partial) >= 2  # the text grew in the view while it streamed
    assert "word0" in partial[0] and "word199" not in partial[0]
    assert len(partial) <= 20 * elapsed + 3 < len(words)  # batched, not one per fragment
    assert shown[-1] == "" and chat.view.streamed_text == ""  # the stream became a message
    assert "word199" in chat.view.entries[-1]["html"]
    ticks = [
        s for s in statuses if re.fullmatch(r"running communicate · \d+\.\d s · ~\d+ tokens", s)
    ]
    assert ticks  # elapsed time and tokens while it ran
    assert re.fullmatch(r"done · communicate · \d+\.\d s · \d+ tokens", chat.view.status)


# -- Stop ----------------------------------------------------------------------------------------
def test_stop_ends_a_silent_run_promptly_and_a_later_send_works():
    entered = asyncio.Event()
    calls = []

    async def model(messages):
        calls.append(messages)
        if len(calls) == 1:
            entered.set()
            await asyncio.sleep(20)  # a silent model: no fragment, no timer
            return "too late"
        return "back again"

    branch = _branch(_function(model))
    chat = Chat(branch)

    async def main():
        sending = asyncio.ensure_future(chat.send("Think for a long time"))
        await entered.wait()
        ticks = 0
        while chat.running and ticks < 3:  # the kernel's loop is free while it runs
            await asyncio.sleep(0)
            ticks += 1
        assert chat.running and ticks == 3
        assert chat.stop() is True
        stopped = await asyncio.wait_for(sending, timeout=10)  # not the model's 20 s
        assert chat.task.cancelled()
        return stopped

    assert asyncio.run(main()) is None
    assert chat.view.status.startswith("stopped · communicate")
    assert not chat.running and chat.stop() is False
    # an API turn records nothing until its answer arrives; its text waits in the box
    assert _kinds(branch) == ["system"]
    assert chat.input.value == "Think for a long time"
    assert not chat.input.disabled and not chat.send_button.disabled
    assert chat.view.streamed_text == ""

    assert asyncio.run(chat.send("Are you there?")) == "back again"
    assert _kinds(branch) == ["system", "instruction", "assistant_response"]
    assert chat.view.status.startswith("done")


def test_stop_from_the_button_during_a_streaming_run_keeps_what_was_received():
    branch = _branch(_scripted("First answer.", " ".join(["slow"] * 400), delay=0.05))
    chat = Chat(branch)
    shown: list[str] = []

    async def main():
        await chat.send("one")
        _type_and_enter(chat, "two")
        while len(chat.view.streamed_text) < 10:
            await asyncio.sleep(0.01)
        _front_end(chat.stop_button, "custom", {"event": "click"})
        shown.append(chat.view.streamed_text)
        await asyncio.wait([chat.task])

    asyncio.run(main())
    assert chat.view.status.startswith("stopped")
    assert "incomplete answer kept on the branch" in chat.view.status
    kinds = ["system", "instruction", "assistant_response", "instruction", "assistant_response"]
    assert _kinds(branch) == kinds
    assert branch.messages[2].response == "First answer."
    partial = branch.messages[-1]
    assert branch.messages[-2].instruction == "two"
    assert partial.response.startswith(shown[0]) and partial.response.startswith("slow slow")
    assert partial.metadata["incomplete"] is True
    assert partial.metadata["incomplete_reason"] == "interrupted"
    assert len(partial.response) < len(" ".join(["slow"] * 400))  # really cut short
    assert chat.input.value == "" and chat.view.stream_html == ""  # the turn is on the branch


# -- undo, re-run, clear -------------------------------------------------------------------------
def test_undo_removes_the_last_turn_and_puts_its_text_back():
    seen: list[list[dict]] = []

    def model(messages):
        seen.append(messages)
        return f"answer {len(seen)}"

    branch = _branch(_function(model))
    chat = Chat(branch)
    asyncio.run(chat.send("first question"))
    asyncio.run(chat.send("second question"))

    _front_end(chat.undo_button, "custom", {"event": "click"})

    assert chat.input.value == "second question"
    assert _kinds(branch) == ["system", "instruction", "assistant_response"]
    assert [e["role"] for e in chat.view.entries] == ["system", "user", "assistant"]
    assert chat.view.total == 3
    # the request rendering forgot the undone turn
    assert _user_texts(branch.msgs.chat_messages()) == ["first question"]
    asyncio.run(chat.send("third question"))
    assert _user_texts(seen[-1]) == ["first question", "third question"]
    assert "answer 2" not in str(seen[-1])

    assert chat.undo() == "third question"
    assert chat.undo() == "first question"
    assert chat.undo() is None and chat.view.status == "nothing to undo"
    assert _kinds(branch) == ["system"]


def test_rerun_replaces_the_last_answer():
    seen: list[list[dict]] = []

    def model(messages):
        seen.append(messages)
        return f"answer {len(seen)}"

    branch = _branch(_function(model))
    chat = Chat(branch)

    async def main():
        await chat.send("the question")
        return await chat.rerun()

    assert asyncio.run(main()) == "answer 2"
    instructions = [m for m in branch.messages if m.kind == "instruction"]
    answers = [m for m in branch.messages if m.kind == "assistant_response"]
    assert [m.instruction for m in instructions] == ["the question"]
    assert [m.response for m in answers] == ["answer 2"]
    assert _user_texts(seen[-1]) == ["the question"]  # the model saw the turn once
    assert "answer 2" in chat.view.entries[-1]["html"] and chat.view.total == 3


def test_rerun_from_the_button_and_with_nothing_to_rerun():
    branch = _branch(_scripted("one", "two"))
    chat = Chat(branch)

    async def main():
        assert await chat.rerun() is None
        assert chat.view.status == "nothing to re-run"
        await chat.send("q")
        _front_end(chat.rerun_button, "custom", {"event": "click"})
        assert chat.running
        return await chat.task

    assert asyncio.run(main()) == "two"
    assert [m.response for m in branch.messages if m.kind == "assistant_response"] == ["two"]


def test_clear_keeps_only_the_system_message():
    branch = _branch(_scripted("a", "b"))
    chat = Chat(branch)
    asyncio.run(chat.send("one"))
    asyncio.run(chat.send("two"))

    _front_end(chat.clear_button, "custom", {"event": "click"})

    assert _kinds(branch) == ["system"]
    assert branch.system.system_message == "Be brief."
    assert [e["role"] for e in chat.view.entries] == ["system"]
    assert branch.msgs.chat_messages() == [{"role": "system", "content": "Be brief."}]
    assert chat.view.status == "cleared"


def test_undo_takes_back_a_whole_react_turn():
    branch = _branch(iModel("offline/auto"))
    chat = Chat(branch, operation="ReAct")
    asyncio.run(chat.send("Plan a picnic"))
    assert sum(m.kind == "instruction" for m in branch.messages) > 1  # ReAct's own rounds

    assert chat.undo() == "Plan a picnic"
    assert _kinds(branch) == ["system"]


# -- failures ------------------------------------------------------------------------------------
def test_a_failing_model_shows_its_error_and_a_later_send_works():
    branch = _branch(_scripted({"error": "the prompt is malformed", "status": 400}, "recovered"))
    chat = Chat(branch)

    with pytest.raises(Exception, match="malformed"):
        asyncio.run(chat.send("broken"))

    assert chat.view.status.startswith("error · communicate · BadRequestError: ")
    assert chat.view.status.endswith("the prompt is malformed")
    assert _kinds(branch) == ["system"]  # consistent: no instruction without its answer
    assert chat.input.value == "broken" and not chat.input.disabled and not chat.running

    chat.input.value = ""
    assert asyncio.run(chat.send("again")) == "recovered"
    assert chat.view.status.startswith("done")


def test_a_failure_from_the_input_box_is_shown_not_raised():
    def model(messages):
        raise RuntimeError("the tool server crashed")

    branch = _branch(_function(model))
    chat = Chat(branch)

    async def main():
        _type_and_enter(chat, "try it")
        await asyncio.wait([chat.task])

    asyncio.run(main())
    assert chat.view.status.startswith("error · communicate · ExecutionError: ")
    assert chat.view.status.endswith("the tool server crashed")
    assert chat.input.value == "try it" and not chat.input.disabled


def test_an_api_key_in_an_error_is_redacted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    def model(messages):
        raise ValueError(f"the server rejected key {KEY} (Authorization: Bearer {KEY})")

    chat = Chat(_branch(_function(model)))
    with pytest.raises(Exception):  # noqa: B017 - any error: the status is under test
        asyncio.run(chat.send("hello"))

    assert KEY not in chat.view.status
    assert "****" in chat.view.status and "rejected key" in chat.view.status


# -- operations ----------------------------------------------------------------------------------
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_the_dropdown_switches_to_operate_and_the_tool_call_is_an_action_entry():
    branch = _branch(iModel("offline/auto"), tools=[get_weather])
    chat = Chat(branch)
    assert list(chat.picker.options) == ["communicate", "chat", "operate", "ReAct", "interpret"]

    index = list(chat.picker.options).index("operate")
    _front_end(chat.picker, "update", {"index": index})  # what the dropdown sends
    assert chat.operation == "operate"
    asyncio.run(chat.send("Weather in Oslo? Use get_weather for Oslo."))

    actions = [e for e in chat.view.entries if e["kind"] == "action"]
    assert [a["function"] for a in actions] == ["get_weather"]
    assert not actions[0]["pending"] and "sunny in" in actions[0]["result"]
    assert chat.view.status.startswith("done · operate")


def test_unrecorded_operations_show_their_answer_under_the_view():
    branch = _branch(_scripted("A clear, self-contained prompt."))
    chat = Chat(branch, operation="interpret", operations=["communicate", "interpret"])

    result = asyncio.run(chat.send("rough idea"))

    assert result == "A clear, self-contained prompt."
    assert _kinds(branch) == ["system"]  # interpret records nothing
    assert "self-contained prompt" in chat.note.value and chat.note.layout.display == ""
    assert "not recorded" in chat.note.value


def test_operations_are_checked_and_a_single_one_hides_the_dropdown():
    branch = _branch()
    with pytest.raises(ValueError, match="not an operation"):
        Chat(branch, operations=["communicate", "dance"])
    with pytest.raises(ValueError, match="not one of"):
        Chat(branch, operation="ReAct", operations=["communicate"])
    chat = Chat(branch, operations=["communicate"])
    assert chat.picker.layout.display == "none"
    with pytest.raises(ValueError, match="empty"):
        asyncio.run(chat.send("   "))


# -- display -------------------------------------------------------------------------------------
def test_a_saved_chat_shows_the_conversation_statically():
    branch = _branch(_scripted("Static **answer**."))
    chat = Chat(branch)
    asyncio.run(chat.send("Show me"))

    bundle = chat._repr_mimebundle_()

    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/html"] == chat.view.static_html()
    assert "<strong>answer</strong>" in bundle["text/html"] and "Show me" in bundle["text/html"]
    assert bundle["text/plain"] == chat.view.static_text()
    assert "assistant: Static **answer**." in bundle["text/plain"]
    assert chat.children[0] is chat.view


def test_closing_a_running_chat_stops_its_run():
    called: list = []

    async def model(messages):
        called.append(messages)
        await asyncio.sleep(20)
        return "never"

    chat = Chat(_branch(_function(model)))

    async def main():
        _type_and_enter(chat, "hang")
        await until(lambda: called, what="the model to be called")
        chat.close()
        await asyncio.wait_for(asyncio.wait([chat.task]), timeout=10)

    asyncio.run(main())
    assert chat.task.cancelled() and chat.view.status.startswith("stopped")


# -- in a real kernel ----------------------------------------------------------------------------
_KERNEL_SETUP = """
import asyncio, json
from lion_nb import Branch, iModel
from lion_nb.widgets import Chat

calls = []

async def model(messages):
    calls.append(messages)
    if len(calls) == 1:
        await asyncio.sleep(20)
    return "pong"

chat = Chat(Branch(system="s", chat_model=iModel(provider="offline", model="function",
                                                   function=model)))
print(json.dumps({"input": chat.input.model_id, "stop": chat.stop_button.model_id}))
"""


@pytest.mark.kernel
def test_in_a_kernel_enter_runs_in_the_background_and_stop_frees_the_input():
    import json

    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    out: list[dict] = []
    try:

        def run(code: str) -> str:
            reply = kc.execute_interactive(code, timeout=60, output_hook=out.append)
            assert reply["content"]["status"] == "ok", reply["content"]
            text = "".join(m["content"].get("text", "") for m in out if "text" in m["content"])
            out.clear()
            return text

        def comm(comm_id: str, method: str, payload: dict) -> None:
            key = "state" if method == "update" else "content"
            data = {"method": method, key: payload, "buffer_paths": []}
            kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))

        ids = json.loads(run(_KERNEL_SETUP))
        comm(ids["input"], "update", {"value": "ping"})
        comm(ids["input"], "custom", {"event": "submit"})
        # the kernel answers while the model is silent for 20 s
        assert run("print(chat.running, repr(chat.input.value), len(calls))").split() == [
            "True",
            "''",
            "1",
        ]
        comm(ids["stop"], "custom", {"event": "click"})
        facts = json.loads(
            run(
                "await asyncio.wait_for(asyncio.wait([chat.task]), 10)\n"
                "print(json.dumps({'status': chat.view.status, 'input': chat.input.value,"
                " 'running': chat.running}))"
            )
        )
        assert facts["status"].startswith("stopped") and facts["input"] == "ping"
        assert facts["running"] is False
        assert run("print(await chat.send('again'))").strip() == "pong"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


# -- for the keyboard and screen readers ---------------------------------------------------------
def test_esc_in_the_chat_stops_a_streaming_answer_and_keeps_what_came():
    branch = _branch(_scripted(" ".join(["slow"] * 400), delay=0.05))
    chat = Chat(branch)
    sent_to_box: list[dict] = []
    chat.input.send = sent_to_box.append  # what the kernel asks of the box's front end
    shown: list[str] = []

    async def main():
        _type_and_enter(chat, "line one\nline two")
        while not chat.view.streamed_text:
            await asyncio.sleep(0.01)
        _front_end(chat.input, "custom", {"event": "stop"})  # what the box sends on Esc
        shown.append(chat.view.streamed_text)
        await asyncio.wait([chat.task])

    asyncio.run(main())
    assert chat.task.cancelled() and chat.view.status.startswith("stopped")
    assert "incomplete answer kept on the branch" in chat.view.status
    instruction, partial = branch.messages[-2], branch.messages[-1]
    assert instruction.instruction == "line one\nline two"
    assert partial.response.startswith(shown[0]) and partial.metadata["incomplete"] is True
    assert chat.input.value == "" and not chat.input.disabled  # the turn is on the branch
    assert sent_to_box == []  # Esc keeps the focus where it was


def test_enter_sends_the_whole_text_even_when_the_last_keys_sync_late():
    branch = _branch(_scripted("Noted."))
    chat = Chat(branch)

    async def main():
        _front_end(chat.input, "update", {"value": "What is in i"})  # the last keys are held back
        _front_end(chat.input, "custom", {"event": "submit", "value": "What is in it?"})
        await asyncio.wait([chat.task])

    asyncio.run(main())
    assert [m.instruction for m in branch.messages if m.kind == "instruction"] == ["What is in it?"]
    assert chat.input.value == ""


def test_send_and_stop_give_the_focus_back_to_the_box():
    branch = _branch(_scripted(" ".join(["slow"] * 400), delay=0.05))
    chat = Chat(branch)
    sent_to_box: list[dict] = []
    chat.input.send = sent_to_box.append

    async def main():
        _front_end(chat.input, "update", {"value": "by button"})
        _front_end(chat.send_button, "custom", {"event": "click"})
        assert sent_to_box == [{"do": "focus"}] and chat.running
        while not chat.view.streamed_text:
            await asyncio.sleep(0.01)
        _front_end(chat.stop_button, "custom", {"event": "click"})
        await asyncio.wait([chat.task])

    asyncio.run(main())
    assert sent_to_box == [{"do": "focus"}, {"do": "focus"}]
    assert chat.view.status.startswith("stopped")


def test_the_end_of_a_turn_is_announced_once_with_the_start_of_the_answer():
    chat = Chat(_branch(_scripted("Hello " + "there " * 100)))
    assert chat.view.announcement == ""
    asyncio.run(chat.send("Say hello"))
    said = chat.view.announcement
    assert said.startswith(chat.view.status + ". Hello there")
    assert said.endswith("…") and len(said) < len(chat.view.status) + 310


def test_controls_are_named_in_words_for_a_screen_reader():
    chat = Chat(_branch(), operations=["communicate", "chat"])
    buttons = [chat.send_button, chat.stop_button, chat.rerun_button, chat.undo_button]
    assert all(b.icon == "" and b.description for b in [*buttons, chat.clear_button])
    assert chat.picker.description == "operation"
    assert chat.input.label == "message to main"
