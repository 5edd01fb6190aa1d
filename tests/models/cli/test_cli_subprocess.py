"""The CLI subprocess lifecycle: deadlines, early exit, cancellation, exits, stderr, lookup.

Every test runs a real fake executable as a real subprocess and checks by PID that nothing
is left running afterwards.
"""

from __future__ import annotations

import gc
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest

from lion_nb.errors import CLIError, ConfigurationError, ProviderTimeoutError
from lion_nb.models.endpoints import CLIRequest
from lion_nb.models.imodel import iModel


def claude(**kwargs) -> iModel:
    return iModel(provider="claude_code", model="sonnet", **kwargs)


def test_hanging_cli_times_out_within_the_deadline_and_is_gone(fake_cli, alive):
    fake_cli.set(mode="hang")
    model = claude(timeout=2)
    seen = []

    async def main():
        async for chunk in model.stream_cli(CLIRequest(prompt="x")):
            seen.append(chunk)

    start = time.monotonic()
    with pytest.raises(ProviderTimeoutError) as info:
        anyio.run(main)
    elapsed = time.monotonic() - start
    assert isinstance(info.value, TimeoutError)
    assert 1.9 <= elapsed < 30, elapsed  # the deadline, not the hang (an hour); a guard only
    assert [c.type for c in seen] == ["system"]
    assert "`claude`" in str(info.value) and "timeout=" in str(info.value)
    (run,) = fake_cli.records()
    assert not alive(run["pid"])


def test_timeout_in_the_request_options_and_children_are_stopped(fake_cli, alive, collect):
    fake_cli.set(mode="child")
    with pytest.raises(TimeoutError):
        collect(claude(), CLIRequest(prompt="x", options={"timeout": 0.5}))
    (run,) = fake_cli.records()
    assert run["child_pid"]
    assert not alive(run["pid"])
    assert not alive(run["child_pid"])


@pytest.mark.parametrize("timeout", [None, 0, -1, "1", True])
def test_no_deadline_unless_a_positive_number(fake_cli, collect, timeout):
    fake_cli.set(delay=0.15)  # seven lines: about one second in all
    chunks = collect(claude(), CLIRequest(prompt="x", options={"timeout": timeout}))
    assert chunks[-1].type == "result"


def test_consumer_that_stops_early_and_closes_leaves_no_process(fake_cli, alive):
    fake_cli.set(mode="child")
    model = claude()

    async def main():
        stream = model.stream_cli(CLIRequest(prompt="x"))
        first = await stream.__anext__()
        await stream.aclose()
        return first

    first = anyio.run(main)
    assert first.type == "system"
    (run,) = fake_cli.records()
    assert not alive(run["pid"])
    assert not alive(run["child_pid"])


def test_a_child_that_ignores_sigterm_is_killed_with_its_group(fake_cli, alive):
    fake_cli.set(mode="stubborn_child")
    model = claude()

    async def main():
        stream = model.stream_cli(CLIRequest(prompt="x"))
        await stream.__anext__()
        await stream.aclose()

    anyio.run(main)
    (run,) = fake_cli.records()
    assert run["child_pid"] and not alive(run["pid"])
    assert not alive(run["child_pid"])  # only a SIGKILL to the whole group ends it


def test_breaking_out_of_async_for_then_aclose(fake_cli, alive):
    fake_cli.set(mode="hang")

    async def main():
        stream = claude().stream_cli(CLIRequest(prompt="x"))
        async for _chunk in stream:
            break
        await stream.aclose()

    anyio.run(main)
    assert not alive(fake_cli.records()[0]["pid"])


def test_abandoned_generator_is_cleaned_up_when_collected(fake_cli, alive):
    fake_cli.set(mode="hang")

    async def main():
        stream = claude().stream_cli(CLIRequest(prompt="x"))
        await stream.__anext__()
        del stream
        gc.collect()
        pid = fake_cli.records()[0]["pid"]
        with anyio.fail_after(5):
            while alive(pid):
                await anyio.sleep(0.05)

    anyio.run(main)


def test_cancelled_consumer_leaves_no_process(fake_cli, alive):
    fake_cli.set(mode="child")
    seen = []

    async def main():
        with anyio.move_on_after(1) as scope:
            async for chunk in claude().stream_cli(CLIRequest(prompt="x")):
                seen.append(chunk)
        return scope.cancelled_caught

    assert anyio.run(main) is True
    assert len(seen) == 1
    (run,) = fake_cli.records()
    assert not alive(run["pid"])
    assert not alive(run["child_pid"])


def test_cli_ignoring_sigterm_is_killed_after_the_grace(fake_cli, alive):
    fake_cli.set(mode="stubborn")
    model = claude(terminate_grace=0.5)

    async def main():
        stream = model.stream_cli(CLIRequest(prompt="x"))
        await stream.__anext__()
        start = time.monotonic()
        await stream.aclose()
        return time.monotonic() - start

    took = anyio.run(main)
    assert 0.45 <= took < 30, took  # killed after the grace, not left to ignore SIGTERM
    assert not alive(fake_cli.records()[0]["pid"])


def test_cli_ignoring_sigterm_past_its_deadline_gets_a_short_grace(fake_cli, alive):
    fake_cli.set(mode="stubborn")
    # a grace of 60 s would end this run after 62 s; past the deadline it is cut to 0.5 s
    model = claude(timeout=2, terminate_grace=60)

    async def main():
        async for _chunk in model.stream_cli(CLIRequest(prompt="x")):
            pass

    start = time.monotonic()
    with pytest.raises(TimeoutError):
        anyio.run(main)
    took = time.monotonic() - start
    assert 1.9 <= took < 30, took  # the short grace, not the 60 s one; a guard only
    assert not alive(fake_cli.records()[0]["pid"])


# /proc reads by thread while recording; an audit hook cannot be removed, so it is installed
# once and records only while `_PROC_READS` is a list.
_PROC_READS: list[tuple[str, int]] | None = None
_HOOKED = False


def _audit(event: str, args: tuple) -> None:
    reads = _PROC_READS
    if reads is None or event not in ("open", "os.listdir", "os.scandir"):
        return
    path = str(args[0]) if args else ""
    if path == "/proc" or (path.startswith("/proc/") and path.endswith("/stat")):
        reads.append((path, threading.get_ident()))


def test_process_group_is_watched_off_the_event_loop(fake_cli, alive):
    global _PROC_READS, _HOOKED
    if not Path("/proc").is_dir():
        pytest.skip("needs /proc")
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True
    fake_cli.set(mode="child")  # a group with a child: watched until every member is gone

    async def main():
        stream = claude().stream_cli(CLIRequest(prompt="x"))
        await stream.__anext__()
        await stream.aclose()

    reads: list[tuple[str, int]] = []
    _PROC_READS = reads
    try:
        anyio.run(main)
    finally:
        _PROC_READS = None
    (run,) = fake_cli.records()
    assert not alive(run["pid"]) and not alive(run["child_pid"])
    assert reads, "the group was watched through /proc"
    loop_thread = threading.get_ident()  # anyio.run ran the event loop on this thread
    on_loop = [path for path, ident in reads if ident == loop_thread]
    assert on_loop == [], f"{len(on_loop)} blocking /proc reads on the event loop"


def test_nonzero_exit_without_error_event_raises_with_code_and_stderr(fake_cli, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-do-not-show-1234")
    fake_cli.set(exit=3, stderr="fatal: config broken; key sk-test-do-not-show-1234")
    seen = []

    async def main():
        async for chunk in claude().stream_cli(CLIRequest(prompt="x")):
            seen.append(chunk)

    with pytest.raises(CLIError) as info:
        anyio.run(main)
    error = info.value
    assert error.exit_code == 3
    assert "exited with code 3" in str(error)
    assert "fatal: config broken" in str(error) and "fatal: config broken" in error.stderr
    assert "sk-test-do-not-show-1234" not in str(error) + error.stderr
    assert error.provider == "claude_code"
    assert seen[-1].type == "result", "chunks before the failure were delivered"


def test_crash_by_signal_is_reported(fake_cli, collect):
    fake_cli.set(mode="crash", signal="SIGKILL")
    with pytest.raises(CLIError) as info:
        collect(claude(), "x")
    assert info.value.exit_code == -9
    assert "killed by signal SIGKILL" in str(info.value)
    assert "wrote nothing on stderr" in str(info.value)


def test_stderr_flood_does_not_deadlock_and_is_capped(fake_cli, collect):
    fake_cli.set(stderr_bytes=1_000_000, exit=2)
    with pytest.raises(CLIError) as info:
        collect(claude(timeout=20), "x")
    assert info.value.exit_code == 2
    assert 60_000 < len(info.value.stderr) <= 64 * 1024


def test_stderr_flood_with_success_streams_everything(fake_cli, collect):
    fake_cli.set(stderr_bytes=1_000_000)
    chunks = collect(claude(timeout=20), "x")
    assert [c.type for c in chunks][-1] == "result" and len(chunks) == 7


def test_lines_that_are_not_json_objects_are_skipped(fake_cli, collect, briefs):
    path = fake_cli.replay(
        [
            "Warning: telemetry disabled",
            "",
            "[1, 2]",
            {
                "type": "assistant",
                "message": {"id": "m", "content": [{"type": "text", "text": "ok"}]},
            },
        ]
    )
    path.write_text(path.read_text().rstrip("\n"))  # the last line has no newline
    assert briefs(collect(claude(), "x")) == [{"type": "text", "content": "ok"}]


def test_nothing_runs_until_the_stream_is_iterated(fake_cli):
    stream = claude().stream_cli(CLIRequest(prompt="x"))
    assert fake_cli.records() == []
    anyio.run(stream.aclose)


@pytest.mark.parametrize(
    ("provider", "exe", "package"),
    [
        ("claude_code", "claude", "@anthropic-ai/claude-code"),
        ("codex", "codex", "@openai/codex"),
        ("gemini_cli", "gemini", "@google/gemini-cli"),
    ],
)
def test_missing_executable_names_it_and_the_fix(
    tmp_path, monkeypatch, collect, provider, exe, package
):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigurationError) as info:
        collect(iModel(provider=provider, model="m"), "x")
    text = str(info.value)
    assert f"`{exe}` was not found on PATH" in text
    assert package in text and "cli_path=" in text


def test_cli_path_is_used_instead_of_path(fake_cli, monkeypatch, tmp_path, collect):
    fake = Path(__file__).resolve().parents[2] / "fakes" / "bin" / "claude"
    python_dir = os.path.dirname(sys.executable)  # for the fake's shebang only (never a shim)
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path), python_dir]))
    assert shutil.which("claude") is None
    chunks = collect(claude(cli_path=str(fake)), "x")
    assert chunks[-1].type == "result"
    with pytest.raises(ConfigurationError, match=r"`/no/such/claude` .*`cli_path=`"):
        collect(claude(cli_path="/no/such/claude"), "x")
