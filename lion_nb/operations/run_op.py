"""``run``: a CLI agent's turn as a recorded stream; ``run_and_collect``: that stream as one
result (ADR-0021 D3, D4).

`run` is an async generator. A model that is not a CLI agent is rejected with
`ConfigurationError` (a `ValueError`) before anything is recorded or announced, and does not
replace the branch's chat model; a CLI model given as ``param.imodel`` becomes the branch's
chat model. It records and yields the `Instruction` first, then turns the
provider's `StreamChunk`s into messages, recording each before yielding it:

- ``system`` and ``result`` chunks update the model's provider session id (the next run
  resumes it); ``thinking`` accumulates into the pending answer's ``metadata["thinking"]``,
  how long it took into ``metadata["thinking_seconds"]`` (from the first thinking chunk to
  the first text chunk, or to the answer's end); ``text`` accumulates into the pending answer.
- Joining text: ``is_delta`` fragments are concatenated as they come; a full (non-delta) block
  starts a new paragraph, joined to pending text with a blank line (``"\\n\\n"``).
- The pending answer (text and/or thinking) is recorded as an `AssistantResponse` before a
  ``tool_use``, at a ``result``, before a failure is raised, and at the end. One stream can
  therefore yield several answers. Thinking alone before a tool call makes an answer with
  empty text: the reasoning stays next to the call it led to (and renders, with the call,
  as one assistant turn).
- ``tool_use`` becomes an `ActionRequest`; the ``tool_result`` with the same ``tool_id``
  becomes its `ActionResponse` (linked both ways). Results for unknown or already answered
  ids are ignored: the agent ran its own tools, nothing is executed here. A call still
  without a result when the run ends (stopped, failed, cancelled) gets an error response
  marked ``metadata["cancelled"]``, so the history stays valid for API models.
- What a message keeps of a chunk (tool input and output, the result's metadata) is a deep
  copy: chunks are shared read-only (a cassette replays the same ones), messages are edited.
- A ``result`` always closes the pending answer with the result's metadata (usage, cost,
  session id, ...) merged into it; with no text pending, an empty `AssistantResponse`
  carries it. So a completed run ends with the answer that holds its usage and cost.
- An ``error`` chunk with ``metadata["benign_eos"]`` ends the run normally. Any other error
  (chunk or exception from the provider) stops the provider first, then the received text is
  recorded and yielded, then a typed `ProviderError` is raised (`CLIError` unless the chunk
  names an HTTP status); an empty error text reads ``"(empty error)"``.

The prompt is the instruction's rendered text. The branch's system message goes as
``CLIRequest.system`` on the first turn only: a resumed session already holds it, and CLIs
without a system flag would otherwise repeat it in the transcript every turn. Context
providers are applied as for ``chat``; their text goes with every turn's system text.

Deadline: a positive number ``timeout`` in ``{**model.options, **param.imodel_kw}`` is one
absolute deadline for the whole stream, enforced on each read of the provider (never across
a ``yield``); when it passes the provider is closed and `ProviderTimeoutError` (a
`TimeoutError`) raised. Anything else means no deadline.

Cleanup, on every exit (end, failure, cancellation, a consumer that stops early): the provider
stream is closed (stopping its process), shielded from cancellation; a failure while closing
is logged and never replaces the exception in flight. Text still pending after a cancellation
or an abandoned iteration cannot be yielded any more; it is recorded as an `AssistantResponse`
with ``metadata["partial"] = True``. Either way, and for the text flushed before a failure is
raised, the answer is marked incomplete (``metadata["incomplete"]``, with the reason) by the
rule for turns that end early (`early_end`). Lifecycle: one `RunStart`, then one terminal signal after
cleanup -- `RunEnd` for a completed or abandoned run, `RunFailed` for a failure or a
cancellation (a cancellation is seen as such only while the run waits on its provider; a
consumer cancelled elsewhere just stops iterating). Nested turns emit nothing, but clean up.

Persistence (``stream_persist=True`` only): a branch snapshot ``<branch id>.json`` in
``snapshot_dir`` (default ``persist_dir``) is written once the instruction is recorded and
rewritten at cleanup; every chunk is appended to ``<branch id>.<run id>.buffer.jsonl`` in
``persist_dir`` as it arrives. The buffer is removed once the final snapshot is written; if
that write fails the buffer stays, as the record of what the run received. ``persist_dir``
defaults to ``runs/`` in the session store's folder (`RunParam`), never the working directory.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from copy import deepcopy
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from ..errors import (
    AuthenticationError,
    BadRequestError,
    CLIError,
    ConfigurationError,
    NotFoundError,
    OverloadedError,
    ParseError,
    PermissionDeniedError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
)
from ..models.endpoints import CLIRequest
from ..models.secrets import redact
from ..models.stream import StreamChunk
from ..protocols.messages import (
    ActionRequest,
    ActionResponse,
    AssistantResponse,
    Instruction,
    RoledMessage,
)
from ..tracing import hooks as tracing
from .chat_op import make_instruction
from .early_end import INTERRUPTED, mark_incomplete, reason_for
from .types import ChatParam, ParseParam, RunParam
from .verbs import joined_answers

if TYPE_CHECKING:
    from ..models.imodel import iModel
    from ..session.branch import Branch

__all__ = ["run", "run_and_collect"]


def _with_attachments(ins: Instruction) -> str:
    """The prompt, with the paths of the instruction's images and files for the agent to
    read (a CLI agent gets files by path, ADR-0110)."""
    if not ins.images and not ins.files:
        return ins.rendered
    from ..context.files import attachment_paths

    paths = attachment_paths(ins.images, ins.files)
    listed = "\n".join(f"- {p}" for p in paths)
    return f"{ins.rendered}\n\nAttached files (read them from these paths):\n{listed}"


log = logging.getLogger("lion_nb.operations.run_op")

CLI_PROVIDERS = ("acp", "claude_code", "codex", "gemini_cli", "offline_cli")


# -- the stream ----------------------------------------------------------------------------------
async def run(
    # Any: an instruction is any value: text, an `Instruction`, or data rendered into one
    branch: Branch,
    instruction: Any,
    param: RunParam,
) -> AsyncGenerator[RoledMessage, None]:
    """Stream one CLI agent turn on ``branch``, recording each message before yielding it.
    See the module docstring for the exact contract."""
    imodel = param.imodel if param.imodel is not None else branch.chat_model
    _require_cli(imodel)
    if param.imodel is not None:
        branch.chat_model = param.imodel

    from ..runtime.lifecycle import RunLifecycle

    life = RunLifecycle(branch, "run")
    turn = _Turn(branch, imodel)
    store = _Persist(branch, param, life.run_id) if param.stream_persist else None
    stream: AsyncGenerator[StreamChunk, None] | None = None
    failure: BaseException | None = None  # a provider failure, raised after the text is yielded
    error: BaseException | None = None  # what the run ends with
    started = time.monotonic()
    tracer: Any = None
    agent_span: Any = None
    await life.start()
    try:
        ins = make_instruction(branch, instruction, param)
        system = await _system_text(branch, ins, imodel)
        _check_budgets(branch, imodel, ins.rendered, system, param.imodel_kw)
        turn.record(instruction=ins)
        if store is not None:
            await store.open()
        yield ins

        call_options = dict(param.imodel_kw or {})
        request = CLIRequest(
            prompt=_with_attachments(ins),
            system=system,
            resume=imodel.provider_session_id or None,
            options=call_options,
            **_agent_fields(branch, imodel, ins),
        )
        timeout = {**imodel.options, **call_options}.get("timeout")
        tracer = tracing.ACTIVE
        if tracer is not None:  # the agent's run is this turn's one model call
            agent_span = tracing.safely(tracer.model_start, branch, imodel, request)
        stream = imodel.stream_cli(request)
        deadline = _deadline(timeout)
        while True:
            try:
                chunk = await _next_chunk(stream, deadline, timeout, imodel)
            except StopAsyncIteration:
                break
            except Exception as exc:
                # a cancellation is no Exception: it goes to the BaseException handler below
                failure = exc
                break
            if store is not None:
                store.append(chunk)
            if chunk.type == "error":
                if not chunk.metadata.get("benign_eos"):
                    failure = _chunk_error(chunk, imodel)
                break
            for message in turn.feed(chunk):
                yield message
        if failure is not None:
            await _close(stream)  # stop the agent before handing over what it said
        for message in turn.flush(None if failure is None else reason_for(failure)):
            yield message
        if failure is not None:
            raise failure
    except GeneratorExit:
        error = failure  # stopped while a failure was on its way: the run still failed
        raise
    except BaseException as exc:
        error = exc
        raise
    finally:
        with anyio.CancelScope(shield=True):
            if stream is not None:
                await _close(stream)
            turn.flush_partial()
            if store is not None:
                await store.finish()
            _log_run(branch, imodel, turn, error, time.monotonic() - started)
            if agent_span is not None and tracer is not None:
                tracing.safely(tracer.agent_end, agent_span, turn.usage, turn.usd, error)
            if error is None:
                await life.end(list(turn.recorded))
            else:
                await life.fail(error)


def _agent_fields(branch: Branch, imodel: iModel, ins: Any) -> dict[str, Any]:
    """What an agent that takes them gets beyond the prompt: who answers its permission
    requests, the branch's MCP servers, and -- for a new session on a branch with turns
    (a fork) -- the history before this turn."""
    endpoint = imodel.endpoint
    if not getattr(endpoint, "takes_history", False):
        return {}
    from .agent_permission import agent_history, agent_mcp_servers, permission_for

    fields: dict[str, Any] = {
        "permission": permission_for(branch, imodel),
        "mcp_servers": agent_mcp_servers(branch) or None,
    }
    if not imodel.provider_session_id:
        history = agent_history(branch)
        if history and history[-1].get("role") == "user":
            history.pop()  # this turn's own instruction
        fields["history"] = history or None
    return fields


def _require_cli(imodel: Any) -> None:
    if getattr(imodel, "is_cli", False):
        return
    name = f"{getattr(imodel, 'provider', '?')}/{getattr(imodel, 'model', '?')}"
    raise ConfigurationError(
        f"`run` streams CLI agents, and `{name}` is not one. Pass a CLI model, e.g. "
        f'`chat_model=iModel(provider="claude_code")` (CLI providers: '
        f"{', '.join(f'`{p}`' for p in CLI_PROVIDERS)}), or use `communicate()` / "
        "`operate()` for API models."
    )


async def _system_text(branch: Branch, ins: Any, imodel: iModel) -> str | None:
    parts: list[str] = []
    if branch.system is not None and not imodel.provider_session_id:
        parts.append(branch.system.rendered)
    injection = await branch.take_context(ins)
    if injection:
        parts.append(injection)
    text = "\n\n".join(p for p in parts if p.strip())
    return text or None


def _deadline(timeout: Any) -> float | None:
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        return None  # not a positive number (NaN included): no deadline
    return time.monotonic() + float(timeout)


async def _next_chunk(
    stream: AsyncGenerator[StreamChunk, None], deadline: float | None, seconds: Any, imodel: iModel
) -> StreamChunk:
    """The next chunk, within what is left of the run's deadline."""
    if deadline is None:
        return await stream.__anext__()
    remaining = deadline - time.monotonic()
    try:
        if remaining <= 0:
            raise TimeoutError
        with anyio.fail_after(remaining):
            return await stream.__anext__()
    except TimeoutError as exc:
        if isinstance(exc, ProviderError):  # the provider's own deadline
            raise
        raise ProviderTimeoutError(
            f"`{imodel.provider}` did not finish within `timeout={seconds}` s (one deadline "
            "for the whole run); it was stopped. Give a larger `timeout=`, or `timeout=None` "
            "for no deadline.",
            provider=imodel.provider,
        ) from None


async def _close(stream: AsyncGenerator[StreamChunk, None]) -> None:
    with anyio.CancelScope(shield=True):
        try:
            await stream.aclose()
        except Exception:
            log.warning("closing the provider stream failed", exc_info=True)


_STATUS_ERRORS: dict[int, type[ProviderError]] = {
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    429: RateLimitError,
    529: OverloadedError,
}


def _chunk_error(chunk: StreamChunk, imodel: iModel) -> ProviderError:
    """The typed error for an ``error`` chunk: by HTTP status when the chunk names one."""
    meta = chunk.metadata
    text = redact((chunk.content or "").strip()) or "(empty error)"
    status = meta.get("status", meta.get("api_error_status"))
    status = status if isinstance(status, int) and not isinstance(status, bool) else None
    cls: type[ProviderError] = CLIError
    if status is not None:
        cls = _STATUS_ERRORS.get(status) or (
            ServerError if status >= 500 else BadRequestError if status >= 400 else CLIError
        )
    return cls(text, provider=imodel.provider, status=status, body=dict(meta))


def _check_budgets(
    branch: Branch, imodel: iModel, prompt: str, system: str | None, options: Any
) -> None:
    """The budgets over this run, checked as for an API call (the prompt is its input)."""
    from types import SimpleNamespace

    from ..runtime.budget import check_budgets

    messages = [{"role": "user", "content": prompt}]
    if system:
        messages.insert(0, {"role": "system", "content": system})
    check_budgets(branch, imodel, SimpleNamespace(messages=messages, tools=None, options=options))


def _log_run(
    branch: Branch, imodel: iModel, turn: _Turn, error: BaseException | None, took: float
) -> None:
    entry: dict[str, Any] = {
        "event": "cli_run",
        "provider": imodel.provider,
        "model": imodel.model,
        "status": "completed" if error is None else "failed",
        "duration": took,
        "messages": len(turn.recorded),
        "session_id": imodel.provider_session_id,
    }
    if turn.usage is not None:
        entry["usage"] = turn.usage
    if error is not None:
        entry["error"] = redact(f"{type(error).__name__}: {error}")
    try:
        branch.log_manager.log(entry)
    except Exception:  # a log problem never changes a run's outcome
        log.warning("could not log the run", exc_info=True)


# -- from chunks to messages -----------------------------------------------------------------------
class _Text:
    """Deltas concatenate; a full block starts a new paragraph."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[str] = []

    def add(self, content: str | None, is_delta: bool) -> None:
        if not content:
            return
        if self.parts and not is_delta:
            self.parts.append("\n\n")
        self.parts.append(content)

    def take(self) -> str:
        text = "".join(self.parts)
        self.parts = []
        return text

    def __bool__(self) -> bool:
        return bool(self.parts)


_UNREPORTED = "The agent went on without reporting this call's result."


class _Turn:
    """One run's pending answer and tool calls; records every message it produces."""

    def __init__(self, branch: Branch, imodel: iModel):
        self.branch = branch
        self.imodel = imodel
        self.text = _Text()
        self.thinking = _Text()
        self.thought: list[float] = []  # when the pending thinking began (and ended)
        self.requests: dict[str, ActionRequest] = {}
        self.recorded: list[RoledMessage] = []
        self.usage: dict[str, Any] | None = None
        self.usd: float | None = None  # the ledger's price of the run
        self.prompted = False  # the agent got the prompt (its session started)

    def record(self, **message: Any) -> RoledMessage:
        recorded = self.branch.msgs.add_message(**message)
        self.recorded.append(recorded)
        return recorded

    def feed(self, chunk: StreamChunk) -> list[RoledMessage]:
        kind = chunk.type
        self.prompted = self.prompted or kind == "system"
        if kind in ("system", "result") and chunk.metadata.get("session_id"):
            self.imodel.provider_session_id = str(chunk.metadata["session_id"])
        if kind == "thinking":
            if chunk.content and not self.thought:
                self.thought.append(time.monotonic())
            self.thinking.add(chunk.content, chunk.is_delta)
        elif kind == "text":
            if chunk.content and len(self.thought) == 1:
                self.thought.append(time.monotonic())  # the answer began: thinking ended
            self.text.add(chunk.content, chunk.is_delta)
        elif kind == "tool_use":
            return [*self.flush(), self._request(chunk)]
        elif kind == "tool_result":
            return self._response(chunk)
        elif kind == "result":
            self.usage = deepcopy(chunk.metadata.get("usage"))
            meta = deepcopy(chunk.metadata)
            meta["cost_usd"] = self._account(meta.get("cost_usd"))
            return [*self._close_calls(_UNREPORTED), self._answer(meta)]
        return []

    def _account(self, reported: Any) -> float | None:
        """The run's price in the ledger: the agent's own figure when it reports one."""
        from ..runtime.ledger import record_call

        if reported is not None:  # checked by the ledger: a bad figure gives way to the usage
            self.usd = record_call(self.branch, self.imodel, self.usage, usd=reported)
        else:
            self.usd = record_call(self.branch, self.imodel, self.usage)
        return self.usd

    def flush(self, incomplete: str | None = None) -> list[RoledMessage]:
        """The pending answer, if anything is pending (after closing calls left open); marked
        incomplete for the reason given, if any (the run failed)."""
        if not (self.text or self.thinking):
            if incomplete and self._estimate(check=True):
                self._account_estimate()
            return []
        extra = mark_incomplete({}, incomplete) if incomplete else {}
        if incomplete:
            extra.update(self._estimate())
        return [*self._close_calls(_UNREPORTED), self._answer(extra)]

    def flush_partial(self) -> None:
        """Record what is pending when it can no longer be yielded: first a response for
        every call whose result never came, then the pending text."""
        self._close_calls("The run ended before this call's result arrived.")
        if self.text or self.thinking:
            extra = mark_incomplete({"partial": True}, INTERRUPTED)
            self._answer({**extra, **self._estimate()})
        elif self._estimate(check=True):
            self._account_estimate()

    def _estimate(self, check: bool = False) -> dict[str, Any]:
        """For an agent that bills a turn that ended early (ADR-0106 rule 7) and reported no
        usage: an estimated ledger row, as ``{"usage", "cost_usd"}`` for the answer."""
        if (
            self.usage is not None
            or not self.prompted
            or not getattr(self.imodel.endpoint, "estimates_early_end", False)
        ):
            return {}
        if check:
            return {"due": True} if self.prompted else {}
        return self._account_estimate()

    def _account_estimate(self) -> dict[str, Any]:
        from ..models.usage import usage_dict
        from ..tokens import estimate_tokens

        said = "".join(self.text.parts) + "".join(self.thinking.parts)
        prompt = next(
            (m.rendered for m in self.recorded if getattr(m, "kind", "") == "instruction"), ""
        )
        usage = usage_dict(estimate_tokens(prompt), estimate_tokens(said))
        usage["estimated"] = True
        self.usage = usage
        return {"usage": usage, "cost_usd": self._account(None)}

    def _close_calls(self, why: str) -> list[RoledMessage]:
        """An error response for every call still without a result, recorded before anything
        else is: an API model reading this history later needs each call's result right
        after the call."""
        closed: list[RoledMessage] = []
        for request in self.requests.values():
            if request.action_response_id is None:
                response = ActionResponse(
                    function=request.function,
                    arguments=dict(request.arguments),
                    output={"error": why},
                    is_error=True,
                    call_id=request.call_id,
                    action_request_id=str(request.id),
                    sender=self.imodel.provider,
                    recipient=str(self.branch.id),
                    metadata={"cancelled": True},
                )
                request.action_response_id = str(response.id)
                closed.append(self.record(action_response=response))
        return closed

    def _answer(self, extra: dict[str, Any]) -> AssistantResponse:
        metadata: dict[str, Any] = {"model": f"{self.imodel.provider}/{self.imodel.model}"}
        if self.thinking:
            metadata["thinking"] = self.thinking.take()
            if self.thought:  # from the first thinking chunk to the first text chunk, or now
                ended = self.thought[1] if len(self.thought) > 1 else time.monotonic()
                metadata["thinking_seconds"] = round(ended - self.thought[0], 3)
        self.thought = []
        metadata.update(extra)
        response = AssistantResponse(
            response=self.text.take(),
            sender=str(self.branch.id),
            recipient=self.branch.user or "user",
            metadata=metadata,
        )
        self.record(assistant_response=response)
        return response

    def _request(self, chunk: StreamChunk) -> ActionRequest:
        fields: dict[str, Any] = {"call_id": chunk.tool_id} if chunk.tool_id else {}
        if chunk.metadata.get("acp"):  # what an ACP agent's step is: a plan, a permission...
            fields["metadata"] = {"acp": chunk.metadata["acp"]}
        request = ActionRequest(
            function=chunk.tool_name or "(unnamed tool)",
            arguments=deepcopy(chunk.tool_input or {}),
            sender=str(self.branch.id),
            recipient=self.imodel.provider,
            **fields,
        )
        if chunk.tool_id:
            self.requests[chunk.tool_id] = request
        self.record(action_request=request)
        return request

    def _response(self, chunk: StreamChunk) -> list[RoledMessage]:
        request = self.requests.get(chunk.tool_id or "")
        if request is None or request.action_response_id is not None:
            return []  # not a call of this run, or already answered
        response = ActionResponse(
            function=request.function,
            arguments=dict(request.arguments),
            output=deepcopy(chunk.tool_output),
            is_error=chunk.is_error,
            call_id=request.call_id,
            action_request_id=str(request.id),
            sender=self.imodel.provider,
            recipient=str(self.branch.id),
        )
        request.action_response_id = str(response.id)
        self.record(action_response=response)
        return [response]


# -- persistence ---------------------------------------------------------------------------------
class _Persist:
    """Snapshot + chunk buffer of one run (see the module docstring)."""

    def __init__(self, branch: Branch, param: RunParam, run_id: str):
        self.branch = branch
        buffer_dir = Path(param.persist_dir).expanduser()
        snapshot_dir = Path(param.snapshot_dir or param.persist_dir).expanduser()
        self.snapshot = snapshot_dir / f"{branch.id}.json"
        self.buffer = buffer_dir / f"{branch.id}.{run_id}.buffer.jsonl"
        self._file: Any = None

    # Snapshots serialize the whole branch: the JSON is built on the loop (the branch is not
    # thread-safe) and written from a worker thread, so a large branch never stalls the loop.
    # A chunk append is one small line-buffered write and stays inline.
    async def open(self) -> None:
        await self._write_snapshot()
        self._file = await anyio.to_thread.run_sync(_open_buffer, self.buffer)

    def append(self, chunk: StreamChunk) -> None:
        self._file.write(chunk.model_dump_json() + "\n")

    async def finish(self) -> None:
        if self._file is None:
            return
        try:
            self._file.close()
            await self._write_snapshot()
        except Exception:
            log.warning(
                "the final snapshot of run buffer `%s` failed; the buffer is kept",
                self.buffer,
                exc_info=True,
            )
            return
        self.buffer.unlink(missing_ok=True)

    async def _write_snapshot(self) -> None:
        data = self.branch.to_dict(mode="json")
        await anyio.to_thread.run_sync(_write_json_atomically, self.snapshot, data)


def _open_buffer(path: Path) -> Any:
    path.parent.mkdir(parents=True, exist_ok=True)
    return open(path, "a", encoding="utf-8", buffering=1)


def _write_json_atomically(path: Path, data: dict[str, Any]) -> None:
    from .._files import write_atomically

    write_atomically(path, json.dumps(data, ensure_ascii=False, default=str))


# -- collection ----------------------------------------------------------------------------------
async def run_and_collect(
    branch: Branch,
    # Any: an instruction is any value; the answer text, or the verb's own result
    instruction: Any,
    chat_param: ChatParam,
    parse_param: ParseParam | None = None,
    clear_messages: bool = False,
    skip_validation: bool = False,
) -> Any:
    """Consume `run` and return the answers' texts joined by blank lines (``None`` when the
    agent said nothing), parsed once into ``parse_param.response_format`` unless
    ``skip_validation``. This is the CLI `Middle`."""
    if clear_messages:
        branch.msgs.clear_messages()
    param = chat_param if isinstance(chat_param, RunParam) else RunParam(**chat_param.as_dict())
    texts: list[str] = []
    last: AssistantResponse | None = None
    async with aclosing(run(branch, instruction, param)) as stream:
        async for message in stream:
            if isinstance(message, AssistantResponse):
                texts.append(message.response)
                last = message if joined_answers([message.response]) else last
    text = joined_answers(texts)  # the one rule every caller of `run` collects by
    if text is None:
        return None
    if skip_validation or parse_param is None or parse_param.response_format is None:
        return text

    from .communicate_op import clamp_parse_retries
    from .parse_op import parse_with_details

    target = parse_param.response_format
    name = getattr(target, "__name__", None) or "the response format"
    retries = clamp_parse_retries(parse_param.max_retries)
    try:
        value, parse_response = await parse_with_details(
            branch, text, parse_param.with_(max_retries=retries, handle_validation="raise")
        )
    except ValueError as exc:
        raise ParseError(
            f"The agent's answer could not be parsed into `{name}`: {exc}", target=target, text=text
        ) from exc
    if parse_response is not None and last is not None:
        last.metadata["parse_model_response"] = parse_response
    return value
