"""`map` at scale: items as rows, autosave, memory, a million-item provider job, big files.

Run: ``python tests/bench/bench_map_scale.py`` (``--large`` adds the 1,000,000-item provider
job and the explorer over it, and makes the files 1 GB; not for CI; ``--files`` runs the file
scenarios alone). Each figure is measured in a
fresh interpreter (peak RSS from ``getrusage``, less the RSS after imports), in this one run:

- ``map`` over 10,000 offline items in a session autosaved to a store, against the same map
  in a plain ``Session()`` (target: at most 1.5x), and the time per item of a fourth map in
  that session against the first (target: about 1x: it does not grow with the runs there);
- 100,000 live items on the offline model: peak RSS growth (target: at most 200 MB) and the
  time per item (before: 236-279 us per item in a 2,000-8,000 item run);
- ``SessionExplorer`` and ``%lion branches`` of a session holding the run: the time to build
  (target: at most 100 ms; before, markdown-it's first import was most of it) and the
  widget state's size (target: at most 100 KiB);
- ``map`` over a CSV file and a Parquet file generated in /tmp: peak RSS growth beside the
  file's size (it never holds the whole input);
- with ``--large``: 1,000,000 items through ``via="batch"`` against the loopback batch
  service in its own process, split at 50,000 requests: peak RSS growth (target: at most
  500 MB), the store's bytes per item, and item 765,432 read back by index.

This is a report, not a test: it asserts nothing about timing.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _offline_session(store: Any = None) -> Any:
    from lion_nb import Session, iModel

    session = Session()
    session.default_branch.chat_model = iModel(provider="offline", model="auto")
    session.default_branch.msgs.add_message(system="Label the row.")
    if store is not None:
        store.autosave(session)
    return session


def _timed_map(session: Any, n: int, **kw: Any) -> tuple[float, Any]:
    import anyio

    run = session.map((f"row {i}" for i in range(n)), "{item}", concurrency=16, **kw)
    start = time.perf_counter()
    anyio.run(run.wait)
    return time.perf_counter() - start, run


# -- scenarios, each in its own interpreter ------------------------------------------------------
def scenario_autosave(n: int = 10_000) -> dict[str, Any]:
    from lion_nb.store import open_store

    plain, _ = _timed_map(_offline_session(), n)
    folder = tempfile.mkdtemp()
    store = open_store(Path(folder) / "sessions.db")
    session = _offline_session(store)
    first, _ = _timed_map(session, n)
    for _ in range(2):
        _timed_map(session, n)
    fourth, _ = _timed_map(session, n)
    store.flush()
    return {"plain_us": plain / n * 1e6, "store_us": first / n * 1e6, "fourth_us": fourth / n * 1e6}


def scenario_live(n: int = 100_000) -> dict[str, Any]:
    from lion_nb.notebook.commands.registry import _branches  # noqa: F401 - imported first
    from lion_nb.widgets import SessionExplorer

    session = _offline_session()
    before = _rss_mb()
    elapsed, run = _timed_map(session, n)
    peak = _peak_mb() - before
    start = time.perf_counter()
    explorer = SessionExplorer(session)
    built = time.perf_counter() - start
    state = len(json.dumps(explorer.tree.get_state(), default=str))
    start = time.perf_counter()  # what the first build paid before a plain line skipped it
    __import__("lion_nb.rendering", fromlist=["markdown_html"]).markdown_html("*one*")
    markdown = time.perf_counter() - start
    start = time.perf_counter()
    lines = explorer.static_text()
    text = time.perf_counter() - start
    return {
        "items": n,
        "us_per_item": elapsed / n * 1e6,
        "peak_mb": peak,
        "explorer_ms": built * 1e3,
        "explorer_state_kib": state / 1024,
        "markdown_ms": markdown * 1e3,
        "static_ms": text * 1e3,
        "branches": _branches_command(session),
        "run_line": lines.splitlines()[-1],
        "session_branches": len(session.branches),
        "rows_kib": run.rows.bytes / 1024,
    }


def scenario_file(kind: str, mb: int) -> dict[str, Any]:
    import anyio

    path = Path(tempfile.gettempdir()) / f"lion_nb_bench_rows.{kind}"
    code = (  # written by another interpreter: its memory is not this one's peak
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); from pathlib import Path; "
        f"from tests.bench.bench_map_scale import _write_rows; "
        f"print(_write_rows(Path({str(path)!r}), {kind!r}, {mb}))"
    )
    written = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    rows = int(written.stdout.strip())
    session = _offline_session()
    before = _rss_mb()
    start = time.perf_counter()
    out = anyio.run(session.map(str(path), "Label {item[id]}", concurrency=16).wait)
    elapsed = time.perf_counter() - start
    peak = _peak_mb() - before
    size = path.stat().st_size / 2**20
    path.unlink()
    return {"kind": kind, "file_mb": size, "rows": rows, "peak_mb": peak, "s": elapsed,
            "out_rows": len(out)}  # fmt: skip


def _write_rows(path: Path, kind: str, mb: int) -> int:
    """``mb`` of rows with an id and a 10 KB text each (the prompt uses only the id)."""
    text = "x" * 10_000
    rows = max(1, mb * 2**20 // 10_020)
    if kind == "csv":
        with path.open("w") as f:
            f.write("id,text\n")
            for i in range(rows):
                f.write(f"{i},{text}\n")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        with pq.ParquetWriter(path, pa.schema([("id", pa.int64()), ("text", pa.string())]),
                              compression="none", use_dictionary=False) as writer:  # fmt: skip
            for start in range(0, rows, 2_000):
                ids = list(range(start, min(rows, start + 2_000)))
                writer.write_table(pa.table({"id": ids, "text": [text] * len(ids)}))
    return rows


BATCH_SERVER = """
import sys, time
sys.path.insert(0, {root!r})
from tests.fakes.http_server import FakeProvider
from tests.fakes.batch_api import BatchEmulator
from tests.fakes import http_server
http_server._Handler.timeout = 3600
fake = FakeProvider()
BatchEmulator(fake, polls_to_finish=1)
fake.start()
print(fake.openai_url, flush=True)
sys.stdin.read()
"""


def _branches_command(session: Any) -> tuple[float, float]:
    """``%lion branches`` of ``session``: the time to build its table and its HTML's size."""
    from types import SimpleNamespace

    from lion_nb.notebook.commands.registry import _branches

    state = SimpleNamespace(session=session, branch=lambda: session.default_branch)
    start = time.perf_counter()
    table = _branches(SimpleNamespace(state=state), None)  # type: ignore[arg-type]
    html = table._repr_html_()
    return (time.perf_counter() - start) * 1e3, len(html) / 1024


def scenario_million(n: int = 1_000_000, streamed: bool = False) -> dict[str, Any]:
    import anyio

    from lion_nb import Session, iModel
    from lion_nb.store import open_store

    server = subprocess.Popen([sys.executable, "-c", BATCH_SERVER.format(root=str(ROOT))],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    url = server.stdout.readline().strip()  # type: ignore[union-attr]
    try:
        folder = tempfile.mkdtemp()
        os.environ["LION_HOME"] = folder
        store = open_store(Path(folder) / "sessions.db")
        session = Session()
        session.default_branch.chat_model = iModel(provider="openai", model="m", base_url=url,
                                                   api_key="sk-bench")  # fmt: skip
        store.autosave(session)
        session.default_branch.msgs.add_message(system="Label.")
        before = _rss_mb()
        data = (i for i in range(n)) if streamed else range(n)  # a generator is read as sent
        run = session.map(data, "{item}", via="batch", poll_interval=1, max_tokens=1)
        start = time.perf_counter()
        anyio.run(run.wait)
        elapsed = time.perf_counter() - start
        peak = _peak_mb() - before
        store.flush()
        rows, size = (
            __import__("lion_nb.store.items", fromlist=["ItemSink"])
            .ItemSink(store)
            .count(str(session.id), run.name)
        )
        start = time.perf_counter()
        probe = n * 765_432 // 1_000_000
        item = run.branch(probe)
        read_ms = (time.perf_counter() - start) * 1e3
        from lion_nb.widgets import SessionExplorer

        start = time.perf_counter()
        explorer = SessionExplorer(session)
        built = (time.perf_counter() - start) * 1e3
        state = len(json.dumps(explorer.tree.get_state(), default=str)) / 1024
        listed_ms, listed_kib = _branches_command(session)
        return {"items": n, "batches": len(run.batch_ids), "s": elapsed, "peak_mb": peak,
                "store_bytes_per_item": size / max(rows, 1), "rows": rows,
                "probe": probe, "item_765432": item.messages[-1].response, "read_ms": read_ms,
                "explorer_ms": built, "explorer_state_kib": state, "branches_ms": listed_ms,
                "branches_kib": listed_kib, "streamed": streamed,
                "failed": len(run.failures)}  # fmt: skip
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:  # a million batched requests take a while to free
            server.kill()
            server.wait()


def _in_fresh(name: str, *args: Any) -> dict[str, Any]:
    code = (
        f"import sys, json; sys.path.insert(0, {str(ROOT)!r}); "
        f"from tests.bench import bench_map_scale as b; "
        f"print(json.dumps(b.scenario_{name}(*{list(args)!r})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _files(mb: int) -> None:
    for kind in ("csv", "parquet"):
        f = _in_fresh("file", kind, mb)
        if "error" in f:
            print(f"map over a {kind} file: {f['error']}")
            continue
        print(f"map over a {f['file_mb']:.0f} MB {kind} file ({f['rows']:,} rows): peak RSS "
              f"+{f['peak_mb']:.0f} MB, {f['s']:.1f} s")  # fmt: skip


def main() -> None:
    large = "--large" in sys.argv
    if "--files" in sys.argv:
        _files(1024 if large else 200)
        return
    auto = _in_fresh("autosave")
    print(f"map of 10,000 offline items, plain Session: {auto['plain_us']:.0f} us/item")
    print(f"  autosaved to a store: {auto['store_us']:.0f} us/item "
          f"({auto['store_us'] / auto['plain_us']:.2f}x; target <= 1.5x)")  # fmt: skip
    print(f"  the fourth such map in that session: {auto['fourth_us']:.0f} us/item "
          f"({auto['fourth_us'] / auto['store_us']:.2f}x the first; target ~1x)")  # fmt: skip
    live = _in_fresh("live")
    print(f"100,000 live offline items: {live['us_per_item']:.0f} us/item "
          f"(before: 236-279), peak RSS +{live['peak_mb']:.0f} MB (target <= 200), "
          f"rows {live['rows_kib'] / 1024:.0f} MB compressed, session branches "
          f"{live['session_branches']}")  # fmt: skip
    print(
        f"  SessionExplorer built in {live['explorer_ms']:.1f} ms (target <= 100; before: "
        f"{live['explorer_ms'] + live['markdown_ms']:.1f} ms, with markdown-it's first import "
        f"for a one-line system prompt), state {live['explorer_state_kib']:.1f} KiB "
        f"(target <= 100); {live['run_line']}; %lion branches {live['branches'][0]:.1f} ms, "
        f"{live['branches'][1]:.1f} KiB"
    )
    _files(1024 if large else 200)
    if large:
        for streamed in (False, True):
            m = _in_fresh("million", 1_000_000, streamed)
            given = "a generator" if streamed else "a range"
            if "error" in m:
                print(f"1,000,000 items via batch, from {given}: {m['error']}")
                continue
            print(f"1,000,000 items via='batch' from {given} ({m['batches']} provider batches): "
                  f"{m['s']:.0f} s, peak RSS +{m['peak_mb']:.0f} MB (target <= 500), store "
                  f"{m['store_bytes_per_item']:.0f} bytes/item, item {m['probe']:,} read in "
                  f"{m['read_ms']:.1f} ms: {m['item_765432']!r}; SessionExplorer "
                  f"{m['explorer_ms']:.1f} ms, {m['explorer_state_kib']:.1f} KiB; %lion "
                  f"branches {m['branches_ms']:.1f} ms, {m['branches_kib']:.1f} KiB")  # fmt: skip


if __name__ == "__main__":
    main()
