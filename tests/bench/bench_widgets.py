"""Widget benchmarks: opening a long conversation, and comm traffic while streaming.

Run: ``python tests/bench/bench_widgets.py``. Prints figures measured in this one run, with
the targets beside them; nothing here is a pass/fail assertion.

- build + first render of a `BranchView` (its window of entries and its static renderings)
  at 100 and at 10,000 messages; target: the second within 1.5x of the first;
- the comm messages a `BranchView` and a `TurnWidget` send while 1,000 chunks stream in
  (at a steady pace over about 2 s, and all at once); target: bounded by the 20-a-second
  batching, not by the chunk count.
"""

from __future__ import annotations

import asyncio
import statistics
import time

STREAM_CHUNKS = 1_000


def _branch(n: int):
    from lion_nb import Branch

    branch = Branch(name="bench")
    for i in range(n):
        if i % 2:
            branch.msgs.add_message(
                assistant_response=f"Answer {i}: **bold**, `code` and\n\n```python\nx = {i}\n```"
            )
        else:
            branch.msgs.add_message(instruction=f"Question number {i}?")
    return branch


def open_ms(n: int, runs: int = 7) -> float:
    from lion_nb.widgets import BranchView

    samples = []
    for _ in range(runs):
        branch = _branch(n)
        start = time.perf_counter()
        view = BranchView(branch)
        view._repr_mimebundle_()
        samples.append((time.perf_counter() - start) * 1e3)
        view.close()
    return statistics.median(samples)


class _CountingComm:
    """Stands in for the kernel's comm: counts what a widget would send to the front end."""

    def __init__(self) -> None:
        self.sent = 0
        self.comm_id = "bench"
        self.kernel = object()  # a comm without a kernel sends nothing

    def send(self, *args, **kwargs) -> None:
        self.sent += 1

    def on_msg(self, callback) -> None: ...

    def close(self, *args, **kwargs) -> None: ...


async def _stream(widget, push, paced: bool) -> int:
    comm = _CountingComm()
    widget.comm = comm
    for i in range(STREAM_CHUNKS):
        push(f"token{i} ")
        if paced:
            await asyncio.sleep(0.002)
    await asyncio.sleep(0.1)  # the trailing flush
    return comm.sent


def stream_messages(paced: bool) -> tuple[int, int]:
    from lion_nb.widgets import BranchView, TurnWidget

    view = BranchView(_branch(10))
    turn = TurnWidget("bench")
    turn.start()
    sent_view = asyncio.run(_stream(view, view.stream, paced))
    sent_turn = asyncio.run(_stream(turn, turn.text, paced))
    return sent_view, sent_turn


def _rows() -> list[tuple[str, str, str]]:
    open_ms(100, runs=2)  # warm imports and caches
    small, large = open_ms(100), open_ms(10_000)
    rows = [
        ("BranchView build + first render, 100 messages", f"{small:.1f} ms", ""),
        ("BranchView build + first render, 10,000 messages", f"{large:.1f} ms", ""),
        ("  ratio 10,000 / 100", f"{large / small:.2f}x", "<= 1.5x"),
    ]
    for paced in (True, False):
        view_sent, turn_sent = stream_messages(paced)
        how = "paced over ~2 s" if paced else "in one burst"
        rows.append(
            (f"comm messages, 1,000 chunks {how}: BranchView", str(view_sent), "~20/s, not 1,000")
        )
        rows.append(
            (f"comm messages, 1,000 chunks {how}: TurnWidget", str(turn_sent), "~20/s, not 1,000")
        )
    return rows


def results() -> list[tuple]:
    """Rows ``(figure, value, target, ratio)`` for ``tests/bench/run_all.py``."""
    return [(name, value, target, None) for name, value, target in _rows()]


def main() -> None:
    rows = _rows()
    width = max(len(r[0]) for r in rows)
    for name, value, target in rows:
        print(f"{name:<{width}}  {value:>10}  {target}")


if __name__ == "__main__":
    main()
