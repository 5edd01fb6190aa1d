"""Machine instructions per call, counted by valgrind: a figure a busy machine cannot move.

Run: ``python tests/bench/bench_instructions.py`` (needs ``valgrind``; a few minutes). The
CPU ratios of `bench_floor` and `bench_gc` drift by several per cent from run to run on a
shared virtual machine; the number of instructions a call executes barely moves. Each path
(a raw ``httpx.AsyncClient.post``, ``iModel.invoke``, ``Branch.chat``; the same payload to
the same loopback server, in a child process that valgrind does not follow) runs in two
fresh interpreters under ``valgrind --tool=callgrind``, both warmed up past the branch log's
capacity, one making ``N`` more calls: the difference over ``N`` is the instructions a call
costs in this process. Time is not the same thing: instructions that miss the caches cost
more, so the CPU ratios run higher than these. A report, not a test: it asserts nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CALLS = 300
WARMUP = 1100  # past `DataLoggerConfig.capacity`: every call then also drops the oldest log

CHILD = """
import sys
sys.path.insert(0, {root!r})
sys.path.insert(0, {here!r})
import anyio
from bench_gc import Server, branch_chat, imodel_invoke, raw_httpx

async def main(url):
    once, close = await {{"raw": raw_httpx, "invoke": imodel_invoke, "chat": branch_chat}}[{path!r}](url)
    for _ in range({calls}):
        await once()
    await close()

with Server() as server:
    anyio.run(main, server.url)
"""
PATHS = {
    "raw": "raw httpx.AsyncClient.post",
    "invoke": "iModel.invoke",
    "chat": "Branch.chat",
}


def instructions(path: str, calls: int) -> int:
    """Instructions a fresh interpreter executes making ``calls`` calls of ``path``."""
    code = CHILD.format(root=str(ROOT), here=str(HERE), path=path, calls=calls)
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    done = subprocess.run(
        [*command, sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        check=True,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"valgrind printed no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_call(path: str) -> float:
    return (instructions(path, WARMUP + CALLS) - instructions(path, WARMUP)) / CALLS


def results() -> list[tuple]:
    """Rows ``(figure, value, target, ratio to the raw post)`` for ``run_all.py``."""
    if shutil.which("valgrind") is None:
        return [("instructions per call", "valgrind is not installed", "", None)]
    counts = {path: per_call(path) for path in PATHS}
    return [
        (
            f"{name}, instructions per call",
            f"{counts[path] / 1e6:.3f} M",
            "",
            counts[path] / counts["raw"],
        )
        for path, name in PATHS.items()
    ]


def main() -> None:
    for figure, value, _target, ratio in results():
        extra = f"  {ratio:.3f}x" if ratio is not None else ""
        print(f"{figure:<45} {value:>12}{extra}")


if __name__ == "__main__":
    main()
