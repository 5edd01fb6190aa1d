"""Evaluating prompts and models: checks, the grid run, its summary and regressions.

``run = await session.evaluate(cases, prompt=..., models=[...], checks=[...], repeat=1,
name=None)`` runs every prompt × model × case × repeat through ``session.map``'s engine and
checks each answer; ``run.summary()`` gives pass rates with 95 % Wilson intervals,
``run.compare(earlier)`` the regressions, fixes and flaky cases, ``run.to_dataframe()`` the
rows. Checks: `contains`, `matches`, `equals`, `is_json`, `follows`, `max_cost`,
`max_latency`, `judge`, or any function ``(answer, case)``. See ``docs/adr/0111-evaluation.md``.

This package sits above the core (it drives ``map``) and the store (it saves runs); each
name loads on first use.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "Check": "lion_nb.evals.checks",
    "CheckResult": "lion_nb.evals.checks",
    "contains": "lion_nb.evals.checks",
    "matches": "lion_nb.evals.checks",
    "equals": "lion_nb.evals.checks",
    "is_json": "lion_nb.evals.checks",
    "follows": "lion_nb.evals.checks",
    "max_cost": "lion_nb.evals.checks",
    "max_latency": "lion_nb.evals.checks",
    "judge": "lion_nb.evals.judge",
    "EvalRun": "lion_nb.evals.run",
    "evaluate": "lion_nb.evals.run",
    "saved_runs": "lion_nb.evals.run",
    "last_run": "lion_nb.evals.run",
    "EvalRow": "lion_nb.evals.results",
    "SavedEval": "lion_nb.evals.results",
    "Comparison": "lion_nb.evals.regress",
    "wilson": "lion_nb.evals.stats",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
