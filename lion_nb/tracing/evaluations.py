"""Evaluation outcomes as ``gen_ai.evaluation.result`` events beside the call they judge.

Each cell of an evaluation grid (`session.evaluate`, an ``%%lion --eval`` cell) gets one
``evaluation {run}`` span, a child of the span of the model call that gave the answer (its
ids are in the answer's metadata), with one event per check: ``gen_ai.evaluation.name``,
``gen_ai.evaluation.score.label`` (``pass`` / ``fail``), ``gen_ai.evaluation.score.value``
when the check scored, ``gen_ai.evaluation.explanation`` (masked, bounded). So a trace
viewer shows pass or fail beside the call. No OpenTelemetry import here: with tracing off
`record` returns at once.
"""

from __future__ import annotations

from typing import Any

from ..models.secrets import redact
from . import hooks

__all__ = ["record"]


def _judged_call(branch: Any) -> tuple[str, str] | None:
    """The (trace id, span id) of the branch's last traced model call."""
    for message in reversed(list(getattr(branch, "messages", ()) or ())):
        meta = getattr(message, "metadata", None) or {}
        if meta.get("trace_id") and meta.get("span_id"):
            return str(meta["trace_id"]), str(meta["span_id"])
    return None


def record(branch: Any, results: list[Any], *, run: str | None, case: int, repeat: int = 0) -> None:
    """One evaluation span for ``results`` (`CheckResult`s) of the answer on ``branch``."""
    tracer = hooks.ACTIVE
    if tracer is None or not results:
        return
    events = []
    for result in results:
        event: dict[str, Any] = {
            "gen_ai.evaluation.name": str(result.name),
            "gen_ai.evaluation.score.label": "pass" if result.passed else "fail",
        }
        if isinstance(result.score, (int, float)) and not isinstance(result.score, bool):
            event["gen_ai.evaluation.score.value"] = float(result.score)
        if result.reason:
            event["gen_ai.evaluation.explanation"] = redact(str(result.reason))[:1000]
        events.append(event)
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "evaluation",
        "gen_ai.evaluation.name": run or "evaluation",
        "lion_nb.evaluation.case": case,
        "lion_nb.evaluation.repeat": repeat,
        "lion_nb.evaluation.passed": all(r.passed for r in results),
    }
    if branch is not None:
        attrs["gen_ai.conversation.id"] = branch.id_text
    try:
        tracer.evaluation(_judged_call(branch), events, attrs)
    except Exception:  # tracing never breaks the run it describes
        import logging

        logging.getLogger("lion_nb.tracing").warning("tracing failed", exc_info=True)
