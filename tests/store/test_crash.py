"""Crash safety: a process autosaving turns is killed with SIGKILL, many times, at random
points in the middle of its writes. After every kill the store opens, ``PRAGMA
integrity_check`` passes, every message whose write had completed is there, and each branch is
an unbroken prefix of what was recorded: at most the message in flight is lost.

Each round restores the session the previous round left and goes on recording, so a crash
during the resume is covered too. Rounds alternate between waiting for each write to commit
(the process then notes the message in a side file: the "completed" ones) and recording as
fast as it can (the kill lands inside a transaction). A fork server imports lion_nb once, so
the 20 rounds take seconds.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lion_nb.store import SessionStore
from tests.store.helpers import integrity

ROUNDS = 20
ROOT = Path(__file__).resolve().parents[2]

RECORDER = textwrap.dedent(
    """
    import os, sys
    from lion_nb import Session
    from lion_nb.store import SessionStore
    from lion_nb.store.autosave import Autosaver
    from lion_nb.store.rows import build_session

    def record(path, mode):
        store = SessionStore(path)
        saved = store.sessions()
        if saved:
            rows = store.read(saved[0].id)
            session = build_session(rows)
            Autosaver(store, session, seed=rows)
        else:
            session = Session()
            session.default_branch.name = "one"
            session.new_branch(name="two")
            store.autosave(session)
        acks = open(path + ".acks", "a", buffering=1)  # one write per line: kill-proof
        print(f"ready {os.getpid()}", flush=True)
        while True:
            for branch in session.branches:
                k = len(branch.messages)
                text = f"{branch.name}-{k}" + "." * (k % 7) * 50
                branch.msgs.add_message(instruction=text)
                if mode == "ack":
                    store.flush()  # committed: from now on this message must survive
                    acks.write(f"{branch.name} {k}\\n")

    # a small fork server: lion_nb is imported (and its schemas built) once; each round is a
    # fresh child process
    import tempfile
    warm_path = os.path.join(tempfile.mkdtemp(), "warm.db")
    warm_store, warm = SessionStore(warm_path), Session()
    warm_store.autosave(warm)
    warm.default_branch.msgs.add_message(instruction="warm")
    warm_store.load(str(warm.id))
    warm_store.close()
    for line in sys.stdin:
        path, mode = line.split()
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            record(path, mode)
        os.waitpid(pid, 0)
    """
)


def recorder(tmp_path: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", RECORDER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )


def start(server: subprocess.Popen, path: Path, mode: str) -> int:
    server.stdin.write(f"{path} {mode}\n")
    server.stdin.flush()
    word, pid = server.stdout.readline().split()
    assert word == "ready"
    return int(pid)


def read_acks(path: Path) -> list[tuple[str, int]]:
    """The messages the recorder reported committed (a torn last line is not one)."""
    acks = Path(f"{path}.acks")
    if not acks.exists():
        return []
    lines = acks.read_text().split("\n")[:-1]
    return [(name, int(k)) for name, k in (line.split() for line in lines)]


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the fork server needs os.fork")
def test_sigkill_in_the_middle_of_writes_loses_at_most_the_message_in_flight(tmp_path):
    path = tmp_path / "crash.db"
    rng = random.Random(20240901)
    acked: dict[str, int] = {"one": 0, "two": 0}  # messages known to be committed, per branch
    deadline = time.monotonic() + 100
    previous_total = 0
    server = recorder(tmp_path)
    try:
        for round_no in range(ROUNDS):
            assert time.monotonic() < deadline, "the crash rounds took too long"
            mode = "ack" if round_no % 2 == 0 else "burst"
            pid = start(server, path, mode)
            if mode == "ack":
                wanted = len(read_acks(path)) + rng.randint(1, 40)
                until = time.monotonic() + 10
                while len(read_acks(path)) < wanted and time.monotonic() < until:
                    time.sleep(0.002)
            else:
                time.sleep(rng.uniform(0.005, 0.15))
            kill(pid)
            time.sleep(0.02)  # (the fork server reaps it)
            for name, k in read_acks(path):  # everything acknowledged before the kill
                acked[name] = max(acked[name], k + 1)

            assert integrity(path) == "ok", f"round {round_no}"
            store = SessionStore(path)
            (info,) = store.sessions()
            session = store.load(info.id)
            store.close()
            total = 0
            for branch in session.branches:
                texts = [m.rendered.rstrip(".") for m in branch.messages]
                expected = [f"{branch.name}-{k}" for k in range(len(texts))]
                assert texts == expected, f"round {round_no}: not an unbroken prefix"
                assert len(texts) >= acked[branch.name], (
                    f"round {round_no}: a committed one is lost"
                )
                total += len(texts)
            assert total >= previous_total  # what survived one crash survives the next
            if mode == "ack":
                assert total <= sum(acked.values()) + 1  # past the acknowledged: one in flight
            previous_total = total
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        server.stdout.close()
    assert previous_total > ROUNDS  # the rounds really recorded something


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the fork server needs os.fork")
def test_the_killed_store_resumes_writing(tmp_path):
    path = tmp_path / "again.db"
    server = recorder(tmp_path)
    try:
        pid = start(server, path, "ack")
        until = time.monotonic() + 10
        while len(read_acks(path)) < 5 and time.monotonic() < until:
            time.sleep(0.002)
        kill(pid)
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        server.stdout.close()
    store = SessionStore(path)
    (info,) = store.sessions()
    from lion_nb.store.autosave import Autosaver
    from lion_nb.store.rows import build_session

    rows = store.read(info.id)
    session = build_session(rows)
    Autosaver(store, session, seed=rows)
    before = len(session.get_branch("one").messages)
    session.get_branch("one").msgs.add_message(instruction="after the crash")
    store.flush()
    restored = store.load(info.id).get_branch("one")
    assert len(restored.messages) == before + 1
    assert restored.messages[-1].rendered == "after the crash"
    store.close()
