"""`session.evaluate` with offline function models whose answers are known: exact pass
counts, Wilson intervals against a reference, a seeded regression, a flaky case, the store."""

from __future__ import annotations

import math
from collections import Counter

import anyio
import pytest

from lion_nb import Session, iModel
from lion_nb.errors import ConfigurationError
from lion_nb.evals import contains, equals, last_run, max_cost, max_latency, saved_runs

CASES = [{"id": f"c{n}", "n": n, "expected": str(2 * n)} for n in range(50)]
SEEDED = {1, 2, 4, 8, 16, 32, 47}  # model A gets these wrong once prompt 1 says "please"


def model_a():
    """Right except for n % 10 == 3; wrong on SEEDED when the prompt says "please"."""

    def play(messages, **_):
        prompt = messages[-1]["content"]
        n = int(prompt.split("#")[1])
        if n % 10 == 3 or ("please" in prompt and n in SEEDED):
            return "I do not know"
        return f"The answer is {2 * n}."

    return iModel(provider="offline", model="function", function=play)


def model_b():
    """Right on prompt 2 always, on prompt 1 for n < 40; on prompt 2 with n == 5, right in
    its first two calls only (flaky over three repeats)."""
    seen: Counter[str] = Counter()

    def play(messages, **_):
        prompt = messages[-1]["content"]
        n = int(prompt.split("#")[1])
        seen[prompt] += 1
        if prompt.startswith("Twice"):
            if n == 5 and seen[prompt] == 3:
                return "eleven"
            return str(2 * n)
        return str(2 * n) if n < 40 else "no idea"

    return iModel(provider="offline", model="function", function=play)


def correct(answer, case):
    return case["expected"] in str(answer), f"expected {case['expected']}"


PROMPTS = {"prompt 1": "Double #{n}# for me", "prompt 2": "Twice #{n}#?"}


def expected_passes(prompt: str, model: str, n: int, repeat: int, changed=False) -> bool:
    if model == "A":
        return not (n % 10 == 3 or (changed and prompt == "prompt 1" and n in SEEDED))
    if prompt == "prompt 2":
        return not (n == 5 and repeat == 2)
    return n < 40


def run_grid(prompts=PROMPTS, name="grid", **kw):
    session = Session()

    async def main():
        return await session.evaluate(
            CASES,
            prompt=prompts,
            models={"A": model_a(), "B": model_b()},
            checks=[correct],
            repeat=3,
            name=name,
            concurrency=16,
            **kw,
        )

    return anyio.run(main)


def wilson_reference(k: int, n: int) -> tuple[float, float]:
    """Wilson's interval in its other published form: (2k + z² ± z√(z² + 4k(n−k)/n)) / 2(n + z²)."""
    z = 1.959963984540054
    root = z * math.sqrt(z * z + 4 * k * (n - k) / n)
    return (2 * k + z * z - root) / (2 * (n + z * z)), (2 * k + z * z + root) / (2 * (n + z * z))


def test_a_grid_of_600_cells_gives_exactly_the_expected_pass_counts():
    run = run_grid()
    assert len(run.rows) == 2 * 2 * 50 * 3
    for row in run.rows:
        n = row.case["n"]
        assert row.passed is expected_passes(row.prompt, row.model, n, row.repeat), row
        assert row.prompt_text == PROMPTS[row.prompt].replace("{n}", str(n))
        assert row.checks[0].name == "correct"
    summary = {(s["prompt"], s["model"]): s for s in run.summary()}
    assert {k: (v["passed"], v["total"]) for k, v in summary.items()} == {
        ("prompt 1", "A"): (135, 150),
        ("prompt 1", "B"): (120, 150),
        ("prompt 2", "A"): (135, 150),
        ("prompt 2", "B"): (149, 150),
    }
    for s in summary.values():
        low, high = wilson_reference(s["passed"], s["total"])
        assert s["low"] == pytest.approx(low, abs=1e-12)
        assert s["high"] == pytest.approx(high, abs=1e-12)
        assert s["mean_cost"] == 0.0  # the offline models cost nothing
        assert s["mean_latency"] is not None and s["mean_latency"] >= 0


def test_wilson_matches_published_values():
    from lion_nb.evals import wilson

    # statsmodels.stats.proportion.proportion_confint(k, n, method="wilson")
    assert wilson(5, 10) == pytest.approx((0.2365930905125706, 0.7634069094874294), abs=1e-12)
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775327998628899), abs=1e-12)
    assert wilson(10, 10) == pytest.approx((0.7224672001371101, 1.0), abs=1e-12)
    assert wilson(0, 0) == (0.0, 1.0)


def test_a_case_passing_two_repeats_of_three_is_flaky():
    run = run_grid(name="flaky")
    assert run.flaky() == [
        {"prompt": "prompt 2", "model": "B", "case_id": "c5", "passed": 2, "repeats": 3}
    ]


def test_a_seeded_regression_is_reported_as_exactly_those_cases():
    first = run_grid(name="seeded")
    assert first.previous is None and first.changes is None
    changed = dict(PROMPTS, **{"prompt 1": "Double #{n}# for me, please"})
    second = run_grid(prompts=changed, name="seeded")
    assert second.previous is not None  # the last run of that name, read from the store
    for before in (second.previous, first):
        comparison = second.compare(before)
        assert comparison.by_cell("regressions") == {
            ("prompt 1", "A"): [f"c{n}" for n in sorted(SEEDED)]
        }
        assert comparison.fixes == []
        assert [(c.prompt, c.model, c.case_id) for c in comparison.flaky] == [
            ("prompt 2", "B", "c5")
        ]
    assert second.changes.by_cell("regressions") == {
        ("prompt 1", "A"): [f"c{n}" for n in sorted(SEEDED)]
    }
    assert "7 now fail" in second.changes.text()
    # the reverse comparison calls them fixes
    assert len(first.compare(second).fixes) == 7
    runs = saved_runs("seeded")
    assert [len(r.rows) for r in runs] == [600, 600]
    assert runs[0].created_at < runs[1].created_at
    assert last_run("seeded").rows[0].to_dict() == second.rows[0].to_dict() | {
        "case": second.rows[0].case
    }


def test_rows_to_dataframe():
    pytest.importorskip("pandas")
    session = Session()
    session.default_branch.chat_model = model_a()

    async def main():
        return await session.evaluate(
            CASES[:4], prompt="Double #{n}#", checks=[correct, contains("answer")], name="df"
        )

    frame = anyio.run(main).to_dataframe()
    assert list(frame["case_id"]) == ["c0", "c1", "c2", "c3"]
    assert list(frame["passed"]) == [True, True, True, False]
    assert list(frame["correct"]) == [True, True, True, False]
    assert frame.loc[3, "contains('answer') reason"] == "'answer' not in the answer"
    assert frame.loc[0, "case.expected"] == "0"
    assert {"answer", "tokens", "cost_usd", "latency", "error", "model", "prompt"} <= set(frame)


def test_a_failed_call_fails_its_row_and_a_raising_check_fails_only_itself():
    def play(messages, **_):
        if "#3#" in messages[-1]["content"]:
            raise RuntimeError("model down")
        return "ok"

    def broken(answer, case):
        raise ValueError("bad check")

    session = Session()
    session.default_branch.chat_model = iModel(provider="offline", model="function", function=play)

    async def main():
        return await session.evaluate(
            CASES[:5], prompt="#{n}#", checks=[equals("ok"), broken], save=False
        )

    run = anyio.run(main)
    by_case = {r.case_id: r for r in run.rows}
    assert by_case["c3"].passed is False
    assert "model down" in by_case["c3"].error
    assert [c.reason for c in by_case["c3"].checks] == ["no answer", "no answer"]
    ok = by_case["c0"]
    assert ok.checks[0].passed is True
    assert ok.checks[1].passed is False
    assert ok.checks[1].reason == "the check raised ValueError: bad check"


def test_max_cost_and_max_latency_read_the_cells_figures():
    session = Session()
    session.default_branch.chat_model = model_a()

    async def main():
        return await session.evaluate(
            CASES[:2], prompt="#{n}#", checks=[max_cost(0.01), max_latency(60)], save=False
        )

    run = anyio.run(main)
    assert all(r.passed for r in run.rows)  # offline: $0, and well under a minute
    assert all(r.latency is not None and r.latency < 60 for r in run.rows)


def test_a_placeholder_the_cases_lack_fails_before_any_call():
    calls = []

    def play(messages, **_):
        calls.append(messages)
        return "x"

    session = Session()
    session.default_branch.chat_model = iModel(provider="offline", model="function", function=play)
    with pytest.raises(ConfigurationError, match=r"`\{nn\}`: case 0 has no field `nn`.*`n`"):
        session.evaluate(CASES, prompt="#{nn}#")
    assert calls == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prompt": None}, "`prompt=`: give the template"),
        ({"prompt": "x", "repeat": 0}, "`repeat=0`"),
        ({"prompt": "x", "checks": ["nope"]}, "`checks=`: 'nope' is not a check"),
        ({"prompt": "x", "via": "fast"}, "`via='fast'`"),
        ({"prompt": "x", "models": []}, "`models=` is empty"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, message):
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(").replace("[", r"\[")):
        Session().evaluate(CASES[:2], **kwargs)


def test_empty_cases_and_one_dict_are_refused_with_the_fix():
    with pytest.raises(ConfigurationError, match="`cases=` is empty"):
        Session().evaluate([], prompt="x")
    with pytest.raises(ConfigurationError, match=r"Wrap it in a list"):
        Session().evaluate({"n": 1}, prompt="x")


def test_stop_keeps_what_finished_and_retry_runs_the_rest():
    release = anyio.Event()

    async def play(messages, **_):
        n = int(messages[-1]["content"].split("#")[1])
        if n >= 2:
            await release.wait()
        return "yes"

    session = Session()
    session.default_branch.chat_model = iModel(provider="offline", model="function", function=play)

    async def main():
        run = session.evaluate(CASES[:6], prompt="#{n}#", checks=[equals("yes")], save=False)
        while run.progress()[0] < 2:  # the two that answer at once
            await anyio.sleep(0.01)
        assert run.stop()
        await run
        stopped = (run.state, [r.case_id for r in run.rows if r.passed], len(run.graded()))
        release.set()
        await run.retry()
        return run, stopped

    run, (state, passed, graded) = anyio.run(main)
    assert state == "stopped" and passed == ["c0", "c1"] and graded == 2
    assert run.state == "finished"
    assert [r.passed for r in run.rows] == [True] * 6
    assert run.summary()[0]["total"] == 6
