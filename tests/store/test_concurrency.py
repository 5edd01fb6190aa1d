"""Two processes (and two sessions in one process) autosaving into one store at the same
time lose nothing: every message of every branch is there, in order, and each session still
equals its ``to_dict``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio

from lion_nb import Session
from lion_nb.store import SessionStore
from tests.store.helpers import integrity

ROOT = Path(__file__).resolve().parents[2]
PER_BRANCH = 150

WRITER = textwrap.dedent(
    f"""
    import json, sys
    from lion_nb import Session
    from lion_nb.store import SessionStore

    store = SessionStore(sys.argv[1])
    session = Session(name=sys.argv[2])
    session.default_branch.name = "a"
    session.new_branch(name="b")
    store.autosave(session)
    sys.stdin.readline()  # both processes start writing together
    for k in range({PER_BRANCH}):
        for branch in session.branches:
            branch.msgs.add_message(instruction=f"{{sys.argv[2]}} {{branch.name}} {{k}}")
    store.close()
    print(json.dumps(session.to_dict(mode="json")))
    """
)


def test_two_processes_autosaving_into_one_store_lose_nothing(tmp_path):
    path = tmp_path / "shared.db"
    SessionStore(path).submit(lambda conn: None).result()  # the schema exists beforehand
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for name in ("left", "right")
    ]
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    dumps = [json.loads(proc.communicate(timeout=120)[0]) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    store = SessionStore(path)
    infos = {info.name: info for info in store.sessions()}
    assert set(infos) == {"left", "right"}
    for dump in dumps:
        loaded = store.load(dump["id"])
        assert loaded.to_dict(mode="json") == dump
        for branch in loaded.branches:
            texts = [m.rendered for m in branch.messages]
            assert texts == [f"{dump['name']} {branch.name} {k}" for k in range(PER_BRANCH)]
    store.close()
    assert integrity(path) == "ok"


def test_two_sessions_in_one_process_share_the_store(tmp_path):
    store = SessionStore(tmp_path / "s.db")
    sessions = [Session(name="one"), Session(name="two")]
    savers = [store.autosave(s) for s in sessions]

    async def chat(session: Session) -> None:
        branch = session.default_branch
        for i in range(5):
            await branch.communicate(f"{session.name} asks {i}")

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for session in sessions:
                tg.start_soon(chat, session)

    anyio.run(main)
    for saver in savers:
        saver.checkpoint()
    store.flush()
    for session in sessions:
        assert store.load(str(session.id)).to_dict() == session.to_dict()
        assert len(session.default_branch.messages) == 10
    store.close()
