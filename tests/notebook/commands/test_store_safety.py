"""What the session store holds is never lost by accident, nor lost for the rest by one bad row.

A damaged row spoils only its own session: loading the extension with ``restore_on_load``
warns, ``%lion load --session`` is a one-line `UsageError` naming the session, ``%lion
sessions`` still lists, and the other sessions still load. Importing an older ``%lion save``
file never replaces messages the store committed after it: it becomes a new session."""

from __future__ import annotations

import sqlite3
import warnings

import pytest

from lion_nb import current_session
from lion_nb.notebook.state.persistence import installed
from lion_nb.notebook.state.session import reset_notebook_state
from lion_nb.store import StoreWarning
from lion_nb.store_location import store_path
from tests.notebook.nbshell import run, usage_error


def flush() -> None:
    persistence = installed()
    persistence.checkpoint()
    persistence.store.flush()


def _bad_message(conn, sid):
    conn.execute(
        'UPDATE messages SET data = \'{"kind": "nonsense"}\' WHERE position = 1 AND branch_id '
        "IN (SELECT id FROM branches WHERE session_id = ?)",
        (sid,),
    )


def _message_not_json(conn, sid):
    conn.execute(
        "UPDATE messages SET data = '{broken' WHERE branch_id IN "
        "(SELECT id FROM branches WHERE session_id = ?)",
        (sid,),
    )


def _branch_header_not_json(conn, sid):
    conn.execute("UPDATE branches SET data = 'not json' WHERE session_id = ?", (sid,))


def _session_header_array(conn, sid):
    conn.execute("UPDATE sessions SET data = '[1, 2]' WHERE id = ?", (sid,))


DAMAGES = [_bad_message, _message_not_json, _branch_header_not_json, _session_header_array]


@pytest.fixture
def two_sessions(ip):
    """A good session, then a newer one that is damaged; returns (good id, damaged id)."""
    run(ip, "%%lion -q\nthe good one")
    good = str(current_session().id)
    run(ip, "%lion reset --all")
    run(ip, "%%lion -q\nthe damaged one")
    damaged = str(current_session().id)
    flush()
    ip.run_line_magic("unload_ext", "lion_nb")
    reset_notebook_state()
    ip.run_line_magic("reset", "-f")
    return good, damaged


def _damage(damage, sid) -> None:
    conn = sqlite3.connect(store_path())
    with conn:
        damage(conn, sid)
    conn.close()


@pytest.mark.parametrize("damage", DAMAGES, ids=lambda f: f.__name__.strip("_"))
def test_restore_on_load_warns_and_the_extension_loads(ip, two_sessions, damage, monkeypatch):
    _, damaged = two_sessions
    _damage(damage, damaged)
    monkeypatch.setenv("LION_NB_RESTORE", "1")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ran = run(ip, "%load_ext lion_nb")
    assert ran.error is None, ran
    found = [w for w in caught if issubclass(w.category, StoreWarning)]
    assert len(found) == 1 and f"`{damaged[:8]}` is damaged" in str(found[0].message)
    assert f"--delete {damaged[:8]}" in str(found[0].message)
    assert run(ip, "%%lion -q\nthe notebook works").error is None


@pytest.mark.parametrize("damage", DAMAGES, ids=lambda f: f.__name__.strip("_"))
def test_load_of_a_damaged_session_is_a_usage_error_and_the_rest_works(ip, two_sessions, damage):
    good, damaged = two_sessions
    _damage(damage, damaged)
    ip.run_line_magic("load_ext", "lion_nb")
    message = usage_error(ip, f"%lion load --session {damaged[:8]}")
    assert f"`{damaged[:8]}` is damaged" in message and "\n" not in message
    table = run(ip, "%lion sessions").value
    assert sorted(r["id"] for r in table.rows) == sorted([good[:8], damaged[:8]])
    ran = run(ip, f"%lion load --session {good[:8]}")
    assert ran.error is None, ran
    assert current_session().default_branch.messages[0].rendered == "the good one"
    assert run(ip, f"%lion sessions --delete {damaged[:8]}").error is None
    assert [r["id"] for r in run(ip, "%lion sessions").value.rows] == [good[:8]]


# -- importing an older save never drops what the store committed since ---------------------------
def _restart(ip) -> None:
    ip.run_line_magic("unload_ext", "lion_nb")
    reset_notebook_state()
    ip.run_line_magic("reset", "-f")
    ip.run_line_magic("load_ext", "lion_nb")


def test_loading_an_older_save_imports_a_new_session_and_keeps_the_newer(ip, tmp_path):
    backup = tmp_path / "backup.json"
    run(ip, "%%lion -q\nbefore the save")
    run(ip, f"%lion save {backup}")
    original = str(current_session().id)
    for i in range(5):
        run(ip, f"%%lion -q\nafter the save {i}")
    flush()
    _restart(ip)
    ran = run(ip, f"%lion load {backup}")
    assert ran.error is None, ran
    assert "as a new session" in ran.stdout and "10 message(s)" in ran.stdout
    assert f"--session {original[:8]}" in ran.stdout
    imported = current_session()
    assert str(imported.id) != original and len(imported.default_branch.messages) == 2
    run(ip, "%%lion -q\non the import")
    flush()
    store = installed().store
    kept = store.load(original).default_branch
    assert len(kept.messages) == 12  # the ten committed after the save are all there
    assert kept.messages[-2].rendered == "after the save 4"
    assert len(store.load(str(imported.id)).default_branch.messages) == 4
    assert len(store.sessions()) == 2


def test_loading_a_save_with_nothing_newer_keeps_its_id(ip, tmp_path):
    backup = tmp_path / "backup.json"
    run(ip, "%%lion -q\nall saved")
    run(ip, f"%lion save {backup}")
    original = str(current_session().id)
    flush()
    _restart(ip)
    ran = run(ip, f"%lion load {backup}")
    assert ran.error is None and "new session" not in ran.stdout
    assert str(current_session().id) == original
