"""Session store benchmarks: the autosave cost of one message, and restoring a session.

Run: ``python tests/bench/bench_store.py``. Prints figures measured in this one run, with the
targets beside them; nothing here is a pass/fail assertion.

- autosave, on the event loop: what recording one message costs with autosave on, minus what
  it costs with autosave off, at 10 and at 10,000 messages of history (target: flat, and
  under 1 ms);
- autosave, to the disk: recording one message and waiting until it is committed;
- a checkpoint with nothing to do, and after a turn's in-place edits;
- restore: ``SessionStore.load`` of a 10,000-message session beside ``Branch.from_dict`` of
  the same branch's ``to_dict()`` (target: under ``from_dict`` + 50 %). The three are timed
  interleaved, each run after a full ``gc.collect()``, medians of `RUNS`: run back to back,
  each run would pay the cyclic collector for the objects the previous run left behind (a
  restored session is larger than a branch), and whichever was timed last paid the most.
"""

from __future__ import annotations

import gc
import statistics
import tempfile
import time
from pathlib import Path

from lion_nb import Branch, Session
from lion_nb.store import SessionStore

MEASURED = 1000
RUNS = 7  # restores timed, each of the three
TEXT = (
    "A paragraph of a realistic answer: the model explains the result, cites the cell it "
    "came from and suggests the next step, in about three hundred characters of text. " * 2
)


def fill(branch: Branch, n: int) -> None:
    for i in range(n - len(branch.messages)):
        if i % 2 == 0:
            branch.msgs.add_message(instruction=f"question {i}: {TEXT[:120]}")
        else:
            branch.msgs.add_message(
                assistant_response=TEXT,
                metadata={"usage": {"input_tokens": 100 + i, "output_tokens": 80}, "model": "m"},
            )


def add_cost_us(branch: Branch) -> float:
    """Median time of recording one message (instruction + answer pairs), in microseconds."""
    samples = []
    for i in range(MEASURED):
        start = time.perf_counter()
        if i % 2 == 0:
            branch.msgs.add_message(instruction=f"more {i}")
        else:
            branch.msgs.add_message(assistant_response=TEXT, metadata={"model": "m"})
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def autosave_cost(history: int, folder: Path) -> dict[str, float]:
    plain = Session()
    fill(plain.default_branch, history)
    without = add_cost_us(plain.default_branch)

    store = SessionStore(folder / f"cost-{history}.db")
    session = Session()
    saver = store.autosave(session)
    fill(session.default_branch, history)
    saver.checkpoint()
    store.flush()
    with_autosave = add_cost_us(session.default_branch)
    store.flush()

    start = time.perf_counter()  # one message at a time, each waited for until committed
    for i in range(MEASURED):
        session.default_branch.msgs.add_message(instruction=f"committed {i}")
        store.flush()
    commit = (time.perf_counter() - start) / MEASURED * 1e6

    start = time.perf_counter()
    for _ in range(20):
        saver.checkpoint()
    idle_checkpoint = (time.perf_counter() - start) / 20 * 1e6

    branch = session.default_branch
    start = time.perf_counter()
    for message in list(branch.messages)[-4:]:  # a turn's cell tags, added after recording
        message.metadata["lion"] = {"cell_id": "c"}
    branch.messages[-1].sender = "x"  # and a field assigned: every revision is compared
    saver.checkpoint()
    tag_checkpoint = (time.perf_counter() - start) * 1e6
    store.close()
    return {
        "without": without,
        "with": with_autosave,
        "cost": with_autosave - without,
        "commit": commit,
        "idle_checkpoint": idle_checkpoint,
        "tag_checkpoint": tag_checkpoint,
    }


def restore_times(folder: Path, n: int = 10_000) -> tuple[float, float, float]:
    session = Session()
    branch = session.default_branch
    fill(branch, n)
    branch.log_manager.log({"event": "api_call"})
    store = SessionStore(folder / "restore.db")
    store.save(session)
    data = branch.to_dict()
    json_data = branch.to_dict(mode="json")
    sid = str(session.id)
    timed = {
        "from_dict": lambda: Branch.from_dict(data),
        "from_json": lambda: Branch.from_dict(json_data),
        "restore": lambda: store.load(sid),
    }
    samples: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(RUNS):  # interleaved, each from a collected heap: see the docstring
        for name, fn in timed.items():
            gc.collect()
            start = time.perf_counter()
            built = fn()
            samples[name].append(time.perf_counter() - start)
            del built
    assert store.load(sid).to_dict() == session.to_dict()
    store.close()
    median = {name: statistics.median(s) * 1e3 for name, s in samples.items()}
    return median["from_dict"], median["from_json"], median["restore"]


def measure() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        small, large = autosave_cost(10, folder), autosave_cost(10_000, folder)
        from_dict, from_json, restore = restore_times(folder)
    return {
        "small": small,
        "large": large,
        "from_dict": from_dict,
        "from_json": from_json,
        "restore": restore,
    }


def results() -> list[tuple]:
    """Rows for ``run_all.py``: (figure, value, target, ratio)."""
    m = measure()
    small, large = m["small"], m["large"]
    return [
        ("autosave on the loop, 10 messages", f"{small['cost']:.1f} µs", "< 1,000 µs", None),
        (
            "autosave on the loop, 10,000 messages",
            f"{large['cost']:.1f} µs",
            "flat, < 1,000 µs",
            large["cost"] / small["cost"],
        ),
        ("recorded and committed, 10,000 messages", f"{large['commit']:.0f} µs", "", None),
        (
            "restore 10,000 messages vs Branch.from_dict",
            f"{m['restore']:.0f} ms",
            "< from_dict + 50 %",
            m["restore"] / m["from_dict"],
        ),
    ]


def main() -> None:
    m = measure()
    small, large = m["small"], m["large"]
    print("autosave, per message recorded (medians of", MEASURED, "messages):")
    for label, r in (("10 messages of history", small), ("10,000 messages", large)):
        print(
            f"  {label:>24}: on the loop {r['cost']:7.1f} µs added "
            f"({r['without']:.1f} µs without autosave, {r['with']:.1f} µs with); "
            f"recorded and committed, one by one {r['commit']:7.1f} µs"
        )
    print(
        f"  flat? loop cost at 10,000 / at 10: {large['cost'] / small['cost']:.2f}x; "
        f"commit: {large['commit'] / small['commit']:.2f}x  (target: flat, under 1,000 µs)"
    )
    print(
        f"  checkpoint with nothing to do: {small['idle_checkpoint']:.1f} µs (10), "
        f"{large['idle_checkpoint']:.1f} µs (10,000); after a turn's tags and an assigned "
        f"field: {small['tag_checkpoint']:.0f} µs (10), {large['tag_checkpoint']:.0f} µs "
        "(10,000: every revision compared)"
    )
    print(f"restore of a 10,000-message session (interleaved, medians of {RUNS}):")
    print(
        f"  SessionStore.load {m['restore']:.1f} ms; Branch.from_dict(to_dict()) "
        f"{m['from_dict']:.1f} ms (of the JSON-mode dict: {m['from_json']:.1f} ms); "
        f"load / from_dict = {m['restore'] / m['from_dict']:.2f}  (target: under 1.50)"
    )


if __name__ == "__main__":
    main()
