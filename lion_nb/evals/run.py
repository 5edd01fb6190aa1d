"""`session.evaluate(...)`: a prompts × models × cases × repeats grid, checked, summarized
and saved.

``run = session.evaluate(cases, prompt=..., models=[...], checks=[...], repeat=1,
name=None)`` returns an `EvalRun` at once (``await`` it for the finished run); each cell of
the grid is one item of ``session.map``, so the grid runs on that engine unchanged:
concurrency, the models' rate limits, Stop and Retry, cassettes, ``via="batch"``, items
isolated on their own branches. Decisions:

- **Each case is its own conversation.** A cell's branch starts from the source branch's
  system prompt, model and tools -- none of its messages: an evaluation on a notebook's
  active branch sends the system prompt and the case, as one in a fresh `Session` does.
- **The cells' branches stay with the run.** A cell's branch is in the session while it
  answers (the session's budget, ledger, hooks and signals apply) and leaves it once the
  cell has ended, so a grid of hundreds of cells does not fill the session's branches:
  ``row.branch`` and ``run.branches()`` have them (``session.include_branches(b)`` to go
  on with one). The session's ledger keeps their calls: ``session.cost()`` counts them.
- **Live, one map.** Cells go into one `BatchRun` (the model chosen per cell), ordered
  repeat by repeat, so ``concurrency`` bounds the whole grid. Each cell's operation sends
  its prompt (``communicate``; ``run`` for a CLI agent), times that call alone, then runs
  the checks -- so verdicts appear as answers arrive.
- **Graders last, in a fixed order.** A model-graded check (`judge`) runs once every answer
  is in. Two cells may ask a grader the very same thing (two prompts drew one answer to one
  case); a cassette answers identical requests in the order they were recorded, so those
  calls are made one after the other in grid order -- the same order when recording and
  when replaying -- and each cell replays its own verdict. Distinct ones run concurrently.
- **Repeats in order.** Repeat *r* of a cell starts once repeat *r - 1* of that cell has
  ended (answer and checks): identical requests then reach a cassette in the same order
  when recording and replaying, so a replay gives every repeat the answer (and the grader's
  verdict) it had. Cells are queued repeat by repeat, so this costs no concurrency until
  the last repeats.
- **``via="batch"``**: one provider batch per model (a batch goes to one model); checks run
  once the answers are collected. A batch has no per-call latency (``None``).
- **Cost** is the one the batch engine records per item (``price=``, or the provider's
  reported cost); ``None`` when unpriced. The grader's calls are not part of a row's cost,
  but they are the session's: its budget, the run's ``budget=`` and the session's ledger
  count them (`lion_nb.evals.judge`).
- **Saved.** A finished run is saved in the session store (``store=``, else the default
  one) under its ``name`` (``"eval"`` when none) with its time. With ``name=``, the last
  saved run of that name is read first and the new run is compared with it:
  ``run.previous`` and ``run.changes`` (`regress.Comparison`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from ..operations.verbs import call_verb, default_verb
from ..runtime.observer import Observers
from ..tracing.evaluations import record as record_evaluation
from .cases import Cell, case_id, fill, label_models, label_prompts, load_cases
from .checks import (
    CellInfo,
    CheckResult,
    is_after_call,
    is_deferred,
    run_check,
    validate_checks,
    verdict,
)
from .results import EvalResults, EvalRow, SavedEval

if TYPE_CHECKING:
    from ..session.session import Session

__all__ = ["EvalRun", "evaluate", "last_run", "saved_runs"]

logger = logging.getLogger("lion_nb.evals")
DEFAULT_NAME = "eval"


class EvalRun(EvalResults):
    """A running or finished evaluation; ``await`` it (see the module docstring)."""

    def __init__(
        self,
        session: Session,
        cases: Any,
        *,
        prompt: Any = None,
        models: Any = None,
        checks: Any = None,
        repeat: int = 1,
        name: str | None = None,
        via: str = "live",
        concurrency: int | None = None,
        price: Any = None,
        branch: Any = None,
        store: Any = None,
        save: bool = True,
        **kwargs: Any,
    ):
        from ..runtime.ledger import session_ledger
        from ..session.batch import next_name

        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
            raise ConfigurationError(f"`repeat={repeat!r}`: give how many times (1 or more).")
        if via not in ("live", "batch"):
            raise ConfigurationError(f"`via={via!r}`: use 'live' or 'batch'.")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ConfigurationError(f"`name={name!r}`: give the evaluation a name (text).")
        self.session = session
        self.cases = load_cases(cases)
        self.prompts, self._templates = label_prompts(prompt)
        source = session._resolve(branch)
        self.models, self._models = label_models(models, source.chat_model)
        session_ledger(session)  # made now, it keeps the calls of branches that leave
        self._checks = validate_checks(checks)
        self.check_names = [n for n, _ in self._checks]
        self.repeat, self.via, self.name = repeat, via, name or DEFAULT_NAME
        self._named = name is not None
        self._store, self._save = store, save
        for template in self._templates:  # a wrong placeholder fails here, before any call
            for index, case in enumerate(self.cases):
                fill(template, case, index)
        self.cells = [
            Cell(0, p, m, c, r)
            for r in range(repeat)
            for c in range(len(self.cases))
            for p in range(len(self._templates))
            for m in range(len(self._models))
        ]
        self.cells = [Cell(i, x.p, x.m, x.c, x.r) for i, x in enumerate(self.cells)]
        self._outcomes: dict[int, list[CheckResult]] = {}
        self._latency: dict[int, float] = {}
        self._deferred: dict[int, dict[str, CheckResult]] = {}
        self._graded: set[int] = set()  # cells whose deferred checks have run
        self._gates: dict[tuple[int, int, int, int], Any] = {}
        self._observers = Observers(logger, "an evaluation observer failed")
        self.previous: SavedEval | None = None
        self.changes: Any = None
        self.created_at: float | None = None
        self.state = "pending"
        self._task: Any = None
        self._graders: dict[int, list[Any]] = {}
        self._batch_name = next_name(session, "eval")
        start = _conversation_start(session, source)
        try:
            self._make_batches(start, concurrency, dict(price=price, **kwargs))
        finally:
            session.remove_branch(start)  # each run snapshotted it when it was made
        from ..session.batch import forget_run

        for batch in self.batches:
            forget_run(self.session, batch)  # the evaluation is the entry, not its batches
            batch.on_progress(lambda _batch: self._changed())
        self.start()

    def _make_batches(self, start: Any, concurrency: int | None, common: dict) -> None:
        session = self.session
        if self.via == "live":
            self.batches = [
                session.map(
                    self.cells,
                    lambda cell: cell,
                    branch=start,
                    model=lambda cell: self._models[cell.m],
                    operation=self._answer,
                    concurrency=concurrency,
                    name=self._batch_name,
                    **common,
                )
            ]
            self._where = [(0, i) for i in range(len(self.cells))]
            return
        self.batches, self._where = [], [(0, 0)] * len(self.cells)
        for m, model in enumerate(self._models):
            mine = [cell for cell in self.cells if cell.m == m]
            for position, cell in enumerate(mine):
                self._where[cell.index] = (len(self.batches), position)
            self.batches.append(
                session.map(
                    mine,
                    lambda cell: self.prompt_text(cell),
                    branch=start,
                    model=model,
                    via="batch",
                    name=f"{self._batch_name}.{m + 1}",
                    **common,
                )
            )

    # -- running ---------------------------------------------------------------------------------
    def prompt_text(self, cell: Cell) -> Any:
        return fill(self._templates[cell.p], self.cases[cell.c], cell.c)

    def start(self) -> EvalRun:
        import asyncio

        if self._task is not None:
            return self
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self  # started by the first `await`
        self.state = "running"
        self._task = loop.create_task(self._main())
        return self

    def __await__(self):
        return self.wait().__await__()

    async def wait(self) -> EvalRun:
        """This run, once every cell has ended, its checks ran and it was saved."""
        import asyncio

        self.start()
        await asyncio.shield(self._task)
        return self

    async def _main(self) -> None:
        import anyio

        try:
            if self._named:
                self.previous = await anyio.to_thread.run_sync(self._load_previous)
            for batch in self.batches:
                await batch.wait()
            if self.via == "batch":
                await self._check_collected()
            await self._run_deferred()
            self.state = (
                "stopped" if any(b.state == "stopped" for b in self.batches) else "finished"
            )
            self.created_at = time.time()
            if self.previous is not None:
                self.changes = self.compare(self.previous)
            if self._save:
                await anyio.to_thread.run_sync(self._save_now)
        except BaseException:
            self.state = "failed"
            raise
        finally:
            for cell in self.cells:  # a provider batch's cells, and any a stop left behind
                self._leave(self._item(cell).branch)
            self._changed()

    async def _answer(self, branch: Any, cell: Cell, **kwargs: Any) -> Any:
        """One cell: wait for its previous repeat, ask, time the call, run the checks."""
        if cell.r:
            await self._gate(cell.p, cell.m, cell.c, cell.r - 1).wait()
        try:
            prompt = self.prompt_text(cell)
            start = time.perf_counter()
            verb = default_verb(branch.chat_model)  # a CLI agent runs, an API model communicates
            answer = await call_verb(branch, verb, prompt, **kwargs)
            self._latency[cell.index] = time.perf_counter() - start
            info = CellInfo(
                latency=self._latency[cell.index], model=branch.chat_model, prompt=prompt
            )
            outcomes = self._outcomes[cell.index] = await self._run_checks(answer, cell, info)
            record_evaluation(branch, outcomes, run=self.name, case=cell.c, repeat=cell.r)
            return answer
        finally:
            self._leave(branch)
            self._gate(cell.p, cell.m, cell.c, cell.r).set()

    def _leave(self, branch: Any) -> None:
        """A cell's branch leaves the session once the cell has ended (module docstring)."""
        if branch is not None and branch.id in self.session:
            self.session.remove_branch(branch)

    def _gate(self, *key: int) -> Any:
        import anyio

        gate = self._gates.get(key)
        if gate is None:
            gate = self._gates[key] = anyio.Event()
        return gate

    async def _run_checks(self, answer: Any, cell: Cell, info: CellInfo) -> list[CheckResult]:
        case = self.cases[cell.c]
        return [
            await run_check(name, check, answer, case, info)
            for name, check in self._checks
            if not (is_after_call(check) or is_deferred(check))
        ]

    async def _run_deferred(self) -> None:
        """The model-graded checks, once every answer is in: identical grader prompts one
        after the other in grid order, others concurrently (see the module docstring)."""
        import anyio

        deferred = [(n, c) for n, c in self._checks if is_deferred(c)]
        if not deferred:
            return
        groups: dict[tuple[str, str], list[tuple[Cell, str, Any]]] = {}
        for cell in self.cells:
            item = self._item(cell)
            if item.status != "done" or cell.index in self._graded:
                continue
            for name, check in deferred:
                key = (name, check.prompt(item.value, self.cases[cell.c]))
                groups.setdefault(key, []).append((cell, name, check))
        limiter = anyio.CapacityLimiter(max(b.concurrency for b in self.batches))

        async def group(calls: list[tuple[Cell, str, Any]]) -> None:
            from ..runtime.budget import budget_scope

            for cell, name, check in calls:
                item = self._item(cell)
                graders = self._graders.setdefault(cell.index, [])
                info = CellInfo(
                    model=self._models[cell.m],
                    prompt=self.prompt_text(cell),
                    session=self.session,
                    name=f"{item.branch.name} {name}" if item.branch is not None else name,
                    graders=graders,
                )
                batch = self.batches[self._where[cell.index][0]]
                async with limiter:
                    with budget_scope(batch._meter()):  # the run's `budget=` counts them too
                        result = await run_check(name, check, item.value, self.cases[cell.c], info)
                self._deferred.setdefault(cell.index, {})[name] = result
                record_evaluation(item.branch, [result], run=self.name, case=cell.c, repeat=cell.r)
                self._changed()

        async with anyio.create_task_group() as tg:
            for calls in groups.values():
                tg.start_soon(group, calls)
        self._graded.update(self._deferred)

    async def _check_collected(self) -> None:
        """``via="batch"``: the checks of every answered cell, repeat by repeat."""
        import anyio

        limiter = anyio.CapacityLimiter(8)

        async def one(cell: Cell) -> None:
            item = self._item(cell)
            if item.status != "done":
                return
            async with limiter:
                info = CellInfo(model=self._models[cell.m], prompt=self.prompt_text(cell))
                self._outcomes[cell.index] = await self._run_checks(item.value, cell, info)
            self._changed()

        for r in range(self.repeat):
            async with anyio.create_task_group() as tg:
                for cell in self.cells:
                    if cell.r == r:
                        tg.start_soon(one, cell)

    # -- stop and retry --------------------------------------------------------------------------
    def stop(self) -> bool:
        """Start no new cell and cancel the calls in flight (from any thread)."""
        return any([batch.stop() for batch in self.batches])

    def retry(self) -> EvalRun:
        """Run again the cells that failed, were stopped or never started; ``await`` it."""
        if self._task is not None and not self._task.done():
            raise ConfigurationError(
                f"`{self.name}` is still running: `await` it or `stop()` it before a retry."
            )
        for cell in self.cells:
            if self._item(cell).status in ("failed", "stopped", "pending"):
                self._outcomes.pop(cell.index, None)
                self._deferred.pop(cell.index, None)
                self._graders.pop(cell.index, None)
                self._graded.discard(cell.index)
        for batch in self.batches:
            batch.retry()
        self._task = None
        self.state = "pending"
        return self.start()

    # -- rows ------------------------------------------------------------------------------------
    def _item(self, cell: Cell) -> Any:
        b, i = self._where[cell.index]
        return self.batches[b].items[i]

    def row(self, cell: Cell) -> EvalRow:
        """The row of one cell, as it is now (pending and running ones included)."""
        item = self._item(cell)
        row = EvalRow(
            prompt=self.prompts[cell.p],
            model=self.models[cell.m],
            case_id=case_id(self.cases[cell.c], cell.c),
            repeat=cell.r,
            case=self.cases[cell.c],
            status=item.status,
            branch=item.branch,
        )
        if item.status in ("pending", "running", "stopped"):
            return row
        row.tokens, row.cost_usd = item.tokens, item.cost_usd
        row.latency = self._latency.get(cell.index)
        row.prompt_text = self.prompt_text(cell) if not callable(self._templates[cell.p]) else None
        if item.status == "failed":
            row.error = item.error_text or "failed"
            row.checks = tuple(CheckResult(n, False, "no answer") for n, _ in self._checks)
            row.passed = False
            return row
        row.answer = item.value
        found = {c.name: c for c in self._outcomes.get(cell.index, ())}
        found.update(self._deferred.get(cell.index, {}))
        if any(n not in found and not is_after_call(c) for n, c in self._checks):
            row.status = "checking"  # answered; some of its checks have not run yet
            return row
        info = CellInfo(row.cost_usd, row.latency, row.tokens)
        results = []
        for name, check in self._checks:
            if is_after_call(check):
                results.append(verdict(name, check.check(row.answer, row.case, info)))
            else:
                results.append(found[name])
        row.checks = tuple(results)
        row.passed = all(c.passed for c in results)
        return row

    @property
    def rows(self) -> list[EvalRow]:
        """Every cell that has ended (answered or failed; stopped ones without a verdict)."""
        rows = [self.row(cell) for cell in self.cells]
        return [r for r in rows if r.status in ("done", "failed", "stopped")]

    def all_rows(self) -> list[EvalRow]:
        """Every cell of the grid as it is now, in grid order."""
        return [self.row(cell) for cell in self.cells]

    @property
    def ended(self) -> bool:
        return self.state in ("finished", "stopped", "failed")

    def progress(self) -> tuple[int, int]:
        """``(cells ended, cells)``."""
        ended = sum(1 for c in self.cells if self._item(c).status in ("done", "failed", "stopped"))
        return ended, len(self.cells)

    # -- observers -------------------------------------------------------------------------------
    def on_change(self, callback: Callable[[EvalRun], Any]) -> Callable[[], None]:
        """Call ``callback(run)`` on every change; returns a function that unsubscribes."""
        return self._observers.add(callback)

    def _changed(self) -> None:
        self._observers.notify(self)

    # -- the store -------------------------------------------------------------------------------
    def _store_now(self) -> Any:
        if self._store is not None:
            return self._store
        from ..store.store import open_store

        return open_store()

    def _load_previous(self) -> SavedEval | None:
        from ..store.evals import load_eval_runs

        try:
            found = load_eval_runs(self._store_now(), self.name, last=1)
        except Exception:
            logger.warning("could not read the earlier runs of %r", self.name, exc_info=True)
            return None
        return SavedEval(found[-1]) if found else None

    def _save_now(self) -> None:
        from ..store.evals import save_eval_run

        try:
            save_eval_run(self._store_now(), self.to_record()).result()
        except Exception:
            logger.warning("could not save the evaluation %r", self.name, exc_info=True)

    def branches(self, *, graders: bool = False) -> list[Any]:
        """The branches of the cells that ran, in grid order (with ``graders=True``, each
        followed by its graders' branches). They are not in the session; include one to go
        on with it there (``session.include_branches(branch)``)."""
        out = []
        for cell in self.cells:
            branch = self._item(cell).branch
            if branch is not None:
                out.append(branch)
            if graders:
                out += self._graders.get(cell.index, ())
        return out

    def discard(self) -> None:
        """Remove from the session any cell branch still in it (the rows stay on this run)."""
        for batch in self.batches:
            batch.discard()

    def __repr__(self) -> str:
        ended, total = self.progress()
        return f"<EvalRun {self.name!r} ({self.state}): {ended}/{total} cells>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) + ("\n" + self.summary_text() if self.ended else ""))


def _conversation_start(session: Session, source: Any) -> Any:
    """A member branch with the source's system prompt, models and tools and none of its
    messages: what every cell starts from (see the module docstring)."""
    start = source.clone()
    start.msgs.clear_messages()
    start.name = f"{source.name or 'branch'} (evaluation start)"
    session.include_branches(start)
    return start


def evaluate(session: Session, cases: Any, prompt: Any = None, **kwargs: Any) -> EvalRun:
    """`Session.evaluate`: build the run and start it (see `EvalRun`)."""
    return EvalRun(session, cases, prompt=prompt, **kwargs)


def saved_runs(name: str, *, store: Any = None, last: int | None = None) -> list[SavedEval]:
    """The saved runs of ``name`` in the store (the default one), oldest first."""
    from ..store.evals import load_eval_runs
    from ..store.store import open_store

    return [SavedEval(r) for r in load_eval_runs(store or open_store(), name, last=last)]


def last_run(name: str, *, store: Any = None) -> SavedEval | None:
    """The last saved run of ``name``, or ``None``."""
    found = saved_runs(name, store=store, last=1)
    return found[-1] if found else None
