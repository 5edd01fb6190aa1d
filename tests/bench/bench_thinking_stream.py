"""A long thinking stream through the widgets: comm traffic, kernel memory, browser long tasks.

Run: ``python tests/bench/bench_thinking_stream.py``. Prints figures measured in this one run,
with the targets beside them; nothing here is a pass/fail assertion.

A 200,000-character thinking stream arrives at about 500 tokens a second (word-sized
fragments, the pace of a fast reasoning model; about 100 s), fed to a `TurnWidget` and a
`BranchView` at once, on a running event loop as in a kernel:

- the comm messages each widget sends, and their rate; target: the 20-a-second throttle,
  not the fragment count;
- the kernel's memory: tracemalloc's peak over the stream beside the thinking's own size;
  target: a small multiple of it (each update renders only the last few thousand
  characters), never growing with the updates sent;
- the largest update sent, in characters; target: bounded, not growing with the stream;
- in Chromium (Debian's, through Playwright), the `TurnWidget`'s front end given the same
  updates at the pace they were sent: the browser's long tasks (PerformanceObserver
  ``longtask``, over 50 ms); target: none. Skipped, with a note, without Chromium.

``LION_BENCH_THINKING_CHARS`` shortens the stream (e.g. 20000) for a quick look.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import tracemalloc
from typing import Any

CHARS = int(os.environ.get("LION_BENCH_THINKING_CHARS", "200000"))
TOKENS_PER_SECOND = 500
TICK = 0.01  # seconds between bursts of fragments
CHROMIUM = os.environ.get("LION_CHROMIUM", "/usr/bin/chromium")


def _fragments(chars: int) -> list[str]:
    """Word-sized fragments of plausible thinking (paragraphs, some Markdown)."""
    sentence = (
        "so the question asks for **the capital** and I should check `each` source before "
        "answering; first the atlas, then the census figures, then"
    )
    words = sentence.split(" ")
    out: list[str] = []
    size = i = 0
    while size < chars:
        word = words[i % len(words)]
        piece = word + ("\n\n" if i % 97 == 96 else " ")
        out.append(piece)
        size += len(piece)
        i += 1
    return out


class _RecordingComm:
    """Stands in for the kernel's comm: counts what a widget sends; with ``keep``, writes each
    update to a file (for the browser's replay) rather than holding it in the memory measured."""

    def __init__(self, keep: Any = None) -> None:
        self.sent = 0
        self.largest = 0
        self.keep = keep
        self.comm_id = "bench"
        self.kernel = object()  # a comm without a kernel sends nothing

    def send(self, data=None, buffers=None, **_kw) -> None:
        self.sent += 1
        line = json.dumps([time.monotonic(), (data or {}).get("state") or {}])
        self.largest = max(self.largest, len(line))
        if self.keep is not None:
            self.keep.write(line + "\n")

    def on_msg(self, callback) -> None: ...

    def close(self, *args, **kwargs) -> None: ...


async def _stream(fragments: list[str], record: Any) -> dict:
    from lion_nb import Branch
    from lion_nb.tokens import estimate_tokens
    from lion_nb.widgets import BranchView, TurnWidget

    turn = TurnWidget("bench · thinking")
    view = BranchView(Branch(name="bench"))
    initial = {k: v for k, v in turn.get_state().items() if not k.startswith("_")}
    turn_comm, view_comm = _RecordingComm(keep=record), _RecordingComm()
    turn.comm, view.comm = turn_comm, view_comm
    turn.start()
    per_token = len(fragments) / estimate_tokens("".join(fragments))
    per_tick = max(1, round(TOKENS_PER_SECOND * TICK * per_token))
    from lion_nb.rendering.answer_parts import thinking_html

    thinking_html("warm *up*: the renderer's first use imports it")  # not counted below
    tracemalloc.start()
    began = time.monotonic()
    for i in range(0, len(fragments), per_tick):
        for fragment in fragments[i : i + per_tick]:
            turn.thinking(fragment)
            view.stream_thinking(fragment)
        # the pace of the stream, as a model sends it (a benchmark's load, not a test's wait)
        await asyncio.sleep(max(0.0, began + (i // per_tick + 1) * TICK - time.monotonic()))
    turn.text("The answer.")
    view.stream("The answer.")
    await asyncio.sleep(0.2)  # the trailing flushes
    took = time.monotonic() - began
    _now, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    turn.finish(None)
    view.end_stream()
    return {
        "seconds": took,
        "turn": turn_comm,
        "view": view_comm,
        "peak": peak,
        "initial": initial,
        "tokens": turn.thinking_state.get("tokens", 0),
    }


_PAGE_JS = """async ([source, initial]) => {
  const url = URL.createObjectURL(new Blob([source], {type: 'text/javascript'}));
  const widget = (await import(url)).default;
  const state = {...initial};
  const handlers = {};
  const model = {
    get: (key) => state[key],
    on: (event, f) => { (handlers[event] ||= []).push(f); },
    off: () => {}, send: () => {}, set: () => {}, save_changes: () => {},
  };
  window.__apply = (changes) => {
    Object.assign(state, changes);
    for (const key of Object.keys(changes)) for (const f of handlers[`change:${key}`] || []) f();
  };
  window.__long = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.__long.push(entry.duration);
  }).observe({type: 'longtask', buffered: true});
  const root = document.createElement('div');
  document.body.append(root);
  widget.render({model, el: root});
}"""

_REPLAY_JS = """async (updates) => {
  const t0 = performance.now();
  for (const [at, changes] of updates) {
    const wait = t0 + at * 1000 - performance.now();
    if (wait > 0) await new Promise((done) => setTimeout(done, wait));
    window.__apply(changes);
  }
  await new Promise((done) => setTimeout(done, 200));
  return {long: window.__long, shown: document.querySelector('.lnb-thinking-text').innerText.length};
}"""


def browser_long_tasks(found: dict) -> dict | None:
    """The turn's front end in Chromium, given the recorded updates at their pace."""
    if not os.path.exists(CHROMIUM):
        return None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    from lion_nb.widgets._base import esm

    with open(found["record"], encoding="utf-8") as lines:
        states = [json.loads(line) for line in lines]
    start = states[0][0] if states else 0.0
    updates = [[round(at - start, 3), state] for at, state in states]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        page = browser.new_page()
        page.set_content("<!doctype html><html><head></head><body></body></html>")
        page.evaluate(_PAGE_JS, [esm("turn.js"), {**found["initial"], "running": True}])
        out = {"long": [], "shown": 0}
        for i in range(0, len(updates), 200):  # in slices: one evaluate per 10 s of stream
            part = [[at - updates[i][0], s] for at, s in updates[i : i + 200]]
            got = page.evaluate(_REPLAY_JS, part)
            out["long"], out["shown"] = got["long"], got["shown"]
        browser.close()
    return out


def _rows() -> list[tuple[str, str, str]]:
    import tempfile

    fragments = _fragments(CHARS)
    size = sum(len(f) for f in fragments)
    with tempfile.TemporaryDirectory() as tmp:
        record = os.path.join(tmp, "updates.jsonl")
        with open(record, "w", encoding="utf-8") as out:
            found = asyncio.run(_stream(fragments, out))
        found["record"] = record
        return _figures(found, fragments, size)


def _figures(found: dict, fragments: list[str], size: int) -> list[tuple[str, str, str]]:
    seconds = found["seconds"]
    rows = [
        (
            f"thinking stream: {size:,} characters, {len(fragments):,} fragments",
            f"{seconds:.1f} s",
            f"~{TOKENS_PER_SECOND} tokens/s",
        ),
        ("  tokens counted (estimate)", f"{found['tokens']:,}", ""),
    ]
    for name in ("turn", "view"):
        comm = found[name]
        label = "TurnWidget" if name == "turn" else "BranchView"
        rows.append(
            (f"comm messages: {label}", f"{comm.sent:,} ({comm.sent / seconds:.1f}/s)", "~20/s")
        )
        rows.append((f"  largest update: {label}", f"{comm.largest:,} chars", "bounded"))
    peak = found["peak"]
    rows.append(
        (
            "kernel memory: tracemalloc peak over the stream",
            f"{peak / 1024:,.0f} KiB ({peak / size:.1f}x the text)",
            "a small multiple",
        )
    )
    shown = browser_long_tasks(found)
    if shown is None:
        rows.append(("browser long tasks (> 50 ms)", "skipped: no Chromium/Playwright", "0"))
    else:
        worst = max(shown["long"], default=0.0)
        rows.append(
            ("browser long tasks (> 50 ms)", f"{len(shown['long'])} (worst {worst:.0f} ms)", "0")
        )
    return rows


def results() -> list[tuple]:
    """Rows ``(figure, value, target, ratio)`` for ``tests/bench/run_all.py``."""
    return [(name, value, target, None) for name, value, target in _rows()]


def main() -> None:
    rows = _rows()
    width = max(len(r[0]) for r in rows)
    for name, value, target in rows:
        print(f"{name:<{width}}  {value:>24}  {target}")


if __name__ == "__main__":
    main()
