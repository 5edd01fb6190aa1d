"""The spans of turns, model calls and tool calls, as a real OTLP/HTTP collector on
127.0.0.1 receives them: the attribute names of the conventions' example export
(semconv 1.41.0), parent links, the conversation, session and fork, content off by default."""

from __future__ import annotations

import anyio
import pytest

import lion_nb.tracing as tracing
from lion_nb import Branch, Session
from tests.tracing.fixture_names import fixture_spans, schema_url

pytestmark = pytest.mark.timeout(60)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def by_name(spans):
    return {s.name: s for s in spans}


def test_a_tool_round_makes_turn_model_and_tool_spans_with_the_conventions_names(collector):
    tracing.enable(collector.endpoint)
    session = Session()
    branch = session.new_branch(name="calc", chat_model="offline/auto", tools=[add])

    anyio.run(lambda: branch.operate(instruction="use add a=2 b=3", actions=True))
    assert tracing.flush(5)
    spans = collector.spans
    names = [s.name for s in spans]
    assert sorted(names) == ["chat auto", "execute_tool add", "operate"], names
    turn, chat, tool = (by_name(spans)[n] for n in ("operate", "chat auto", "execute_tool add"))

    # parent links: the model call and the tool call are children of the turn, one trace
    assert turn.parent_span_id == ""
    assert chat.parent_span_id == tool.parent_span_id == turn.span_id
    assert chat.trace_id == tool.trace_id == turn.trace_id

    expected = fixture_spans()
    assert chat.kind == expected["chat"]["kind"] == 3  # CLIENT
    assert tool.kind == expected["execute_tool"]["kind"] == 1  # INTERNAL
    # every attribute of the example that applies to this call is here, by the same name
    for key in (
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "gen_ai.conversation.id",
        "gen_ai.response.id",
        "gen_ai.response.model",
        "gen_ai.response.finish_reasons",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.reasoning.output_tokens",
    ):
        assert key in expected["chat"]["attributes"] and key in chat.attributes, key
    assert set(expected["execute_tool"]["attributes"]) <= set(tool.attributes)
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert chat.attributes["gen_ai.usage.input_tokens"] > 0
    assert "lion_nb.cost.usd" in chat.attributes
    assert tool.attributes["gen_ai.tool.name"] == "add"
    assert tool.attributes["gen_ai.tool.type"] == "function"
    assert tool.attributes["gen_ai.tool.description"] == "Add two numbers."
    call_id = branch.messages[-1].call_id
    assert tool.attributes["gen_ai.tool.call.id"] == call_id
    assert turn.attributes["lion_nb.operation"] == "operate"

    # one conversation: the branch, in its session
    for span in spans:
        assert span.attributes["gen_ai.conversation.id"] == str(branch.id)
        assert span.attributes["lion_nb.session.id"] == str(session.id)
        assert span.scope == "lion_nb"
    assert turn.attributes["lion_nb.branch.name"] == "calc"
    # content is off by default
    for span in spans:
        assert not any(k.startswith(("gen_ai.input", "gen_ai.output")) for k in span.attributes)
        assert "gen_ai.tool.call.arguments" not in span.attributes


def test_the_schema_of_the_spans_is_the_fixtures_convention_version():
    from lion_nb.tracing.attributes import SCHEMA_URL

    assert schema_url() == SCHEMA_URL


def test_a_fork_names_its_parent_and_a_turn_in_a_tool_is_the_tools_child(collector):
    tracing.enable(collector.endpoint)
    session = Session()
    main = session.new_branch(name="main", chat_model="offline/auto")
    helper = session.new_branch(name="helper", chat_model="offline/auto")

    async def consult(question: str) -> str:
        """Ask the helper branch."""
        return await helper.communicate(question)

    main.acts.register_tool(consult)

    async def scenario():
        await main.operate(instruction="use consult question: what is 2+2", actions=True)
        fork = main.clone()
        session.include_branches(fork)
        await fork.communicate("and now?")
        return fork

    fork = anyio.run(scenario)
    assert tracing.flush(5)
    spans = collector.spans
    tool = next(s for s in spans if s.name == "execute_tool consult")
    inner = next(s for s in spans if s.name == "communicate" and s.parent_span_id == tool.span_id)
    assert inner.attributes["gen_ai.conversation.id"] == str(helper.id)
    assert inner.trace_id == tool.trace_id
    forked = [s for s in spans if s.attributes["gen_ai.conversation.id"] == str(fork.id)]
    assert {s.name for s in forked} == {"communicate", "chat auto"}
    assert all(s.attributes["lion_nb.branch.parent_id"] == str(main.id) for s in forked)
    assert forked[0].trace_id != tool.trace_id  # a new turn, a new trace


def test_concurrent_turns_never_adopt_each_others_spans(collector):
    tracing.enable(collector.endpoint)
    branches = [Branch(chat_model="offline/auto") for _ in range(8)]

    async def scenario():
        async with anyio.create_task_group() as tg:
            for b in branches:
                tg.start_soon(b.communicate, "hello")

    anyio.run(scenario)
    assert tracing.flush(5)
    spans = collector.spans
    turns = {s.span_id: s for s in spans if s.name == "communicate"}
    assert len(turns) == 8
    for chat in (s for s in spans if s.name == "chat auto"):
        parent = turns[chat.parent_span_id]
        assert (
            parent.attributes["gen_ai.conversation.id"] == chat.attributes["gen_ai.conversation.id"]
        )


def test_a_failed_model_call_has_its_error_type_and_the_error_is_raised_as_before(collector):
    from lion_nb import iModel

    def broken(messages, **request):
        raise RuntimeError("the model fell over")

    tracing.enable(collector.endpoint)
    branch = Branch(chat_model=iModel(provider="offline", model="function", function=broken))
    with pytest.raises(Exception, match="fell over"):
        anyio.run(lambda: branch.communicate("hi"))
    assert tracing.flush(5)
    spans = by_name(collector.spans)
    chat = next(s for n, s in spans.items() if n.startswith("chat"))
    assert chat.status_code == 2 and chat.attributes["error.type"]
    assert spans["communicate"].status_code == 2


def test_tracing_off_records_nothing_and_the_answer_has_no_trace_id(collector):
    branch = Branch(chat_model="offline/auto")
    anyio.run(lambda: branch.communicate("hello"))
    assert "trace_id" not in branch.messages[-1].metadata
    tracing.enable(collector.endpoint)
    anyio.run(lambda: branch.communicate("hello"))
    assert tracing.flush(5)
    tracing.disable()
    assert len(collector.spans) == 2
    assert branch.messages[-1].metadata["trace_id"] == collector.spans[0].trace_id
    anyio.run(lambda: branch.communicate("hello"))
    assert len(collector.spans) == 2


CALLED: list[str] = []


def delete(path: str) -> str:
    """Delete a file."""
    CALLED.append(path)
    return f"deleted {path}"


def test_a_tool_calls_approval_decision_is_on_its_span(collector):
    from lion_nb import Tool

    tracing.enable(collector.endpoint)

    def allow(name, arguments):
        return arguments["path"].startswith("/tmp/")

    branch = Branch(tools=[Tool(delete, approve=allow)])

    async def main():
        await branch.act({"function": "delete", "arguments": {"path": "/tmp/a"}})
        await branch.act(
            {"function": "delete", "arguments": {"path": "/etc/passwd"}}, suppress_errors=True
        )

    anyio.run(main)
    assert tracing.flush(5)
    ok, no = (s for s in collector.spans if s.name == "execute_tool delete")
    assert ok.attributes["lion_nb.tool.approval"] == "approved"
    assert ok.attributes["lion_nb.tool.approval.by"] == "callable"
    assert ok.status_code == 0 and "error.type" not in ok.attributes
    assert no.attributes["lion_nb.tool.approval"] == "denied"
    assert no.status_code == 2 and no.attributes["error.type"] == "tool_error"
    assert CALLED == ["/tmp/a"]


def test_a_cli_agents_run_is_a_turn_with_one_model_call(collector):
    from lion_nb import iModel

    tracing.enable(collector.endpoint)
    branch = Branch(chat_model=iModel(provider="offline_cli", model="auto"))

    async def main():
        return [m async for m in branch.run("Say hello.")]

    anyio.run(main)
    assert tracing.flush(5)
    spans = by_name(collector.spans)
    assert set(spans) == {"run", "chat auto"}
    call, turn = spans["chat auto"], spans["run"]
    assert call.parent_span_id == turn.span_id and call.kind == 3
    assert call.attributes["gen_ai.provider.name"] == "offline_cli"
    assert call.attributes["gen_ai.usage.output_tokens"] >= 0
    assert "lion_nb.cost.usd" in call.attributes


def test_a_map_items_spans_leave_while_the_map_still_runs(collector):
    """The second item's model waits for the collector to hold the first item's spans: it
    answers only if they were exported as that item finished, not at the map's end."""
    from lion_nb import iModel

    tracing.enable(collector.endpoint)
    seen: list[int] = []

    def answer(messages, **request):
        if "second" in messages[-1]["content"]:
            seen.append(len(collector.wait_for(2, timeout=20)))
        return "ok"

    session = Session()
    session.default_branch.chat_model = iModel(
        provider="offline", model="function", function=answer
    )

    async def main():
        return await session.map(["first", "second"], "Say {item}.", concurrency=1)

    anyio.run(main)
    assert seen and seen[0] >= 2  # the first item's turn and call had arrived
    assert tracing.flush(5)
    assert len(collector.spans) == 4
