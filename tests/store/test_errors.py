"""Each way the store can fail is one clear error naming the file, and autosave turns off with
one warning while the conversation goes on in memory:

- a database of a newer lion_nb (a newer schema), a corrupt file, a file locked by another
  connection, a full database (``PRAGMA max_page_count`` caps its size), another process
  taking the session over;
- the turn that meets the failure still succeeds, and later turns too.
"""

from __future__ import annotations

import sqlite3
import warnings

import anyio
import pytest

from lion_nb import Session
from lion_nb.store import (
    SessionStore,
    StoreConflictError,
    StoreCorruptError,
    StoreFullError,
    StoreLockedError,
    StoreVersionError,
    StoreWarning,
)
from lion_nb.store.autosave import Autosaver
from lion_nb.store.schema import SCHEMA_VERSION
from tests.store.helpers import integrity


def turn(branch, text: str) -> str:
    return anyio.run(lambda: branch.communicate(text))


def run_into(store: SessionStore, session: Session, turns: int = 3) -> tuple[list, Autosaver]:
    """Autosave ``session``, run real turns; the warnings raised meanwhile, and the saver."""
    branch = session.default_branch
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        saver = store.autosave(session)
        for i in range(turns):
            assert turn(branch, f"question {i}").startswith("Offline model")
            store.flush()
            saver.checkpoint()  # a failure is reported at the next sync, once
    assert len(branch.messages) == 2 * turns  # every turn is in memory
    assert not saver.active
    return [w for w in caught if issubclass(w.category, StoreWarning)], saver


def check(found: list, saver: Autosaver, error_type: type, path, *words: str) -> None:
    assert len(found) == 1, [str(w.message) for w in found]  # one warning, not one a turn
    text = str(found[0].message)
    assert str(path) in text and "Autosave" in text and "in memory" in text
    for word in words:
        assert word in text
    assert isinstance(saver.failure, error_type) and saver.failure.path == str(path)


def test_a_newer_store(tmp_path):
    path = tmp_path / "s.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 1279872846")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 3}")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    store = SessionStore(path)
    session = Session()
    check(*run_into(store, session), StoreVersionError, path, "newer lion_nb", "pip install -U")
    store.close()


def test_a_corrupt_file(tmp_path):
    path = tmp_path / "s.db"
    path.write_bytes(b"this is not a database, just some bytes " * 200)
    store = SessionStore(path)
    check(*run_into(store, Session()), StoreCorruptError, path, "damaged", ".recover")
    assert path.read_bytes().startswith(b"this is not")  # left as it was, for recovery
    store.close()


def test_a_file_locked_by_another_connection(tmp_path):
    path = tmp_path / "s.db"
    SessionStore(path).submit(lambda conn: None).result()  # a valid, empty store
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another program holds the write lock
    try:
        store = SessionStore(path, timeout=0.2)
        session = Session()
        check(*run_into(store, session), StoreLockedError, path, "locked by another program")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    store.close()
    assert integrity(path) == "ok"


def test_a_full_database(tmp_path):
    path = tmp_path / "s.db"
    store = SessionStore(path, pragmas={"max_page_count": 24})  # a few pages: soon full
    session = Session()
    branch = session.default_branch
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        saver = store.autosave(session)
        for i in range(40):
            assert turn(branch, f"a long enough question {i} " + "x" * 400).startswith("Offline")
            store.flush()
            saver.checkpoint()
    found = [w for w in caught if issubclass(w.category, StoreWarning)]
    check(found, saver, StoreFullError, path, "full")
    assert len(branch.messages) == 80  # every turn in memory
    store.close()
    assert integrity(path) == "ok"
    # what was committed before it filled up is whole: a prefix of the branch
    saved = SessionStore(path).load(str(session.id)).default_branch
    kept = [m.id for m in saved.messages]
    assert 0 < len(kept) < 80 and kept == [m.id for m in branch.messages][: len(kept)]


def test_another_process_taking_the_session_over(tmp_path):
    path = tmp_path / "s.db"
    first = SessionStore(path)
    session = Session()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        saver = first.autosave(session)
        session.default_branch.msgs.add_message(instruction="written by the first")
        first.flush()
        second = SessionStore(path)  # another kernel restores the same session
        rows = second.read(str(session.id))
        from lion_nb.store.rows import build_session

        taken = build_session(rows)
        Autosaver(second, taken, seed=rows)
        second.flush()
        session.default_branch.msgs.add_message(instruction="the first must not write this")
        first.flush()
        saver.checkpoint()
        taken.default_branch.msgs.add_message(instruction="the second writes this")
        second.flush()
    found = [w for w in caught if issubclass(w.category, StoreWarning)]
    assert len(found) == 1 and "another kernel" in str(found[0].message)
    assert isinstance(saver.failure, StoreConflictError)
    texts = [m.rendered for m in second.load(str(session.id)).default_branch.messages]
    assert texts == ["written by the first", "the second writes this"]
    first.close()
    second.close()


def test_a_failure_callback_replaces_the_warning(tmp_path):
    path = tmp_path / "s.db"
    path.write_bytes(b"garbage" * 100)
    store = SessionStore(path)
    seen = []
    session = Session()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning may be raised
        saver = store.autosave(session, on_failure=seen.append)
        session.default_branch.msgs.add_message(instruction="x")
        store.flush()
        saver.checkpoint()
    assert [type(e) for e in seen] == [StoreCorruptError]
    store.close()


def test_commands_on_a_broken_store_raise_the_error(tmp_path):
    path = tmp_path / "s.db"
    path.write_bytes(b"garbage" * 100)
    store = SessionStore(path)
    with pytest.raises(StoreCorruptError) as caught:
        store.sessions()
    assert caught.value.path == str(path)
    store.close()
