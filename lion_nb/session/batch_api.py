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

import importlib
import json
import logging
import time
from contextlib import aclosing
from typing import Any
from uuid import UUID

import anyio

from ..errors import (
    ConfigurationError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
)
from ..models.endpoints.base import APIEndpoint, ChatRequest, ModelResponse
from ..runtime.budget import budget_scope
from ._batch_items import Price, describe, render
from .batch import BatchRun, ItemResult, _check_operation, _resolve_model
from .batch_records import VERSION, book_for

__all__ = ["ProviderRun", "resume_batch"]

logger = logging.getLogger("lion_nb.batch")

DEFAULT_POLL_INTERVAL = 30.0
DEFAULT_POLL_TIMEOUT = 25 * 3600.0  # both providers end a batch within 24 hours
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


class ProviderRun(BatchRun):
    """A batch through the provider's batch service (see the module docstring)."""

    via = "batch"
    _discount = 0.5

    def __init__(self, session: Any, data: Any, instruction: Any, **kwargs: Any):
        poll = kwargs.pop("poll_interval", None)
        deadline = kwargs.pop("poll_timeout", None)
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
        self._setup(poll, deadline)

    def _setup(self, poll_interval: float | None, poll_timeout: float | None = None) -> None:
        from ..models.batch_service import batch_service

        self.poll_interval = _interval(poll_interval)
        self.poll_timeout = _seconds(poll_timeout, "poll_timeout", DEFAULT_POLL_TIMEOUT)
        self.service = batch_service(self.model)
        self.batch_id: str | None = None
        self.batch_ids: list[str] = []
        self.remote: Any = None  # the last BatchStatus seen
        self._prompts: dict[int, str] = {}
        self._record: dict[str, Any] | None = None
        self._submitted: Any = None  # an anyio Event set once the provider has the batch
        self._cancel_sent = False
        self._recorded_before: set[int] = set()
        self._gave_up = False  # polling passed `poll_timeout`

    @property
    def model(self) -> Any:
        return self._model or self._base.chat_model

    def _starting_state(self) -> str:
        return "submitting" if self.batch_id is None else "submitted"

    # -- the task --------------------------------------------------------------------------------
    async def _main(self, indices: list[int]) -> None:
        self._t0, self._finished_at_t0 = time.monotonic(), self._finished()
        self._changed()
        try:
            if self.batch_id is None:
                await self._submit(indices)
            if self.batch_id is not None:
                status = await self._poll()
                await self._collect(status)
            halted = self._stop_requested or self._budget_hit is not None
            self.state = "stopped" if halted else "finished"
        except anyio.get_cancelled_exc_class():
            self.state = "detached"  # watched no longer; the provider's batch goes on
            raise
        except Exception as exc:
            self.state = "failed"
            self.error = exc
            gave_up = self._gave_up
            for result in self.items:  # never submitted, or given up: each fails with why
                if result.status in ("pending", "running") and (self.batch_id is None or gave_up):
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

    async def submit(self) -> str | None:
        """Wait until the provider has the batch; its id (``None`` if nothing was sent)."""
        if self._queued is not None or (self._task is None and self.state == "pending"):
            self.start()
        if self.batch_id is None and not self.done():
            if self._submitted is None:
                self._submitted = anyio.Event()
            await self._submitted.wait()
        if self.batch_id is None and self.error is not None:
            raise self.error
        return self.batch_id

    async def _submit(self, indices: list[int]) -> None:
        requests = []
        sent: list[ItemResult] = []
        for index in indices:
            result = self.items[index]
            result.attempts += 1
            result.branch = self._item_branch(result)
            try:
                prompt = render(self.instruction, result.item, index)
                if not isinstance(prompt, str):
                    raise ConfigurationError(
                        "`via='batch'` needs each item's prompt as text (a template or a "
                        f"function returning str); item {index} gave {type(prompt).__name__}."
                    )
                request = await self._capture(result.branch, prompt)
            except Exception as exc:
                result.error = exc
                self._finish(result, "failed", time.perf_counter())
                continue
            self._prompts[index] = prompt
            result.custom_id = f"item-{index}"
            requests.append((result.custom_id, request))
            sent.append(result)
        requests, sent = self._within_budget(requests, sent)
        if not requests:
            return
        status = await self.service.submit(requests, metadata={"lion_nb_run": self.name})
        self.batch_id, self.remote = status.id, status
        self.batch_ids.append(status.id)
        self.state = "submitted"
        for result in sent:
            self._set_status(result, "running")  # at the provider
        self._record = self._make_record(sent)
        await self._save()
        if self._submitted is not None:
            self._submitted.set()
        if self._stop_requested:
            await self._cancel_remote()

    def _within_budget(
        self, requests: list[tuple[str, ChatRequest]], sent: list[ItemResult]
    ) -> tuple[list[tuple[str, ChatRequest]], list[ItemResult]]:
        """The requests whose worst cases, all together, fit the budgets that apply (the
        run's, the source branch's, the session's, a cell's), at the batch discount; the
        rest are left pending, "not started (budget)", as a live run leaves them."""
        from ..runtime.budget import fitting_requests

        model = self.model
        fits, exc = fitting_requests(
            self._base,
            model,
            [request for _, request in requests],
            session=self.session,
            pricer=model.pricer.discounted(self._discount),
            meter=self._meter(),
        )
        if exc is None:
            return requests, sent
        for result in sent[fits:]:
            self._prompts.pop(result.index, None)
            result.custom_id = None
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

    async def _poll(self) -> Any:
        deadline = time.monotonic() + self.poll_timeout
        while True:
            try:
                status = await self.service.status(self.batch_id)
            except (ProviderConnectionError, ProviderError) as exc:
                if not getattr(exc, "retryable", False):
                    raise
                logger.warning("polling batch %s failed, trying again: %s", self.batch_id, exc)
            else:
                self.remote = status
                self.state = "submitted" if status.state == "submitted" else "running"
                self._changed()
                if status.ended:
                    return status
            left = deadline - time.monotonic()
            if left <= 0:
                self._gave_up = True
                state = self.remote.state if self.remote is not None else "not seen"
                raise ProviderTimeoutError(
                    f"the batch `{self.batch_id}` did not end within "
                    f"`poll_timeout={self.poll_timeout:g}` seconds (last seen: {state}). It "
                    f"goes on at the provider: take it up again with "
                    f"`session.resume_batch({self.batch_id!r})`, or give a longer "
                    "`poll_timeout=`.",
                    provider=self.service.endpoint.name,
                )
            await anyio.sleep(min(self.poll_interval, left))

    async def _collect(self, status: Any) -> None:
        """Record each item's answer as its result line arrives (the file is streamed)."""
        self.state = "collecting"
        self._changed()
        waiting = {r.custom_id: r for r in self.items if r.status == "running" and r.custom_id}
        collected = []
        async with aclosing(self.service.results(status)) as outcomes:
            async for outcome in outcomes:
                result = waiting.pop(outcome.custom_id, None)
                if result is None:  # not one of ours, or a repeated line
                    continue
                if outcome.cancelled:  # never ran: stopped, not failed
                    self._finish(result, "stopped", time.perf_counter())
                    continue
                with budget_scope(self._meter()):  # the run's budget counts what it paid
                    await self._record_outcome(result, outcome)
                collected.append(result.index)
        for result in sorted(waiting.values(), key=lambda r: r.index):
            reason = "stopped" if status.state in ("cancelled", "expired") else "failed"
            if reason == "failed":
                result.error = ProviderError(
                    f"the batch `{self.batch_id}` ended ({status.state}) without a result "
                    "for this item",
                    provider=self.service.endpoint.name,
                )
            self._finish(result, reason, time.perf_counter())
        self.remote = None
        if self._record is not None:
            self._record["state"] = "collected"
            self._record["collected"] = sorted({*self._record.get("collected", ()), *collected})
            await self._save()

    async def _record_outcome(self, result: ItemResult, outcome: Any) -> None:
        from ..models.imodel import iModel

        model = self.model
        branch = result.branch
        if result.index in self._recorded_before:  # its branch came back with its answer
            answers = [m for m in branch.messages if m.kind == "assistant_response"]
            result.value = answers[-1].response if answers else None
            self._finish(result, "done", time.perf_counter())
            return
        replay = iModel(endpoint=_Replay(self.service, outcome, model.provider, model.model))
        replay.provider = model.provider
        replay._pricer = model.pricer.discounted(self._discount)  # the batch API's discount
        prompt = self._prompts[result.index]
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
        if self.batch_id is not None and self._loop is not None:
            self._loop.create_task(self._cancel_remote())

    async def _cancel_remote(self) -> None:
        if self._cancel_sent or self.batch_id is None:
            return
        self._cancel_sent = True
        try:
            self.remote = await self.service.cancel(self.batch_id)
        except Exception:
            logger.warning("could not cancel batch %s", self.batch_id, exc_info=True)
        self._changed()

    def detach(self) -> bool:
        """Stop watching the batch here; it goes on at the provider (``resume_batch`` later)."""
        if not self.running:
            return False
        self._task.cancel()  # type: ignore[union-attr]
        return True

    def retry(self) -> BatchRun:
        self.batch_id, self._record, self._cancel_sent = None, None, False
        self._gave_up = False
        return super().retry()

    # -- progress ----------------------------------------------------------------------------------
    def progress(self) -> Any:
        snap = super().progress()
        remote = self.remote
        if remote is None or remote.state == "submitted":
            return snap
        from dataclasses import replace

        done, failed = min(remote.succeeded, snap.in_flight), remote.failed
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
    def _make_record(self, sent: list[ItemResult]) -> dict[str, Any]:
        model = self.model
        return {
            "version": VERSION,
            "batch_id": self.batch_id,
            "provider": model.provider,
            "run": self.name,
            "operation": self.operation,
            "session_id": str(self.session.id),
            "created_at": time.time(),
            "state": "submitted",
            "model": model.to_dict(include_request_options=True, include_processor_config=True),
            "source": self._base.to_dict(mode="json"),
            "kwargs": _saved_kwargs(self.kwargs),
            "price": list(_price_pair(self.price)) if _price_pair(self.price) else None,
            "column": self.column,
            "items": [
                {
                    "index": r.index,
                    "custom_id": r.custom_id,
                    "branch_id": str(r.branch.id),
                    "name": r.branch.name,
                    "prompt": self._prompts[r.index],
                    "item": _jsonable(r.item),
                }
                for r in sent
            ],
            "collected": [],
        }

    async def _save(self) -> None:
        record = self._record
        if record is None:
            return
        book = book_for(self.session)
        try:
            await anyio.to_thread.run_sync(book.save, record)
        except Exception:
            logger.warning(
                "could not save the record of batch %s; it cannot be resumed after a restart",
                self.batch_id,
                exc_info=True,
            )


# -- resuming ------------------------------------------------------------------------------------
def resume_batch(
    session: Any,
    batch_id: str,
    *,
    model: Any = None,
    poll_interval: float | None = None,
    poll_timeout: float | None = None,
    **kwargs: Any,
) -> ProviderRun:
    """Rebuild the run of a saved provider batch in ``session`` and start watching it."""
    from ..models.imodel import iModel
    from .branch import Branch

    record = book_for(session).load(batch_id)
    chosen = _resolve_model(model) if model is not None else iModel.from_dict(record["model"])
    source = Branch.from_dict(record["source"])
    saved = _loaded_kwargs(record.get("kwargs") or {}, kwargs)
    run = ProviderRun.__new__(ProviderRun)
    entries = record.get("items") or []
    run._init_state(
        session,
        source,
        [e.get("item") for e in entries],
        name=record.get("run") or f"batch-{batch_id}",
        instruction=None,
        operation=record.get("operation", "communicate"),
        kwargs=saved,
        model=chosen,
        concurrency=1,
        column=record.get("column") or "result",
        price=Price.of(record.get("price")),
        data=[e.get("item") for e in entries],
        kind="list",
    )
    _check_operation(run.operation)
    run._setup(poll_interval, poll_timeout)
    run.batch_id, run.batch_ids, run._record = record["batch_id"], [record["batch_id"]], record
    base_len = len(source.messages)
    for result, entry in zip(run.items, entries, strict=True):
        result.custom_id = entry["custom_id"]
        run._prompts[result.index] = entry["prompt"]
        branch = session._branches.get(entry["branch_id"])
        if branch is None:
            branch = _rebuild(run, entry)
            session.include_branches(branch)
        elif len(branch.messages) > base_len:
            run._recorded_before.add(result.index)
        result.branch = branch
        result.attempts = 1
        run._set_status(result, "running")
    return run.start()  # type: ignore[return-value]


def _rebuild(run: ProviderRun, entry: dict[str, Any]) -> Any:
    """The item's branch as it was submitted: a clone of the snapshot, under its saved id."""
    from .branch import Branch

    base = run._base
    branch = Branch(
        id=UUID(entry["branch_id"]),
        name=entry.get("name"),
        user=base.user,
        messages=[m.clone(recipient=entry["branch_id"]) for m in base.messages],
        chat_model=run.model,
        metadata={"clone_from": dict(base.metadata.get("clone_from") or {"id": str(base.id)})},
    )
    for mine, theirs in zip(branch.messages, base.messages, strict=True):
        mine.metadata["clone_from"] = theirs.metadata.get("clone_from")
    return branch


# -- saving keyword arguments ----------------------------------------------------------------------
def _saved_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments as JSON: classes (a response format) by import path."""
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in ("operation",):
            continue
        if isinstance(value, type):
            out[key] = {"__class__": f"{value.__module__}:{value.__qualname__}"}
            continue
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            out[key] = {"__unsaved__": type(value).__name__}
        else:
            out[key] = value
    return out


def _loaded_kwargs(saved: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in saved.items():
        if key in given:
            continue
        if isinstance(value, dict) and "__class__" in value:
            module, _, name = value["__class__"].partition(":")
            try:
                obj: Any = importlib.import_module(module)
                for part in name.split("."):
                    obj = getattr(obj, part)
            except (ImportError, AttributeError):
                raise ConfigurationError(
                    f"The batch was submitted with `{key}={name}`, which cannot be imported "
                    f"now (from `{module}`). Define it again, or pass `{key}=` to "
                    "`resume_batch`."
                ) from None
            out[key] = obj
        elif isinstance(value, dict) and "__unsaved__" in value:
            raise ConfigurationError(
                f"The batch was submitted with a `{key}=` ({value['__unsaved__']}) that could "
                f"not be saved; pass `{key}=` to `resume_batch` again."
            )
        else:
            out[key] = value
    return {**out, **given}


def _jsonable(item: Any) -> Any:
    try:
        json.dumps(item)
    except (TypeError, ValueError):
        return describe(item, limit=200)
    return item


def _price_pair(price: Any) -> tuple[float, float] | None:
    return (price.input, price.output) if isinstance(price, Price) else None


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
