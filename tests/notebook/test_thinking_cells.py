"""A ``%%lion`` turn whose model thinks and cites, in a real IPython shell: the thinking
reaches the widget view live, and the text view streams it marked and folds it into one
line once the answer starts; the answer's output folds the thinking and lists the sources,
and ``%lion history`` says the turn thought and for how long."""

from __future__ import annotations

import re

from IPython.utils.capture import capture_output

from lion_nb.notebook.cell.handle_view import TurnInfo, make_view
from tests.notebook.nbshell import run

SETUP = """
from lion_nb import iModel
from lion_nb.models.endpoints import ModelResponse
from lion_nb.models.endpoints.base import emit_thinking_delta

def sage(messages, **_):
    emit_thinking_delta("Weighing <script>x</script> the sources.")
    return ModelResponse(text="Paris is the capital.", metadata={
        "thinking": "Weighing <script>x</script> the sources.", "thinking_seconds": 2.5,
        "citations": [{"n": 1, "title": "Atlas", "url": "https://atlas.example/paris",
                       "cited_text": "capital", "kind": "web_search", "end": 5},
                      {"n": 2, "title": "Bad", "url": "javascript:alert(1)", "kind": "url",
                       "end": None}]})

sage_model = iModel(provider="offline", model="function", function=sage)
"""


def test_the_widget_view_gets_the_thinking_through_the_seam(ip):
    info = TurnInfo(branch="main", operation="chat", model="m", live="widget")
    with capture_output():
        view = make_view(info)
        view.start()
        view.thinking("Hmm.")
        view.text("Yes.")
        view.finish("Yes.")
    state = view.inner.widget.thinking_state
    assert "Hmm." in state["html"] and not state["running"] and state["seconds"] >= 0


def test_the_answer_folds_its_thinking_and_lists_its_sources(ip):
    assert run(ip, SETUP).error is None
    ran = run(ip, "%%lion -m sage_model\nWhat is the capital?")
    assert ran.error is None
    answer = ran.outputs[-1].data  # the answer, its own output, after the live view
    html = answer["text/html"]
    assert html.startswith('<details class="lnb-thinking-static"><summary>Thinking</summary>')
    assert "<script" not in html and "2.5" not in html
    assert 'Paris<sup class="lnb-cite">[1]</sup> is' in html
    assert 'href="https://atlas.example/paris" target="_blank" rel="noopener noreferrer"' in html
    assert "javascript" not in html
    assert "[1] Atlas <https://atlas.example/paris>" in answer["text/plain"]
    table = run(ip, "%lion history").value
    answers = [r for r in table.rows if r["kind"] == "assistant_response"]
    assert answers[-1]["text"].startswith("[Thought for 2.5 s] Paris")
    assert not any(
        r["text"].startswith("[Thought") for r in table.rows if r["kind"] != "assistant_response"
    )


STREAMED = """
from lion_nb import iModel
from lion_nb.models.endpoints import ModelResponse
from lion_nb.models.endpoints.base import emit_thinking_delta

def musing(messages, **_):
    for part in ("First, <b>the</b> river.", "\\nThen the bridge.", "\\nSo: north."):
        emit_thinking_delta(part)
    return ModelResponse(text="Go north over the bridge.", metadata={
        "thinking": "First, <b>the</b> river.\\nThen the bridge.\\nSo: north."})

musing_model = iModel(provider="offline", model="function", function=musing, delay=0.06)
"""


def test_the_text_view_streams_the_thinking_marked_then_folds_it_into_a_summary(ip):
    assert run(ip, STREAMED).error is None
    run(ip, '%config LionMagics.live_view = "text"')
    ran = run(ip, "%%lion -m musing_model\nWhich way?")
    assert ran.error is None
    updates = [o.data for o in ran.outputs if o.update]
    thinking = [u for u in updates if "[Thinking… " in u["text/plain"]]
    # while it thinks: the marked section, open, with its elapsed time and tokens
    assert thinking, updates
    first = thinking[0]
    assert "│ First, <b>the</b> river." in first["text/plain"]
    assert "Go north" not in first["text/plain"]
    assert re.search(r"\[Thinking… \d+ s · ~\d+ tokens?\]", first["text/plain"])
    assert '<details open class="lnb-thinking-static"><summary>Thinking… ' in first["text/html"]
    assert "<b>" not in first["text/html"]  # sanitized like every model output
    assert "│ So: north." in thinking[-1]["text/plain"]
    # once the answer streams: one summary line in its place, the thinking itself gone
    answering = [u for u in updates if "Go north" in u["text/plain"]]
    assert answering, updates
    for update in answering:
        assert re.search(r"\[Thought for \d+\.\d s · ~\d+ tokens\]", update["text/plain"])
        assert "river" not in update["text/plain"] and "<details open" not in update["text/html"]
    # the end: the summary beside the footer; the answer, its own output, folds the thinking
    assert updates[-1]["text/plain"].startswith("[Thought for ")
    answer = ran.outputs[-1].data
    assert answer["text/html"].startswith('<details class="lnb-thinking-static">')
    assert "Go north over the bridge." in answer["text/plain"]
