"""lion_nb side by side with lionagi 0.36: a turn, a new branch, the import.

Run: ``LION_BENCH_LIONAGI_PYTHON=/path/to/venv/bin/python python tests/bench/bench_lionagi.py``
with lionagi 0.36 installed in that interpreter's environment (a venv of its own: lionagi
is never a dependency of lion_nb). Without the variable, lionagi's side is skipped with a
note and lion_nb's figures are still printed.

Each side runs in its own interpreter, in alternating rounds (lion_nb first, then lionagi
first, ...), and each figure is the median of the rounds' medians; the ratio is lionagi's
time over lion_nb's. Before a figure's timed calls each side makes the same calls untimed for
the same half second, then times calls for the same half second (at least 500 of them):
counted in calls, lion_nb's warm-up would be over in a few milliseconds, before the
processor has left an idle machine's low clock, and its timed calls would fill a window
short enough for one slow moment of the machine to move its median. Measured:

- ``communicate()`` with history cleared, both on their own offline test model: lion_nb's
  function model answering "ok", lionagi's scripted endpoint (``lionagi.testing``, the
  model its own tests use) answering "ok" -- same work, no network. The script is rewound
  between calls, outside the timed part;
- ``Branch()`` with no arguments;
- ``from ... import Branch`` in a fresh interpreter with bytecode caches in place (as an
  installed package has them), beside two floors run by lion_nb's interpreter: ``from
  pydantic import BaseModel``, and pydantic with one model that has a ``Field``, its schema
  built on first use as lion_nb's are -- the first such model loads pydantic's field
  machinery, so that is the least an import whose Branch is a pydantic model can cost.

Targets: communicate >= 15x, ``Branch()`` >= 12x, the import within 10 ms of pydantic's
(with its one model).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIONAGI_PYTHON = "LION_BENCH_LIONAGI_PYTHON"
ROUNDS = 3

WORKER = r"""
import asyncio, json, statistics, sys, time

side, calls, builds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if side == "lion_nb":
    from lion_nb import Branch, iModel

    async def ok(m, **kw):  # async: a sync function hops to a worker thread
        return "ok"

    branch = Branch(chat_model=iModel(provider="offline", model="function", function=ok))
    def rewind():
        pass
    version = "lion_nb"
else:
    import lionagi
    from lionagi import Branch
    from lionagi.testing import TestBranch

    branch = TestBranch.from_text("ok")
    endpoint = TestBranch.scripted(branch)
    def rewind():
        endpoint.script.reset()
        endpoint.clear_calls()
    version = "lionagi " + lionagi.__version__

WARM_UP = 0.5  # seconds of calls before any is timed: the same time for both sides
WINDOW = 0.5  # seconds of timed calls (and at least `calls` of them): the same for both

async def turns():
    until = time.perf_counter() + WARM_UP
    while time.perf_counter() < until:
        rewind()
        await branch.communicate("hi", clear_messages=True)
    samples = []
    until = time.perf_counter() + WINDOW
    while len(samples) < calls or time.perf_counter() < until:
        rewind()
        start = time.perf_counter()
        answer = await branch.communicate("hi", clear_messages=True)
        samples.append(time.perf_counter() - start)
    assert answer == "ok" and len(branch.messages) == 2, (answer, len(branch.messages))
    return statistics.median(samples)

communicate = asyncio.run(turns())
until = time.perf_counter() + WARM_UP
while time.perf_counter() < until:
    Branch()
samples = []
until = time.perf_counter() + WINDOW
while len(samples) < builds or time.perf_counter() < until:
    start = time.perf_counter()
    Branch()
    samples.append(time.perf_counter() - start)
print(json.dumps({
    "version": version,
    "communicate": communicate,
    "branch": statistics.median(samples),
}))
"""

IMPORT = "import time\nt = time.perf_counter()\n{}\nprint(time.perf_counter() - t)"
STATEMENTS = {
    "lion_nb": "from lion_nb import Branch",
    "lionagi": "from lionagi import Branch",
    "pydantic": "from pydantic import BaseModel",
    # pydantic loads its field machinery (pydantic.fields, pydantic.types, annotated_types)
    # with the first model that has a field: the floor of any import whose Branch is one.
    # Its schema is built on first use, as lion_nb's models' are (``defer_build``): building
    # it is the first call's cost, not the import's
    "pydantic_model": (
        "from pydantic import BaseModel, ConfigDict, Field\n"
        "class Floor(BaseModel):\n"
        "    model_config = ConfigDict(defer_build=True)\n"
        "    x: int = Field(default=0)"
    ),
}


def _env(side: str) -> dict[str, str]:
    """The child's environment: bytecode caches written and read, and only lion_nb's side
    with this checkout on its path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
    env.pop("PYTHONPATH", None)
    if side == "lion_nb":
        env["PYTHONPATH"] = str(ROOT)
    return env


def _run(python: str, side: str, args: list[str], cwd: str) -> str:
    done = subprocess.run(
        [python, *args], capture_output=True, text=True, cwd=cwd, env=_env(side), timeout=600
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{side} side failed: {last}")
    return (done.stdout.strip().splitlines() or [""])[-1]


def import_s(python: str, side: str, keys: list[str], cwd: str, runs: int = 5) -> dict:
    """Median seconds of each statement of ``keys`` in ``runs`` fresh interpreters, the
    statements taking turns so that drift hits them alike."""
    samples: dict[str, list[float]] = {key: [] for key in keys}
    for _ in range(runs):
        for key in keys:
            code = IMPORT.format(STATEMENTS[key])
            samples[key].append(float(_run(python, side, ["-c", code], cwd)))
    return {key: statistics.median(values) for key, values in samples.items()}


def measure(calls: int = 500, builds: int = 2000) -> dict[str, dict]:
    """Per side: its version, and the median over rounds of each figure (seconds)."""
    sides = {"lion_nb": sys.executable}
    lionagi = os.environ.get(LIONAGI_PYTHON, "").strip()
    if lionagi:
        sides["lionagi"] = lionagi
    found: dict[str, dict] = {side: {"rounds": []} for side in sides}
    # lionagi writes its logs under the working directory when its interpreter exits
    with tempfile.TemporaryDirectory(prefix="lion-bench-") as cwd:
        for side, python in sides.items():  # bytecode caches in place before timing imports
            _run(python, side, ["-c", STATEMENTS[side]], cwd)
        for r in range(ROUNDS):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for side in order:
                python = sides[side]
                got = json.loads(
                    _run(python, side, ["-c", WORKER, side, str(calls), str(builds)], cwd)
                )
                keys = [side, "pydantic", "pydantic_model"] if side == "lion_nb" else [side]
                times = import_s(python, side, keys, cwd)
                got["import"] = times.pop(side)
                got.update(times)
                found[side]["rounds"].append(got)
    for data in found.values():
        rounds = data.pop("rounds")
        data["version"] = rounds[0]["version"]
        for key in rounds[0]:
            if key != "version":
                data[key] = statistics.median(r[key] for r in rounds)
    return found


def results(calls: int = 500, builds: int = 2000) -> list[tuple]:
    """Rows ``(figure, value, target, lionagi / lion_nb)`` for ``tests/bench/run_all.py``."""
    found = measure(calls, builds)
    ours = found["lion_nb"]
    theirs = found.get("lionagi")
    label = theirs["version"] if theirs else "lionagi"

    def pair(figure: str, key: str, unit: float, fmt: str, target: str) -> list[tuple]:
        rows = [(f"lion_nb {figure}", fmt.format(ours[key] * unit), target, None)]
        if theirs:
            ratio = theirs[key] / ours[key]
            rows.append((f"  {label} {figure}", fmt.format(theirs[key] * unit), "", ratio))
        return rows

    rows = [
        *pair("communicate(), history cleared", "communicate", 1e6, "{:.1f} us", ">= 15x"),
        *pair("Branch()", "branch", 1e6, "{:.1f} us", ">= 12x"),
        *pair("from ... import Branch", "import", 1e3, "{:.1f} ms", ""),
    ]
    floors = (
        ("pydantic", "from pydantic import BaseModel", ""),
        ("pydantic_model", "pydantic, one model with a Field, built on use (floor)", "<= +10 ms"),
    )
    for key, figure, target in floors:
        over = (ours["import"] - ours[key]) * 1e3
        value = f"{ours[key] * 1e3:.1f} ms (lion_nb {over:+.1f} ms)"
        rows.append((f"  {figure}", value, target, None))
    if not theirs:
        rows.append((f"(lionagi side skipped: set {LIONAGI_PYTHON} to its Python)", "", "", None))
    return rows


def main() -> None:
    if not os.environ.get(LIONAGI_PYTHON):
        print(f"{LIONAGI_PYTHON} is not set: lionagi's side is skipped", file=sys.stderr)
    for figure, value, target, ratio in results():
        shown = f"{ratio:6.2f}x" if ratio is not None else ""
        print(f"{figure:<48} {value:>26} {shown:>8}  {target}")


if __name__ == "__main__":
    main()
