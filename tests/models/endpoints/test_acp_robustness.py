"""ACP turns that end early or go wrong: Stop mid-turn sends ``session/cancel`` and keeps what
arrived; a hostile agent (`tests/fakes/acp_hostile_agent.py`) gives a typed error, leaves the
branch consistent and the budget intact; start/close cycles leave no process, thread or fd."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import CLIError
from lion_nb.models.endpoints import streaming_to
from lion_nb.models.endpoints._process import LIVE_GROUPS
from tests.fakes.mcp_fixtures import children, open_fds, threads

pytestmark = pytest.mark.timeout(300)

HOSTILE = Path(__file__).resolve().parents[2] / "fakes" / "acp_hostile_agent.py"


def hostile(mode: str, **kw) -> iModel:
    return iModel(provider="acp", command=[sys.executable, str(HOSTILE), mode], **kw)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def _consistent(branch: Branch) -> None:
    """Every call on the branch has its response; nothing half-recorded."""
    requests = [m for m in branch.messages if m.kind == "action_request"]
    assert all(r.action_response_id in branch.messages for r in requests)


async def _until(condition, seconds: float = 60.0) -> None:
    with anyio.fail_after(seconds):
        while not condition():
            await anyio.sleep(0.02)


def test_stop_mid_turn_cancels_and_keeps_what_arrived():
    model = iModel(provider="acp", model="offline", approve=True)
    branch = Branch(chat_model=model)
    seen: list[str] = []

    async def main():
        async def turn():
            with streaming_to(seen.append):
                async for _ in branch.run("quick wait"):
                    pass

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn)
            await _until(lambda: "Waiting to be stopped" in "".join(seen))
            tg.cancel_scope.cancel()  # what Stop, Esc and the interrupt do
        pid = model.endpoint.pid
        after = [m async for m in branch.run("quick next")]
        assert model.endpoint.pid == pid  # the agent is kept
        await model.aclose()
        return pid, after

    pid, after = anyio.run(main)
    kept = [m for m in branch.messages if m.kind == "assistant_response" and m.response]
    assert kept[0].response == "Waiting to be stopped. "
    assert kept[0].metadata["incomplete"] is True
    assert kept[0].metadata["incomplete_reason"] == "interrupted"
    assert kept[0].metadata["usage"]["estimated"] is True  # billed, marked estimated
    # the agent got session/cancel: it ended that turn as cancelled and says so now
    assert "Cancelled turns: 1." in after[-1].response
    assert branch.cost().calls == 2
    assert pid not in LIVE_GROUPS and not _alive(pid)


def test_an_agent_that_ignores_cancel_is_stopped():
    model = hostile("deaf", cancel_grace=0.5)
    branch = Branch(chat_model=model)

    async def main():
        seen: list[str] = []

        async def turn():
            with streaming_to(seen.append):
                async for _ in branch.run("hello"):
                    pass

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn)
            await _until(lambda: "busy" in "".join(seen))
            pid = model.endpoint.pid
            tg.cancel_scope.cancel()
        return pid

    pid = anyio.run(main)
    assert not model.endpoint.running and not _alive(pid)
    _consistent(branch)


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("malformed", "not JSON-RPC"),
        ("huge", "longer than 16 MB"),
        ("exit", "exited with code 3"),
    ],
)
def test_a_broken_agent_is_a_typed_error_and_the_branch_stays_consistent(mode, said):
    model = hostile(mode)
    branch = Branch(chat_model=model)
    branch.spend.budget = None if not hasattr(branch, "spend") else branch.spend.budget

    async def main():
        with pytest.raises(CLIError, match=said):
            async for _ in branch.run("go"):
                pass
        return model.endpoint.pid

    assert anyio.run(main) is None  # the broken agent was stopped
    _consistent(branch)
    kinds = [m.kind for m in branch.messages]
    assert kinds[0] == "instruction"
    cost = branch.cost()
    assert cost.calls == 1 and cost.input_tokens >= 1  # an estimated row, finite
    if mode in ("malformed", "exit"):
        partial = [m for m in branch.messages if m.kind == "assistant_response"]
        assert partial and partial[-1].metadata["incomplete"] is True


def test_a_flood_of_updates_is_taken_whole():
    branch = Branch(chat_model=hostile("flood"))

    async def main():
        messages = [m async for m in branch.run("go")]
        await branch.chat_model.aclose()
        return messages

    messages = anyio.run(main)
    assert messages[-1].response == "x" * 20_000


def test_requests_the_client_does_not_serve_are_refused():
    branch = Branch(chat_model=hostile("unsupported"))

    async def main():
        messages = [m async for m in branch.run("go")]
        await branch.chat_model.aclose()
        return messages

    messages = anyio.run(main)
    assert messages[-1].response == "terminal: -32601; ext: -32601"


def test_nan_usage_and_cost_give_an_estimate_and_the_budget_holds():
    model = hostile("nan")
    branch = Branch(chat_model=model)

    async def main():
        messages = [m async for m in branch.run("count me")]
        await model.aclose()
        return messages

    messages = anyio.run(main)
    usage = messages[-1].metadata["usage"]
    assert usage["estimated"] is True and usage["input_tokens"] >= 1
    assert "cost_usd" not in messages[-1].metadata or messages[-1].metadata["cost_usd"] is None
    cost = branch.cost()
    assert cost.calls == 1 and cost.usd is None  # unpriced, never NaN


@pytest.mark.timeout(600)
def test_fifty_start_close_cycles_leave_no_process_thread_or_fd():
    before = (children(), threads(), open_fds())

    async def cycles():
        for n in range(50):
            model = iModel(provider="acp", model="offline")
            branch = Branch(chat_model=model)
            if n % 10 == 0:
                [m async for m in branch.run("quick hello")]
            else:
                await model.endpoint._ensure(__import__("lion_nb").models.endpoints.CLIRequest(""))
            assert model.endpoint.running
            await model.aclose()
            assert children() == before[0], f"cycle {n} left its agent running"

    anyio.run(cycles)
    assert children() == before[0]
    assert threads() <= before[1] + 1, (threads(), before[1])
    assert open_fds() <= before[2], (open_fds(), before[2])


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def test_an_agents_children_stop_with_it():
    from tests.fakes.mcp_fixtures import group_members

    agent = f"sleep 300 & exec {sys.executable} -m lion_nb.models.endpoints.offline_acp"
    model = iModel(provider="acp", command=["sh", "-c", agent])
    branch = Branch(chat_model=model)

    async def main():
        [m async for m in branch.run("quick hello")]
        pgid = model.endpoint.pid
        assert len(group_members(pgid)) == 2  # the agent and its child
        await model.aclose()
        return pgid

    pgid = anyio.run(main)
    assert group_members(pgid) == set()


def test_interpreter_exit_stops_an_agent_nobody_closed(tmp_path):
    import subprocess

    from tests.fakes.mcp_fixtures import group_members

    script = (
        "import anyio\n"
        "from lion_nb import Branch, iModel\n"
        "m = iModel(provider='acp', model='offline')\n"
        "b = Branch(chat_model=m)\n"
        "async def main():\n"
        "    [x async for x in b.run('quick hello')]\n"
        "    print(m.endpoint.pid, flush=True)\n"
        "anyio.run(main)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    pgid = int(out.stdout.strip().splitlines()[-1])

    async def gone():
        await _until(lambda: group_members(pgid) == set(), 30)

    anyio.run(gone)


@pytest.mark.parametrize(
    ("command", "said"),
    [(["sleep", "30"], "did not answer within 0.5 s"), (["echo", "hello"], "not JSON-RPC")],
)
def test_a_program_that_is_not_an_acp_agent_fails_to_start(command, said):
    model = iModel(provider="acp", command=command, start_timeout=0.5)
    branch = Branch(chat_model=model)

    async def main():
        with pytest.raises(CLIError, match=said):
            async for _ in branch.run("hello"):
                pass

    anyio.run(main)
    assert not model.endpoint.running and branch.cost().calls == 0
    assert [m.kind for m in branch.messages] == ["instruction"]
