"""The schema: named, append-only migrations, each earlier version migrated to the latest.

For every version before the latest, a database is brought to exactly that version by the
migrations themselves, filled with rows as a lion_nb of that version wrote them, and opened by
this lion_nb: it migrates, records every migration's name in order, and loads the session.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from lion_nb import Session
from lion_nb.store import SessionStore, StoreCorruptError, StoreVersionError
from lion_nb.store.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION, migrate
from tests.store.helpers import integrity


def at_version(path: Path, version: int) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, path, target=version)
    return conn


def write_as_version(conn: sqlite3.Connection, version: int) -> Session:
    """Rows of one session with one branch of two messages, as that version wrote them."""
    session = Session(name=f"from v{version}")
    branch = session.default_branch
    branch.name = "main"
    branch.msgs.add_message(instruction="saved long ago")
    branch.msgs.add_message(assistant_response="and still here")
    sid, bid = str(session.id), str(branch.id)
    head = session.model_dump(mode="json")
    header = branch.model_dump(mode="json") | {"chat_model": branch.chat_model.to_dict()}
    if version >= 1:
        conn.execute(
            "INSERT INTO sessions (id, data, default_branch, owner, created_at, updated_at) "
            "VALUES (?, ?, ?, 'old', 1.0, 2.0)",
            (sid, json.dumps(head), bid),
        )
        conn.execute(
            "INSERT INTO branches (id, session_id, seq, data) VALUES (?, ?, 0, ?)",
            (bid, sid, json.dumps(header)),
        )
        for position, message in enumerate(branch.messages):
            conn.execute(
                "INSERT INTO messages (branch_id, position, id, kind, data) VALUES (?, ?, ?, ?, ?)",
                (bid, position, str(message.id), message.kind, message.model_dump_json()),
            )
    return session


def test_migrations_are_named_numbered_and_append_only():
    names = [m.name for m in MIGRATIONS]
    assert names == [
        "0001_initial",
        "0002_notebook_label",
        "0003_eval_runs",
        "0004_blobs",
        "0005_run_items",
    ]  # released: never edited or dropped
    assert all(name.startswith(f"{i:04d}_") for i, name in enumerate(names, 1))
    assert len(MIGRATIONS) == SCHEMA_VERSION


@pytest.mark.parametrize("version", range(SCHEMA_VERSION))
def test_every_earlier_version_migrates_to_the_latest(tmp_path, version):
    path = tmp_path / "old.db"
    conn = at_version(path, version)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == version
    session = write_as_version(conn, version)
    conn.close()

    store = SessionStore(path)
    try:
        infos = store.sessions()
        if version == 0:
            assert infos == []
        else:
            (info,) = infos
            assert info.notebook is None  # version 1 did not know the notebook
            restored = store.load(info.id)
            assert restored.to_dict() == session.to_dict()
    finally:
        store.close()
    conn = sqlite3.connect(path)
    applied = conn.execute("SELECT version, name FROM migrations ORDER BY version").fetchall()
    assert applied == [(i + 1, m.name) for i, m in enumerate(MIGRATIONS)]
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert "sessions_by_notebook" in {
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
    }
    conn.close()
    assert integrity(path) == "ok"


def test_opening_twice_migrates_once(tmp_path):
    path = tmp_path / "s.db"
    for _ in range(2):
        store = SessionStore(path)
        store.sessions() if path.exists() else store.submit(lambda conn: None).result()
        store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM migrations").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_two_processes_creating_one_store_at_once_migrate_it_once(tmp_path):
    path = tmp_path / "race.db"
    root = Path(__file__).resolve().parents[2]
    code = (
        "import sys\nfrom lion_nb.store import SessionStore\n"
        "s = SessionStore(sys.argv[1])\ns.submit(lambda c: None).result()\ns.close()\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path)], cwd=root) for _ in range(3)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM migrations").fetchone()[0] == SCHEMA_VERSION
    conn.close()


RACE = """
import json, multiprocessing as mp, sys
from pathlib import Path
from lion_nb.store import SessionStore

def open_one(path, barrier, out):
    barrier.wait()  # every process opens the new store at the same moment
    store = SessionStore(path, timeout=30)
    try:
        store.submit(lambda conn: None).result()
        out.put("ok")
    except Exception as exc:
        out.put(f"{type(exc).__name__}: {exc}")
    finally:
        store.close()

if __name__ == "__main__":
    ctx, failures = mp.get_context("fork"), []
    for trial in range(int(sys.argv[2])):
        path = Path(sys.argv[1]) / f"store-{trial}.db"
        barrier, out = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=open_one, args=(path, barrier, out)) for _ in range(4)]
        for p in procs:
            p.start()
        results = [out.get(timeout=120) for _ in procs]
        for p in procs:
            p.join()
        failures += [r for r in results if r != "ok"]
    print(json.dumps(failures))
"""


def test_processes_opening_a_new_store_at_the_same_moment_all_get_it(tmp_path):
    # SQLite refuses a journal-mode change that meets another connection's lock at once,
    # without waiting; and a store read mid-creation looked like another program's database
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [sys.executable, "-c", RACE, str(tmp_path), "40"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == []
    for path in tmp_path.glob("store-*.db"):
        conn = sqlite3.connect(path)
        assert conn.execute("SELECT count(*) FROM migrations").fetchone()[0] == SCHEMA_VERSION
        conn.close()


def test_a_newer_store_is_refused_by_name(tmp_path):
    path = tmp_path / "future.db"
    conn = at_version(path, SCHEMA_VERSION)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    store = SessionStore(path)
    with pytest.raises(StoreVersionError) as caught:
        store.sessions()
    store.close()
    message = str(caught.value)
    assert str(path) in message and "newer lion_nb" in message and "pip install -U" in message
    assert caught.value.path == str(path)


def test_another_programs_database_is_not_taken_over(tmp_path):
    path = tmp_path / "theirs.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE accounts (id INTEGER)")
    conn.commit()
    conn.close()
    store = SessionStore(path)
    with pytest.raises(StoreCorruptError, match="another program"):
        store.sessions()
    store.close()
    conn = sqlite3.connect(path)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
    conn.close()
    assert tables == ["accounts"]  # untouched
