"""Evaluation outcomes as ``gen_ai.evaluation.result`` events: one ``evaluation`` span per
grid cell, a child of the model call that gave the answer, pass and fail beside it."""

from __future__ import annotations

import anyio
import pytest

import lion_nb.tracing as tracing
from lion_nb import Session, iModel
from lion_nb.evals import contains

pytestmark = pytest.mark.timeout(60)


def _answer(messages, **request):
    text = messages[-1]["content"]
    return "Paris" if "France" in text else "no idea"


def test_each_cells_checks_are_events_on_a_child_of_its_model_call(collector):
    tracing.enable(collector.endpoint)
    session = Session()
    session.default_branch.chat_model = iModel(
        provider="offline", model="function", function=_answer
    )
    cases = [{"country": "France"}, {"country": "Atlantis"}]

    async def main():
        return await session.evaluate(
            cases,
            prompt="The capital of {country}?",
            checks=[contains("Paris")],
            name="capitals",
            save=False,
        )

    run = anyio.run(main)
    assert [r.passed for r in run.rows] == [True, False]
    assert tracing.flush(5)
    spans = collector.spans
    calls = {s.span_id: s for s in spans if s.name.startswith("chat ")}
    evaluations = [s for s in spans if s.name == "evaluation capitals"]
    assert len(evaluations) == 2
    labels = []
    for ev in evaluations:
        call = calls[ev.parent_span_id]  # beside the call it judges, in its trace
        assert ev.trace_id == call.trace_id
        assert ev.attributes["gen_ai.conversation.id"] == call.attributes["gen_ai.conversation.id"]
        [(name, attrs)] = ev.events
        assert name == "gen_ai.evaluation.result"
        assert attrs["gen_ai.evaluation.name"].startswith("contains")
        labels.append(
            (ev.attributes["lion_nb.evaluation.case"], attrs["gen_ai.evaluation.score.label"])
        )
    assert sorted(labels) == [(0, "pass"), (1, "fail")]


def test_with_tracing_off_an_evaluation_records_no_trace_ids():
    session = Session()
    session.default_branch.chat_model = iModel(
        provider="offline", model="function", function=_answer
    )

    async def main():
        return await session.evaluate(
            [{"country": "France"}], prompt="{country}?", save=False, checks=[contains("Paris")]
        )

    run = anyio.run(main)
    branch = run.rows[0].branch
    assert all("trace_id" not in m.metadata for m in branch.messages)
