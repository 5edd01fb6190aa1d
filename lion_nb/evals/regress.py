"""Regressions and flakiness: what changed between two runs, per prompt × model × case.

A case's outcome in one run, for one prompt × model, joins its repeats: ``pass`` when every
repeat with a verdict passed, ``fail`` when none did, ``flaky`` when some did and some did
not. Between an earlier and a later run:

- a **regression** is a case that was ``pass`` and is now ``fail``;
- a **fix** is a case that was ``fail`` and is now ``pass``;
- a case that is ``flaky`` now is listed as flaky, with what it was before -- a flaky case
  is neither a regression nor a fix, since one more repeat could turn it either way.

Cases are matched by id (their ``id`` field, else their position), prompts and models by
label; a case, prompt or model in only one of the runs is counted as ``added`` / ``removed``,
never as a change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CaseOutcome", "Change", "Comparison", "case_outcomes", "compare_runs"]


@dataclass(slots=True)
class CaseOutcome:
    passed: int = 0
    total: int = 0

    @property
    def status(self) -> str:
        if self.total == 0:
            return "none"
        if self.passed == self.total:
            return "pass"
        return "fail" if self.passed == 0 else "flaky"


def case_outcomes(run: Any) -> dict[tuple[str, str, Any], CaseOutcome]:
    """``(prompt, model, case id) -> CaseOutcome`` over the rows with a verdict."""
    out: dict[tuple[str, str, Any], CaseOutcome] = {}
    for row in run.rows:
        if row.passed is None:
            continue
        outcome = out.setdefault((row.prompt, row.model, row.case_id), CaseOutcome())
        outcome.total += 1
        outcome.passed += bool(row.passed)
    return out


@dataclass(frozen=True, slots=True)
class Change:
    prompt: str
    model: str
    case_id: Any
    before: str
    after: str


@dataclass(slots=True)
class Comparison:
    """The changes from ``before`` to ``after`` (see the module docstring)."""

    before_name: str | None
    after_name: str | None
    regressions: list[Change] = field(default_factory=list)
    fixes: list[Change] = field(default_factory=list)
    flaky: list[Change] = field(default_factory=list)
    added: int = 0
    removed: int = 0

    def by_cell(self, kind: str = "regressions") -> dict[tuple[str, str], list[Any]]:
        """``(prompt, model) -> [case id, ...]`` of one kind of change."""
        out: dict[tuple[str, str], list[Any]] = {}
        for change in getattr(self, kind):
            out.setdefault((change.prompt, change.model), []).append(change.case_id)
        return out

    def __bool__(self) -> bool:
        return bool(self.regressions or self.fixes or self.flaky)

    def text(self) -> str:
        if not self:
            return "No change: every case passes or fails as before."
        lines = []
        for kind, word in (("regressions", "now fail"), ("fixes", "now pass"), ("flaky", "flaky")):
            for (p, m), cases in self.by_cell(kind).items():
                ids = ", ".join(str(c) for c in cases)
                lines.append(f"{p} × {m}: {len(cases)} {word} ({ids})")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"<Comparison {self.before_name!r} → {self.after_name!r}: "
            f"{len(self.regressions)} regressions, {len(self.fixes)} fixes, "
            f"{len(self.flaky)} flaky>"
        )

    def _repr_markdown_(self) -> str:
        return "\n\n".join(self.text().splitlines())


def compare_runs(before: Any, after: Any) -> Comparison:
    old, new = case_outcomes(before), case_outcomes(after)
    comparison = Comparison(getattr(before, "name", None), getattr(after, "name", None))
    for key, outcome in new.items():
        was = old.get(key)
        if was is None:
            comparison.added += 1
            continue
        change = Change(*key, before=was.status, after=outcome.status)
        if outcome.status == "flaky":
            comparison.flaky.append(change)
        elif was.status == "pass" and outcome.status == "fail":
            comparison.regressions.append(change)
        elif was.status == "fail" and outcome.status == "pass":
            comparison.fixes.append(change)
    comparison.removed = sum(1 for key in old if key not in new)
    return comparison
