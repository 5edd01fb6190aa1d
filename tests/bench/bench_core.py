"""Core benchmarks: import time, message adds, serialization, per-turn overhead.

Run: ``python tests/bench/bench_core.py``. Prints figures measured in this one run, with the
targets beside them; nothing here is a pass/fail assertion.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import anyio

N_MESSAGES = 10_000


def import_time_ms(statement: str = "from lion_nb import Branch", runs: int = 7) -> float:
    """Median milliseconds for ``statement`` in a fresh interpreter, with bytecode caches in
    place as an installed package has them (``PYTHONDONTWRITEBYTECODE`` would make every
    run compile lion_nb's sources while pydantic's come precompiled)."""
    code = (
        f"import time; t = time.perf_counter(); {statement}; print((time.perf_counter() - t) * 1e3)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", statement], check=True, env=env)  # write the caches
    samples = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
            ).stdout
        )
        for _ in range(runs)
    ]
    return statistics.median(samples)


def import_times_ms() -> tuple[float, float]:
    """(``from lion_nb import Branch``, ``from pydantic import BaseModel``), interleaved so
    that drift on a shared machine hits both alike: pydantic is the floor of the import."""
    ours, floor = [], []
    for _ in range(3):
        ours.append(import_time_ms(runs=3))
        floor.append(import_time_ms("from pydantic import BaseModel", runs=3))
    return statistics.median(ours), statistics.median(floor)


def add_messages_us() -> float:
    from lion_nb import Branch

    branch = Branch()
    texts = [f"message number {i}" for i in range(N_MESSAGES)]
    start = time.perf_counter()
    for text in texts:
        branch.msgs.add_message(instruction=text)
    return (time.perf_counter() - start) / N_MESSAGES * 1e6


def serialization_ms() -> tuple[float, float]:
    from lion_nb import Branch

    branch = Branch(system="bench")
    for i in range(N_MESSAGES // 2):
        branch.msgs.add_message(instruction=f"question {i}")
        branch.msgs.add_message(assistant_response=f"answer {i}")
    dumps, loads = [], []
    for _ in range(5):
        t = time.perf_counter()
        data = branch.to_dict()
        dumps.append(time.perf_counter() - t)
        t = time.perf_counter()
        Branch.from_dict(data)
        loads.append(time.perf_counter() - t)
    return statistics.median(dumps) * 1e3, statistics.median(loads) * 1e3


async def _ok(messages, **kw):
    return "ok"


def _function_model(function=_ok):
    """An answer that costs nothing, so the figures are lion_nb's own work. An async function:
    a sync one runs in a worker thread (so a cancellation can abandon it), whose hop
    `sync_function_hop_us` measures on its own."""
    from lion_nb import iModel

    return iModel(provider="offline", model="function", function=function)


def communicate_overhead_us(calls: int = 2000, function=_ok) -> float:
    from lion_nb import Branch

    branch = Branch(chat_model=_function_model(function))

    async def run() -> list[float]:
        samples = []
        for _ in range(calls):
            t = time.perf_counter()
            await branch.communicate("hi", clear_messages=True)
            samples.append(time.perf_counter() - t)
        return samples

    return statistics.median(anyio.run(run)[calls // 10 :]) * 1e6


def sync_function_hop_us() -> float:
    """What a sync function model adds per call over an async one: the worker-thread hop."""
    sync = [communicate_overhead_us(1000, lambda messages, **kw: "ok") for _ in range(3)]
    native = [communicate_overhead_us(1000) for _ in range(3)]
    return statistics.median(sync) - statistics.median(native)


def communicate_growth(calls: int = 1000) -> tuple[float, float]:
    """Median of the first 100 and the last 100 calls while history grows to 2,000 messages
    (after a warm-up on another branch, so one-time costs do not count as the first calls)."""
    from lion_nb import Branch

    warm = Branch(chat_model=_function_model())
    for _ in range(50):
        anyio.run(warm.communicate, "warm up")
    branch = Branch(chat_model=_function_model())

    async def run() -> list[float]:
        samples = []
        for _ in range(calls):
            t = time.perf_counter()
            await branch.communicate("hi")
            samples.append(time.perf_counter() - t)
        return samples

    samples = anyio.run(run)
    return statistics.median(samples[:100]) * 1e6, statistics.median(samples[-100:]) * 1e6


def results() -> list[tuple[str, str, str, float | None]]:
    """The figures as rows ``(figure, value, target, ratio to a raw baseline or None)``, for
    ``tests/bench/run_all.py``."""
    dump_ms, load_ms = serialization_ms()
    first, last = communicate_growth()
    ours, floor = import_times_ms()
    return [
        ("from lion_nb import Branch", f"{ours:.1f} ms", "<= 100 ms", ours / floor),
        ("  from pydantic import BaseModel (its floor)", f"{floor:.1f} ms", "", 1.0),
        ("add one message (of 10,000)", f"{add_messages_us():.2f} us", "<= 15 us", None),
        ("to_dict, 10,000 messages", f"{dump_ms:.1f} ms", "<= 40 ms", None),
        ("from_dict, 10,000 messages", f"{load_ms:.1f} ms", "<= 150 ms", None),
        (
            "communicate(), history cleared",
            f"{communicate_overhead_us():.1f} us",
            "<= 150 us",
            None,
        ),
        ("communicate() at 2,000 messages / at the start", f"{last / first:.2f}x", "<= 2x", None),
        ("  a sync function model's thread hop", f"{sync_function_hop_us():.1f} us", "", None),
    ]


def main() -> None:
    print(f"from lion_nb import Branch     {import_time_ms():8.1f} ms   (target <= 100 ms)")
    print(f"add one message (of 10,000)    {add_messages_us():8.2f} us   (target <= 15 us)")
    dump_ms, load_ms = serialization_ms()
    print(f"to_dict, 10,000 messages       {dump_ms:8.1f} ms   (target <= 40 ms)")
    print(f"from_dict, 10,000 messages     {load_ms:8.1f} ms   (target <= 150 ms)")
    print(
        f"communicate(), history cleared {communicate_overhead_us():8.1f} us   (target <= 150 us)"
    )
    print(f"a sync function's thread hop   {sync_function_hop_us():8.1f} us")
    first, last = communicate_growth()
    print(
        f"communicate(), growing to 2,000 messages: first 100 {first:.1f} us, last 100 "
        f"{last:.1f} us, ratio {last / first:.2f}x   (target <= 2x)"
    )


if __name__ == "__main__":
    main()
