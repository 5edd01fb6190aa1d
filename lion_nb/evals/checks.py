"""What "right" means for one answer: checks, small objects or plain callables.

A check is called with the answer and the case it answers. The built-in ones are `Check`
objects with a readable ``name`` (``contains('Paris')``); any function ``(answer, case)``
is one too, returning

- a ``bool`` (passed or not),
- a ``float`` score in [0, 1] (passes at 0.5 or more; the score is kept on the row), or
- ``(bool, reason)`` (the reason is shown beside the verdict);

a coroutine function is awaited. A check that raises fails with the exception as its reason
-- one broken check never loses the rest of a run.

Decisions:

- **An answer is text, or what the operation returned.** Text checks (`contains`,
  `matches`, `equals`, `is_json`) read ``str(answer)``; a pydantic model is read as its JSON.
  `follows` validates text as JSON, and accepts a dict or a model instance as it is.
- **Cost and latency come from the run, not the answer.** `max_cost` and `max_latency` read
  the cell's own figures (``CellInfo``): the cost the batch engine records for the item
  (``price=`` or the provider's reported cost) and the time of the model call alone (never
  the checks' time). An answer without a price fails `max_cost` with the reason
  ``unpriced`` -- it never passes silently; so does a latency that is unknown.
- **A failed call fails every check** with the call's error as the reason.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError

__all__ = [
    "CellInfo",
    "Check",
    "CheckResult",
    "check_name",
    "contains",
    "equals",
    "follows",
    "is_json",
    "matches",
    "max_cost",
    "max_latency",
    "run_check",
]

PASS_SCORE = 0.5


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check's verdict on one answer."""

    name: str
    passed: bool
    reason: str | None = None
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "reason": self.reason,
            "score": self.score,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckResult:
        return cls(
            str(data.get("name", "?")),
            bool(data.get("passed")),
            data.get("reason"),
            data.get("score"),
        )


@dataclass(slots=True)
class CellInfo:
    """What a check may know of the call beside the answer: its cost in dollars (``None``
    when unpriced), the model call's seconds (``None`` when unknown), its tokens, the model
    that answered and the prompt it was sent. A model-graded check also reads the session
    its calls belong to (``None``: none), the name to give its branch and a list that keeps
    its branches with the run."""

    cost_usd: float | None = None
    latency: float | None = None
    tokens: int = 0
    model: Any = None
    prompt: Any = None
    session: Any = None
    name: str | None = None
    graders: list[Any] | None = None


class Check:
    """A named check. Subclasses implement `check`; ``after_call`` ones read `CellInfo`
    figures that are known only once the call is accounted for (cost, latency);
    ``deferred`` ones (a model grader) run once every answer is in, in a fixed order (see
    `lion_nb.evals.run`)."""

    name = "check"
    after_call = False
    deferred = False

    def check(self, answer: Any, case: Any, info: CellInfo) -> Any:
        raise NotImplementedError

    def __call__(self, answer: Any, case: Any = None) -> Any:
        """Use the check on its own: ``contains('x')('an answer with x')``."""
        return self.check(answer, case, CellInfo())

    def __repr__(self) -> str:
        return self.name


def _text(answer: Any) -> str:
    if answer is None:
        return ""
    if isinstance(answer, str):
        return answer
    dump = getattr(answer, "model_dump_json", None)
    if callable(dump):
        return dump()
    if isinstance(answer, (dict, list)):
        return json.dumps(answer, ensure_ascii=False, default=str)
    return str(answer)


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class contains(Check):
    """The answer contains ``text`` (case-insensitively when ``case=False``)."""

    def __init__(self, text: str, case: bool = False):
        if not isinstance(text, str) or not text:
            raise ConfigurationError("`contains(text)`: give the text to look for (a string).")
        self.text, self.case = text, case
        self.name = f"contains({text!r})"

    def check(self, answer: Any, case: Any, info: CellInfo) -> Any:
        have = _text(answer)
        found = self.text in have if self.case else self.text.casefold() in have.casefold()
        return found, None if found else f"{_short(self.text)!r} not in the answer"


class matches(Check):
    """The answer matches ``regex`` somewhere (``re.search``)."""

    def __init__(self, regex: str | re.Pattern[str], flags: int = 0):
        try:
            self.pattern = regex if isinstance(regex, re.Pattern) else re.compile(regex, flags)
        except (re.error, TypeError) as exc:
            raise ConfigurationError(
                f"`matches({regex!r})`: not a regular expression ({exc})."
            ) from None
        self.name = f"matches({self.pattern.pattern!r})"

    def check(self, answer: Any, case: Any, info: CellInfo) -> Any:
        found = self.pattern.search(_text(answer)) is not None
        return found, None if found else f"no match for {_short(self.pattern.pattern)!r}"


class equals(Check):
    """The answer equals ``value``: text compared with surrounding space stripped, any other
    value compared as it is."""

    def __init__(self, value: Any):
        self.value = value
        self.name = f"equals({_short(repr(value))})"

    def check(self, answer: Any, case: Any, info: CellInfo) -> Any:
        if isinstance(self.value, str):
            same = _text(answer).strip() == self.value.strip()
        else:
            same = answer == self.value
        return same, None if same else f"expected {_short(repr(self.value))}"


class is_json(Check):
    """The answer is valid JSON (a pydantic model or dict answer is)."""

    name = "is_json()"

    def check(self, answer: Any, case: Any, info: CellInfo) -> Any:
        if isinstance(answer, (dict, list)) or hasattr(answer, "model_dump_json"):
            return True, None
        try:
            json.loads(_text(answer))
        except ValueError as exc:
            return False, f"not JSON: {exc}"
        return True, None


class follows(Check):
    """The answer validates against a pydantic model (JSON text, a dict or an instance)."""

    def __init__(self, model: type):
        if not (isinstance(model, type) and hasattr(model, "model_validate")):
            raise ConfigurationError(
                f"`follows({model!r})`: give a pydantic model class (a `BaseModel` subclass)."
            )
        self.model = model
        self.name = f"follows({model.__name__})"

    def check(self, answer: Any, case: Any, info: CellInfo) -> Any:
        from pydantic import ValidationError

        if isinstance(answer, self.model):
            return True, None
        try:
            if isinstance(answer, dict):
                self.model.model_validate(answer)
            else:
                self.model.model_validate_json(_text(answer))
        except ValidationError as exc:
            first = exc.errors()[0] if exc.errors() else {}
            where = ".".join(str(p) for p in first.get("loc", ())) or "answer"
            return False, f"{where}: {first.get('msg', 'invalid')}"
        return True, None


class max_cost(Check):
    """The call cost at most ``usd`` dollars; an unpriced call fails (reason ``unpriced``)."""

    after_call = True

    def __init__(self, usd: float):
        if isinstance(usd, bool) or not isinstance(usd, (int, float)) or usd < 0:
            raise ConfigurationError(f"`max_cost({usd!r})`: give dollars (0 or more).")
        self.usd = float(usd)
        self.name = f"max_cost({usd:g})"

    def check(self, answer: Any, case: Any, info: CellInfo) -> Any:
        if info.cost_usd is None:
            return False, "unpriced"
        ok = info.cost_usd <= self.usd
        return ok, None if ok else f"cost ${info.cost_usd:.6f} > ${self.usd:g}"


class max_latency(Check):
    """The model call took at most ``seconds``; an unknown latency fails."""

    after_call = True

    def __init__(self, seconds: float):
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
            raise ConfigurationError(f"`max_latency({seconds!r})`: give seconds (> 0).")
        self.seconds = float(seconds)
        self.name = f"max_latency({seconds:g})"

    def check(self, answer: Any, case: Any, info: CellInfo) -> Any:
        if info.latency is None:
            return False, "latency unknown"
        ok = info.latency <= self.seconds
        return ok, None if ok else f"took {info.latency:.3f} s > {self.seconds:g} s"


# -- running any check -----------------------------------------------------------------------
def check_name(check: Any) -> str:
    """A check's label: its ``name``, else the function's name."""
    if isinstance(check, Check):
        return check.name
    name = getattr(check, "__name__", None) or type(check).__name__
    return "check" if name == "<lambda>" else name


def validate_checks(checks: Any) -> list[Any]:
    """The checks as a list; anything not callable is refused with the fix."""
    if checks is None:
        return []
    if callable(checks):
        checks = [checks]
    out = list(checks)
    for check in out:
        if not callable(check):
            raise ConfigurationError(
                f"`checks=`: {check!r} is not a check. Give checks from `lion_nb.evals` "
                "(`contains('x')`, `is_json()`, ...) or functions `(answer, case)`."
            )
    base = [check_name(c) for c in out]
    names = [  # two checks of one name stay apart in the columns
        f"{name}#{base[: i + 1].count(name)}" if base.count(name) > 1 else name
        for i, name in enumerate(base)
    ]
    return [(n, c) for n, c in zip(names, out, strict=True)]


def verdict(name: str, value: Any) -> CheckResult:
    """A check's return value as a `CheckResult` (see the module docstring)."""
    if isinstance(value, CheckResult):
        return value
    reason = None
    if isinstance(value, tuple) and len(value) == 2:
        value, reason = value
        reason = None if reason is None else str(reason)
    if isinstance(value, bool) or value is None:
        return CheckResult(name, bool(value), reason)
    if isinstance(value, (int, float)):
        score = float(value)
        passed = score >= PASS_SCORE
        return CheckResult(name, passed, reason or (None if passed else f"score {score:g}"), score)
    return CheckResult(name, bool(value), reason)


async def run_check(name: str, check: Any, answer: Any, case: Any, info: CellInfo) -> CheckResult:
    """Run one check; an exception fails it with the exception as the reason."""
    from ..models.secrets import redact

    try:
        value = check.check(answer, case, info) if isinstance(check, Check) else check(answer, case)
        if inspect.isawaitable(value):
            value = await value
        return verdict(name, value)
    except Exception as exc:
        return CheckResult(name, False, redact(f"the check raised {type(exc).__name__}: {exc}"))


def is_after_call(check: Callable[..., Any]) -> bool:
    return isinstance(check, Check) and check.after_call


def is_deferred(check: Callable[..., Any]) -> bool:
    return isinstance(check, Check) and check.deferred
