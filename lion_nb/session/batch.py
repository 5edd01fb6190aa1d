"""Batches over data: one operation per item, each on its own clone of a branch.

``run = session.map(items, "Summarize {item}")`` returns a `BatchRun` at once; ``await run``
gives the results in input order. Design decisions:

- **Isolation.** The source branch is snapshotted once when the run is made (a clone kept
  outside the session); each item runs on a fresh clone of that snapshot, included in the
  session as ``<run name>[<index>]`` and recorded as ``clone_from`` the source, so items
  never see each other's history nor turns added to the source while the run goes on.
- **Concurrency.** ``concurrency`` workers take items from one queue, so a Stop starts
  nothing new and there are never more tasks than workers. Within that bound the model's own
  limits apply: clones share the source's model object, so ``limit_requests``,
  ``limit_tokens`` and ``concurrency_limit`` hold for the run as a whole. Workers are started
  a few per turn of the event loop: each prepares an item (a clone, its prompt, its request)
  before it first waits, and a thousand of those in one turn would stall the loop -- and the
  kernel's other work -- for about a second. For the same reason a worker yields after
  each item: an in-process model (the offline ones) answers without ever waiting, and 5,000
  such items would otherwise hold the loop -- Stop, progress, the kernel -- to the end.
- **Per-item cost.** An item pays for its own work only: a clone of the snapshot (one copy
  per snapshot message, addressed to the clone as it is made), its inclusion in the session
  and two counter updates. Nothing is scanned per item -- not the other items, the session's
  branches nor the run's results -- so the thousandth item costs what the first did.
- **Failures are data.** An item's exception is kept on its `ItemResult` (status
  ``failed``); the run goes on. ``retry()`` runs again, on fresh clones, the items that
  failed, were stopped or never started; their earlier branches leave the session.
- **Budget** (``budget=``, a `Budget` or dollars): the run's calls are counted against it;
  a call that would cross it is not started, the run starts no more items, and the items
  left are ``pending`` with ``reason`` "not started (budget)". Raise ``run.budget.usd``
  and ``retry()`` finishes them (the spend so far still counts).
- **Stop** (``stop()``, from any thread) starts nothing new and cancels the calls in
  flight; those items are ``stopped`` and their cancellation runs the operations' own
  cleanup (an HTTP request is closed, a CLI agent's process is ended).
- **A handle, not a coroutine.** The run is a task on the running loop, started when it is
  made (or when first awaited, if no loop runs yet), so a notebook cell returns at once and
  the kernel stays free. Awaiting only observes: an interrupted ``await`` does not stop it.
- **Progress** is counted as items change state (no scan per update) and handed to
  observers (`on_progress`), which throttle themselves: `lion_nb.widgets.BatchProgress` and
  its text fallback are such observers.

The providers' batch services (``via="batch"``) share this handle; see `batch_api`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
import weakref
from collections import Counter, deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from ..errors import BudgetExceeded, ConfigurationError
from ..operations.verbs import default_verb, verb_names
from ..runtime.budget import budget_scope
from ..runtime.observer import Observers
from ._batch_items import Price, as_items, describe, message_cost, render, shape_output
from .batch_progress import Progress, count_parts
from .batch_results import ItemResult, ItemTable
from .batch_rows import LIVE_ITEMS

if TYPE_CHECKING:
    from .branch import Branch

#: a `lion_nb.session.session.Session`, which imports this module: not imported back
#: (the two would import each other), so typed loosely here
Session: TypeAlias = Any

__all__ = ["BatchRun", "ItemResult", "Progress", "compare", "count_parts", "runs_of"]

logger = logging.getLogger("lion_nb.batch")

#: verbs a batch calls by name with the item's prompt (anything else: a registered operation)
_VERBS = verb_names()
DEFAULT_CONCURRENCY = 8
#: workers started per turn of the event loop: each prepares its first item (clone, prompt,
#: request) before it waits for the model's limiter, so starting 1,000 at once would hold
#: the loop for a second; a few per turn keep it answering within milliseconds
_START_BATCH = 4
_TAKEN: weakref.WeakKeyDictionary[Any, set[tuple[str, int]]] = weakref.WeakKeyDictionary()
#: a run's states: pending, running (submitting, submitted, collecting for a provider batch),
#: then one of these
ENDED_STATES = frozenset({"finished", "stopped", "failed", "detached"})
_END = object()
#: inputs read as the run goes (`batch_sources`): their done items are not kept
_STREAMED = frozenset({"file", "polars", "iterator"})


class BatchRun:
    """A batch over items; await it for the results. See the module docstring."""

    via = "live"

    def __init__(
        self,
        session: Session,
        data: Any,
        instruction: Any,
        *,
        operation: Any = None,
        branch: Any = None,
        model: Any = None,
        concurrency: int | None = None,
        column: str = "result",
        price: Any = None,
        name: str | None = None,
        budget: Any = None,
        **kwargs: Any,
    ):
        from ..runtime.budget import Budget

        self.budget = Budget.of(budget)
        from .batch_sources import stream_of

        streamed = stream_of(data)
        source_rows: Any = None
        if streamed is None:
            items, kind = as_items(data)
        else:  # read as workers are free: only the first item now, for the template check
            source_rows, kind = streamed
            items = [next(source_rows, _END)]
            items = [] if items[0] is _END else items
        _check_operation(operation)
        if concurrency is not None and (
            isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
        ):
            raise ConfigurationError(
                f"`concurrency={concurrency!r}`: give how many items may run at once (1 or more)."
            )
        source = session._resolve(branch)
        model = _resolve_model(model)
        self._init_state(
            session,
            source.clone(),
            items,
            name=name or next_name(session, "map"),
            instruction=instruction,
            operation=operation,
            kwargs=kwargs,
            model=model,
            concurrency=_concurrency(concurrency, source.chat_model if model is None else model),
            column=column,
            price=Price.of(price),
            data=data,
            kind=kind,
        )
        self._source = source_rows
        if items and isinstance(instruction, str):
            render(instruction, items[0], 0)  # a wrong placeholder fails here, not 500 times

    def _init_state(
        self,
        session: Session,
        base: Branch,
        items: list[Any],
        *,
        name: str,
        instruction: Any,
        operation: Any,
        kwargs: dict[str, Any],
        model: Any,
        concurrency: int,
        column: str,
        price: Any,
        data: Any,
        kind: str,
    ) -> None:
        self.session = session
        self._base = base  # the snapshot of the source every item starts from
        self.name = name
        self.instruction = instruction
        self.operation = operation
        self.kwargs = kwargs
        self.column = column
        self.price = price
        self.concurrency = concurrency
        self._model = model
        self._data, self._kind = data, kind
        self.items = ItemTable(self, items)  # columns, one view per item read (`batch_results`)
        from .batch_rows import ItemRows

        self.rows = ItemRows(session, name)
        register_run(session, self)
        self._counts: Counter[str] = Counter(pending=len(self.items))
        self._tokens = 0
        self._cost: float | None = 0.0
        self._observers = Observers(logger, "a batch progress observer failed")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._task: asyncio.Task | None = None
        self._scope: Any = None
        self._stop_requested = False
        self._budget_hit: BaseException | None = None
        self._queued: list[int] | None = None
        self._elapsed = 0.0
        self._t0: float | None = None
        self._finished_at_t0 = 0
        self.state = "pending"

    @property
    def source(self) -> Branch | None:
        """The branch the items were cloned from, if it is still in the session."""
        origin = (self._base.metadata.get("clone_from") or {}).get("id")
        return self.session._branches.get(origin) if origin else None

    # -- starting, waiting, stopping -------------------------------------------------------------
    def start(self) -> BatchRun:
        """Start on the running loop (a no-op once started; deferred if no loop runs).
        A run that has ended runs again only through `retry`."""
        if (self._task is not None or self.state == "stopped") and self._queued is None:
            return self
        indices = self._queued if self._queued is not None else list(range(len(self.items)))
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._queued = indices  # started by the first `await`
            return self
        self._queued = None
        from ..runtime.ledger import session_ledger

        session_ledger(self.session)  # built now, so the items' calls (not members) reach it
        self._loop, self._thread = loop, threading.get_ident()
        self._stop_requested = False
        self._budget_hit = None
        self.state = self._starting_state()
        self._task = loop.create_task(self._main(indices))
        self._task.add_done_callback(_retrieve)
        return self

    def _starting_state(self) -> str:
        return "running"

    def __await__(self):
        return self.wait().__await__()

    async def wait(self) -> Any:
        """The results (see `output`) once every item has ended or the run was stopped."""
        if self._queued is not None or (self._task is None and self.state == "pending"):
            self.start()
        task = self._task
        if task is not None:
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                if not (task.done() and task.cancelled()):
                    raise  # the waiting was cancelled, not the run
                # the run's own task was cancelled (detached, or its loop is closing)
        return self.output()

    def done(self) -> bool:
        return self._task is not None and self._task.done()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def ended(self) -> bool:
        """Whether the run has come to an end (finished, stopped, failed or detached); its
        observers see this already in their last call."""
        return self.state in ENDED_STATES

    def stop(self) -> bool:
        """Start nothing new and cancel the calls in flight (from any thread). ``False`` when
        the run is not running."""
        if not self.running:
            if self._queued is not None:  # never started
                self._queued = None
                self.state = "stopped"
                self._changed()
                return True
            return False
        self._stop_requested = True
        if threading.get_ident() == self._thread:
            self._cancel_now()
        else:
            try:
                self._loop.call_soon_threadsafe(self._cancel_now)  # type: ignore[union-attr]
            except RuntimeError:  # the loop is closed: nothing is running any more
                return False
        return True

    def _cancel_now(self) -> None:
        if self._scope is not None:
            self._scope.cancel()

    def retry(self) -> BatchRun:
        """Run again, on fresh clones, the items that failed, were stopped or never started.
        Returns this run (``await run.retry()`` gives the results)."""
        if self.running:
            raise ConfigurationError(
                f"`{self.name}` is still running: `await` it or `stop()` it before a retry."
            )
        indices = list(self.items.with_status("failed", "stopped", "pending"))
        for index in indices:
            self._reset(self.items[index])
        self._queued = indices
        self._task = None
        self.start()
        return self

    def _reset(self, result: ItemResult) -> None:
        self._release(result)
        self._set_status(result, "pending")
        result.value = result.error = result.live = result.duration = result.reason = None
        result.tokens, result.cost_usd = 0, 0.0
        self._recount()

    # -- the engine ------------------------------------------------------------------------------
    async def _main(self, indices: list[int]) -> None:
        import anyio

        self._t0, self._finished_at_t0 = time.monotonic(), self._finished()
        self._changed()
        try:
            await self._run(indices)
            if self.read_error is not None:  # the items read so far keep their results
                raise self.read_error
            halted = self._stop_requested or self._budget_hit is not None
            self.state = "stopped" if halted else "finished"
        except anyio.get_cancelled_exc_class():
            self.state = "stopped"  # the loop is going away (a kernel shutting down)
            raise
        except Exception:
            self.state = "failed"
            raise
        finally:
            self.rows.flush()
            self._elapsed += time.monotonic() - self._t0
            self._t0 = None
            self._changed()

    async def _run(self, indices: list[int]) -> None:
        import anyio
        import anyio.lowlevel

        queue = deque(indices)
        async with anyio.create_task_group() as tg:
            self._scope = tg.cancel_scope
            workers = self.concurrency if self._source is not None else len(queue)
            for n in range(min(self.concurrency, workers)):
                tg.start_soon(self._worker, queue)
                if n % _START_BATCH == _START_BATCH - 1:
                    await anyio.lowlevel.checkpoint()  # a few workers per turn (module doc)
        self._scope = None

    def _next_index(self, queue: deque[int]) -> int | None:
        """The next item to run: from the queue, else read from a streamed input."""
        if queue:
            return queue.popleft()
        source = self._source
        if source is None:
            return None
        try:
            item = next(source, _END)
        except Exception as exc:  # a row that cannot be read: the run ends with why
            self._source, self.read_error = None, exc
            return None
        if item is _END:
            self._source = None
            return None
        result = self.items.append(item)
        self._counts["pending"] += 1
        return result.index

    async def _worker(self, queue: deque[int]) -> None:
        import anyio.lowlevel

        while (queue or self._source is not None) and not self._stop_requested:
            if self._budget_hit is not None:
                for index in queue:
                    self.items[index].reason = "not started (budget)"
                queue.clear()
                self._changed()
                return
            taken = self._next_index(queue)
            if taken is None:
                return
            await self._run_item(self.items[taken])
            await anyio.lowlevel.checkpoint()  # an item that never waited still yields

    async def _run_item(self, result: ItemResult) -> None:
        import anyio

        result.attempts += 1
        branch = result.branch = self._item_branch(result)
        self._set_status(result, "running")
        start = time.perf_counter()
        try:
            prompt = render(self.instruction, result.item, result.index)
            with budget_scope(self._meter()):
                result.value = await self._call(branch, result.item, prompt)
        except BudgetExceeded as exc:
            self._not_started(result, exc)
        except anyio.get_cancelled_exc_class():
            self._finish(result, "stopped", start)
            raise
        except Exception as exc:
            result.error = exc
            self._finish(result, "failed", start)
        else:
            self._finish(result, "done", start)

    def _finish(self, result: ItemResult, status: str, start: float) -> None:
        result.duration = time.perf_counter() - start
        if status == "done" and self._kind in _STREAMED:
            result.item = None  # a streamed input is not kept: its row has the prompt
        branch = result.live
        if branch is not None:
            base = len(self._base.messages)
            tokens, cost = message_cost(branch.messages[base:], self.price, self._discount)
            if not self.keeps_branches:  # its row now: the Branch is let go (batch_rows)
                self.rows.put(result.index, branch)
                result.live = None
                LIVE_ITEMS.discard(str(branch.id))
        else:
            tokens, cost = 0, 0.0
        result.tokens, result.cost_usd = tokens, cost
        self._tokens += tokens
        self._cost = None if cost is None or self._cost is None else self._cost + cost
        self._set_status(result, status)

    #: compare's items (a few models side by side) stay members of the session, as before
    in_session = False

    @property
    def keeps_branches(self) -> bool:
        """Whether the items keep their live Branch: compare's siblings (members of the
        session) and a CLI agent's items (each holds its own provider session)."""
        return self.in_session or self._per_item_model

    _per_item_model = False

    def _release(self, result: ItemResult) -> None:
        """An item's branch and row are forgotten (a retry makes a fresh one)."""
        live = result.live
        if live is not None and live.id in self.session:
            self.session.remove_branch(live)
        if live is not None:
            LIVE_ITEMS.discard(str(live.id))
        result.live = None
        if not self.keeps_branches:
            self.rows.drop([result.index])

    def branch(self, index: int) -> Branch | None:
        """Item ``index``'s Branch: made from its row (a standalone branch, not a member of
        the session: `session.include_branches` it to go on); ``None`` if it never ran."""
        result = self.items[index]
        if result.live is not None:
            return result.live
        row = self.rows.get(result.index)
        if row is None:
            return None
        from .batch_rows import decode_row

        model = self._model(result.item) if callable(self._model) else self._model
        return decode_row(row, self._base, model)

    _discount = 1.0
    _source: Any = None  # a streamed input's rows not read yet (`batch_sources`)
    read_error: BaseException | None = None  # why a streamed input could not be read on
    budget: Any = None
    _budget_meter: Any = None

    def _meter(self) -> Any:
        """The run's spend under its budget, kept across retries (``None``: no budget)."""
        if self.budget is None:
            return None
        meter = self._budget_meter
        if meter is None or meter.budget is not self.budget:
            from ..runtime.budget import Meter

            spent = meter
            meter = self._budget_meter = Meter(self.budget, "batch")
            if spent is not None:  # a new Budget object: the spend so far still counts
                meter.usd, meter.tokens, meter.calls = spent.usd, spent.tokens, spent.calls
        return meter

    def _not_started(self, result: ItemResult, exc: BaseException) -> None:
        """A budget stopped this item before its call: back to pending, its branch gone."""
        self._budget_hit = exc
        self._release(result)
        result.reason = "not started (budget)"
        self._set_status(result, "pending")

    def _item_branch(self, result: ItemResult) -> Branch:
        """A fresh clone of the snapshot, recorded as a clone of the source, in the session."""
        clone = self._base.clone()
        suffix = describe(result.item) if hasattr(result.item, "provider") else result.index
        clone.name = f"{self.name}[{suffix}]"
        clone.metadata["clone_from"] = dict(self._base.metadata["clone_from"])
        for mine, theirs in zip(clone.messages, self._base.messages, strict=True):
            mine.metadata["clone_from"] = theirs.metadata.get("clone_from")
        model = self._model(result.item) if callable(self._model) else self._model
        if model is not None:
            # a CLI agent resumes its provider session: each item gets a fresh one (as
            # `Branch.clone` gives the source's agent), so items never share a history there
            clone.chat_model = model.copy() if getattr(model, "is_cli", False) else model
        if clone.chat_model.is_cli:
            self._per_item_model = True
        if self.in_session:
            self.session.include_branches(clone)
        else:  # the session's bus, hooks, operations and budget, without membership
            self.session._attach(clone)
            LIVE_ITEMS.add(str(clone.id))
        return clone

    async def _call(self, branch: Branch, item: Any, prompt: Any) -> Any:
        op, kw = self.operation, self.kwargs
        if op is None:  # as a cell does: a CLI agent runs, an API model communicates
            op = default_verb(branch.chat_model)
        if callable(op):
            return await op(branch, prompt, **kw)
        from ..operations.verbs import call_verb

        return await call_verb(branch, op, prompt, **kw)

    # -- counting --------------------------------------------------------------------------------
    def _set_status(self, result: ItemResult, status: str) -> None:
        if result.status == status:
            return
        self._counts[result.status] -= 1
        self._counts[status] += 1
        result.status = status
        self._changed()

    def _recount(self) -> None:
        """Totals from scratch (after a retry reset some items)."""
        ended = [self.items[i] for i in self.items.with_status("done", "failed", "stopped")]
        self._tokens = sum(r.tokens for r in ended)
        costs = [r.cost_usd for r in ended]
        priced = [c for c in costs if c is not None]
        self._cost = float(sum(priced)) if len(priced) == len(costs) else None

    def _finished(self) -> int:
        return self._counts["done"] + self._counts["failed"] + self._counts["stopped"]

    def progress(self) -> Progress:
        """The run as it is now."""
        c = self._counts
        elapsed = self._elapsed + (time.monotonic() - self._t0 if self._t0 is not None else 0.0)
        eta = None
        if self._t0 is not None:
            run_time = time.monotonic() - self._t0
            finished = self._finished() - self._finished_at_t0
            remaining = c["pending"] + c["running"]
            if finished > 0 and run_time > 0:
                eta = remaining * run_time / finished
        return Progress(
            name=self.name,
            via=self.via,
            state=self.state,
            total=len(self.items),
            done=c["done"],
            failed=c["failed"],
            stopped=c["stopped"],
            in_flight=c["running"],
            pending=c["pending"],
            tokens=self._tokens,
            cost_usd=self._cost if self._finished() else None,
            elapsed=elapsed,
            eta=eta,
            not_started=(len(self.items.reasons) if self._budget_hit is not None else 0),
        )

    # -- observers -------------------------------------------------------------------------------
    def on_progress(self, callback: Callable[[BatchRun], Any]) -> Callable[[], None]:
        """Call ``callback(run)`` on every change; returns a function that unsubscribes."""
        return self._observers.add(callback)

    def _changed(self) -> None:
        self._observers.notify(self)

    # -- results ---------------------------------------------------------------------------------
    @property
    def results(self) -> list[Any]:
        """Values in input order (``None`` where an item has no value)."""
        return self.items.results()

    @property
    def failures(self) -> list[ItemResult]:
        return [self.items[i] for i in self.items.with_status("failed")]

    @property
    def errors(self) -> dict[int, str]:
        """Index to error text, for the failed items."""
        return {r.index: r.error_text or "" for r in self.failures}

    @property
    def branches(self) -> Any:
        """The items' branches in input order, each made when read (`branch`)."""
        from .batch_rows import LazyBranches

        return LazyBranches(self)

    def output(self) -> Any:
        """The results as a list, or as a new ``column`` of a copy of the DataFrame/Series
        (a frame of ``index`` and ``column`` for a file or a polars frame)."""
        errors: list[str | None] = [None] * len(self.items)
        for result in self.failures:
            errors[result.index] = result.error_text
        if self._kind == "iterator":
            return self.results
        if self._kind in _STREAMED:
            from .batch_sources import result_frame

            return result_frame(range(len(self.items)), self.results, errors, self.column)
        return shape_output(self._data, self._kind, self.results, errors, self.column)

    def discard(self) -> None:
        """Forget the items' branches and rows, and the run leaves the session's list of
        runs (the results stay on this run)."""
        for live in list(self.items.live.values()):
            if live.id in self.session:
                self.session.remove_branch(live)
        self.items.live.clear()
        self.rows.drop()
        forget_run(self.session, self)

    def summary(self) -> dict[str, Any]:
        """The run as one row (explorer, ``%lion branches``): its counts, never its items."""
        p = self.progress()
        return {
            "run": self.name,
            "via": self.via,
            "state": p.state,
            "items": p.total,
            "done": p.done,
            "failed": p.failed,
            "stopped": p.stopped,
            "pending": p.pending + p.in_flight,
            "tokens": p.tokens,
            "cost_usd": p.cost_usd,
        }

    def page(self, start: int = 0, size: int = 50) -> list[dict[str, Any]]:
        """Items ``start`` to ``start + size`` as rows (index, label, status, value or error):
        a page of a run of any size, read from its compact results, never its branches."""
        rows = []
        for r in self.items[max(0, start) : max(0, start) + max(0, size)]:
            value = r.value if r.status == "done" else r.error_text
            rows.append(
                {
                    "index": r.index,
                    "item": r.label if r.item is not None else "",  # a streamed row: not kept
                    "status": r.status,
                    "result": describe(value, limit=80) if value is not None else "",
                }
            )
        return rows

    def __len__(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:
        return f"<BatchRun {self.progress().line()}>"


_RUNS: weakref.WeakKeyDictionary[Any, dict[str, BatchRun]] = weakref.WeakKeyDictionary()


def register_run(session: Session, run: BatchRun) -> None:
    _RUNS.setdefault(session, {})[run.name] = run


def forget_run(session: Session, run: BatchRun) -> None:
    runs = _RUNS.get(session)
    if runs is not None and runs.get(run.name) is run:
        del runs[run.name]


def runs_of(session: Session) -> list[BatchRun]:
    """The session's runs, oldest first: each one entry, however many items it has."""
    return list(_RUNS.get(session, {}).values())


def next_name(session: Session, prefix: str) -> str:
    """``<prefix>-<n>`` with a number that no run of this session has used: runs of a fresh
    session are numbered from 1 (a notebook run twice shows the same names)."""
    pattern = re.compile(rf"^{re.escape(prefix)}-(\d+)\[")
    used = {int(m.group(1)) for b in session.branches if b.name and (m := pattern.match(b.name))}
    taken = _TAKEN.setdefault(session, set())
    number = max(used | {n for p, n in taken if p == prefix}, default=0) + 1
    taken.add((prefix, number))
    return f"{prefix}-{number}"


def _retrieve(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("a batch run failed", exc_info=task.exception())


def _check_operation(operation: Any) -> None:
    if operation is None or callable(operation) or operation in _VERBS:
        return
    if not isinstance(operation, str) or not operation:
        raise ConfigurationError(
            f"`operation=` is a verb name ({', '.join(_VERBS)}), a registered operation's "
            f"name, or an async function `f(branch, prompt)`; got {operation!r}."
        )


def _concurrency(requested: int | None, model: Any) -> int:
    """How many items run at once: the request (or the default), within the model's own
    ``concurrency_limit`` -- more workers than that would only wait, so they are not made."""
    limit = (getattr(model, "_limits", None) or {}).get("concurrency_limit")
    if requested is None:
        return limit or DEFAULT_CONCURRENCY
    return min(requested, limit) if limit else requested


def _resolve_model(model: Any) -> Any:
    if model is None or (callable(model) and not hasattr(model, "provider")):
        return model
    from .branch import _as_model

    return _as_model(model, "model")  # a string becomes one iModel, shared by every item


def compare(session: Session, instruction: Any, models: list[Any], **kwargs: Any) -> BatchRun:
    """`Session.compare`: one prompt on sibling clones, one per model, concurrently."""
    from .branch import _as_model

    resolved = [_as_model(m, "models") for m in models]
    if len(resolved) < 2:
        raise ConfigurationError("`compare` needs two models or more.")
    kwargs.setdefault("name", next_name(session, "compare"))
    kwargs.setdefault("concurrency", len(resolved))
    run = BatchRun(session, resolved, lambda _model: instruction, model=lambda m: m, **kwargs)
    run.in_session = True
    return run.start()
