"""`session.evaluate` over the loopback HTTP server: a recorded run replays from its
cassette with no server and gives identical rows (judge verdicts and repeats included),
cost from ``price=`` and ``unpriced`` answers, and ``via="batch"`` through the emulated
batch services."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from lion_nb import Session, iModel
from lion_nb.evals import judge, matches, max_cost
from lion_nb.models.cassettes import ENV_MODE, CassetteError, cassette, use_cassette
from tests.fakes.batch_api import BatchEmulator
from tests.fakes.http_server import FakeProvider, Recorded, Script, openai_completion

CASES = [{"id": f"c{n}", "n": n} for n in range(5)]
PROMPTS = ["Double #{n}#", "Twice #{n}#, as digits"]


@pytest.fixture(autouse=True)
def _no_forced_mode(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(ENV_MODE, raising=False)
    yield
    use_cassette(None)


class Varying:
    """Answers that change from call to call of one prompt (as sampling does), slow or fast
    by the call, so that answers arrive out of order; the grader ("judge" model) passes an
    answer on its odd-numbered sightings only -- a flaky grader."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, str]] = Counter()
        self.lock = threading.Lock()

    def __call__(self, rec: Recorded) -> Script | None:
        if not rec.path.endswith("/chat/completions"):
            return None
        model, text = rec.body["model"], rec.body["messages"][-1]["content"]
        with self.lock:
            self.seen[model, text] += 1
            k = self.seen[model, text]
        if model == "judge":
            verdict = "true" if k % 2 else "false"
            body = openai_completion(f'{{"pass": {verdict}, "reason": "sighting {k}"}}')
        else:
            n = int(text.split("#")[1])
            body = openai_completion(f"{model} says {2 * n + (k - 1) % 2} (call {k})")
        return Script(body=body, first_byte_delay=0.002 * ((k + len(text)) % 4))


def http_model(fake: FakeProvider, name: str, **kw: Any) -> iModel:
    return iModel(provider="openai", model=name, base_url=fake.openai_url, max_retries=0, **kw)


def grid(fake: FakeProvider, **kw: Any) -> Any:
    session = Session()
    grader = http_model(fake, "judge")

    def correct(answer, case):
        return f"says {2 * case['n']} " in answer

    async def main():
        return await session.evaluate(
            CASES,
            prompt=PROMPTS,
            models=[http_model(fake, "m1"), http_model(fake, "m2")],
            checks=[correct, matches(r"call \d"), judge("Says the double.", model=grader)],
            repeat=3,
            concurrency=8,
            save=False,
            **kw,
        )

    return anyio.run(main)


def comparable(run: Any) -> list[dict]:
    return [{k: v for k, v in r.to_dict().items() if k != "latency"} for r in run.rows]


def test_a_recorded_evaluation_replays_with_no_server_and_identical_rows(tmp_path):
    path = tmp_path / "eval.jsonl"
    with FakeProvider() as fake:
        fake.routes.append(Varying())
        with cassette(path, mode="all"):
            recorded = grid(fake)
        url = fake.openai_url
    rows = comparable(recorded)
    assert len(rows) == 2 * 2 * 5 * 3
    # repeats got different answers, and the grader did not always agree with itself
    assert {r["answer"] for r in rows if r["case_id"] == "c1" and r["model"] == "openai/m1"} > {
        "m1 says 2 (call 1)"
    }
    assert {r["checks"][2]["passed"] for r in rows} == {True, False}
    flaky = recorded.flaky()
    assert flaky  # answers that alternate over repeats are flaky cases

    class Gone:  # the same models, pointed at a server that is no longer there
        openai_url = url

    with cassette(path, mode="none"):
        replayed = grid(Gone())
    assert comparable(replayed) == rows
    assert replayed.flaky() == flaky


def test_a_changed_rubric_does_not_replay(tmp_path):
    path = tmp_path / "eval.jsonl"
    with FakeProvider() as fake:
        fake.routes.append(Varying())
        with cassette(path, mode="all"):
            grid(fake)
        fake_url = fake.openai_url
    session = Session()

    class Gone:
        openai_url = fake_url

    async def main():
        model = http_model(Gone(), "m1")
        return await session.evaluate(
            CASES[:1],
            prompt=PROMPTS[0],
            models=[model],
            checks=[judge("Another rubric.", model=http_model(Gone(), "judge"))],
            save=False,
        )

    with cassette(path, mode="none"):
        run = anyio.run(main)
    (row,) = run.rows
    assert row.passed is False
    assert "CassetteError" in row.checks[0].reason  # the grader's call, not replayed
    assert CassetteError.__name__ in row.reasons[0]


def test_cost_comes_from_price_and_an_unpriced_answer_fails_max_cost():
    with FakeProvider() as fake:
        fake.routes.append(Varying())
        session = Session()

        async def main(**kw):
            return await session.evaluate(
                CASES[:2],
                prompt=PROMPTS[0],
                models=[http_model(fake, "m1")],
                checks=[max_cost(0.001)],
                save=False,
                **kw,
            )

        unpriced = anyio.run(main)
        priced = anyio.run(lambda: main(price=(1.0, 2.0)))
    for row in unpriced.rows:
        assert row.cost_usd is None
        assert row.passed is False and row.checks[0].reason == "unpriced"
    assert unpriced.summary()[0]["unpriced"] == 2
    for row in priced.rows:  # 11 input and 3 output tokens at $1 / $2 per million
        assert row.cost_usd == pytest.approx((11 * 1.0 + 3 * 2.0) / 1e6)
        assert row.passed is True
    assert priced.summary()[0]["mean_cost"] == pytest.approx(17e-6)


def test_via_batch_runs_one_provider_batch_per_model_then_checks():
    with FakeProvider() as fake:
        BatchEmulator(fake, answer=lambda text: f"answer: {text}")
        session = Session()

        async def main():
            return await session.evaluate(
                CASES,
                prompt="Double #{n}#",
                models={"one": http_model(fake, "m1"), "two": http_model(fake, "m2")},
                checks=[matches(r"#[0-3]#"), max_cost(1.0)],
                via="batch",
                poll_interval=0.01,
                price=(1.0, 1.0),
                save=False,
            )

        run = anyio.run(main)
        uploads = [r for r in fake.requests if r.method == "POST" and r.path.endswith("/batches")]
    assert len(run.batches) == 2 and len(uploads) == 2
    assert [b.via for b in run.batches] == ["batch", "batch"]
    assert len(run.rows) == 10
    for row in run.rows:
        assert row.answer == f"answer: Double #{row.case['n']}#"
        assert row.passed is (row.case["n"] <= 3)
        assert row.latency is None  # a batch has no per-call latency
        assert row.cost_usd is not None and row.cost_usd > 0
    assert [s["passed"] for s in run.summary()] == [4, 4]
