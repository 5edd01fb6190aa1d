"""MCP server lifecycle: started once and reused, stopped with its process group, nothing left.

Issue acceptance -> test
- stdio servers are started once and reused -> test_a_server_is_started_once_and_reused
- after 50 connect/remove cycles no child process, thread or file descriptor is left
    -> test_fifty_connect_remove_cycles_leave_nothing
- stopped at kernel (interpreter) exit even when nobody closed it
    -> test_interpreter_exit_stops_a_server_nobody_closed
- a connection is started afresh on another event loop -> test_a_new_loop_reconnects
- a server that exits at once when its stdin closes leaves no child of its process group,
  after 50 connect/remove cycles, `aclose` and `Session.close`
    -> test_a_servers_children_stop_with_it
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import anyio
import pytest

from lion_nb import Branch
from tests.fakes.mcp_fixtures import QUICK_SERVER, children, group_members, open_fds, threads


def _wait_until(condition, seconds=30.0):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_server_is_started_once_and_reused(mcp_command):
    async def main():
        branch = Branch()
        await branch.connect_mcp("once", command=mcp_command)
        try:
            seen = []
            for n in range(5):
                await branch.act({"function": "add", "arguments": {"a": n, "b": 1}})
                seen.append(children())
            return seen
        finally:
            await branch.aclose()

    before = children()
    seen = anyio.run(main)
    assert all(len(s - before) == 1 for s in seen)
    assert len(set().union(*seen) - before) == 1  # the same process every time


@pytest.mark.timeout(300)
def test_fifty_connect_remove_cycles_leave_nothing(mcp_command):
    """50 cycles against a hand-written server that starts in milliseconds (so the cycles
    measure lion_nb and the SDK's client, not the SDK server's import of most of a second),
    then 5 against the SDK's own server; every tenth cycle calls a tool. Each remove has
    stopped its server when it returns (not only when the loop ends, which would stop it
    anyway)."""
    quick = [sys.executable, str(QUICK_SERVER)]
    before = (children(), threads(), open_fds())

    async def cycles():
        branch = Branch()
        for n, command in enumerate([quick] * 50 + [mcp_command] * 5):
            await branch.connect_mcp("cycle", command=command)
            if n % 10 == 0:
                [out] = await branch.act({"function": "add", "arguments": {"a": n, "b": 0}})
                assert out.output == str(n) and not out.is_error
            await branch.remove_mcp("cycle")
            assert children() == before[0], f"cycle {n} left its server running"
        return branch

    branch = anyio.run(cycles)
    assert branch.mcp_servers == {} and len(branch.tools) == 0
    assert children() == before[0]
    assert _wait_until(lambda: threads() <= before[1]), (threads(), before[1])
    assert open_fds() <= before[2], (open_fds(), before[2])


def test_interpreter_exit_stops_a_server_nobody_closed(mcp_command, tmp_path):
    script = textwrap.dedent(
        f"""
        import asyncio, os, sys
        from lion_nb import Branch
        from lion_nb.mcp.server import MCPServer

        async def connect():
            branch = Branch()
            server = await branch.connect_mcp("left", command={mcp_command!r})
            return server

        loop = asyncio.new_event_loop()
        server = loop.run_until_complete(connect())
        print(server._pgid, flush=True)
        sys.exit(0)  # the loop is never closed and the server never removed
        """
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr
    pgid = int(out.stdout.strip())

    def gone() -> bool:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        return False

    assert _wait_until(gone), f"process group {pgid} is still running"


def test_a_new_loop_reconnects(mcp_command):
    branch = Branch()

    async def connect():
        return await branch.connect_mcp("loops", command=mcp_command)

    async def call():
        [out] = await branch.act({"function": "add", "arguments": {"a": 3, "b": 4}})
        return out

    async def close():
        await branch.aclose()

    before = children()
    server = anyio.run(connect)
    out = anyio.run(call)  # the first loop is gone: started afresh on this one
    anyio.run(close)
    assert out.output == "7" and not out.is_error
    assert server.status == "closed"
    assert _wait_until(lambda: children() == before)


@pytest.mark.timeout(300)
def test_a_servers_children_stop_with_it(tmp_path):
    """The quick server with ``--child`` starts a child in its process group (as `npx` starts
    node) and exits at once when its stdin closes: the whole group is stopped anyway, by
    `remove_mcp` (50 cycles), `aclose` and `Session.close` alike."""
    from lion_nb import Session

    def command(n):
        return [sys.executable, str(QUICK_SERVER), "--child", str(tmp_path / f"pids-{n}")]

    def group(n):
        leader, child = map(int, (tmp_path / f"pids-{n}").read_text().split())
        assert group_members(leader) == {leader, child}, "the child did not start"
        return leader

    async def cycles():
        branch = Branch()
        for n in range(50):
            await branch.connect_mcp("parent", command=command(n))
            pgid = group(n)
            await branch.remove_mcp("parent")
            assert group_members(pgid) == set(), f"cycle {n} left {group_members(pgid)}"
        await branch.connect_mcp("parent", command=command("aclose"))
        pgid = group("aclose")
        await branch.aclose()
        assert group_members(pgid) == set(), "aclose left the group running"
        session = Session()
        await session.connect_mcp("parent", command=command("session"))
        pgid = group("session")
        session.close()
        return pgid

    pgid = anyio.run(cycles)
    assert _wait_until(lambda: group_members(pgid) == set()), "Session.close left the group"


def test_interpreter_exit_stops_a_servers_children(tmp_path):
    """A kernel that exits with the server still connected: its child goes with it."""
    pids = tmp_path / "pids"
    command = [sys.executable, str(QUICK_SERVER), "--child", str(pids)]
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from lion_nb import Branch

        loop = asyncio.new_event_loop()
        loop.run_until_complete(Branch().connect_mcp("left", command={command!r}))
        sys.exit(0)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr
    leader, _child = map(int, pids.read_text().split())
    assert _wait_until(lambda: group_members(leader) == set()), group_members(leader)
