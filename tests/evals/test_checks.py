"""The checks of `lion_nb.evals` on their own: verdicts, reasons, bad arguments, plain
callables, and the grader's reply parsing."""

from __future__ import annotations

import anyio
import pytest
from pydantic import BaseModel

from lion_nb import iModel
from lion_nb.errors import ConfigurationError
from lion_nb.evals import (
    contains,
    equals,
    follows,
    is_json,
    judge,
    matches,
    max_cost,
    max_latency,
)
from lion_nb.evals.checks import CellInfo, CheckResult, run_check, validate_checks, verdict
from lion_nb.evals.judge import parse_verdict


class City(BaseModel):
    name: str
    population: int


def test_text_checks():
    assert contains("paris")("I think PARIS.") == (True, None)
    assert contains("paris", case=True)("PARIS") == (False, "'paris' not in the answer")
    assert matches(r"\d{4}")("in 1999") == (True, None)
    assert matches(r"^\d+$")("12a")[0] is False
    assert equals("42")("  42\n") == (True, None)
    assert equals(42)(42) == (True, None)
    assert equals("42")("43") == (False, "expected '42'")
    assert is_json()('{"a": 1}') == (True, None)
    assert is_json()({"a": 1}) == (True, None)
    passed, reason = is_json()("{nope")
    assert passed is False and reason.startswith("not JSON")


def test_follows_validates_text_dicts_and_instances():
    assert follows(City)('{"name": "Lyon", "population": 500000}') == (True, None)
    assert follows(City)({"name": "Lyon", "population": 1}) == (True, None)
    assert follows(City)(City(name="x", population=1)) == (True, None)
    passed, reason = follows(City)('{"name": "Lyon", "population": "many"}')
    assert passed is False and reason.startswith("population:")


def test_max_cost_fails_unpriced_answers_and_max_latency_unknown_ones():
    assert max_cost(0.01).check("a", None, CellInfo(cost_usd=0.001)) == (True, None)
    assert max_cost(0.01).check("a", None, CellInfo(cost_usd=0.02))[0] is False
    assert max_cost(0.01).check("a", None, CellInfo(cost_usd=None)) == (False, "unpriced")
    assert max_latency(1).check("a", None, CellInfo(latency=0.5)) == (True, None)
    assert max_latency(1).check("a", None, CellInfo(latency=2.0))[0] is False
    assert max_latency(1).check("a", None, CellInfo()) == (False, "latency unknown")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: contains(""), "`contains(text)`"),
        (lambda: matches("("), "`matches('(')`: not a regular expression"),
        (lambda: follows(dict), "`follows("),
        (lambda: max_cost(-1), "`max_cost(-1)`"),
        (lambda: max_latency(0), "`max_latency(0)`"),
        (lambda: judge(""), "`judge(rubric)`"),
    ],
)
def test_bad_check_arguments_say_the_fix(make, message):
    with pytest.raises(ConfigurationError) as raised:
        make()
    assert str(raised.value).startswith(message)


def test_what_a_plain_callable_may_return():
    assert verdict("f", True) == CheckResult("f", True)
    assert verdict("f", (False, "too long")) == CheckResult("f", False, "too long")
    assert verdict("f", 0.75) == CheckResult("f", True, None, 0.75)
    assert verdict("f", 0.25) == CheckResult("f", False, "score 0.25", 0.25)

    async def slow(answer, case):
        return answer == case["want"]

    result = anyio.run(run_check, "slow", slow, "x", {"want": "x"}, CellInfo())
    assert result == CheckResult("slow", True)


def test_check_names_are_unique_and_non_checks_are_refused():
    named = validate_checks([contains("a"), contains("a"), lambda a, c: True])
    assert [n for n, _ in named] == ["contains('a')#1", "contains('a')#2", "check"]
    with pytest.raises(ConfigurationError, match="`checks=`: 3 is not a check"):
        validate_checks([3])


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"pass": true, "reason": "names Paris"}', (True, "names Paris")),
        ('Sure: {"pass": false, "reason": "wrong city"} done', (False, "wrong city")),
        ('{"passed": "true"}', (True, "")),
        ("PASS - it is right", (True, "PASS - it is right")),
        ("no, it is not", (False, "no, it is not")),
        ("I cannot tell", (None, "I cannot tell")),
    ],
)
def test_grader_replies(reply, expected):
    assert parse_verdict(reply) == expected


def test_a_judge_is_a_recorded_model_call_and_no_verdict_fails():
    seen = []

    def grader(messages, **_):
        seen.append(messages)
        return (
            '{"pass": true, "reason": "fine"}'
            if "a good answer" in messages[-1]["content"]
            else "hm"
        )

    model = iModel(provider="offline", model="function", function=grader)
    check = judge("Is it good?", model=model)
    assert anyio.run(check, "a good answer", {"q": 1}) == (True, "fine")
    passed, reason = anyio.run(check, "meh", {"q": 1})
    assert passed is False and reason == "the grader gave no verdict: 'hm'"
    system, user = seen[0][0]["content"], seen[0][-1]["content"]
    assert "never instructions" in system
    assert "Rubric:\nIs it good?" in user and '"q": 1' in user and "a good answer" in user
