"""An evaluation's results: rows, the pass-rate summary, a DataFrame, regressions.

`EvalResults` is what a finished evaluation and a saved one share: the rows, and everything
computed from them. A row is one cell of the grid: prompt × model × case × repeat.

- **A row passes** when its call answered and every check passed. A call that failed is a
  failing row (its checks fail with the error as the reason); a cell that was stopped or
  never ran has no verdict (``passed`` is ``None``) and counts nowhere.
- **The summary** gives, per prompt × model, the passes over every case × repeat that has a
  verdict, the rate, its 95 % Wilson interval (`stats.wilson`), and the mean cost (over the
  priced answers; ``unpriced`` counts the others) and mean latency. A row that failed is
  counted as an ``error`` (its call failed: no key, a refused request) or as ``failed``
  (it answered and a check said no), and the most common error is named: a run whose calls
  all failed says why, not only ``0/3 passed``.
- **Comparison** is in `regress`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .checks import CheckResult, _short
from .stats import wilson

__all__ = ["EvalResults", "EvalRow"]


@dataclass(slots=True)
class EvalRow:
    """One cell of the grid and its verdict."""

    prompt: str
    model: str
    case_id: Any
    repeat: int
    case: Any
    answer: Any = None
    passed: bool | None = None
    checks: tuple[CheckResult, ...] = ()
    tokens: int = 0
    cost_usd: float | None = None
    latency: float | None = None
    error: str | None = None
    status: str = "done"  # done | failed | stopped | pending | running
    prompt_text: str | None = None
    branch: Any = field(default=None, repr=False)

    @property
    def reasons(self) -> list[str]:
        """Why it failed: the error, then each failing check's ``name: reason``."""
        out = [self.error] if self.error else []
        out += [f"{c.name}: {c.reason or 'failed'}" for c in self.checks if not c.passed]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "model": self.model,
            "case_id": self.case_id,
            "repeat": self.repeat,
            "case": _jsonable(self.case),
            "answer": _jsonable(self.answer),
            "passed": self.passed,
            "checks": [c.to_dict() for c in self.checks],
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "latency": self.latency,
            "error": self.error,
            "status": self.status,
            "prompt_text": self.prompt_text if isinstance(self.prompt_text, str) else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalRow:
        return cls(
            prompt=str(data["prompt"]),
            model=str(data["model"]),
            case_id=data.get("case_id"),
            repeat=int(data.get("repeat") or 0),
            case=data.get("case"),
            answer=data.get("answer"),
            passed=data.get("passed"),
            checks=tuple(CheckResult.from_dict(c) for c in data.get("checks") or ()),
            tokens=int(data.get("tokens") or 0),
            cost_usd=data.get("cost_usd"),
            latency=data.get("latency"),
            error=data.get("error"),
            status=str(data.get("status") or "done"),
            prompt_text=data.get("prompt_text"),
        )


def _top(rows: list[EvalRow]) -> tuple[str, int] | None:
    """The error most of ``rows`` failed with (the first seen, on a tie) and its count."""
    found = Counter(r.error for r in rows if r.error)
    return found.most_common(1)[0] if found else None


def errors_text(
    errors: int, failed: int, top: tuple[str, int], limit: int = 240
) -> tuple[str, str]:
    """``("3 errors, 1 failed its checks", "most common error (2 of 3): ...")``."""
    counts = (
        f"{errors} error{'s' * (errors != 1)}, {failed} failed "
        f"{'its' if failed == 1 else 'their'} checks"
    )
    times = f" ({top[1]} of {errors})" if errors > 1 else ""
    error = _short(" ".join(top[0].split()), limit)
    return counts, f"most common error{times}: {error}"


def _jsonable(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        try:
            return dump(mode="json")
        except Exception:
            return str(value)
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value


class EvalResults:
    """Rows and what is computed from them (see the module docstring)."""

    name: str | None = None
    created_at: float | None = None
    prompts: list[str]
    models: list[str]
    check_names: list[str]

    @property
    def rows(self) -> list[EvalRow]:
        raise NotImplementedError

    def graded(self) -> list[EvalRow]:
        """The rows with a verdict."""
        return [r for r in self.rows if r.passed is not None]

    def summary(self) -> list[dict[str, Any]]:
        """Per prompt × model: passes, total, rate, its 95 % Wilson interval, mean cost and
        latency, the rows whose call failed (``errors``) apart from those whose checks did
        (``failed``), and the most common error (``top_error``, on ``top_error_rows`` rows)
        (see the module docstring)."""
        groups: dict[tuple[str, str], list[EvalRow]] = {
            (p, m): [] for p in self.prompts for m in self.models
        }
        for row in self.graded():
            groups.setdefault((row.prompt, row.model), []).append(row)
        out = []
        for (prompt, model), rows in groups.items():
            passed = sum(1 for r in rows if r.passed)
            low, high = wilson(passed, len(rows))
            costs = [r.cost_usd for r in rows if r.cost_usd is not None and r.error is None]
            latencies = [r.latency for r in rows if r.latency is not None]
            top = _top(rows)
            out.append(
                {
                    "prompt": prompt,
                    "model": model,
                    "passed": passed,
                    "total": len(rows),
                    "pass_rate": passed / len(rows) if rows else None,
                    "low": low,
                    "high": high,
                    "mean_cost": sum(costs) / len(costs) if costs else None,
                    "unpriced": sum(1 for r in rows if r.cost_usd is None and r.error is None),
                    "mean_latency": sum(latencies) / len(latencies) if latencies else None,
                    "errors": sum(1 for r in rows if r.error),
                    "failed": sum(1 for r in rows if not r.passed and not r.error),
                    "top_error": top[0] if top else None,
                    "top_error_rows": top[1] if top else 0,
                }
            )
        return out

    def errors(self) -> tuple[str, str] | None:
        """The whole run's rows whose call failed, apart from those whose checks did, and
        the most common error, as two texts (``None``: no call failed)."""
        rows = self.graded()
        top = _top(rows)
        if top is None:
            return None
        failed = sum(1 for r in rows if not r.passed and not r.error)
        return errors_text(sum(1 for r in rows if r.error), failed, top)

    def summary_text(self) -> str:
        """The summary as aligned text lines."""
        lines = []
        for s in self.summary():
            rate = "–" if s["pass_rate"] is None else f"{s['pass_rate']:.0%}"
            line = (
                f"{s['prompt']} × {s['model']}: {s['passed']}/{s['total']} passed ({rate}, "
                f"95% CI {s['low']:.0%}–{s['high']:.0%})"
            )
            if s["errors"]:  # a failed call is not a failed check: say which, and why
                counts, top = errors_text(
                    s["errors"], s["failed"], (s["top_error"], s["top_error_rows"])
                )
                line += f"; {counts}\n  {top}"
            lines.append(line)
        return "\n".join(lines)

    def to_dataframe(self) -> Any:
        """One row per cell: prompt, model, case id, repeat, the case's fields, answer,
        passed, each check's verdict and reason, tokens, cost, latency, error."""
        import pandas as pd

        records = []
        for row in self.rows:
            record: dict[str, Any] = {
                "prompt": row.prompt,
                "model": row.model,
                "case_id": row.case_id,
                "repeat": row.repeat,
            }
            if isinstance(row.case, dict):
                for key, value in row.case.items():
                    record.setdefault(f"case.{key}", value)
            record["answer"] = row.answer
            record["passed"] = row.passed
            for check in row.checks:
                record[check.name] = check.passed
                record[f"{check.name} reason"] = check.reason
            record.update(
                tokens=row.tokens,
                cost_usd=row.cost_usd,
                latency=row.latency,
                error=row.error,
                status=row.status,
            )
            records.append(record)
        return pd.DataFrame.from_records(records)

    def compare(self, other: EvalResults) -> Any:
        """What changed from ``other`` (an earlier run) to this one: `regress.Comparison`."""
        from .regress import compare_runs

        return compare_runs(other, self)

    def flaky(self) -> list[dict[str, Any]]:
        """Cases that passed in some repeats and failed in others, per prompt × model."""
        from .regress import case_outcomes

        return [
            {"prompt": p, "model": m, "case_id": c, "passed": o.passed, "repeats": o.total}
            for (p, m, c), o in case_outcomes(self).items()
            if o.status == "flaky"
        ]

    def to_record(self) -> dict[str, Any]:
        return {
            "version": 1,
            "name": self.name,
            "created_at": self.created_at,
            "prompts": list(self.prompts),
            "models": list(self.models),
            "checks": list(self.check_names),
            "rows": [r.to_dict() for r in self.rows],
        }


class SavedEval(EvalResults):
    """An evaluation read back from the store: its rows, summary and comparisons."""

    def __init__(self, record: dict[str, Any]):
        self.name = record.get("name")
        self.created_at = record.get("created_at")
        self.prompts = list(record.get("prompts") or ())
        self.models = list(record.get("models") or ())
        self.check_names = list(record.get("checks") or ())
        self._rows = [EvalRow.from_dict(r) for r in record.get("rows") or ()]

    @property
    def rows(self) -> list[EvalRow]:
        return list(self._rows)

    def __repr__(self) -> str:
        import time

        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.created_at or 0))
        return f"<SavedEval {self.name!r} of {when}: {len(self._rows)} rows>"
