"""`ACPEndpoint`: any coding agent that speaks the Agent Client Protocol, as a CLI model.

``iModel(provider="acp", command=["my-agent", "--acp"])``, or a preset by name:
``iModel(provider="acp", model="gemini")``, ``%%lion -m acp:gemini`` (`PRESETS`; ``offline``
is the bundled deterministic agent, `offline_acp`). The SDK (``agent-client-protocol``) is
imported when the first agent starts, never before.

- **One process, one session, kept.** The agent is started at the endpoint's first turn and
  kept; its ACP session is the branch's conversation (each turn is one ``session/prompt``).
  A copy of the endpoint (a fork's model) starts its own process and session. `aclose`
  (``Session.aclose``, kernel exit) stops the process group, children included.
- **Early end.** A turn stopped before the agent answered (Stop, Esc, the kernel's interrupt,
  the deadline) sends ``session/cancel``, answers any permission still asked with
  ``cancelled`` and waits up to ``cancel_grace`` seconds for the agent to end its turn; what
  was streamed stays on the branch (ADR-0106). An agent that does not end it is stopped.
- **A broken agent** (output that is not JSON-RPC, a line over the limit, a flood, an exit
  mid-turn) fails the turn with a `CLIError`; the process is stopped, and the next turn
  starts a fresh one (a new session, given the branch's history as a transcript).
- **History.** A new session on a branch that already has turns (a fork, a restarted agent)
  starts with the conversation so far. A fork's model (`iModel.copy`) remembers the parent's
  session; when that session holds exactly the fork's turns (the parent has not gone on
  since, the fork was not cut earlier) and the agent offers it, the fork's process asks the
  agent for it -- ``session/fork`` (unstable) from the parent's session, else
  ``session/load`` of it (its replayed history is not recorded again) -- and sends only the
  prompt. Otherwise, or if the agent refuses, the history goes as a transcript before the
  prompt. ``carried_by`` says which.
- **Cost.** The agent's reported usage (``PromptResponse.usage``) when it gives one that
  reads (finite, >= 0), and the change of its reported cumulative cost (``usage_update``)
  in dollars; otherwise the tokens are estimated from the text and marked ``estimated``.
  Every turn ends with a ``result`` chunk, so every turn is in the ledger.
- **Secrets.** ``env`` (keys for the agent) goes to the process only: never in `config`,
  reprs, logs or cassettes; ``command`` is in `config` but not in what a cassette matches.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import sys
import weakref
from collections.abc import AsyncGenerator
from typing import Any, ClassVar

import anyio

from ...errors import AuthenticationError, CLIError, ConfigurationError
from ...shapes import JsonObject
from ...tokens import estimate_tokens
from ..secrets import redact
from ..stream import StreamChunk
from ._subprocess import normalized_usage
from .base import CLIEndpoint, CLIRequest, emit_text_delta, emit_thinking_delta

__all__ = ["PRESETS", "ACPEndpoint"]

log = logging.getLogger("lion_nb.models.acp")

#: agents whose ACP command is known: name -> argv (``offline``: the bundled agent)
PRESETS: dict[str, list[str]] = {
    "offline": ["{python}", "-m", "lion_nb.models.endpoints.offline_acp"],
    "offline-load": ["{python}", "-m", "lion_nb.models.endpoints.offline_acp", "--load"],
    "offline-fork": ["{python}", "-m", "lion_nb.models.endpoints.offline_acp", "--fork"],
    "claude": ["claude-agent-acp"],
    "claude-code": ["claude-code-acp"],
    "codex": ["codex-acp"],
    "gemini": ["gemini", "--acp"],
    "opencode": ["opencode", "acp"],
    "kimi": ["kimi", "acp"],
    "qwen": ["qwen", "--acp"],
    "copilot": ["copilot-language-server", "--acp"],
    "auggie": ["auggie", "--acp"],
    "droid": ["droid", "exec", "--output-format", "acp"],
    "vibe": ["vibe-acp"],
}

DEFAULT_GRACE = 2.0
DEFAULT_CANCEL_GRACE = 5.0
DEFAULT_START_TIMEOUT = 60.0
_DONE = object()
#: ACP session id -> how many of a branch's user turns it holds (this kernel's sessions): a
#: fork takes the agent's fork or load of its parent's session only when this matches it
_COVERED: dict[str, int] = {}


def _user_turns(history: list[dict[str, Any]] | None) -> int:
    return sum(1 for turn in history or [] if turn.get("role") == "user")


def _check_approve(value: Any) -> Any:
    if value is None or isinstance(value, bool) or value == "ask" or callable(value):
        return value
    raise ConfigurationError(
        f'`approve={value!r}` is not an approval policy: pass True, False, "ask" or a '
        "callable `(title, arguments) -> bool`."
    )


def _transcript(history: list[dict[str, Any]]) -> str:
    lines = ["The conversation so far (continue from it):"]
    for turn in history:
        role = str(turn.get("role") or "user")
        lines.append(f"\n[{role}]\n{turn.get('content') or ''}")
    return "\n".join(lines)


def _mcp_server(spec: dict[str, Any]) -> Any:
    from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio

    if spec.get("url"):
        headers = [HttpHeader(name=k, value=v) for k, v in (spec.get("headers") or {}).items()]
        return HttpMcpServer(type="http", name=spec["name"], url=spec["url"], headers=headers)
    command = list(spec["command"])
    env = [EnvVariable(name=k, value=v) for k, v in (spec.get("env") or {}).items()]
    return McpServerStdio(name=spec["name"], command=command[0], args=command[1:], env=env)


def _reported_usage(usage: Any) -> dict[str, Any] | None:
    """``PromptResponse.usage`` normalized, or ``None`` when absent or not counts."""
    if usage is None:
        return None
    values = [usage.input_tokens, usage.output_tokens]
    if not all(isinstance(v, int) and v >= 0 for v in values):
        return None
    raw = usage.model_dump(mode="json", by_alias=True, exclude_none=True)
    return normalized_usage(
        usage.input_tokens,
        usage.output_tokens,
        raw,
        usage.total_tokens,
        cache_read=usage.cached_read_tokens,
        cache_write=usage.cached_write_tokens,
        reasoning=usage.thought_tokens,
    )


class ACPEndpoint(CLIEndpoint):
    """An ACP agent on stdio (see the module docstring).

    Settings: ``command`` (argv; default the preset named by ``model``), ``env`` (extra
    environment variables for the agent, kept secret), ``cwd`` (the agent's working
    directory and the folder its file reads and writes are confined to; default the
    kernel's working directory, the notebook's folder), ``approve`` (who answers its
    permission requests: ``True``, ``False``, ``"ask"`` or a callable; unset, the branch's
    ``approve``, else ask), ``terminate_grace``, ``cancel_grace``, ``start_timeout``
    (seconds for the agent to answer ``initialize`` and ``session/new``), ``fork_of`` (the
    ACP session a fork's first session continues, set by `iModel.copy`; kept in memory
    only); the request option ``timeout`` bounds a turn.
    """

    provider: ClassVar[str] = "acp"
    #: a turn that ends early is billed with estimated counts (ADR-0106 rule 7)
    estimates_early_end: ClassVar[bool] = True
    #: a new session on a branch with turns is given them (`CLIRequest.history`)
    takes_history: ClassVar[bool] = True

    def __init__(
        self,
        model: str = "",
        *,
        command: list[str] | None = None,
        env: dict[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        approve: Any = None,  # Any: True/False, "ask" or a callable the operations layer calls
        terminate_grace: float = DEFAULT_GRACE,
        cancel_grace: float = DEFAULT_CANCEL_GRACE,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        fork_of: str | None = None,
        **options: Any,
    ):
        unknown = sorted(set(options) - {"timeout"})
        if unknown:
            raise ConfigurationError(
                f"`acp` does not take {', '.join(f'`{k}`' for k in unknown)}. Its settings "
                "are: `command`, `env`, `cwd`, `approve`, `terminate_grace`, `cancel_grace`, "
                "`start_timeout`, `timeout`."
            )
        name = (model or "").strip()
        if command is None:
            if not name:
                raise ConfigurationError(
                    '`iModel(provider="acp")` needs `command=[...]` (the agent\'s argv) or a '
                    f"preset as the model: {', '.join(sorted(PRESETS))}."
                )
            if name not in PRESETS:
                raise ConfigurationError(
                    f"`acp/{name}` is not a known ACP agent. Presets: "
                    f"{', '.join(sorted(PRESETS))}; or pass `command=[...]`."
                )
        elif (
            isinstance(command, str) or not command or not all(isinstance(p, str) for p in command)
        ):
            raise ConfigurationError(
                '`command=` is the agent\'s argv as a list of strings, e.g. `["gemini", "--acp"]`.'
            )
        if env is not None and not (
            isinstance(env, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        ):
            raise ConfigurationError("`env=` is a dict of environment variable names to strings.")
        super().__init__(name or os.path.basename(command[0]) if command else name, **options)
        self.command = list(command) if command is not None else None
        self._env = dict(env) if env else None
        if self._env:
            from ..secrets import MIN_NAMED, Secret

            for value in self._env.values():  # masked wherever it would show
                if len(value) >= MIN_NAMED:
                    Secret(value)
        self.cwd = os.fspath(cwd) if cwd is not None else None
        self.approve = _check_approve(approve)
        self.terminate_grace = float(terminate_grace)
        self.cancel_grace = float(cancel_grace)
        self.start_timeout = float(start_timeout)
        self._agent: Any = None  # `AgentProcess`, once started
        self._session: str | None = None  # the live ACP session of this process
        self._cost_seen = 0.0  # the agent's cumulative cost reported so far (dollars)
        self._finalizer: Any = None
        self.fork_of = fork_of if isinstance(fork_of, str) and fork_of else None
        #: how the current session got the branch's earlier turns: ``"fork"``, ``"load"``,
        #: ``"transcript"``, or ``None`` (it had none to get)
        self.carried_by: str | None = None

    # -- settings ----------------------------------------------------------------------------
    def argv(self) -> list[str]:
        parts = self.command if self.command is not None else PRESETS[self.model]
        return [sys.executable if p == "{python}" else p for p in parts]

    def config(self) -> JsonObject:
        data: JsonObject = {}
        if self.command is not None:
            data["command"] = list(self.command)
        if self.cwd is not None:
            data["cwd"] = self.cwd
        if isinstance(self.approve, bool) or self.approve == "ask":
            data["approve"] = self.approve
        if self.terminate_grace != DEFAULT_GRACE:
            data["terminate_grace"] = self.terminate_grace
        if self.start_timeout != DEFAULT_START_TIMEOUT:
            data["start_timeout"] = self.start_timeout
        if self.cancel_grace != DEFAULT_CANCEL_GRACE:
            data["cancel_grace"] = self.cancel_grace
        return data

    # Any: the environment and a callable ``approve``, kept only in memory
    def live_config(self) -> dict[str, Any]:
        """What an in-process copy also keeps: the environment and a callable ``approve``."""
        data: dict[str, Any] = {}
        if self._env:
            data["env"] = dict(self._env)
        if callable(self.approve):
            data["approve"] = self.approve
        if self._session or self.fork_of:  # a copy is a fork: it may continue this session
            data["fork_of"] = self._session or self.fork_of
        return data

    def __deepcopy__(self, memo: dict[int, Any]) -> ACPEndpoint:
        clone = ACPEndpoint(self.model, **{**self.config(), **self.live_config()}, **self.options)
        clone.cache = getattr(self, "cache", True)
        return clone

    @property
    def root(self) -> str:
        return os.path.abspath(self.cwd or os.getcwd())

    @property
    def running(self) -> bool:
        """Whether this endpoint's agent process runs now."""
        return self._agent is not None and self._agent.alive

    @property
    def pid(self) -> int | None:
        return self._agent.pid if self._agent is not None else None

    def __repr__(self) -> str:
        return f"ACPEndpoint(model={self.model!r}, running={self.running})"

    # -- the process -------------------------------------------------------------------------
    async def _ensure(self, request: CLIRequest) -> tuple[Any, str, bool]:
        """The running agent, its session and whether the session is new."""
        from ._acp_client import NotebookClient
        from ._acp_process import AgentProcess

        agent = self._agent
        if agent is not None and not agent.alive:
            await self._stop_agent()
            agent = None
        if agent is None:
            import acp
            from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

            agent = AgentProcess(
                self.argv(),
                NotebookClient(self.root),
                name=self.model or "agent",
                cwd=self.root,
                env=self._env,
                grace=self.terminate_grace,
            )
            self._agent = agent
            self._finalizer = weakref.finalize(self, agent.kill_now)
            capabilities = ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                terminal=False,
            )
            try:
                with anyio.fail_after(self.start_timeout):
                    await agent.start(
                        capabilities, Implementation(name="lion_nb", version=_version())
                    )
            except TimeoutError:
                raise await self._broken(
                    None, "did not start", f"did not answer within {self.start_timeout:g} s"
                ) from None
            except ConfigurationError:
                await self._stop_agent()
                raise
            except Exception as exc:
                raise await self._broken(exc, "did not start") from None
            if agent.initialized.protocol_version != acp.PROTOCOL_VERSION:
                log.info("ACP agent speaks protocol %s", agent.initialized.protocol_version)
        if self._session is not None:
            return agent, self._session, False
        servers = [_mcp_server(s) for s in request.mcp_servers or []]
        carried = await self._carry(agent, request, servers)
        if carried is not None:
            self._session = carried
            self._cost_seen = 0.0
            return agent, carried, False
        self.carried_by = "transcript" if request.history else None
        try:
            with anyio.fail_after(self.start_timeout):
                made = await agent.conn.new_session(cwd=self.root, mcp_servers=servers)
        except TimeoutError:
            raise await self._broken(
                None, "did not open a session", f"did not answer within {self.start_timeout:g} s"
            ) from None
        except Exception as exc:
            if getattr(exc, "code", None) == -32000:
                await self._stop_agent()
                raise AuthenticationError(
                    f"The ACP agent `{self.model}` needs you to sign in first (run it once in "
                    "a terminal, or give its key in `env=`).",
                    provider=self.provider,
                ) from None
            raise await self._broken(exc, "did not open a session") from None
        self._session = made.session_id
        self._cost_seen = 0.0
        _COVERED[made.session_id] = _user_turns(request.history)
        return agent, made.session_id, True

    async def _carry(self, agent: Any, request: CLIRequest, servers: list[Any]) -> str | None:
        """The fork's session by the agent's own fork or load of the parent's, when the
        agent offers one and that session holds exactly the fork's turns; else ``None``."""
        source, self.fork_of = self.fork_of, None
        turns = _user_turns(request.history)
        if source is None or not turns or _COVERED.get(source) != turns:
            return None
        caps = agent.initialized.agent_capabilities
        how = (
            "fork"
            if getattr(getattr(caps, "session_capabilities", None), "fork", None) is not None
            else "load"
            if getattr(caps, "load_session", False)
            else None
        )
        if how is None:
            return None
        try:
            with anyio.fail_after(self.start_timeout):
                if how == "fork":
                    made = await agent.conn.fork_session(
                        session_id=source, cwd=self.root, mcp_servers=servers
                    )
                    session_id = str(made.session_id)
                else:  # the replayed history arrives outside a turn: not recorded again
                    await agent.conn.load_session(
                        cwd=self.root, session_id=source, mcp_servers=servers
                    )
                    session_id = source
        except TimeoutError:
            raise await self._broken(
                None, f"did not {how} the session", f"did not answer in {self.start_timeout:g} s"
            ) from None
        except Exception as exc:
            if not agent.alive or agent.fault is not None:
                raise await self._broken(exc, f"did not {how} the session") from None
            log.info("the ACP agent refused session/%s (%s): a transcript instead", how, exc)
            return None
        _COVERED[session_id] = turns
        self.carried_by = how
        return session_id

    async def _broken(
        self, exc: BaseException | None, what: str, why: str | None = None
    ) -> CLIError:
        """Stop the agent and say why the turn failed (its fault, else the error)."""
        agent = self._agent
        why = why or (agent.fault if agent is not None else None)
        tail = agent.stderr_text() if agent is not None else ""
        if why is None and agent is not None:
            code = await agent.exited(1.0)
            if code is not None:
                why = f"exited with code {code}"
        await self._stop_agent()
        if why is None:
            why = redact(f"{type(exc).__name__}: {exc}")[:300] if exc is not None else "failed"
        said = f" Its stderr: {tail}" if tail else ""
        return CLIError(
            f"The ACP agent `{self.model}` {what}: it {why}.{said}",
            provider=self.provider,
            stderr=tail,
        )

    async def _stop_agent(self) -> None:
        """Stop the process; its session ends with it, so the next turn opens a new one
        (given the branch's history, and its system prompt again)."""
        agent, self._agent = self._agent, None
        self._session = self.session_id = None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if agent is None:
            return
        if agent.loop is not None and agent.loop is not _loop():
            agent.kill_now()  # its loop is gone: the group is all that can be reached
            return
        await agent.stop()

    async def aclose(self) -> None:
        """Stop the agent's process group (a later turn starts a new one)."""
        await self._stop_agent()

    def kill_now(self) -> None:
        """SIGKILL the agent's group at once (no loop to wait on: a notebook reset)."""
        agent, self._agent, self._session = self._agent, None, None
        self.session_id = None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if agent is not None:
            agent.kill_now()

    # -- a turn ------------------------------------------------------------------------------
    def stream(self, request: CLIRequest) -> AsyncGenerator[StreamChunk, None]:
        return self._turn(request)

    async def _turn(self, request: CLIRequest) -> AsyncGenerator[StreamChunk, None]:
        from acp import text_block

        from ._acp_client import Turn
        from ._acp_updates import UpdateReader

        if self._agent is not None and self._agent.client.turn is not None:
            raise ConfigurationError(
                f"The ACP agent `{self.model}` is in a turn already: one turn at a time per "
                "agent (a fork, or `model.copy()`, has its own)."
            )
        agent, session_id, fresh = await self._ensure(request)
        self.session_id = session_id
        text = request.prompt
        if fresh and request.history:
            text = f"{_transcript(request.history)}\n\n[user]\n{text}"
        if request.system:
            text = f"{request.system.strip()}\n\n{text}"
        _COVERED[session_id] = _COVERED.get(session_id, 0) + 1
        turn = Turn(session_id, request.permission)
        reader = UpdateReader()
        agent.client.turn = turn
        prompt = asyncio.ensure_future(
            agent.conn.prompt(session_id=session_id, prompt=[text_block(text)])
        )
        prompt.add_done_callback(lambda _: turn.put(_DONE))
        finished = False
        try:
            yield StreamChunk(
                type="system", metadata={"session_id": session_id, "model": f"acp/{self.model}"}
            )
            while True:
                item = await turn.queue.get()
                if item is _DONE:
                    break
                if isinstance(item, str):  # a fault: the agent broke the protocol's limits
                    raise await self._broken(None, "was stopped mid-turn", item)
                chunks = item if isinstance(item, list) else reader.read(item)
                for chunk in chunks:
                    _emit(chunk)
                    yield chunk
            try:
                response = prompt.result()
            except Exception as exc:
                raise await self._broken(exc, "ended the turn without an answer") from None
            yield self._result(request, text, response, reader, session_id)
            finished = True
        finally:
            if agent.client.turn is turn:
                agent.client.turn = None
            if not finished:
                with anyio.CancelScope(shield=True):
                    await self._cancel(agent, turn, prompt, session_id)

    async def _cancel(
        self, agent: Any, turn: Any, prompt: asyncio.Future[Any], session_id: str
    ) -> None:
        """``session/cancel``, pending permissions answered ``cancelled``, then up to
        ``cancel_grace`` s for the agent to end the turn; else the agent is stopped."""
        turn.cancel()
        if prompt.done():
            return
        try:
            if agent.conn is not None:
                await agent.conn.cancel(session_id=session_id)
            with anyio.move_on_after(self.cancel_grace):
                await asyncio.wait({prompt})
        except Exception:
            log.debug("cancelling the ACP turn failed", exc_info=True)
        if not prompt.done():
            prompt.cancel()
            await self._stop_agent()

    def _result(
        self, request: CLIRequest, text: str, response: Any, reader: Any, session_id: str
    ) -> StreamChunk:
        usage = _reported_usage(getattr(response, "usage", None))
        if usage is None:
            inp = estimate_tokens(text)
            out = max(1, reader.text_chars // 4) if reader.text_chars else 0
            usage = normalized_usage(inp, out, None)
            usage["estimated"] = True
        meta: dict[str, Any] = {
            "session_id": session_id,
            "stop_reason": response.stop_reason,
            "usage": usage,
        }
        cost = (reader.usage_update or {}).get("cost")
        if isinstance(cost, dict) and str(cost.get("currency", "")).upper() == "USD":
            total = cost.get("amount")
            if (
                isinstance(total, (int, float))
                and math.isfinite(total)
                and total >= self._cost_seen
            ):
                meta["cost_usd"] = round(total - self._cost_seen, 10)
                self._cost_seen = float(total)
        if reader.usage_update:
            meta["context"] = {k: v for k, v in reader.usage_update.items() if k != "cost"}
        if reader.plan is not None:
            meta["plan"] = reader.plan
        return StreamChunk(type="result", metadata=meta)


def _emit(chunk: StreamChunk) -> None:
    if chunk.type == "text" and chunk.content:
        emit_text_delta(chunk.content)
    elif chunk.type == "thinking" and chunk.content:
        emit_thinking_delta(chunk.content)


def _loop() -> Any:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("lion_nb")
    except Exception:
        return "0"
