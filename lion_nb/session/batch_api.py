"""``map(..., via="batch")``: a batch through the provider's own batch service.

The OpenAI Batch API and Anthropic Message Batches run a job at about half the price, with
results within 24 hours. A `ProviderRun` is the same handle as a live `BatchRun` (progress,
results in input order, failures, stop, retry, the same widget), with these decisions:

- **The same requests and the same records as a live call.** Each item's request is built
  by the branch's own ``chat`` path (instruction, history, context providers, response
  format) against a model that only captures it, and is sent in the body the endpoint would
  send live (`lion_nb.models.endpoints.batches`). When the results are in, each item's
  answer is recorded by running ``communicate`` (or ``chat``) on its branch with a model
  that replays the provider's answer: the instruction, the response, its metadata, the
  api-call log entry, the signals, response-format parsing and a failure's typed error are
  exactly what a live call produces, because they are produced by the live code.
- **Submitting returns at once.** ``session.map(..., via="batch")`` returns the handle;
  submission and polling (every ``poll_interval`` seconds, 30 by default) run as a task on
  the running loop, sleeping between polls, so the kernel is never blocked. A poll that
  fails for a transient reason (connection, 5xx, 429) is retried at the next interval.
  Polling has a deadline, ``poll_timeout`` (25 hours by default: both providers end a batch
  within 24): a batch still running then fails the run with a `ProviderTimeoutError` naming
  it, its items failed with that error; the batch goes on at the provider and can be taken
  up again with ``resume_batch``.
- **Results are streamed.** Each item's answer is recorded as its result line is read, so
  a result file of any size is never held whole; a malformed line fails only its item.
- **It survives a restart.** As soon as the provider has the batch, its record is saved
  (`batch_records`); ``session.resume_batch(batch_id)`` rebuilds the run -- model from its
  saved settings (the key from the environment, or ``model=``), each item's branch found in
  the session by id or rebuilt from the saved source snapshot -- and goes on polling. An
  item whose branch already holds its answer is not recorded twice.
- **Stop** asks the provider to cancel the batch and keeps polling until it has; what the
  provider finished is recorded, the rest is ``stopped``. ``detach()`` only stops watching
  here (the batch goes on at the provider; resume it later). **Retry** submits the failed
  and stopped items as a new provider batch, on fresh clones.
- **Cost** estimates (with ``price=``) are halved: both providers bill batches at 50 %.
- **Cassettes** record and replay the batch as one exchange (the service from
  `batch_service` is wrapped when one is in force); the request capture and the decoding
  of each item's answer are in-process, so the cassette never sees them as calls. A
  replayed batch is submitted, ends and is collected with no network, and each item's
  branch is recorded by the same live code from the recorded answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from itertools import chain, pairwise
from typing import Any
from uuid import UUID, uuid4

import anyio

from ..errors import (
    ConfigurationError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
)
from ..models.endpoints.base import APIEndpoint, ChatRequest, ModelResponse
from ..runtime.budget import budget_scope
from ._batch_items import render
from .batch import _STREAMED, BatchRun, ItemResult
from .batch_records import VERSION, book_for, jsonable, price_pair, saved_kwargs
from .batch_rows import LIVE_ITEMS

__all__ = ["Part", "ProviderRun"]

logger = logging.getLogger("lion_nb.batch")

DEFAULT_POLL_INTERVAL = 30.0
DEFAULT_POLL_TIMEOUT = 25 * 3600.0  # both providers end a batch within 24 hours
#: provider batches of one job submitted at once
SUBMIT_CONCURRENCY = 4
_OPERATIONS = ("communicate", "chat")
_COMMUNICATE_ONLY = ("chat_model", "parse_model", "skip_validation", "num_parse_retries")
_REFUSED = ("clear_messages", "imodel", "return_ins_res_message")


class _Capture(APIEndpoint):
    """Answers nothing: keeps the request the branch built."""

    provider = "capture"
    in_process = True  # never recorded, replayed or blocked by a cassette: no call is made
    billing = "none"  # nor priced or held to a budget

    def __init__(self) -> None:
        super().__init__("capture")
        self.request: ChatRequest | None = None

    async def complete(self, request: ChatRequest) -> ModelResponse:
        self.request = request
        return ModelResponse()


class _Replay(APIEndpoint):
    """Answers with one batched result, decoded as the live endpoint would."""

    in_process = True  # the batch it came from is what a cassette records (or replays)
    billing = "paid"  # priced (at the batch discount), never stopped by a budget: it is paid

    def __init__(self, service: Any, outcome: Any, provider: str, model: str):
        super().__init__(model)
        self.provider = provider  # type: ignore[misc]
        self._service, self._outcome = service, outcome

    async def complete(self, request: ChatRequest) -> ModelResponse:
        return self._service.decode(request, self._outcome)


@dataclass(eq=False)
class Part:
    """One provider batch of a job: its items (by index), its id and last status."""

    indices: Sequence[int]  # a range when they follow one another
    batch_id: str | None = None
    status: Any = None  # the last BatchStatus seen
    collected: bool = False
    saved: bool = False  # its record is written: the job's record may name it


class ProviderRun(BatchRun):
    """A batch through the provider's batch service (see the module docstring)."""

    via = "batch"
    _discount = 0.5

    def __init__(self, session: Any, data: Any, instruction: Any, **kwargs: Any):
        poll = kwargs.pop("poll_interval", None)
        deadline = kwargs.pop("poll_timeout", None)
        limits = kwargs.pop("batch_limits", None)
        operation = kwargs.setdefault("operation", "communicate") or "communicate"
        kwargs["operation"] = operation
        if operation not in _OPERATIONS:
            raise ConfigurationError(
                f"`via='batch'` runs `communicate` or `chat` (one exchange per item), not "
                f"`{operation!r}`; use `via='live'` for other operations."
            )
        refused = sorted(k for k in _REFUSED if k in kwargs)
        if refused:
            raise ConfigurationError(f"`{refused[0]}=` cannot be used with `via='batch'`.")
        if callable(kwargs.get("model")) and not hasattr(kwargs.get("model"), "provider"):
            raise ConfigurationError(
                "`via='batch'` sends every item to one model: give `model=` an iModel or a "
                '"provider/model" string, not a function.'
            )
        super().__init__(session, data, instruction, **kwargs)
        self._setup(poll, deadline, limits)

    def _setup(
        self, poll_interval: float | None, poll_timeout: float | None = None, limits: Any = None
    ) -> None:
        from ..models.batch_service import batch_service

        self.poll_interval = _interval(poll_interval)
        self.poll_timeout = _seconds(poll_timeout, "poll_timeout", DEFAULT_POLL_TIMEOUT)
        self.service = batch_service(self.model)
        self.max_requests, self.max_bytes = _limits(limits, self.service)
        self.parts: list[Part] = []
        self.job_id = f"job-{str(self.session.id)[:8]}-{self.name}-{uuid4().hex[:8]}"
        self._prompts: dict[int, str] = {}  # a resumed run's prompts (else rendered again)
        self._branch_ids: dict[int, str] = {}  # a resumed run's item branch ids
        #: a fresh item's branch id is this random UUID with its index in the low bits
        #: (`_item_id`): a million sent items keep no id each while they wait
        self._id_base = uuid4().int
        self._submitted: Any = None  # an anyio Event set once the provider has a batch
        self._cancel_sent = False
        self._names: dict[int, str] = {}  # a resumed run's item names, when not `run[i]`
        self._gave_up = False  # polling passed `poll_timeout`
        self._planned: list[Any] = [0.0, 0]  # the worst cases submitted, for the budgets
        self._job_lock: Any = None  # an anyio Lock, made on the loop that saves the job

    @property
    def model(self) -> Any:
        return self._model or self._base.chat_model

    @property
    def batch_id(self) -> str | None:
        """The first provider batch's id (`batch_ids` has them all)."""
        return next((p.batch_id for p in self.parts if p.batch_id), None)

    @property
    def batch_ids(self) -> list[str]:
        return [p.batch_id for p in self.parts if p.batch_id]

    @property
    def remote(self) -> Any:
        """The last status seen of the provider batch still being watched (``None``: none)."""
        return next((p.status for p in self.parts if not p.collected and p.status), None)

    def _starting_state(self) -> str:
        return "submitting" if self._queued_unsent() else "submitted"

    def _queued_unsent(self) -> bool:
        return not self.parts or all(p.collected for p in self.parts)

    # -- the task --------------------------------------------------------------------------------
    async def _main(self, indices: list[int]) -> None:
        self._t0, self._finished_at_t0 = time.monotonic(), self._finished()
        self._job_lock = anyio.Lock()  # on this loop (a retry may run on another)
        self._changed()
        try:
            unsent = self._to_send(indices)
            first = next(unsent, None)
            if first is not None:
                await self._submit(chain((first,), unsent))
            if any(not p.collected and p.batch_id for p in self.parts):
                await self._watch()
            halted = self._stop_requested or self._budget_hit is not None
            self.state = "stopped" if halted else "finished"
        except anyio.get_cancelled_exc_class():
            self.state = "detached"  # watched no longer; the provider's batches go on
            raise
        except Exception as exc:
            self.state = "failed"
            self.error = exc
            for result in self.items:  # never submitted, or given up: each fails with why
                stuck = result.status == "pending" and not result.reason
                if stuck or (result.status == "running" and self._gave_up):
                    result.error = exc
                    self._set_status(result, "failed")
            raise
        finally:
            self.rows.flush()
            self._elapsed += time.monotonic() - self._t0
            self._t0 = None
            if self._submitted is not None:
                self._submitted.set()
            self._changed()

    error: BaseException | None = None

    def _to_send(self, indices: list[int]) -> Iterator[int]:
        """The items to send: those queued and pending, then a streamed input's rows as they
        are read (each provider batch is sent once it is full, so the input is never held
        whole)."""
        from collections import deque

        for index in indices:
            if self.items[index].status == "pending":
                yield index
        queue: deque[int] = deque()
        while self._source is not None:
            added = self._next_index(queue)
            if added is None:
                return
            yield added

    @property
    def _streamed(self) -> bool:
        return self._kind in _STREAMED

    async def submit(self) -> str | None:
        """Wait until the provider has the first batch; its id (``None`` if nothing was
        sent). `batch_ids` has every batch of the job once `wait` returns."""
        if self._queued is not None or (self._task is None and self.state == "pending"):
            self.start()
        if self.batch_id is None and not self.done():
            if self._submitted is None:
                self._submitted = anyio.Event()
            await self._submitted.wait()
        if self.batch_id is None and self.error is not None:
            raise self.error
        return self.batch_id

    async def _submit(self, indices: Iterable[int]) -> None:
        """Capture each item's request and send them in as many provider batches as the
        provider's limits require, a few submissions at once, as each batch fills."""
        import anyio.lowlevel

        await self._save_job(items=True)
        limiter = anyio.CapacityLimiter(SUBMIT_CONCURRENCY)
        requests: list[tuple[str, ChatRequest]] = []
        sent: list[ItemResult] = []
        size = 0
        async with _first_error(), anyio.create_task_group() as tg:
            for n, index in enumerate(indices):
                if self._stop_requested or self._budget_hit is not None:
                    break
                result = self.items[index]
                captured = await self._capture_item(result)
                if captured is None:
                    continue
                cid, request = captured
                nbytes = self.service.request_size(cid, request)
                if sent and (len(sent) >= self.max_requests or size + nbytes > self.max_bytes):
                    self._send(tg, limiter, requests, sent)
                    requests, sent, size = [], [], 0
                requests.append((cid, request))
                sent.append(result)
                size += nbytes
                if n % 64 == 63:
                    await anyio.lowlevel.checkpoint()  # the kernel answers while it captures
            if sent and not self._stop_requested:
                self._send(tg, limiter, requests, sent)
        if self._budget_hit is not None:
            for result in self.items:
                if result.status == "pending" and not result.reason:
                    result.reason = "not started (budget)"
            self._changed()

    async def _capture_item(self, result: ItemResult) -> tuple[str, ChatRequest] | None:
        result.attempts += 1
        branch = result.branch = self._item_branch(result)
        try:
            prompt = self._prompt(result)
            request = await self._capture(branch, prompt)
        except Exception as exc:
            result.error = exc
            self._finish(result, "failed", time.perf_counter())
            return None
        LIVE_ITEMS.discard(str(branch.id))
        result.live = None  # made again from the snapshot, under its id, when collected
        result.custom_id = None  # a fresh request's id is made from the index (`_request_id`)
        return _request_id(result), request

    def _item_id(self, index: int) -> str:
        """Item ``index``'s branch id: saved (a resumed run), else made from the run's base
        (a version-4 UUID stays one: the index only changes its last 48 random bits)."""
        saved = self._branch_ids.get(index)
        return saved if saved is not None else str(UUID(int=self._id_base ^ index))

    def _prompt(self, result: ItemResult) -> str:
        saved = self._prompts.get(result.index)
        if saved is not None:
            return saved
        prompt = render(self.instruction, result.item, result.index)
        if not isinstance(prompt, str):
            raise ConfigurationError(
                "`via='batch'` needs each item's prompt as text (a template or a function "
                f"returning str); item {result.index} gave {type(prompt).__name__}."
            )
        return prompt

    def _send(
        self,
        tg: Any,
        limiter: Any,
        requests: list[tuple[str, ChatRequest]],
        sent: list[ItemResult],
    ) -> None:
        requests, sent = self._within_budget(requests, sent)
        if not requests:
            return
        part = Part(_compact([r.index for r in sent]))
        self.parts.append(part)
        tg.start_soon(self._submit_part, part, requests, sent, limiter)

    async def _submit_part(
        self,
        part: Part,
        requests: list[tuple[str, ChatRequest]],
        sent: list[ItemResult],
        limiter: Any,
    ) -> None:
        async with limiter:
            number = str(self.parts.index(part) + 1)
            status = await self.service.submit(
                requests, metadata={"lion_nb_run": self.name, "lion_nb_part": number}
            )
        part.batch_id, part.status = status.id, status
        self.state = "submitted"
        with anyio.CancelScope(shield=True):  # recorded before anything else can stop it
            saved = part.saved = await self._save(self._make_record(part, sent))
            await self._save_job()
        if saved and self._streamed:  # the record keeps each item and prompt: not kept here
            for result in sent:
                result.item = None
        for result in sent:
            self._set_status(result, "running")  # at the provider
        if self._submitted is not None:
            self._submitted.set()
        if self._stop_requested:
            await self._cancel_part(part)

    def _within_budget(
        self, requests: list[tuple[str, ChatRequest]], sent: list[ItemResult]
    ) -> tuple[list[tuple[str, ChatRequest]], list[ItemResult]]:
        """The requests whose worst cases, with those of the job's batches already sent, fit
        the budgets that apply (the run's, the source branch's, the session's, a cell's), at
        the batch discount; the rest are left pending, "not started (budget)", as a live run
        leaves them."""
        from ..runtime.budget import fitting_requests

        model = self.model
        fits, exc = fitting_requests(
            self._base,
            model,
            [request for _, request in requests],
            session=self.session,
            pricer=model.pricer.discounted(self._discount),
            meter=self._meter(),
            planned=self._planned,
        )
        if exc is None:
            return requests, sent
        for result in sent[fits:]:
            self._not_started(result, exc)
        self._changed()
        return requests[:fits], sent[:fits]

    async def _capture(self, branch: Any, prompt: str) -> ChatRequest:
        from ..models.imodel import iModel

        capture = _Capture()
        logs = len(branch.logs)
        kwargs = {
            k: v for k, v in self.kwargs.items() if k not in (*_COMMUNICATE_ONLY, "operation")
        }
        await branch.chat(prompt, imodel=iModel(endpoint=capture), **kwargs)
        for entry in list(branch.logs)[logs:]:  # the capture is not a call: leave no trace
            branch.logs.remove(entry.id)
        assert capture.request is not None
        return capture.request

    async def _watch(self) -> None:
        """Poll every batch of the job together; collect each as soon as it has ended."""
        deadline = time.monotonic() + self.poll_timeout
        while True:
            waiting = [p for p in self.parts if p.batch_id and not p.collected]
            if not waiting:
                return
            if len(waiting) == 1:
                await self._poll_once(waiting[0])
            else:
                async with _first_error(), anyio.create_task_group() as tg:
                    for part in waiting:
                        tg.start_soon(self._poll_once, part)
            ended = [p for p in waiting if p.status is not None and p.status.ended]
            self._changed()
            for part in ended:
                await self._collect(part)
            if len(ended) == len(waiting):
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                self._gave_up = True
                late = [p for p in self.parts if p.batch_id and not p.collected]
                names = ", ".join(f"`{p.batch_id}`" for p in late)
                states = ", ".join(p.status.state if p.status else "not seen" for p in late)
                raise ProviderTimeoutError(
                    f"the batch {names} did not end within `poll_timeout="
                    f"{self.poll_timeout:g}` seconds (last seen: {states}). It goes on at the "
                    f"provider: take it up again with `session.resume_batch("
                    f"{late[0].batch_id!r})`, or give a longer `poll_timeout=`.",
                    provider=self.service.endpoint.name,
                )
            await anyio.sleep(min(self.poll_interval, left))

    async def _poll_once(self, part: Part) -> Any:
        try:
            status = await self.service.status(part.batch_id)
        except (ProviderConnectionError, ProviderError) as exc:
            if not getattr(exc, "retryable", False):
                raise
            logger.warning("polling batch %s failed, trying again: %s", part.batch_id, exc)
            return None
        part.status = status
        if status.state != "submitted" and self.state == "submitted":
            self.state = "running"
        return status

    async def _collect(self, part: Part) -> None:
        """Record each item's answer as its result line arrives (the file is streamed)."""
        status = part.status
        self.state = "collecting"
        self._changed()
        record = await self._load_record(part)  # its prompts (streamed), then marked collected
        if self._streamed:
            self._take_prompts(part, record)
        mine = (self.items[i] for i in part.indices)
        waiting = {_request_id(r): r for r in mine if r.status == "running"}
        async with aclosing(self.service.results(status)) as outcomes:
            async for outcome in outcomes:
                result = waiting.pop(outcome.custom_id, None)
                if result is None:  # not one of ours, or a repeated line
                    continue
                result.custom_id = None  # answered: a resumed item's saved id is let go
                result.live = self._item_at_provider(result)
                if outcome.cancelled:  # never ran: stopped, not failed
                    self._finish(result, "stopped", time.perf_counter())
                    continue
                with budget_scope(self._meter()):  # the run's budget counts what it paid
                    await self._record_outcome(result, outcome)
        for result in sorted(waiting.values(), key=lambda r: r.index):
            result.live = self._item_at_provider(result)
            reason = "stopped" if status.state in ("cancelled", "expired") else "failed"
            if reason == "failed":
                result.error = ProviderError(
                    f"the batch `{part.batch_id}` ended ({status.state}) without a result "
                    "for this item",
                    provider=self.service.endpoint.name,
                )
            self._finish(result, reason, time.perf_counter())
        part.collected = True
        self.rows.flush()
        await self._mark_collected(record)
        self.state = "running" if any(not p.collected for p in self.parts) else "collecting"

    def _item_at_provider(self, result: ItemResult) -> Any:
        """The item's branch as it was submitted: a clone of the snapshot under its id."""
        from .branch import Branch

        index = result.index
        base = self._base
        branch_id = self._item_id(index)
        self._branch_ids.pop(index, None)
        branch = Branch(
            id=UUID(branch_id),
            name=self._names.pop(index, None) or f"{self.name}[{index}]",
            user=base.user,
            messages=[m.clone(recipient=branch_id) for m in base.messages],
            tools=list(base.acts.registry.values()) or None,
            chat_model=self.model,
            metadata={"clone_from": dict(base.metadata.get("clone_from") or {"id": str(base.id)})},
        )
        for mine, theirs in zip(branch.messages, base.messages, strict=True):
            mine.metadata["clone_from"] = theirs.metadata.get("clone_from")
        self.session._attach(branch)
        LIVE_ITEMS.add(branch_id)
        return branch

    async def _record_outcome(self, result: ItemResult, outcome: Any) -> None:
        from ..models.imodel import iModel

        model = self.model
        branch = result.branch
        replay = iModel(endpoint=_Replay(self.service, outcome, model.provider, model.model))
        replay.provider = model.provider
        replay._pricer = model.pricer.discounted(self._discount)  # the batch API's discount
        prompt = self._prompt(result)
        self._prompts.pop(result.index, None)
        start = time.perf_counter()
        try:
            if self.operation == "chat":
                chat_kw = {k: v for k, v in self.kwargs.items() if k not in _COMMUNICATE_ONLY}
                result.value = await branch.chat(prompt, imodel=replay, **chat_kw)
            else:
                result.value = await branch.communicate(prompt, chat_model=replay, **self.kwargs)
        except Exception as exc:
            result.error = exc
            self._finish(result, "failed", start)
        else:
            self._finish(result, "done", start)

    # -- stop, detach, retry -----------------------------------------------------------------------
    def _cancel_now(self) -> None:
        if self._loop is not None:
            for part in self.parts:
                if part.batch_id and not part.collected:
                    self._loop.create_task(self._cancel_part(part))

    async def _cancel_part(self, part: Part) -> None:
        if part.batch_id is None or part.collected:
            return
        try:
            part.status = await self.service.cancel(part.batch_id)
        except Exception:
            logger.warning("could not cancel batch %s", part.batch_id, exc_info=True)
        self._changed()

    def detach(self) -> bool:
        """Stop watching the batches here; they go on at the provider (``resume_batch``)."""
        if not self.running:
            return False
        self._task.cancel()  # type: ignore[union-attr]
        return True

    def retry(self) -> BatchRun:
        """Submit again, as new provider batches, only the items that failed, expired, were
        stopped or never started."""
        self._cancel_sent = False
        self._gave_up = False
        self._id_base = uuid4().int  # a retried item runs on a new branch, as live ones do
        return super().retry()

    # -- progress ----------------------------------------------------------------------------------
    def progress(self) -> Any:
        snap = super().progress()
        done = failed = 0
        for part in self.parts:
            status = part.status
            if part.collected or status is None or status.state == "submitted":
                continue
            done += status.succeeded
            failed += status.failed
        if not done and not failed:
            return snap
        from dataclasses import replace

        done = min(done, snap.in_flight)
        failed = min(failed, snap.in_flight - done)
        eta = snap.eta
        if self._t0 is not None and done + failed > 0:
            run_time = time.monotonic() - self._t0
            eta = (snap.in_flight - done - failed) * run_time / (done + failed)
        return replace(
            snap,
            done=snap.done + done,
            failed=snap.failed + failed,
            in_flight=snap.in_flight - done - failed,
            eta=eta,
        )

    # -- records -----------------------------------------------------------------------------------
    def _make_record(self, part: Part, sent: list[ItemResult]) -> dict[str, Any]:
        model = self.model
        price = price_pair(self.price)
        return {
            "version": VERSION,
            "batch_id": part.batch_id,
            "job": self.job_id,
            "provider": model.provider,
            "run": self.name,
            "operation": self.operation,
            "session_id": str(self.session.id),
            "created_at": time.time(),
            "state": "submitted",
            "model": model.to_dict(include_request_options=True, include_processor_config=True),
            "source": self._base.to_dict(mode="json"),
            "kwargs": saved_kwargs(self.kwargs),
            "price": list(price) if price else None,
            "column": self.column,
            "items": [
                {
                    "index": r.index,
                    "custom_id": _request_id(r),
                    "branch_id": self._item_id(r.index),
                    "name": self._names.get(r.index) or f"{self.name}[{r.index}]",
                    "prompt": self._prompt(r),
                    "item": jsonable(r.item),
                }
                for r in sent
            ],
            "collected": [],
        }

    async def _load_record(self, part: Part) -> dict[str, Any] | None:
        """The saved record of one provider batch (``None``: none could be read)."""
        if part.batch_id is None:
            return None
        try:
            return await anyio.to_thread.run_sync(book_for(self.session).load, part.batch_id)
        except Exception:
            return None

    def _take_prompts(self, part: Part, record: dict[str, Any] | None) -> None:
        """A streamed input's prompts of one provider batch, from its record: only the
        batch being collected has them in memory."""
        if record is None:
            logger.warning("could not read the record of batch %s", part.batch_id)
            return
        for entry in record.get("items") or ():
            index = entry.get("index")
            known = isinstance(index, int) and 0 <= index < len(self.items)
            if known and self.items[index].item is None:
                self._prompts[index] = entry["prompt"]

    async def _mark_collected(self, record: dict[str, Any] | None) -> None:
        if record is None:
            return
        record["state"] = "collected"
        await self._save(record)
        await self._save_job()

    async def _save_job(self, *, items: bool = False) -> None:
        """The job's own record: its batches, and (once, first) every item and the prompt
        template, so a kernel restart can send what was not sent yet. Saves take turns and
        each is made when its turn comes: batches submitted together save the job from
        several tasks, and an older state written last would drop a batch from it."""
        if self._job_lock is None:  # saved outside a run's task
            self._job_lock = anyio.Lock()
        async with self._job_lock:
            await self._write_job(items)

    async def _write_job(self, items: bool) -> None:
        job = {
            "version": VERSION,
            "batch_id": self.job_id,
            "kind": "job",
            "run": self.name,
            "provider": self.model.provider,
            "session_id": str(self.session.id),
            "total": len(self.items),
            "streamed": self._streamed,  # items not sent yet were not kept: not resumable
            "instruction": self.instruction if isinstance(self.instruction, str) else None,
            # only batches whose own record is written: a kill between the two must not leave
            # the job naming a batch that a new kernel cannot find
            "parts": [p.batch_id for p in self.parts if p.batch_id and p.saved],
            "collected": [p.batch_id for p in self.parts if p.collected],
            "state": "collected"
            if self.parts and all(p.collected for p in self.parts)
            else "submitted",
            "created_at": time.time(),
        }
        await self._save(job)
        if items and not self._streamed and isinstance(self.instruction, str | None):
            book = book_for(self.session)
            lines = getattr(book, "save_lines", None)
            if lines is not None:
                rows = ({"index": r.index, "item": jsonable(r.item)} for r in self.items)
                await anyio.to_thread.run_sync(lines, self.job_id, rows)

    async def _save(self, record: dict[str, Any] | None) -> bool:
        """Save a record; whether it was saved."""
        if record is None:
            return False
        book = book_for(self.session)
        try:  # shielded: a batch the provider has must stay resumable, even when detached
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(book.save, record)
        except Exception:
            logger.warning(
                "could not save the record of batch %s; it cannot be resumed after a restart",
                record.get("batch_id"),
                exc_info=True,
            )
            return False
        return True


@asynccontextmanager
async def _first_error() -> Any:
    """A task group's failure as its first error (what a single submission or poll raised),
    not an exception group."""
    import sys

    if sys.version_info >= (3, 11):
        groups: Any = BaseExceptionGroup  # noqa: F821 - a builtin from 3.11
    else:  # pragma: no cover - anyio's own dependency on 3.10
        from exceptiongroup import (  # type: ignore[import-not-found]
            BaseExceptionGroup as groups,
        )
    try:
        yield
    except groups as group:
        cancelled = anyio.get_cancelled_exc_class()
        errors = [e for e in group.exceptions if not isinstance(e, cancelled)]
        raise (errors or list(group.exceptions))[0] from None


def _request_id(result: ItemResult) -> str:
    """An item's request id in its provider batch: a resumed item's saved one, else made
    from its index (so a million waiting items keep none)."""
    return result.custom_id or f"item-{result.index}"


def _compact(indices: list[int]) -> Any:
    """A part's item indices: a ``range`` when they follow one another (as they do unless a
    retry picked some), else the list."""
    if indices and all(b - a == 1 for a, b in pairwise(indices)):
        return range(indices[0], indices[-1] + 1)
    return indices


def _limits(given: Any, service: Any) -> tuple[int, int]:
    """``(requests, bytes)`` per provider batch: the provider's, or smaller ones given."""
    most = (int(service.max_requests), int(service.max_bytes))
    if given is None:
        return most
    if (
        not isinstance(given, tuple | list)
        or len(given) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in given)
    ):
        raise ConfigurationError(
            "`batch_limits=`: give `(requests, bytes)` per provider batch, both whole numbers "
            "above 0."
        )
    return min(given[0], most[0]), min(given[1], most[1])


def _interval(value: Any) -> float:
    if value is None:
        return DEFAULT_POLL_INTERVAL
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigurationError(f"`poll_interval={value!r}`: give seconds between polls (> 0).")
    return float(value)


def _seconds(value: Any, name: str, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e9:
        raise ConfigurationError(
            f"`{name}={value!r}`: give how many seconds to wait for the batch to end (> 0)."
        )
    return float(value)
