"""The ledger's cost per model call: pricing, accounting and the budget checks.

Run: ``python tests/bench/bench_cost.py``. Prints figures measured in this one run, with the
targets beside them; nothing here is a pass/fail assertion.

- ``record_call`` alone: one call priced from the table (claude-sonnet-4-5, with cache
  tokens) and added to the branch's and the session's running totals;
- ``communicate()`` with the ledger against the same call with the ledger's two hooks
  replaced by no-ops (the baseline), interleaved so that a busy machine hits both alike;
  the difference of the two medians is within the noise of a 130 us call, so the time spent
  in the two hooks is also measured inside the calls themselves, less what the same timing
  of two no-op hooks measures (the target's figure);
- the same with a budget set on the session (its check estimates the request's input);
- per-call cost at 2,000 messages of history against the first calls: it must not grow.
"""

from __future__ import annotations

import statistics
import time

import anyio

CALLS = 2000


def record_call_us(n: int = 50_000) -> float:
    from lion_nb import Session, iModel
    from lion_nb.runtime.ledger import record_call

    session = Session()
    branch = session.default_branch
    session.cost()  # the session's ledger exists, as it does once anyone looked
    model = iModel(provider="anthropic", model="claude-sonnet-4-5")
    usage = {
        "input_tokens": 12_000,
        "output_tokens": 300,
        "cache_read_tokens": 11_000,
        "cache_write_tokens": 500,
        "reasoning_tokens": 0,
    }
    record_call(branch, model, usage)  # resolves the price once
    start = time.perf_counter()
    for _ in range(n):
        record_call(branch, model, usage)
    return (time.perf_counter() - start) / n * 1e6


async def _ok(messages, **kw):
    return "ok"


def _model():
    from lion_nb import iModel

    return iModel(
        provider="offline",
        model="function",
        function=_ok,  # async: a sync function hops to a worker thread
        price={"input": 3.0, "output": 15.0},
    )


def _timed(branch, calls: int) -> list[float]:
    async def run() -> list[float]:
        samples = []
        for _ in range(calls):
            t = time.perf_counter()
            await branch.communicate("hi", clear_messages=True)
            samples.append(time.perf_counter() - t)
        return samples

    return anyio.run(run)


def _timing(func, spent: list[float]):
    """``func``, adding the seconds each call takes to ``spent[0]``."""

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - start

    return timed


def communicate_with_and_without(
    budget: bool = False, rounds: int = 10
) -> tuple[float, float, float]:
    """Median microseconds per ``communicate()`` with the ledger and without it, and the
    microseconds per call spent inside the ledger's two hooks (timed in the calls)."""
    import lion_nb.operations.chat_op as chat_op
    from lion_nb import Budget, Session

    real = (chat_op.record_call, chat_op.check_budgets)
    session = Session()
    if budget:
        session.budget = Budget(usd=1e9)
    branch = session.default_branch
    branch.chat_model = _model()
    _timed(branch, 200)  # warm up
    with_, without, inside, timer, timed_calls = [], [], [0.0], [0.0], 0
    try:
        for _ in range(rounds):
            chat_op.record_call, chat_op.check_budgets = real
            with_ += _timed(branch, CALLS // rounds)
            chat_op.record_call = _timing(real[0], inside)
            chat_op.check_budgets = _timing(real[1], inside)
            _timed(branch, CALLS // rounds)
            chat_op.record_call = _timing(lambda *a, **k: None, timer)  # the timing's own cost
            chat_op.check_budgets = _timing(lambda *a, **k: None, timer)
            _timed(branch, CALLS // rounds)
            timed_calls += CALLS // rounds
            chat_op.record_call = lambda *a, **k: None
            chat_op.check_budgets = lambda *a, **k: None
            without += _timed(branch, CALLS // rounds)
    finally:
        chat_op.record_call, chat_op.check_budgets = real
    own = (inside[0] - timer[0]) / timed_calls * 1e6
    return statistics.median(with_) * 1e6, statistics.median(without) * 1e6, own


def growth(calls: int = 1000) -> float:
    """Median of the last 100 calls over the first 100 while history grows to 2,000."""
    from lion_nb import Budget, Session

    session = Session()
    session.budget = Budget(usd=1e9)
    branch = session.default_branch
    branch.chat_model = _model()

    async def run() -> list[float]:
        samples = []
        for _ in range(calls):
            t = time.perf_counter()
            await branch.communicate("hi")
            samples.append(time.perf_counter() - t)
        return samples

    samples = anyio.run(run)
    return statistics.median(samples[-100:]) / statistics.median(samples[:100])


def results() -> list[tuple[str, str, str, float | None]]:
    ours, base, own = communicate_with_and_without()
    ours_b, base_b, own_b = communicate_with_and_without(budget=True)
    return [
        ("ledger: record_call, table price", f"{record_call_us():.2f} us", "<= 5 us", None),
        ("communicate() with the ledger", f"{ours:.1f} us", "", ours / base),
        ("  without it (baseline)", f"{base:.1f} us", "", 1.0),
        ("  the ledger's time in a call (timed inside it)", f"{own:.2f} us", "<= 5 us", None),
        ("  difference of the two medians", f"{ours - base:.2f} us", "", None),
        ("communicate() under a session budget", f"{ours_b:.1f} us", "", ours_b / base_b),
        ("  the ledger's and budget's time in a call", f"{own_b:.2f} us", "", None),
        ("  difference of the two medians", f"{ours_b - base_b:.2f} us", "", None),
        ("under a budget, at 2,000 messages / at the start", f"{growth():.2f}x", "<= 2x", None),
    ]


def main() -> None:
    for figure, value, target, ratio in results():
        extra = f" (x{ratio:.3f})" if ratio is not None else ""
        print(f"{figure:<52} {value:>12}{extra}  {target}")


if __name__ == "__main__":
    main()
