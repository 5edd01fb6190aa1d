"""Every observer is called through one delivery path (`lion_nb.protocols.signals.deliver`):
one that fails is logged, and neither the call that produced the signal nor the observers
after it notice -- sync or async, a branch's signals or a run's `Observers`."""

from __future__ import annotations

import logging

import anyio

from lion_nb import Session, iModel
from lion_nb.protocols.signals import MessageAdded, RunEnd, emit_safely
from lion_nb.runtime.observer import Observers, SignalBus


def broken(signal):
    raise RuntimeError("a broken observer")


async def broken_later(signal):
    await anyio.sleep(0)
    raise RuntimeError("a broken async observer")


def failures(caplog, error: str, name: str) -> int:
    """How many failures raising ``error`` were logged, each naming its observer ``name``."""
    records = [r for r in caplog.records if r.exc_info and str(r.exc_info[1]) == error]
    assert all(f"<function {name} " in r.getMessage() for r in records), [
        r.getMessage() for r in records
    ]
    return len(records)


def test_failing_observers_never_break_a_call_nor_the_observers_after_them(caplog):
    branch = Session().default_branch
    branch.chat_model = iModel(provider="offline", model="scripted", responses=["one", "two"])
    seen, later = [], []

    async def counting(signal):
        later.append(signal.kind)

    for callback in (broken, broken_later, seen.append, counting):
        branch.observe(MessageAdded, callback)
        branch.observe(RunEnd, callback)
    with caplog.at_level(logging.WARNING, logger="lion_nb.signals"):
        answers = anyio.run(lambda: _two_turns(branch))
    assert answers == ["one", "two"]
    kinds = [s.kind for s in seen]
    assert kinds.count("MessageAdded") == 4 and kinds.count("RunEnd") == 2
    assert later == kinds
    assert failures(caplog, "a broken observer", "broken") == 6
    assert failures(caplog, "a broken async observer", "broken_later") == 6


async def _two_turns(branch):
    return [await branch.communicate("a"), await branch.communicate("b")]


def test_emit_dispatch_and_emit_safely_share_the_isolation(caplog):
    bus = SignalBus()
    seen = []
    for callback in (broken, broken_later, seen.append):
        bus.observe(RunEnd, callback)
    signal = RunEnd(run_id="r", operation="chat")

    async def main():
        await bus.emit(signal)
        task = bus.dispatch(signal)
        await task
        await emit_safely([broken, broken_later, seen.append], signal)

    with caplog.at_level(logging.WARNING, logger="lion_nb.signals"):
        anyio.run(main)
    assert seen == [signal] * 3
    assert failures(caplog, "a broken observer", "broken") == 3
    assert failures(caplog, "a broken async observer", "broken_later") == 3


def test_a_run_observer_that_fails_is_logged_as_its_run_says(caplog):
    log = logging.getLogger("lion_nb.test_observers")
    observers = Observers(log, "a progress observer failed")
    seen = []
    observers.add(broken)
    observers.add(seen.append)
    with caplog.at_level(logging.WARNING, logger="lion_nb.test_observers"):
        observers.notify("run")
    assert seen == ["run"] and "a progress observer failed" in caplog.text
