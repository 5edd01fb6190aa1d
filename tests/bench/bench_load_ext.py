"""How long ``%load_ext lion_nb`` adds to a running IPython shell (cold, in fresh processes).

Run: ``python tests/bench/bench_load_ext.py [runs]``. Each run starts a new interpreter, starts
an IPython shell, then times ``%load_ext lion_nb`` alone and counts the modules it imported.
The first ``%%lion`` turn (which loads the core and the default model) is timed separately,
since that is where the deferred cost goes. Target for the extension load: <= 150 ms.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

PROBE = textwrap.dedent(
    """
    import json, sys, time
    from IPython.testing.globalipapp import start_ipython
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    start_ipython()
    ip = InteractiveShell.instance()
    before = len(sys.modules)
    t0 = time.perf_counter()
    ip.run_line_magic("load_ext", "lion_nb")
    load = time.perf_counter() - t0
    modules = len(sys.modules) - before
    t0 = time.perf_counter()
    with capture_output():
        ip.run_cell("%%lion -q\\nhello", store_history=True)
    first = time.perf_counter() - t0
    print(json.dumps({"load": load, "modules": modules, "first_turn": first}))
    """
)


def measure(runs: int = 7, *, bytecode: bool = True) -> dict[str, float]:
    """Median figures over ``runs`` fresh processes. With ``bytecode`` the modules' compiled
    files are cached first (as after ``pip install``); without, every run compiles source."""
    env = dict(os.environ)
    cache = tempfile.mkdtemp(prefix="lion-bench-pyc-")
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    cmd = [sys.executable, "-c", PROBE]
    if bytecode:  # one warm-up run writes the bytecode cache
        subprocess.run(cmd, capture_output=True, check=True, timeout=120, env=env)
    samples = []
    for _ in range(runs):
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120, env=env)
        samples.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {
        "load_ms": statistics.median(s["load"] for s in samples) * 1000,
        "modules": statistics.median(s["modules"] for s in samples),
        "first_turn_ms": statistics.median(s["first_turn"] for s in samples) * 1000,
    }


def results(runs: int = 7) -> list[tuple]:
    """Rows ``(figure, value, target, ratio)`` for ``tests/bench/run_all.py``."""
    cached = measure(runs, bytecode=True)
    cold = measure(runs, bytecode=False)
    return [
        ("%load_ext lion_nb, bytecode cached", f"{cached['load_ms']:.1f} ms", "<= 150 ms", None),
        ("%load_ext lion_nb, no bytecode cache", f"{cold['load_ms']:.1f} ms", "", None),
        ("  modules it imports", f"{cached['modules']:.0f}", "", None),
        ("first %%lion turn (loads the core)", f"{cached['first_turn_ms']:.0f} ms", "", None),
    ]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    for bytecode in (True, False):
        r = measure(runs, bytecode=bytecode)
        how = "bytecode cached, as installed" if bytecode else "no bytecode cache"
        print(
            f"%load_ext lion_nb ({how}): {r['load_ms']:.1f} ms median of {runs} fresh processes, "
            f"{r['modules']:.0f} modules imported (target <= 150 ms; peers: 500 ms, 720 ms)"
        )
        print(
            f"  first %%lion turn (loads the core and the offline model): {r['first_turn_ms']:.0f} ms"
        )


if __name__ == "__main__":
    main()
