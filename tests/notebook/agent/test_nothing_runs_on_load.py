"""Nothing the model asked to run runs again because a session was restored (``%lion
load``), from a file or from the store, or because the extension was loaded anew in a
notebook whose store holds recorded runs: a recorded run is history, not a command."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lion_nb import current_session, notebook_tools
from tests.notebook.nbshell import run


def _record_a_run(ip: Any, marker: Path) -> None:
    branch = current_session().default_branch
    branch.acts.register_tools(notebook_tools(approve=True, shell=ip), update=True)
    code = f"open({str(marker)!r}, 'a').write('ran\\n')"
    asyncio.run(branch.act({"function": "run_python", "arguments": {"code": code}}))
    assert marker.read_text() == "ran\n"  # it ran once, when approved


def test_lion_load_from_a_file_runs_nothing(ip, tmp_path):
    marker = tmp_path / "marker.txt"
    _record_a_run(ip, marker)
    saved = tmp_path / "session.json"
    assert run(ip, f"%lion save {saved}").error is None
    assert run(ip, "%lion reset").error is None
    loaded = run(ip, f"%lion load {saved}")
    assert loaded.error is None, loaded
    calls = [m for m in current_session().default_branch.messages if m.kind == "action_request"]
    assert [c.function for c in calls] == ["run_python"]  # the history is back
    assert marker.read_text() == "ran\n"  # and nothing ran again


def test_reloading_the_extension_and_restoring_from_the_store_runs_nothing(ip, tmp_path):
    marker = tmp_path / "marker.txt"
    store = tmp_path / "sessions.db"
    assert run(ip, f"%config LionMagics.store_path = {str(store)!r}").error is None
    _record_a_run(ip, marker)
    session_id = str(current_session().id)
    from lion_nb.store import SessionStore

    SessionStore(store).save(current_session())
    assert run(ip, "%unload_ext lion_nb").error is None
    assert run(ip, "%load_ext lion_nb").error is None
    assert run(ip, f"%config LionMagics.store_path = {str(store)!r}").error is None
    loaded = run(ip, f"%lion load --session {session_id}")
    assert loaded.error is None, loaded
    assert marker.read_text() == "ran\n"
