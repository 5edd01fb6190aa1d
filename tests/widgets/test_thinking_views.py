"""A model's thinking and its citations in the turn view, `BranchView` and `Chat`: streamed
live, folded once the answer starts, sanitized, bounded, and in the static renderings."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lion_nb import AssistantResponse, Branch, iModel
from lion_nb.models.endpoints import emit_text_delta
from lion_nb.models.endpoints.base import emit_thinking_delta
from lion_nb.widgets import BranchView, Chat, TurnWidget
from lion_nb.widgets._spend import TurnSpend
from tests.rendering.test_answer_parts import HOSTILE_THINKING, TEXT, assert_inert, cite
from tests.waiting import until


def _answer(**metadata) -> AssistantResponse:
    return AssistantResponse(response=TEXT, metadata=metadata)


def test_the_turn_view_streams_thinking_then_folds_it_when_the_answer_starts():
    turn = TurnWidget("t")

    async def run():
        turn.start()
        for word in ("Let ", "me ", "**think**", " about it."):
            turn.thinking(word)
        await until(lambda: "about it" in turn.thinking_state.get("html", ""))
        live = dict(turn.thinking_state)
        turn.text("Paris.")
        await until(lambda: not turn.thinking_state["running"], what="the fold")
        return live

    live = asyncio.run(run())
    assert live["running"] and live["seconds"] is None and live["tokens"] >= 4
    assert "<strong>think</strong>" in live["html"] and live["started"] > 0
    done = turn.thinking_state
    assert isinstance(done["seconds"], float) and done["seconds"] >= 0
    turn.finish("Paris.")
    assert turn.thinking_state["html"] == done["html"]  # kept, folded, after the turn


def test_the_turn_view_sanitizes_hostile_thinking():
    turn = TurnWidget("t")
    turn.start()
    turn.thinking(HOSTILE_THINKING)
    turn.fail(RuntimeError("x"))
    html = turn.thinking_state["html"]
    assert_inert(html)
    assert "&lt;script&gt;" in html or "script" not in html


def test_long_thinking_sends_a_bounded_tail():
    turn = TurnWidget("t")

    async def run():  # on a running loop, as in a kernel: the throttle batches the fragments
        turn.start()
        for i in range(20_000):
            turn.thinking(f"line {i} of thought\n" if i % 10 == 9 else f"step {i} ")
        turn.finish(None)

    asyncio.run(run())
    state = turn.thinking_state
    assert len(state["html"]) < 10_000
    assert state["skipped"] > 100_000 and "step 19998" in state["html"]
    assert state["tokens"] > 20_000


def test_an_answer_that_did_not_stream_its_thinking_shows_it_with_its_time():
    turn = TurnWidget("t")
    turn.start()
    turn.message(_answer(thinking="Pondered *well*.", thinking_seconds=4.25))
    turn.finish(TEXT)
    state = turn.thinking_state
    assert "<em>well</em>" in state["html"] and state["seconds"] == 4.25
    assert not state["running"]


def test_the_footer_shows_thinking_tokens_when_there_are_some():
    spend = TurnSpend()
    usage = {"input_tokens": 100, "output_tokens": 1500, "reasoning_tokens": 1204}
    spend.add({"model": "m", "usage": usage, "cost_usd": 0.01})
    assert "1,600 tokens · 1,204 thinking · " in spend.line()
    none = TurnSpend()
    none.add({"model": "m", "usage": {**usage, "reasoning_tokens": 0}, "cost_usd": 0.01})
    assert "thinking" not in none.line()


def _branch_with_answer() -> Branch:
    branch = Branch(name="b")
    branch.msgs.add_message(instruction="Where?")
    usage = {"input_tokens": 5, "output_tokens": 50, "reasoning_tokens": 40}
    branch.msgs.add_message(
        assistant_response=_answer(
            thinking=HOSTILE_THINKING,
            thinking_seconds=3.2,
            usage=usage,
            citations=[
                cite(1, 5),
                {
                    "n": 2,
                    "title": "<b>bad</b>",
                    "url": "javascript:alert(1)",
                    "kind": "url",
                    "end": None,
                },
            ],
        )
    )
    return branch


def test_branch_view_shows_a_recorded_answers_thinking_and_citations():
    view = BranchView(_branch_with_answer())
    entry = view.entries[-1]
    assert entry["thinking"]["seconds"] == 3.2
    assert_inert(entry["thinking"]["html"])
    assert 'Paris<sup class="lnb-cite">[1]</sup> is' in entry["html"]
    assert 'href="https://example.org/1" target="_blank" rel="noopener noreferrer"' in entry["html"]
    assert "&lt;b&gt;bad&lt;/b&gt;" in entry["html"] and "javascript" not in entry["html"]
    assert_inert(entry["html"])
    assert entry["meta"]["thinking"] == "Thought for 3.2 s"
    assert entry["meta"]["reasoning_tokens"] == 40


def test_the_static_renderings_fold_the_thinking_and_list_the_sources():
    view = BranchView(_branch_with_answer())
    html = view.static_html()
    assert '<details class="lnb-thinking-static"><summary>Thinking</summary>' in html
    assert "3.2" not in html  # no durations: executed notebooks compare equal
    assert html.index("<details") < html.index("Paris<sup")
    assert '<ol class="lnb-citations"' in html
    assert_inert(html)
    text = view.static_text()
    assert "assistant: (thought) Paris" in text
    assert "[1] Source 1 <https://example.org/1>" in text and "[2] <b>bad</b>" in text


def test_branch_view_streams_thinking_and_drops_it_with_the_stream():
    view = BranchView(Branch(name="b"))

    async def run():
        view.stream_thinking("Hmm, ")
        view.stream_thinking("let me see.")
        await until(lambda: "let me see" in view.thinking_state.get("html", ""))
        assert view.thinking_state["running"]
        view.stream("Answer")
        await until(lambda: not view.thinking_state["running"])
        view.end_stream()

    asyncio.run(run())
    assert view.thinking_state == {} and view.stream_html == ""


def test_chat_streams_the_models_thinking_live():
    gate: asyncio.Event | None = None
    seen: dict = {}

    async def thinker(messages, **_):
        emit_thinking_delta("Considering ")
        emit_thinking_delta("the options.")
        await gate.wait()
        emit_text_delta("Done.")
        return "Done."

    chat = Chat(
        Branch(name="c", chat_model=iModel(provider="offline", model="function", function=thinker))
    )

    async def run():
        nonlocal gate
        gate = asyncio.Event()
        sent = asyncio.ensure_future(chat.send("Think"))
        await until(lambda: "the options" in chat.view.thinking_state.get("html", ""))
        seen.update(chat.view.thinking_state)
        gate.set()
        return await sent

    assert asyncio.run(run()) == "Done."
    assert seen["running"] and seen["tokens"] > 0
    assert chat.view.thinking_state == {}  # the stream ended: the message is on the branch


def test_the_explorer_shows_that_a_turn_thought_and_for_how_long(tmp_path):
    from lion_nb import Session
    from lion_nb.widgets import SessionExplorer

    session = Session()
    branch = _branch_with_answer()
    session.include_branches(branch)
    explorer = SessionExplorer(session)
    explorer.select(branch)
    (answer,) = [e for e in explorer.view.entries if e["role"] == "assistant"]
    assert answer["meta"]["thinking"] == "Thought for 3.2 s" and answer["thinking"]["html"]
    written = explorer.export("markdown", tmp_path / "b.md", branch=branch)
    markdown = Path(written).read_text(encoding="utf-8")
    assert "<summary>Thought for 3.2 s</summary>" in markdown and "Paris<sup>[1]</sup>" in markdown


def test_thinking_again_after_the_answer_began_starts_a_new_section():
    turn = TurnWidget("t")
    turn.start()
    turn.thinking("first thought")
    turn.text("calling a tool")
    turn.thinking("second thought")
    turn.finish(None)
    html = turn.thinking_state["html"]
    assert "second thought" in html and "first thought" not in html
