"""A soak test: 1,000 turns on one branch with the offline model.

Prints the memory each message costs and the time a turn takes, at the start and at the
end, so a leak or a per-turn cost that grows with the history shows as figures. The
asserts are about what cannot vary with the machine: every turn is recorded, the branch
saves and loads, and memory per message stays bounded (no message keeps more than a few
kilobytes alive, and the end costs no more per message than the start, within a factor).
Times are printed, never asserted (tests/bench holds the benchmarks).
"""

from __future__ import annotations

import gc
import json
import statistics
import time
import tracemalloc

import anyio
import pytest

from lion_nb import Branch, Session

TURNS = 1_000
WINDOW = 100
# memory is read before these turns: a window after warm-up, and one near the end but
# before the log's capacity (1,000 entries) starts dropping old entries
MARKS = (WINDOW, 2 * WINDOW, TURNS - 2 * WINDOW, TURNS - WINDOW)


@pytest.mark.slow
def test_a_thousand_turns():
    session = Session()
    branch: Branch = session.default_branch
    seen: list = []
    session.observe(object, lambda signal: seen.append(type(signal).__name__))
    times: list[float] = []
    memory: list[tuple[int, int]] = []  # (messages, traced bytes)

    async def main():
        for turn in range(TURNS):
            if turn in MARKS:
                gc.collect()
                memory.append((len(branch.messages), tracemalloc.get_traced_memory()[0]))
            started = time.perf_counter()
            await branch.communicate(f"Question {turn}: what is {turn} squared?")
            times.append(time.perf_counter() - started)

    gc.collect()
    tracemalloc.start()
    try:
        anyio.run(main)
    finally:
        tracemalloc.stop()

    (m0, b0), (m1, b1), (m2, b2), (m3, b3) = memory
    early = (b1 - b0) / (m1 - m0)  # bytes per message over a window after warm-up
    late = (b3 - b2) / (m3 - m2)  # and over a window near the end
    overall = (b3 - b0) / (m3 - m0)
    first = statistics.median(times[:WINDOW]) * 1e3
    last = statistics.median(times[-WINDOW:]) * 1e3
    print(
        f"\nsoak, {TURNS} turns, {len(branch.messages)} messages:\n"
        f"  memory per message: start {early / 1024:.2f} KB, end {late / 1024:.2f} KB, "
        f"overall {overall / 1024:.2f} KB\n"
        f"  time per turn (median of {WINDOW}): start {first:.2f} ms, end {last:.2f} ms "
        f"({last / first:.2f}x)"
    )

    assert len(branch.messages) == 2 * TURNS
    assert len(times) == TURNS
    assert seen.count("RunEnd") == TURNS and "RunFailed" not in seen
    assert overall < 16 * 1024  # a short exchange keeps a few KB per message alive
    assert late < 3 * early + 2048  # no growth per message as the history grows
    again = Branch.from_dict(json.loads(json.dumps(branch.to_dict(mode="json"))))
    assert len(again.messages) == 2 * TURNS
