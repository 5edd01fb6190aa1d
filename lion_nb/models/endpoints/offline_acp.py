"""The bundled offline ACP agent: deterministic, no model, written with the SDK's agent side.

Run it as ``python -m lion_nb.models.endpoints.offline_acp`` (what the ``acp/offline`` preset
starts). Every turn shows each kind of ``session/update`` a real coding agent sends, in a
fixed order, so tests and the tutorial see all of them:

1. a thought (``agent_thought_chunk``) and a plan of three steps (``plan``);
2. a message chunk, then a ``read`` tool call whose file it reads through the client
   (``fs/read_text_file``): the first file the prompt names that exists, else ``README.md``;
3. an ``execute`` tool call behind a permission request (allow once / always, reject once
   / always); the command is never run (its output is made up: ``ok``);
4. an ``edit`` tool call with a diff, written through the client (``fs/write_text_file``)
   to ``notes.md`` -- the client decides whether it happens;
5. the plan completed, the answer in two message chunks, a ``usage_update`` with a
   cumulative cost, and the prompt's answer with its usage.

A prompt with ``quick`` gives only the thought and the answer. With ``wait`` the agent
stops after its first message chunk until the client cancels (up to 60 s), then answers
``cancelled``: what a Stop mid-turn looks like. The answer names the session's turn
count and earlier prompts, so two forks of one conversation can be told apart, and the MCP
servers it was offered.

Started with ``--load`` it keeps each session in ``<cwd>/.offline-acp/`` (a JSON file per
session, written after every turn) and advertises ``loadSession``: ``session/load`` replays
the session's turns as ``user_message_chunk`` and ``agent_message_chunk`` updates and goes
on with them. ``--fork`` also advertises the (unstable) ``session/fork``: a new session
with a copy of the stored one's turns. Session ids there are ``offline-acp-N``, the first
number free in the folder, so a run from a fresh folder is deterministic.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["OfflineAgent", "main"]

COST_PER_TURN = 0.0005  # dollars, made up


class OfflineAgent:
    """The agent (an ``acp.Agent``); one instance per process."""

    def __init__(self, *, load: bool = False, fork: bool = False) -> None:
        self.conn: Any = None
        self.caps: Any = None
        self.sessions: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self.fork = fork
        self.load = load or fork  # a fork is read from the stored session: load comes with it

    # Any: the SDK's agent-side signature; its schema objects are imported lazily
    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # Any: the SDK's agent-side signature; its schema objects are imported lazily
    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, **kw: Any
    ) -> Any:
        import acp
        from acp.schema import (
            AgentCapabilities,
            Implementation,
            InitializeResponse,
            SessionCapabilities,
            SessionForkCapabilities,
        )

        self.caps = client_capabilities
        sessions = SessionCapabilities(fork=SessionForkCapabilities() if self.fork else None)
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=self.load, session_capabilities=sessions
            ),
            agent_info=Implementation(name="lion-offline-acp", version="1"),
        )

    # Any: the SDK's agent-side signature; its schema objects are imported lazily
    async def new_session(self, cwd: str, mcp_servers: Any = None, **kw: Any) -> Any:
        from acp.schema import NewSessionResponse

        session_id = self._claim(cwd) if self.load else f"offline-acp-{next(self._ids)}"
        self._open(session_id, cwd, mcp_servers)
        return NewSessionResponse(session_id=session_id)

    def _open(
        self, session_id: str, cwd: str, mcp_servers: Any, stored: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        stored = stored or {}
        state = self.sessions[session_id] = {
            "cwd": cwd,
            "prompts": list(stored.get("prompts", [])),
            "carried": list(stored.get("carried", [])),
            "answers": list(stored.get("answers", [])),
            "cancel": asyncio.Event(),
            "always": {},
            "cancelled": 0,
            "mcp": [getattr(s, "name", "") for s in mcp_servers or []],
        }
        return state

    # -- stored sessions (``--load``, ``--fork``) ----------------------------------------------
    @staticmethod
    def _folder(cwd: str) -> str:
        return os.path.join(cwd, ".offline-acp")

    def _claim(self, cwd: str) -> str:
        """The first ``offline-acp-N`` free in the folder, claimed by creating its file."""
        folder = self._folder(cwd)
        os.makedirs(folder, exist_ok=True)
        for n in itertools.count(1):
            session_id = f"offline-acp-{n}"
            try:
                fd = os.open(os.path.join(folder, f"{session_id}.json"), os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                continue
            os.close(fd)
            return session_id
        raise AssertionError("unreachable")

    def _stored(self, cwd: str, session_id: str) -> dict[str, Any]:
        import acp

        if not re.fullmatch(r"offline-acp-\d+", session_id):
            raise acp.RequestError.invalid_params({"sessionId": session_id})
        try:
            with open(os.path.join(self._folder(cwd), f"{session_id}.json"), encoding="utf-8") as f:
                stored = json.loads(f.read() or "{}")
        except (OSError, ValueError):
            raise acp.RequestError.resource_not_found(session_id) from None
        return stored if isinstance(stored, dict) else {}

    def _save(self, session_id: str, state: dict[str, Any]) -> None:
        if not self.load:
            return
        path = os.path.join(self._folder(state["cwd"]), f"{session_id}.json")
        keep = {k: state[k] for k in ("prompts", "carried", "answers")}
        from ..._files import write_atomically

        write_atomically(path, json.dumps(keep))

    # Any: the SDK's agent-side signature; its schema objects are imported lazily
    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kw: Any
    ) -> Any:
        import acp
        from acp.schema import LoadSessionResponse

        if not self.load:
            raise acp.RequestError.method_not_found("session/load")
        state = self._open(session_id, cwd, mcp_servers, self._stored(cwd, session_id))
        for prompt, answer in zip(state["prompts"], state["answers"], strict=False):
            await self._send(session_id, acp.update_user_message_text(prompt))
            await self._send(session_id, acp.update_agent_message_text(answer))
        return LoadSessionResponse()

    # Any: the SDK's agent-side signature; its schema objects are imported lazily
    async def fork_session(
        self, session_id: str, cwd: str, mcp_servers: Any = None, **kw: Any
    ) -> Any:
        import acp
        from acp.schema import ForkSessionResponse

        if not self.fork:
            raise acp.RequestError.method_not_found("session/fork")
        stored = self._stored(cwd, session_id)
        new_id = self._claim(cwd)
        state = self._open(new_id, cwd, mcp_servers, stored)
        self._save(new_id, state)
        return ForkSessionResponse(session_id=new_id)

    # Any: the SDK's agent-side signature; its schema objects are imported lazily
    async def cancel(self, session_id: str, **kw: Any) -> None:
        if session_id in self.sessions:
            self.sessions[session_id]["cancel"].set()

    # Any: the SDK's agent-side signature; its schema objects are imported lazily
    async def authenticate(self, method_id: str, **kw: Any) -> Any:
        return None

    # -- a turn ------------------------------------------------------------------------------
    async def _send(self, session_id: str, update: Any) -> None:
        await self.conn.session_update(session_id=session_id, update=update)

    # Any: the SDK's agent-side signature; its schema objects are imported lazily
    async def prompt(self, prompt: list[Any], session_id: str, **kw: Any) -> Any:
        import acp
        from acp.schema import PromptResponse, Usage

        state = self.sessions[session_id]
        state["cancel"].clear()
        text = " ".join(getattr(b, "text", "") for b in prompt if getattr(b, "type", "") == "text")
        # a new session may start with the conversation so far: its user turns count too
        state["carried"].extend(re.findall(r"^\[user\]\n(.+)$", text, flags=re.M)[:-1])
        earlier = [*state["carried"], *state["prompts"]]
        state["prompts"].append(_last_line(text))

        async def say(update: Any) -> None:
            await self._send(session_id, update)

        await say(acp.update_agent_thought_text(f"Planning how to answer: {_last_line(text)[:80]}"))
        if "quick" not in text:
            stop = await self._work(session_id, state, text, say)
            if stop is not None:
                return self._stopped(session_id, state, stop)
        elif "wait" in text:
            await say(acp.update_agent_message_text("Waiting to be stopped. "))
            if await self._cancelled(state, 60):
                return self._stopped(session_id, state, "cancelled")
        n = len(state["prompts"])
        history = "; ".join(p.rstrip(".") for p in earlier) if earlier else "none"
        head = f"Offline ACP agent, turn {n} of this session. "
        await say(acp.update_agent_message_text(head))
        stopped = f" Cancelled turns: {state['cancelled']}." if state["cancelled"] else ""
        if state["mcp"]:
            stopped += f" MCP servers: {', '.join(state['mcp'])}."
        tail = f"Earlier prompts: {history}.{stopped}"
        await say(acp.update_agent_message_text(tail))
        state["answers"].append(head + tail)
        self._save(session_id, state)
        await say(self._usage_update(n))
        tokens_in, tokens_out = max(1, len(text) // 4), 24
        usage = Usage(
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            total_tokens=tokens_in + tokens_out,
            thought_tokens=8,
        )
        return PromptResponse(stop_reason="end_turn", usage=usage)

    # Any: a stop reason the SDK types as a Literal; ours come from `_work`
    def _stopped(self, session_id: str, state: dict[str, Any], stop: Any) -> Any:
        from acp.schema import PromptResponse

        state["cancelled"] += 1
        state["answers"].append(f"({stop})")
        self._save(session_id, state)
        return PromptResponse(stop_reason=stop)

    def _usage_update(self, n: int) -> Any:
        from acp.schema import Cost, UsageUpdate

        return UsageUpdate(
            session_update="usage_update",
            used=1000 * n,
            size=200_000,
            cost=Cost(amount=round(COST_PER_TURN * n, 6), currency="USD"),
        )

    async def _cancelled(self, state: dict[str, Any], seconds: float) -> bool:
        try:
            await asyncio.wait_for(state["cancel"].wait(), seconds)
        except asyncio.TimeoutError:
            return False
        return True

    async def _work(self, session_id: str, state: dict[str, Any], text: str, say: Any) -> Any:
        """Plan, read, ask, edit; the stop reason when the turn ends early."""
        import acp
        from acp.schema import ToolCallLocation

        steps = ["Read the file", "Check the interpreter", "Write notes.md"]
        await say(acp.update_plan([acp.plan_entry(s, priority="high") for s in steps]))
        await say(acp.update_agent_message_text("I'll look at the project first. "))
        if "wait" in text and await self._cancelled(state, 60):
            return "cancelled"
        cwd = Path(state["cwd"])
        name = _named_file(text, cwd)
        path = str(cwd / name)
        await say(acp.start_read_tool_call("call-read", f"Read {name}", path))
        read_ok, content = await self._read(session_id, path)
        if read_ok:
            first = content.splitlines()[0] if content.strip() else "(empty)"
            await say(
                acp.update_tool_call(
                    "call-read",
                    status="completed",
                    content=[acp.tool_content(acp.text_block(first))],
                )
            )
        else:
            await say(
                acp.update_tool_call(
                    "call-read",
                    status="failed",
                    content=[acp.tool_content(acp.text_block(content))],
                )
            )
        await say(acp.update_plan(_plan(steps, 1)))
        decision = await self._run_command(session_id, state, say)
        if decision == "cancelled":
            return "cancelled"
        await say(acp.update_plan(_plan(steps, 2)))
        notes = cwd / "notes.md"
        old = notes.read_text(encoding="utf-8") if notes.exists() else None
        new = f"# Notes\n\n- {first if read_ok else 'nothing read'}\n- interpreter check: {decision}\n"
        await say(
            acp.start_tool_call(
                "call-edit",
                "Write notes.md",
                kind="edit",
                status="pending",
                content=[acp.tool_diff_content(str(notes), new, old)],
                locations=[ToolCallLocation(path=str(notes))],
            )
        )
        written = await self._write(session_id, str(notes), new)
        await say(acp.update_tool_call("call-edit", status="completed" if written else "failed"))
        await say(acp.update_plan(_plan(steps, 3)))
        if state["cancel"].is_set():
            return "cancelled"
        return None

    async def _read(self, session_id: str, path: str) -> tuple[bool, str]:
        fs = getattr(self.caps, "fs", None)
        if not getattr(fs, "read_text_file", False):
            return False, "the client does not serve file reads"
        try:
            found = await self.conn.read_text_file(
                session_id=session_id, path=path, line=1, limit=50
            )
        except Exception as exc:
            return False, f"read refused: {exc}"
        return True, found.content

    async def _write(self, session_id: str, path: str, content: str) -> bool:
        fs = getattr(self.caps, "fs", None)
        if not getattr(fs, "write_text_file", False):
            return False
        try:
            await self.conn.write_text_file(session_id=session_id, path=path, content=content)
        except Exception:
            return False
        return True

    async def _run_command(self, session_id: str, state: dict[str, Any], say: Any) -> str:
        """The ``execute`` call behind a permission request: what was decided."""
        import acp
        from acp.schema import PermissionOption, ToolCallUpdate

        call = "call-exec"
        await say(
            acp.start_tool_call(
                call,
                "python --version",
                kind="execute",
                status="pending",
                raw_input={"command": "python --version"},
            )
        )
        decided = state["always"].get("execute")
        if decided is None:
            options = [
                PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
                PermissionOption(
                    option_id="allow_always", name="Always allow", kind="allow_always"
                ),
                PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
                PermissionOption(
                    option_id="reject_always", name="Always reject", kind="reject_always"
                ),
            ]
            answer = await self.conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(
                    tool_call_id=call, title="python --version", kind="execute", status="pending"
                ),
                options=options,
            )
            outcome = answer.outcome
            if outcome.outcome == "cancelled":
                await say(acp.update_tool_call(call, status="failed"))
                return "cancelled"
            decided = outcome.option_id
            if decided.endswith("_always"):
                state["always"]["execute"] = decided
        if decided.startswith("allow"):
            await say(acp.update_tool_call(call, status="in_progress"))
            await say(
                acp.update_tool_call(
                    call,
                    status="completed",
                    content=[acp.tool_content(acp.text_block("ok"))],
                    raw_output={"exitCode": 0, "stdout": "ok\n"},
                )
            )
            return "allowed"
        await say(
            acp.update_tool_call(
                call, status="failed", content=[acp.tool_content(acp.text_block("rejected"))]
            )
        )
        return "rejected"


def _plan(steps: list[str], done: int) -> list[Any]:
    import acp

    return [
        acp.plan_entry(
            s,
            priority="high",
            status="completed" if i < done else "in_progress" if i == done else "pending",
        )
        for i, s in enumerate(steps)
    ]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _named_file(text: str, cwd: Path) -> str:
    """The first file the prompt names that exists under ``cwd`` (or a path given as-is,
    outside it too: the client decides), else ``README.md``."""
    for word in re.findall(r"[\w./-]+\.\w+", text):
        if str(word).startswith(("/", "..")) or (cwd / word).is_file():
            return str(word)
    return "README.md"


def main() -> None:
    import acp

    args = set(sys.argv[1:])
    unknown = args - {"--load", "--fork"}
    if unknown:
        sys.exit(f"offline_acp: unknown arguments {sorted(unknown)} (it takes --load, --fork)")
    # an `acp.Agent` by its methods (a Protocol)
    agent: Any = OfflineAgent(load="--load" in args, fork="--fork" in args)
    asyncio.run(acp.run_agent(agent, use_unstable_protocol=agent.fork))


if __name__ == "__main__":
    main()
