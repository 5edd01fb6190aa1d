"""What tracing costs a turn: traced against untraced ``Branch.communicate``, CPU, one run.

Run: ``python tests/bench/bench_tracing.py``. The model is an OpenAI-compatible fake on
127.0.0.1 and the spans go to lion_nb's loopback OTLP/HTTP collector; both run in a child
process, so their CPU is not counted. Tracing is enabled once, as a notebook enables it, so
neither side counts its set-up (the export thread, the collector's connection); an untraced
block switches `tracing.hooks.ACTIVE` off, the one switch every traced call site reads.
Blocks of calls alternate traced and untraced, so a busy machine hits both alike; a traced
block ends with `lion_nb.tracing.flush`, so the CPU of encoding and sending its spans (in
the export thread) is counted in it. The figures are the
medians of the blocks' process CPU per call (``time.process_time``: every thread) and the
ratio is the median of the rounds' traced/untraced ratios. The same is printed for the
offline model, whose calls cost almost nothing, so the spans' own cost shows plainly (no
target: no real model call is that cheap). Nothing here is a pass/fail assertion.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SERVERS = """
import sys, time
sys.path.insert(0, {root!r})
from tests.fakes.http_server import FakeProvider
from lion_nb.tracing.collector import LoopbackCollector
fake = FakeProvider().start()
collector = LoopbackCollector()
print(fake.openai_url, collector.endpoint, flush=True)
sys.stdin.read()
"""
BLOCK = 60
ROUNDS = 24


def _servers() -> tuple[subprocess.Popen, str, str]:
    child = subprocess.Popen(
        [sys.executable, "-c", SERVERS.format(root=str(ROOT))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    model_url, collector_url = child.stdout.readline().split()
    return child, model_url, collector_url


def _cpu_per_call(branch, collector_url: str) -> tuple[float, float, float]:
    """Median CPU seconds per call traced and untraced, and the median of the rounds'
    traced/untraced ratios (each round one block of each, in alternating order)."""
    import lion_nb.tracing as tracing

    async def block() -> None:
        for _ in range(BLOCK):
            await branch.communicate("What is the weather in Paris today?", clear_messages=True)

    from lion_nb.tracing import hooks

    tracing.enable(collector_url)  # once, as a notebook does: its set-up is counted in neither
    tracer = hooks.ACTIVE

    def timed(traced: bool) -> float:
        hooks.ACTIVE = tracer if traced else None  # what `enable` and `disable` switch
        start = time.process_time()
        anyio.run(block)
        if traced:
            tracing.flush(10)  # the export thread's work for this block counts here
        spent = time.process_time() - start
        return spent / BLOCK

    anyio.run(block)  # warm: connections, caches, first imports
    tracing.flush(10)
    traced, untraced = [], []
    for n in range(ROUNDS):
        first = n % 2 == 0
        a, b = timed(first), timed(not first)
        traced.append(a if first else b)
        untraced.append(b if first else a)
    tracing.disable()
    ratios = [t / u for t, u in zip(traced, untraced, strict=True)]
    return statistics.median(traced), statistics.median(untraced), statistics.median(ratios)


def results() -> list[tuple[str, str, str, float | None]]:
    from lion_nb import Branch, iModel

    child, model_url, collector_url = _servers()
    try:
        model = iModel(provider="openai", model="m", base_url=model_url, api_key="bench-key-000")
        http = _cpu_per_call(Branch(system="You are terse.", chat_model=model), collector_url)
        offline = _cpu_per_call(Branch(chat_model="offline/auto"), collector_url)
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(10)
    return [
        (
            "traced communicate, loopback model, CPU per call",
            f"{http[0] * 1e6:.0f} us",
            "<= 1.05x",
            http[0] / http[1],
        ),
        ("  untraced (baseline)", f"{http[1] * 1e6:.0f} us", "", 1.0),
        (
            "traced communicate, offline model, CPU per call",
            f"{offline[0] * 1e6:.0f} us",
            "",
            offline[0] / offline[1],
        ),
        ("  untraced (baseline)", f"{offline[1] * 1e6:.0f} us", "", 1.0),
    ]


def main() -> None:
    for figure, value, target, ratio in results():
        extra = f" (x{ratio:.3f})" if ratio is not None else ""
        print(f"{figure:<52} {value:>12}{extra}  {target}")


if __name__ == "__main__":
    main()
