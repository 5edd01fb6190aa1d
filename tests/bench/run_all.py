"""Every benchmark in ``tests/bench``, one table: each figure, its target, the raw-baseline ratio.

Run: ``python tests/bench/run_all.py`` (``--only core,batch`` for some of them;
``--markdown`` prints the table as the README shows it, so the README's copy comes from one
run). Each
``bench_*.py`` runs in a fresh interpreter, one after the other, so that no benchmark's
imports, caches or event loops skew another's. A module with a ``results()`` function gives
its rows as ``(figure, value, target, ratio)``: ``value`` carries its unit, ``target`` is
the goal as text ("" when none), ``ratio`` is the figure over its raw baseline (``None``
when there is none). A module without one is run as a script and its printed lines are
shown as they are. A benchmark that fails is reported in the table and the others still run.

Nothing is asserted: the figures depend on the machine and on what else it is doing. The
header names the date, the machine and Python, so a pasted table says where it was measured.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

PROBE = """
import json, sys
sys.path.insert(0, {here!r})
sys.path.insert(0, {root!r})
import {module} as bench
rows = bench.results()
print("\\n@@ROWS@@" + json.dumps([list(r) for r in rows]))
"""


def benches(only: list[str]) -> list[Path]:
    found = sorted(HERE.glob("bench_*.py"))
    if only:
        found = [p for p in found if p.stem.removeprefix("bench_") in only or p.stem in only]
    return found


def has_results(path: Path) -> bool:
    return "\ndef results(" in path.read_text(encoding="utf-8")


def run_one(path: Path, timeout: float) -> tuple[list[list], float]:
    """Rows of one benchmark (``[figure, value, target, ratio]``) and the seconds it took."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    start = time.perf_counter()
    if has_results(path):
        code = PROBE.format(here=str(HERE), root=str(ROOT), module=path.stem)
        cmd = [sys.executable, "-c", code]
    else:
        cmd = [sys.executable, str(path)]
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env
        )
    except subprocess.TimeoutExpired:
        return [["(did not finish)", f"> {timeout:.0f} s", "", None]], time.perf_counter() - start
    took = time.perf_counter() - start
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return [["(failed)", last[:80], "", None]], took
    if "@@ROWS@@" in done.stdout:
        return json.loads(done.stdout.rsplit("@@ROWS@@", 1)[1]), took
    lines = [line.rstrip() for line in done.stdout.splitlines() if line.strip()]
    return [[line, "", "", None] for line in lines], took


def header() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ""
    if hasattr(os, "getloadavg"):
        load = f", load {os.getloadavg()[0]:.1f}"
    return (
        f"lion_nb benchmarks · {datetime.date.today().isoformat()} · {cpu} · "
        f"{os.cpu_count()} cores{load} · Python {platform.python_version()} · "
        f"{platform.system()} {platform.release()}"
    )


def table(results: list[tuple[str, list[list], float]]) -> str:
    rows = [("benchmark", "figure", "value", "target", "ratio")]
    for name, found, _took in results:
        for i, (figure, value, target, ratio) in enumerate(found):
            shown = f"{ratio:.2f}x" if isinstance(ratio, (int, float)) else ""
            rows.append((name if i == 0 else "", figure, value, target, shown))
    widths = [max(len(str(r[c])) for r in rows) for c in range(5)]
    out = []
    for i, row in enumerate(rows):
        out.append(
            "  ".join(
                str(cell).rjust(w) if c in (2, 4) else str(cell).ljust(w)
                for c, (cell, w) in enumerate(zip(row, widths, strict=True))
            ).rstrip()
        )
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def markdown(results: list[tuple[str, list[list], float]]) -> str:
    """The table in Markdown, one row a figure (the README's benchmark table)."""
    out = ["| benchmark | figure | value | target | ratio |", "| --- | --- | --- | --- | --- |"]
    for name, found, _took in results:
        for i, (figure, value, target, ratio) in enumerate(found):
            shown = f"{ratio:.2f}x" if isinstance(ratio, (int, float)) else ""
            shown_figure = figure.strip()
            if figure.startswith(" "):  # a baseline or detail of the figure above it
                shown_figure = "↳ " + shown_figure
            cells = (name if i == 0 else "", shown_figure, value, target, shown)
            out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated names (core, batch, ...)")
    parser.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per benchmark")
    args = parser.parse_args(argv)
    chosen = benches([n.strip() for n in args.only.split(",") if n.strip()])
    if not chosen:
        print(f"no benchmark in {HERE} matches {args.only!r}", file=sys.stderr)
        return 2
    print(header(), flush=True)
    results = []
    for path in chosen:
        name = path.stem.removeprefix("bench_")
        print(f"  running {name} ...", file=sys.stderr, flush=True)
        found, took = run_one(path, args.timeout)
        results.append((name, found, took))
    print(markdown(results) if args.markdown else table(results))
    total = sum(took for _n, _f, took in results)
    print(f"({len(results)} benchmarks in {total:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
