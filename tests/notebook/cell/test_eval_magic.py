"""``%%lion --eval CASES --check EXPR`` (with ``--compare``, ``--repeat``, ``--name``) in a
real in-process shell."""

from __future__ import annotations

import pytest

from lion_nb.evals import EvalRun
from tests.notebook.nbshell import run, usage_error

SETUP = """
from lion_nb import iModel

def right(messages, **request):
    n = int(messages[-1]["content"].split("#")[1])
    return f"It is {2 * n}."

def wrong_on_3(messages, **request):
    n = int(messages[-1]["content"].split("#")[1])
    return "No idea." if n == 3 else f"It is {2 * n}."

good = iModel(provider="offline", model="function", function=right)
bad = iModel(provider="offline", model="function", function=wrong_on_3)
cases = [{"id": f"c{n}", "n": n, "want": str(2 * n)} for n in range(5)]

def doubled(answer, case):
    return case["want"] in answer, "expected " + case["want"]
"""


@pytest.fixture
def nb(ip):
    assert run(ip, SETUP).error is None
    return ip


def test_eval_runs_the_cell_as_a_template_over_the_cases(nb):
    ran = run(
        nb,
        "%%lion --eval cases --compare good,bad --check doubled --check \"contains('It is')\" "
        "-o result --name doubling\nDouble #{n}#, please; keep {{braces}}.",
    )
    assert ran.error is None, ran
    result = nb.user_ns["result"]
    assert isinstance(result, EvalRun) and ran.value is result
    assert result.models == ["good", "bad"]
    assert [r.prompt_text for r in result.rows[:1]] == ["Double #0#, please; keep {braces}."]
    assert {(s["model"], s["passed"], s["total"]) for s in result.summary()} == {
        ("good", 5, 5),
        ("bad", 4, 5),
    }
    shown = "\n".join(o.data.get("text/plain", "") for o in ran.outputs)
    assert "prompt × good: 5/5 passed" in shown and "prompt × bad: 4/5 passed" in shown
    assert "c3: 3 | ✓ | ✗" in shown  # the grid as text: no widget front end here


def test_a_named_eval_reports_what_changed_since_its_last_run(nb):
    run(nb, "%%lion --eval cases -m good --check doubled --name trend -q\nDouble #{n}#")
    ran = run(
        nb, "%%lion --eval cases -m bad --check doubled --name trend --repeat 2\nDouble #{n}#"
    )
    assert ran.error is None, ran
    assert ran.value.changes.by_cell("regressions") == {("prompt", "offline/function"): ["c3"]}
    shown = "\n".join(o.data.get("text/plain", "") for o in ran.outputs)
    assert "Since the last `trend` run: prompt × offline/function: 1 now fail (c3)" in shown
    assert "✗ 0/2 ↓" in shown


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--check doubled", "`--check` goes with `--eval CASES`"),
        ("--eval nope", "`--eval nope`: no variable named `nope`"),
        ("--eval cases --check nothing_here", "`--check nothing_here`: no variable named"),
        ("--eval cases --check 3", "`--check 3` is a int, not a check"),
        ("--eval cases --map cases", "`--eval` and `--map` cannot be combined"),
        ("--eval cases --repeat 0", "`--repeat 0`: run each case 1 time or more"),
        ("--eval cases --bg", "`--bg` does not apply to `--eval`"),
        ("--eval cases -m good", "`{nn}`: case 0 has no field `nn`"),
    ],
)
def test_mistakes_are_one_line_usage_errors(nb, line, message):
    assert message in usage_error(nb, f"%%lion {line}\nDouble #{{nn}}#")


COUNTING = """
sizes = []

def counting(messages, **request):
    sizes.append(len(messages))
    n = int(messages[-1]["content"].split("#")[1])
    return f"It is {2 * n}."

counter = iModel(provider="offline", model="function", function=counting)
"""


def test_an_eval_on_the_active_branch_sends_each_case_alone_and_leaves_no_branches(nb):
    assert run(nb, COUNTING).error is None
    for n in range(15):  # the active branch's history: 30 messages
        assert run(nb, f"%%lion -m counter -q\nTurn #{n}#").error is None
    sizes = nb.user_ns["sizes"]
    assert sizes[-1] == 29
    before = run(nb, "%lion branches").value.rows
    sizes.clear()
    ran = run(nb, "%%lion --eval cases -m counter --check doubled -o result -q\nDouble #{n}#")
    assert ran.error is None, ran
    assert sizes == [1] * 5  # the case, nothing of the branch's history
    assert all(r.passed for r in nb.user_ns["result"].rows)
    after = run(nb, "%lion branches").value.rows
    assert [r["branch"] for r in after] == [r["branch"] for r in before]
    assert not any("eval-" in r["branch"] for r in after)
    kept = nb.user_ns["result"].branches()  # kept with the run, shown on request
    assert len(kept) == 5 and [len(b.messages) for b in kept] == [2] * 5
