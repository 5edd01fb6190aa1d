"""The synchronous fallback when a loop already runs in the thread (the kernel's, with
``%autoawait off`` or an indented ``%lion ask``): the run goes to a worker loop, the host's
loop is never patched, and an interrupt cancels the run cleanly.

Each scenario runs in a subprocess: it sends itself a real SIGINT, and it must be able to
show that nothing was patched process-wide.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

_HOST = textwrap.dedent(
    """
    import asyncio, json, os, signal, sys, threading
    from IPython.testing.globalipapp import start_ipython
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    start_ipython()
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "lion_nb")
    from lion_nb import RunEnd, RunFailed, RunStart, current_session, iModel

    def patched(loop):
        return bool(getattr(loop, "_nest_patched", False))
    """
)

_RUNS_ON_A_WORKER_LOOP = _HOST + textwrap.dedent(
    """
    async def host_without_top_level_await():
        # a host that calls the magic synchronously while its own loop runs
        with capture_output() as shown:
            ip.run_cell_magic("lion", "-o nested", "hello from a running loop")
        return {
            "answer": ip.user_ns["nested"],
            "shown": [o.data.get("text/plain", "") for o in shown.outputs],
            "patched": patched(asyncio.get_running_loop()),
            "nest_asyncio": "nest_asyncio" in sys.modules,
            "threads": [t.name for t in threading.enumerate() if t.name == "lion-run"],
        }

    print(json.dumps(asyncio.run(host_without_top_level_await())))
    """
)

_INTERRUPTED = _HOST + textwrap.dedent(
    """
    long = iModel(provider="offline_cli", model="scripted", delay=0.05, turns=[[
        {"type": "system", "metadata": {"session_id": "s"}},
        *[{"type": "text", "content": f"part {i} ", "is_delta": True} for i in range(100)],
        {"type": "result"},
    ]])
    ip.user_ns["long"] = long
    arrived = threading.Event()  # set once two parts have streamed: then the interrupt comes
    _stream = long.endpoint.stream

    def stream(request):
        async def watched():
            async for n, chunk in _aenumerate(_stream(request)):
                yield chunk
                if n == 2:  # the system chunk, part 0, part 1
                    arrived.set()
        return watched()

    async def _aenumerate(chunks):
        n = 0
        async for chunk in chunks:
            yield n, chunk
            n += 1

    long.endpoint.stream = stream

    def interrupt_once_parts_arrived():
        arrived.wait(60)
        os.kill(os.getpid(), signal.SIGINT)

    async def host():
        # like ipykernel while a synchronous cell runs: SIGINT raises KeyboardInterrupt
        # (asyncio.run would cancel this task instead)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        seen = []
        session = current_session()
        for kind in (RunStart, RunEnd, RunFailed):
            session.observe(kind, lambda s: seen.append(type(s).__name__))
        threading.Thread(target=interrupt_once_parts_arrived, daemon=True).start()
        with capture_output():
            result = ip.run_cell("if True:\\n    r = %lion ask -q -b long -m long 'write it'")
        error = result.error_in_exec
        signals = list(seen)
        branch = session.get_branch("long")
        with capture_output():
            ip.run_cell_magic("lion", "-q -o after", "still usable")
        loop = asyncio.get_running_loop()
        return {
            "error": type(error).__name__,
            "rendered": error._render_traceback_() if error is not None else None,
            "signals": signals,
            "kinds": [m.kind for m in branch.messages],
            "partial": [m.rendered for m in branch.messages if m.kind == "assistant_response"],
            "pending": [repr(t) for t in asyncio.all_tasks(loop) if t is not asyncio.current_task()],
            "after": ip.user_ns.get("after", ""),
            "patched": patched(loop),
            "nest_asyncio": "nest_asyncio" in sys.modules,
        }

    print(json.dumps(asyncio.run(host())))
    """
)


def _probe(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_host_with_a_running_loop_runs_the_turn_on_a_worker_loop_without_patching():
    facts = _probe(_RUNS_ON_A_WORKER_LOOP)
    assert "hello from a running loop" in facts["answer"]
    assert any("hello from a running loop" in text for text in facts["shown"])  # in the cell
    assert facts["patched"] is False and facts["nest_asyncio"] is False
    assert facts["threads"] == []  # the worker is gone once the turn ends


def test_an_interrupt_on_the_fallback_path_cancels_the_run_cleanly():
    facts = _probe(_INTERRUPTED)
    assert facts["error"] == "RunInterrupted"
    assert len(facts["rendered"]) == 1  # one line, no traceback
    assert facts["signals"] == ["RunStart", "RunFailed"]  # exactly one terminal signal
    assert facts["kinds"] == ["instruction", "assistant_response"]  # what arrived is kept
    assert facts["partial"][0].startswith("part 0 part 1")
    assert "part 99" not in facts["partial"][0]  # it really was cut short
    assert facts["pending"] == []
    assert facts["after"].startswith("Offline model")  # the shell stays usable
    assert facts["patched"] is False and facts["nest_asyncio"] is False
