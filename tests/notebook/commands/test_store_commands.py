"""The session store in a real IPython shell: autosave of ``%%lion`` turns, ``%lion load``
after a (simulated) restart, ``%lion sessions``, ``%lion autosave``, ``%lion export``,
``restore_on_load``, and a broken store that leaves the notebook working in memory.

A real kernel restart is in ``test_kernel_restart.py``; here a restart is what it leaves
behind: the extension unloaded, the notebook state and namespace gone, the extension loaded
again -- only the store on disk remains.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from lion_nb import current_session
from lion_nb.notebook.state.persistence import installed
from lion_nb.notebook.state.session import reset_notebook_state
from lion_nb.store import SessionStore, StoreWarning
from lion_nb.store_location import store_path
from tests.notebook.nbshell import run, usage_error

ROOT = Path(__file__).resolve().parents[3]


def restart(ip) -> None:
    """What a kernel restart leaves: nothing in memory, the store on disk."""
    ip.run_line_magic("unload_ext", "lion_nb")
    reset_notebook_state()
    ip.run_line_magic("reset", "-f")
    ip.run_line_magic("load_ext", "lion_nb")


def flush() -> None:
    persistence = installed()
    persistence.checkpoint()
    persistence.store.flush()


def texts(branch) -> list[str]:
    return [m.rendered for m in branch.messages]


def test_load_ext_opens_no_database(tmp_path):
    code = (
        "import json, sys\nfrom IPython.core.interactiveshell import InteractiveShell\n"
        "ip = InteractiveShell.instance()\nip.run_line_magic('load_ext', 'lion_nb')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('lion_nb.store'))))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LION_NB_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    # (IPython's own history imports sqlite3; lion_nb adds only where the store would be)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded == ["lion_nb.store_location"], out.stderr
    assert list(tmp_path.iterdir()) == []  # no .lion_nb folder until something is saved


def test_turns_are_autosaved_with_their_cell(ip):
    run(ip, "%%lion -q\nremember the store", cell_id="cell-1")
    flush()
    store = SessionStore(store_path())
    (info,) = store.sessions()
    assert info.id == str(current_session().id) and info.messages == 2
    saved = store.load(info.id).get_branch("main")
    assert texts(saved)[0] == "remember the store"
    assert saved.messages[0].metadata["lion"]["cell_id"] == "cell-1"  # the re-run link
    store.close()


def test_load_after_a_restart_brings_the_session_back(ip):
    run(ip, "%%lion -q\nfirst question", cell_id="a")
    run(ip, "%lion new critic")
    run(ip, "%%lion -q\ncritic question", cell_id="b")
    run(ip, "%lion switch main")
    before = current_session().to_dict()
    restart(ip)
    assert len(current_session().default_branch.messages) == 0  # really gone
    ran = run(ip, "%lion load")
    assert ran.error is None, ran
    assert "Restored session" in ran.stdout and "active: `main`" in ran.stdout
    session = current_session()
    assert session.to_dict() == before
    assert texts(session.get_branch("critic"))[0] == "critic question"
    # the re-run of a cell forks, as it would have before the restart
    assert run(ip, "%%lion -q\nfirst question, again", cell_id="a").error is None
    names = sorted(b.name for b in current_session().branches)
    assert names == ["critic", "main", "main~1"]
    assert texts(current_session().get_branch("main"))[0] == "first question, again"
    assert texts(current_session().get_branch("main~1"))[0] == "first question"
    flush()
    restart(ip)
    run(ip, "%lion load")
    assert sorted(b.name for b in current_session().branches) == names  # the fork was saved


def test_load_skips_the_session_running_now_and_takes_an_id(ip):
    run(ip, "%%lion -q\nold one")
    old = str(current_session().id)
    restart(ip)
    run(ip, "%%lion -q\nnew one")  # a turn before loading: a new session is saved too
    run(ip, "%lion load")
    assert str(current_session().id) == old
    newest = next(i.id for i in installed().store.sessions() if i.id != old)
    assert run(ip, f"%lion load --session {newest[:8]}").error is None
    assert str(current_session().id) == newest


def test_load_mistakes_are_usage_errors_with_the_fix(ip, tmp_path):
    assert "no session store at" in usage_error(ip, "%lion load")
    run(ip, "%%lion -q\nsomething")
    assert "not both" in usage_error(ip, f"%lion load {tmp_path / 'x.json'} --session abc")
    message = usage_error(ip, "%lion load abc123")
    assert "no file" in message and "--session" in message
    assert "No saved session `zzz`" in usage_error(ip, "%lion load --session zzz")
    flush()
    assert "besides the one running now" in usage_error(ip, "%lion load")


def test_sessions_lists_and_deletes(ip):
    run(ip, "%%lion -q\nfirst")
    first = str(current_session().id)
    run(ip, "%lion reset --all")
    run(ip, "%%lion -q\nsecond")
    table = run(ip, "%lion sessions").value
    assert table.columns == ["", "id", "notebook", "branches", "messages", "active", "saved"]
    assert [r["id"] for r in table.rows][1] == first[:8]
    assert [r[""] for r in table.rows] == ["*", ""]
    assert "autosave on" in table.title
    ran = run(ip, f"%lion sessions --delete {first[:8]}")
    assert ran.error is None and "Deleted session" in ran.stdout
    assert len(run(ip, "%lion sessions").value.rows) == 1
    current = str(current_session().id)
    assert "running now" in usage_error(ip, f"%lion sessions --delete {current[:8]}")
    assert "No saved session" in usage_error(ip, "%lion sessions --delete ffffffff")


def test_autosave_off_and_on(ip):
    run(ip, "%lion autosave off")
    run(ip, "%%lion -q\nnot saved")
    assert not store_path().exists()
    ran = run(ip, "%lion autosave on")
    assert "Autosave is on" in ran.stdout
    flush()
    (info,) = SessionStore(store_path()).sessions()
    assert info.messages == 2  # the whole session, written when it was turned on


def test_the_store_path_is_configurable(ip, tmp_path):
    run(ip, f"%config LionMagics.store_path = {str(tmp_path / 'elsewhere.db')!r}")
    run(ip, "%%lion -q\nhere")
    flush()
    assert SessionStore(tmp_path / "elsewhere.db").sessions()[0].messages == 2


def test_restore_on_load(ip, monkeypatch):
    run(ip, "%%lion -q\nbring me back")
    run(ip, "%lion new side")
    session_id = str(current_session().id)
    flush()
    ip.run_line_magic("unload_ext", "lion_nb")
    reset_notebook_state()
    monkeypatch.setenv("LION_NB_RESTORE", "1")
    ran = run(ip, "%load_ext lion_nb")
    assert "Restored session" in ran.stdout
    assert str(current_session().id) == session_id
    assert current_session().default_branch.name == "side"


def test_restore_on_load_with_nothing_saved_is_quiet(ip, monkeypatch):
    ip.run_line_magic("unload_ext", "lion_nb")
    monkeypatch.setenv("LION_NB_RESTORE", "1")
    ran = run(ip, "%load_ext lion_nb")
    assert ran.error is None and ran.stdout == "" and not store_path().exists()


def test_export(ip, tmp_path):
    run(ip, "%%lion -q\nexport me")
    ran = run(ip, f"%lion export -o {tmp_path / 'main.md'}")
    assert ran.error is None and "Wrote `main`" in ran.stdout
    assert "export me" in (tmp_path / "main.md").read_text()
    assert json.loads(run(ip, "%lion export -f json").value)["name"] == "main"
    df = run(ip, "%lion export main -f dataframe").value
    assert df["text"].iloc[0] == "export me"
    assert "`.json` or `.md`" in usage_error(ip, f"%lion export -o {tmp_path / 'x.txt'}")
    assert "drop `-o`" in usage_error(ip, f"%lion export -f dataframe -o {tmp_path / 'x.csv'}")


def test_a_json_import_is_autosaved_too(ip, tmp_path):
    path = tmp_path / "session.json"
    run(ip, "%%lion -q\nsaved to a file")
    run(ip, f"%lion save {path}")
    run(ip, "%lion reset --all")
    run(ip, f"%lion load {path}")
    run(ip, "%%lion -q\nafter the import")
    flush()
    saved = SessionStore(store_path()).load(str(current_session().id))
    assert texts(saved.get_branch("main"))[::2] == ["saved to a file", "after the import"]


# -- a broken store: the notebook goes on in memory ---------------------------------------------
def _corrupt(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not a database " * 100)


def _newer(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 1279872846")
    conn.execute("PRAGMA user_version = 99")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("breaker", [_corrupt, _newer], ids=["corrupt", "newer"])
def test_a_broken_store_warns_once_and_the_turns_go_on(ip, breaker):
    path = store_path()
    breaker(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = run(ip, "%%lion -q\nstill works")
        installed().store.flush()
        second = run(ip, "%%lion -q\nand again")
        third = run(ip, "%%lion -q\nand again")
    assert first.error is None and second.error is None and third.error is None
    assert first.value.startswith("Offline model")
    assert len(current_session().default_branch.messages) == 6  # all in memory
    found = [w for w in caught if issubclass(w.category, StoreWarning)]
    assert len(found) == 1
    assert str(path) in str(found[0].message) and "%lion autosave on" in str(found[0].message)
    assert str(path) in usage_error(ip, "%lion sessions")
    assert "off (Store" in run(ip, "%lion autosave").stdout


def test_a_locked_store_warns_and_the_turn_goes_on(ip, monkeypatch):
    monkeypatch.setenv("LION_NB_STORE_TIMEOUT", "0.2")
    path = store_path()
    SessionStore(path).submit(lambda conn: None).result()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ran = run(ip, "%%lion -q\nlocked out")
            installed().store.flush()
            run(ip, "1 + 1")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert ran.error is None and ran.value.startswith("Offline model")
    found = [w for w in caught if issubclass(w.category, StoreWarning)]
    assert len(found) == 1 and "locked by another program" in str(found[0].message)
    run(ip, "%lion autosave on")  # the lock is gone: saving resumes, the whole session
    flush()
    assert SessionStore(path).sessions()[0].messages == 2


def test_history_after_a_restart_tells_the_earlier_kernels_cells_apart(ip, monkeypatch):
    import lion_nb.notebook.cell.cells as cells

    run(ip, "%%lion -q\nbefore the restart", cell_id="a")
    before = current_session().default_branch.messages[0].metadata["lion"]["execution_count"]
    flush()
    restart(ip)
    monkeypatch.setattr(
        cells, "KERNEL_RUN", "a-new-kernel", raising=False
    )  # what a new process has
    run(ip, "%lion load")
    run(ip, "%%lion -q\nafter the restart", cell_id="b")
    rows = run(ip, "%lion history").value.rows
    now = current_session().default_branch.messages[-1].metadata["lion"]["execution_count"]
    assert [r["cell"] for r in rows] == [f"{before} (before restart)"] * 2 + [now] * 2
