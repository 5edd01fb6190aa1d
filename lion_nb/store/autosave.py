"""`Autosaver`: keeps a Session's rows in the store equal to the Session, a message at a time.

It follows the Session's signal bus. Each `MessageAdded` syncs that one branch: the message
is encoded on the loop (one ``model_dump_json``) and queued as one transaction -- a row at
the next position; nothing else of the branch is rewritten, so the cost of a message does not
grow with the history. `RunEnd` / `RunFailed`, and `checkpoint()` (the notebook calls it
after every cell and after tagging a turn's messages with their cell), sync everything else:

- membership: a new branch (a fork, ``%lion new``) is written whole; a removed one is deleted;
  the branches' order and the default branch are kept;
- removals and reorders: each branch remembers the ids it wrote in order; when its
  progression's version moved (undo, re-run ``replace``, ``%lion reset``, a new system
  message) the common prefix is kept and only the rest is cut and rewritten. The message
  manager's ``on_order_changed`` callbacks mark the branch, so an undo from a widget is saved
  without waiting for a cell;
- edits in place: a branch's latest appends (up to `RECENT`) are encoded again at the next
  `RECHECKS` checkpoints and written when their text changed -- the cell tags a turn adds to
  its messages after recording them, a parse result added to an answer's metadata; when any
  message's field was assigned since the last checkpoint (``messages.MUTATIONS``), every
  message's revision is compared as well;
- the branch headers (name, models, provider session id) and its logs (new entries appended,
  entries the logger dropped deleted).

Outside an event loop each removal is saved at once; on a loop, the removals of one loop turn
are saved together (``call_soon``), so a re-run that drops a turn writes one cut.

A Session is written once it holds a message (an empty new Session leaves no row). The first
write replaces whatever the store held under the Session's id (a JSON import of a session
saved before). A restored Session is followed from the rows it was read from (``seed``), so
resuming costs one small transaction that claims it.

Failures never reach the turn: a `StoreError` (a newer store, a corrupt or locked file, a
full disk, another kernel taking the session over) stops the autosaver, and ``on_failure``
is called once, on the loop, at the next sync (by default a `StoreWarning`). The Session goes
on in memory.
"""

from __future__ import annotations

import asyncio
import logging
import operator
import warnings
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from ..protocols.messages import MUTATIONS
from ..session.batch_rows import LIVE_ITEMS
from .errors import StoreError, StoreWarning
from .rows import SessionRows, branch_header, header_key, log_json, message_json, session_header
from .units import Stream, Unit

if TYPE_CHECKING:
    from ..session.branch import Branch
    from ..session.session import Session


class SessionStore(Protocol):
    """The store as an autosaver writes to it (`lion_nb.store.store.SessionStore`, which
    imports this module: named here by its shape, so the two do not import each other)."""

    path: Path

    def write(self, unit: Unit) -> Future[Any]: ...


__all__ = ["Autosaver", "full_unit"]

log = logging.getLogger("lion_nb.store")
_REVISION = operator.attrgetter("_rev")  # `RoledMessage.revision`, without the property call

#: how many of a branch's latest appends a checkpoint re-encodes to find edits in place
RECENT = 256
#: how many checkpoints recheck them: the one at the run's end, the one after the notebook
#: tags the turn's messages with their cell
RECHECKS = 2


class _Mirror:
    """What the store holds of one branch, as far as this autosaver wrote it."""

    __slots__ = (
        "branch",
        "checks",
        "header",
        "id",
        "ids",
        "key",
        "log_ids",
        "log_prog",
        "log_version",
        "messages",
        "next_log",
        "prog",
        "recent",
        "revs",
        "seq",
        "version",
    )  # fmt: skip

    def __init__(self, branch: Branch, seq: int):
        self.branch = branch
        self.id = str(branch.id)
        self.seq = seq
        self.header: str | None = None
        self.key: tuple | None = None  # `header_key` when the header was last encoded
        self.ids: list[UUID] = []
        self.messages: list[Any] = []  # the message objects, in the same order
        self.revs: list[int] = []
        self.prog: Any = None
        self.version = -1
        self.recent: dict[int, str] = {}  # position -> text, of the latest appends
        self.checks = 0  # how many checkpoints have rechecked them
        self.log_ids: list[UUID] = []
        self.log_prog: Any = None
        self.log_version = -1
        self.next_log = 0


def _common_prefix(a: list[UUID], b: list[UUID]) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n - 1  # a[:lo] == b[:lo] holds, a[:hi + 1] != b[:hi + 1]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _sync(m: _Mirror, *, full: bool = True) -> list[tuple]:
    """The ops that bring the store's copy of ``m.branch`` up to date (appends, cuts, header,
    logs); ``m`` is updated as if they were written. Appends after a checkpoint start a new
    window of recent messages. Not ``full`` (a message was added), the header is encoded
    again only when its `header_key` moved."""
    branch = m.branch
    ops: list[tuple] = []
    key = header_key(branch)
    if full or key != m.key:
        m.key = key
        header = branch_header(branch)
        if header != m.header:
            ops.append(("branch", m.id, m.seq, header))
            m.header = header
    pile = branch.messages
    prog = pile.progression
    order = prog.order
    n = len(m.ids)
    if prog is not m.prog or prog.version != m.version or len(order) < n:
        k = _common_prefix(m.ids, order)
        if k < n:
            ops.append(("cut", m.id, k))
            del m.ids[k:], m.messages[k:], m.revs[k:]
            m.recent = {i: t for i, t in m.recent.items() if i < k}
            n = k
        m.prog, m.version = prog, prog.version
    if len(order) > n:
        if m.checks:
            m.recent, m.checks = {}, 0
        rows = []
        blobs: dict[str, str] = {}
        for position in range(n, len(order)):
            message = pile[order[position]]
            text = message_json(message, blobs)
            rows.append((position, str(message.id), message.kind, text))
            m.ids.append(message.id)
            m.messages.append(message)
            m.revs.append(message.revision)
            m.recent[position] = text
        while len(m.recent) > RECENT:  # positions arrive in order: the first key is the oldest
            del m.recent[next(iter(m.recent))]
        if blobs:
            ops.append(("blobs", m.id, blobs))
        ops.append(("put", m.id, rows))
    ops.extend(_sync_logs(m))
    return ops


def _sync_logs(m: _Mirror) -> list[tuple]:
    logs = m.branch.logs
    prog = logs.progression
    order = prog.order
    ops: list[tuple] = []
    if prog is not m.log_prog or prog.version != m.log_version:
        present = set(order)
        gone = [i for i in m.log_ids if i not in present]
        if gone:
            ops.append(("unlog", m.id, [str(i) for i in gone]))
            m.log_ids = [i for i in m.log_ids if i in present]
        m.log_prog, m.log_version = prog, prog.version
        stored = set(m.log_ids)
        new = [i for i in order if i not in stored]
    else:
        new = order[len(m.log_ids) :]
    if new:
        rows = []
        for uid in new:
            rows.append((str(uid), m.next_log, log_json(logs[uid])))
            m.next_log += 1
        m.log_ids.extend(new)
        ops.append(("log", m.id, rows))
    return ops


def _recheck(m: _Mirror, mutated: bool) -> list[tuple]:
    """Rewrite the messages edited in place: the latest appends by their text (for `RECHECKS`
    checkpoints, so a turn's cell tags added after its end are seen), every message by its
    revision when some message's field was assigned (``mutated``). Runs right after `_sync`,
    so the branch's order is ``m.ids`` and its messages ``m.messages``."""
    positions = set(m.recent)
    if mutated:
        now = list(map(_REVISION, m.messages))  # one C-level pass; compared as lists first
        if now != m.revs:
            positions.update(p for p, (a, b) in enumerate(zip(now, m.revs, strict=True)) if a != b)
    rows = []
    blobs: dict[str, str] = {}
    for position in sorted(positions):
        message = m.messages[position]
        text = message_json(message, blobs)
        if text != m.recent.get(position):
            rows.append((position, str(message.id), message.kind, text))
            if position in m.recent:
                m.recent[position] = text
        m.revs[position] = message.revision
    m.checks += 1
    if m.checks >= RECHECKS:
        m.recent.clear()
    if not rows:
        return []
    return [("blobs", m.id, blobs), ("put", m.id, rows)] if blobs else [("put", m.id, rows)]


def _default_id(session: Session) -> str | None:
    default = session.default_branch
    return str(default.id) if default is not None else None


def full_unit(
    stream: Stream,
    session: Session,
    notebook: str | None,
    *,
    replace: bool,
    mirrors: dict[str, _Mirror] | None = None,
) -> Unit:
    """One unit that writes ``session`` whole (and fills ``mirrors`` when given)."""
    ops: list[tuple] = []
    for seq, branch in enumerate(session.branches):
        m = _Mirror(branch, seq)
        ops.extend(_sync(m))
        if mirrors is not None:
            mirrors[m.id] = m
    claim = (session_header(session), _default_id(session), notebook)
    return Unit(stream, ops, claim=claim, replace=replace)


def _has_messages(session: Session) -> bool:
    return any(len(b.messages) for b in session.branches)


class Autosaver:
    """Saves ``session`` into ``store`` as it changes. See the module docstring."""

    def __init__(
        self,
        store: SessionStore,
        session: Session,
        *,
        notebook: str | None = None,
        on_failure: Callable[[StoreError], None] | None = None,
        seed: SessionRows | None = None,
        resume_hint: str = "`store.autosave(session)` starts saving it again",
    ):
        from ..protocols.signals import Signal

        self.store = store
        self.session = session
        self.notebook = notebook
        self.resume_hint = resume_hint
        self._on_failure = on_failure
        self._stream = Stream(str(session.id))
        self._mirrors: dict[str, _Mirror] = {}
        self._session_state: tuple[str, str | None] | None = None
        self._written = False
        self._stopped = False
        self._failure: StoreError | None = None
        self._mutations = MUTATIONS[0]
        self._dirty: set[str] = set()
        self._scheduled = False
        self._hooked: dict[str, tuple[Any, Callable[[], None]]] = {}
        if seed is not None and self._seed(seed):
            self._emit([], claim=True)
        self._subscription = session.observe(Signal, self._on_signal)
        from ..session.batch_rows import set_sink
        from .items import ItemSink

        set_sink(session, ItemSink(store))  # a run's items are rows here, not branches
        self._guard(self.checkpoint)

    def __repr__(self) -> str:
        state = "off" if self._stopped else "on"
        return (
            f"Autosaver(session={str(self.session.id)[:8]}, {state}, to={str(self.store.path)!r})"
        )

    # -- state ---------------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        """Whether it still saves (it stops on `stop` or on the first store error)."""
        return not self._stopped and self._stream.failure is None

    @property
    def failure(self) -> StoreError | None:
        """The error that stopped it, if one did."""
        return self._failure or self._stream.failure

    def stop(self) -> None:
        """Stop following the session (what is queued is still written)."""
        if self._stopped:
            return
        self._stopped = True
        self._subscription.cancel()
        from ..session.batch_rows import set_sink, sink_for

        sink = sink_for(self.session)
        if sink is not None and getattr(sink, "store", None) is self.store:
            set_sink(self.session, None)
        for manager, callback in self._hooked.values():
            try:
                manager.on_order_changed.remove(callback)
            except ValueError:
                pass
        self._hooked.clear()

    # -- events --------------------------------------------------------------------------------
    def _on_signal(self, signal: Any) -> None:
        branch_id = signal.branch_id
        if (
            branch_id is not None
            and branch_id not in self._mirrors
            and (branch_id in LIVE_ITEMS or not self._member(branch_id))
        ):
            return  # a `map` item: its run writes it as a row (`session.batch_rows`)
        kind = signal.kind
        if kind == "MessageAdded":
            self._guard(self._message_added, branch_id)
        elif kind in ("RunEnd", "RunFailed"):
            self._guard(self.checkpoint)

    def _member(self, branch_id: str) -> bool:
        try:
            return branch_id in self.session
        except Exception:
            return True  # not an id the session can look up: sync as before

    def _message_added(self, branch_id: str | None) -> None:
        if not self._check():
            return
        m = self._mirrors.get(branch_id) if branch_id else None
        if m is None or not self._written:
            self.checkpoint()  # a new branch, or the first message of the session
            return
        ops = _sync(m, full=False)
        if ops:
            self._emit(ops)

    def _order_changed(self, branch_id: str) -> None:
        self._dirty.add(branch_id)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._guard(self._sync_dirty)
            return
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._guard, self._sync_dirty)

    def _sync_dirty(self) -> None:
        self._scheduled = False
        dirty, self._dirty = self._dirty, set()
        if not self._check() or not self._written:
            return
        ops: list[tuple] = []
        for branch_id in dirty:
            m = self._mirrors.get(branch_id)
            if m is not None:
                ops.extend(_sync(m, full=False))
        if ops:
            self._emit(ops)

    # -- syncing everything ---------------------------------------------------------------------
    def checkpoint(self) -> None:
        """Bring the store up to date with everything in the session (cheap when nothing
        changed: no message is encoded unless it is new or was edited)."""
        if not self._check():
            return
        session = self.session
        if not self._written:
            if _has_messages(session):
                mirrors: dict[str, _Mirror] = {}
                unit = full_unit(
                    self._stream, session, self.notebook, replace=True, mirrors=mirrors
                )
                self._mirrors = mirrors
                self._written = True
                self._session_state = (unit.claim[0], unit.claim[1])
                self._submit(unit)
                self._hook_all()
            return
        ops: list[tuple] = []
        branches = list(session.branches)
        ids = [str(b.id) for b in branches]
        for branch_id in [i for i in self._mirrors if i not in ids]:
            ops.append(("drop", branch_id))
            self._unhook(branch_id)
            del self._mirrors[branch_id]
        for seq, branch in enumerate(branches):
            if str(branch.id) not in self._mirrors:
                self._mirrors[str(branch.id)] = _Mirror(branch, seq)
        if any(self._mirrors[branch_id].seq != seq for seq, branch_id in enumerate(ids)):
            ops.append(("order", ids))
            for seq, branch_id in enumerate(ids):
                self._mirrors[branch_id].seq = seq
        mutated = MUTATIONS[0] != self._mutations
        self._mutations = MUTATIONS[0]
        for branch_id in ids:
            m = self._mirrors[branch_id]
            ops.extend(_sync(m))
            ops.extend(_recheck(m, mutated))
        state = (session_header(session), _default_id(session))
        if state != self._session_state:
            ops.append(("session", *state))
            self._session_state = state
        self._hook_all()
        if ops:
            self._emit(ops)

    # -- writing -------------------------------------------------------------------------------
    def _emit(self, ops: list[tuple], *, claim: bool = False) -> None:
        unit = Unit(self._stream, ops)
        if claim:
            unit.claim = (*self._session_state, self.notebook)  # type: ignore[misc]
        self._submit(unit)

    def _submit(self, unit: Unit) -> None:
        try:
            self.store.write(unit)
        except RuntimeError as exc:  # the store was closed
            self._stream.failure = StoreError(f"{exc}.", path=self.store.path)

    def _check(self) -> bool:
        """Whether to go on; reports a failure (once) and stops."""
        if self._stopped:
            return False
        failure = self._stream.failure
        if failure is None:
            return True
        self._failure = failure
        self.stop()
        self._report(failure)
        return False

    def _report(self, error: StoreError) -> None:
        if self._on_failure is not None:
            try:
                self._on_failure(error)
            except Exception:
                log.warning("the autosave failure callback failed", exc_info=True)
            return
        warnings.warn(
            StoreWarning(
                f"Autosave of session `{str(self.session.id)[:8]}` is off: {error} The "
                f"conversation goes on in memory; {self.resume_hint}."
            ),
            stacklevel=3,
        )

    def _guard(self, func: Callable[..., None], *args: Any) -> None:
        """Run ``func``; an unexpected error stops autosave instead of reaching the turn."""
        try:
            func(*args)
        except Exception as exc:
            log.warning("autosave failed", exc_info=True)
            if self._stream.failure is None:
                self._stream.failure = StoreError(
                    f"Saving to `{self.store.path}` failed ({type(exc).__name__}: {exc}).",
                    path=self.store.path,
                )
            self._check()

    # -- order hooks ------------------------------------------------------------------------------
    def _hook_all(self) -> None:
        for branch_id, m in self._mirrors.items():
            if branch_id in self._hooked:
                continue
            manager = m.branch.msgs
            hooks = getattr(manager, "on_order_changed", None)
            if hooks is None:
                continue

            def changed(branch_id: str = branch_id) -> None:
                self._guard(self._order_changed, branch_id)

            hooks.append(changed)
            self._hooked[branch_id] = (manager, changed)

    def _unhook(self, branch_id: str) -> None:
        manager, callback = self._hooked.pop(branch_id, (None, None))
        if manager is not None:
            try:
                manager.on_order_changed.remove(callback)
            except ValueError:
                pass

    # -- resuming a restored session --------------------------------------------------------------
    def _seed(self, rows: SessionRows) -> bool:
        """Start from what the store holds (the rows ``session`` was restored from); ``False``
        when they do not match it, and the first write replaces them instead."""
        session = self.session
        branches = list(session.branches)
        if [str(b.id) for b in branches] != [b.id for b in rows.branches]:
            return False
        mirrors: dict[str, _Mirror] = {}
        for seq, (branch, stored) in enumerate(zip(branches, rows.branches, strict=True)):
            prog = branch.messages.progression
            if not stored.contiguous or [str(i) for i in prog.order] != stored.message_ids:
                return False
            m = _Mirror(branch, seq)
            m.header = stored.header
            m.ids = list(prog.order)
            m.messages = list(branch.messages)
            m.revs = list(map(_REVISION, m.messages))
            m.prog, m.version = prog, prog.version
            logs = branch.logs
            if [str(i) for i in logs.progression.order] != [i for i, _, _ in stored.logs]:
                return False
            m.log_ids = list(logs.progression.order)
            m.log_prog, m.log_version = logs.progression, logs.progression.version
            m.next_log = max((seq for _, seq, _ in stored.logs), default=-1) + 1
            mirrors[m.id] = m
        self._mirrors = mirrors
        self._written = True
        self._session_state = (rows.header, rows.default_branch)
        self._hook_all()
        return True
