"""Autosave is incremental and keeps the store equal to the Session.

- a recorded message is one unit with one row, whatever the history's length;
- undo, clear, re-run replace and a new system prompt cut and rewrite only what changed;
- a fork is written whole, a removed branch is deleted, the default branch follows;
- edits in place (a cell tag added after recording, a field assigned) are saved at the
  checkpoint; logs follow the logger (appended and dropped entries);
- a restored session resumes from its rows (no rewrite); a session imported again under an
  id the store holds replaces it; an empty session writes nothing.
"""

from __future__ import annotations

import anyio
import pytest

from lion_nb import Session, iModel
from lion_nb.store.autosave import RECENT
from tests.store.helpers import RecordingStore, op_kinds, rows_written, varied_session


@pytest.fixture
def store(tmp_path):
    store = RecordingStore(tmp_path / "sessions.db")
    yield store
    store.close()


def stored(store, session):
    store.flush()
    return store.load(str(session.id)).to_dict()


def test_a_message_is_one_unit_of_one_row_at_any_history_length(store):
    session = Session()
    branch = session.default_branch
    store.autosave(session)
    branch.msgs.add_message(instruction="first")  # the session's first write: it whole
    store.take()
    for n in (1, 200):
        while len(branch.messages) < n:
            branch.msgs.add_message(instruction=f"filler {len(branch.messages)}")
        store.take()
        branch.msgs.add_message(assistant_response="one more")
        units = store.take()
        assert len(units) == 1 and op_kinds(units) == ["put"] and rows_written(units) == 1
        assert units[0].ops[0][2][0][0] == n  # the row at the next position, nothing else
    assert stored(store, session) == session.to_dict()


def test_an_empty_session_writes_nothing_until_its_first_message(store):
    session = Session()
    store.autosave(session).checkpoint()
    session.new_branch(name="empty too")
    store.autosave(session).checkpoint()
    assert store.take() == [] and not store.path.exists()


def test_undo_clear_replace_and_a_system_prompt_are_saved(store):
    session = Session()
    branch = session.default_branch
    saver = store.autosave(session)
    for i in range(6):
        branch.msgs.add_message(instruction=f"q{i}")
        branch.msgs.add_message(assistant_response=f"a{i}")
    store.take()
    branch.msgs.remove_message(branch.messages[-1].id)  # undo, outside any turn
    units = store.take()
    assert op_kinds(units) == ["cut"] and units[0].ops[0][2] == 11
    assert stored(store, session) == session.to_dict()

    async def rerun_replace() -> None:  # on the loop, as a turn does it
        for message in list(branch.messages)[4:]:  # everything from message 4 on goes
            branch.msgs.remove_message(message.id)
        await anyio.sleep(0)  # the removals are saved as one cut, once the loop turns
        branch.msgs.add_message(instruction="again")

    anyio.run(rerun_replace)
    saver.checkpoint()
    units = store.take()
    assert op_kinds(units) == ["cut", "put"] and rows_written(units) == 1  # the prefix stays
    assert stored(store, session) == session.to_dict()
    branch.msgs.add_message(system="Now a system prompt.")  # inserted first: all moves
    assert stored(store, session) == session.to_dict()
    branch.msgs.clear_messages()  # the system prompt stays
    assert stored(store, session) == session.to_dict()
    assert len(store.load(str(session.id)).default_branch.messages) == 1


def test_forks_removals_and_the_default_branch_follow_the_session(store):
    session = varied_session()
    saver = store.autosave(session)
    assert stored(store, session) == session.to_dict()
    fork = session.split("main")
    fork.name = "main~fork"
    fork.msgs.add_message(instruction="on the fork")  # the fork is found and written whole
    session.default_branch = fork
    saver.checkpoint()
    assert stored(store, session) == session.to_dict()
    session.remove_branch("side")
    saver.checkpoint()
    loaded = store.load(str(session.id))
    assert [b.name for b in loaded.branches] == ["main", "main~fork"]
    assert loaded.default_branch.name == "main~fork"
    assert loaded.to_dict() == session.to_dict()
    newest = session.new_branch(name="newest")
    newest.msgs.add_message(instruction="x")
    saver.checkpoint()
    assert [b.name for b in store.load(str(session.id)).branches] == [
        "main",
        "main~fork",
        "newest",
    ]


def test_edits_in_place_are_saved_at_the_checkpoint(store):
    session = Session()
    branch = session.default_branch
    saver = store.autosave(session)
    for i in range(3):
        branch.msgs.add_message(instruction=f"q{i}")
    store.take()
    old = branch.messages[0]
    newest = branch.messages[-1]
    newest.metadata["lion"] = {"cell_id": "c9"}  # mutated in place, as a turn tags its cell
    old.sender = "someone else"  # an old message's field assigned: its revision moves
    saver.checkpoint()
    units = store.take()
    assert rows_written(units) == 2
    loaded = store.load(str(session.id)).default_branch
    assert loaded.messages[-1].metadata["lion"] == {"cell_id": "c9"}
    assert loaded.messages[0].sender == "someone else"
    saver.checkpoint()
    assert store.take() == []  # nothing changed: nothing written


def test_the_recent_window_is_bounded(store):
    session = Session()
    branch = session.default_branch
    saver = store.autosave(session)
    for i in range(RECENT + 50):
        branch.msgs.add_message(instruction=f"q{i}")
    saver.checkpoint()
    store.take()
    branch.messages[0].metadata["note"] = "too old to be looked at again"
    branch.messages[-1].metadata["note"] = "recent"
    saver.checkpoint()
    assert rows_written(store.take()) == 1


def test_logs_follow_the_logger(store):
    session = Session()
    branch = session.default_branch
    branch.log_manager.config.capacity = 3
    saver = store.autosave(session)
    branch.msgs.add_message(instruction="x")
    for i in range(5):
        branch.log_manager.log({"i": i})  # past the capacity the oldest are dropped
    saver.checkpoint()
    loaded = store.load(str(session.id)).default_branch
    assert [log.content["i"] for log in loaded.logs] == [2, 3, 4]
    branch.log_manager.clear()
    saver.checkpoint()
    assert len(store.load(str(session.id)).default_branch.logs) == 0


def test_a_real_turn_is_saved_with_its_log(store):
    session = Session()
    branch = session.default_branch
    store.autosave(session)
    anyio.run(lambda: branch.communicate("What is the store?"))
    anyio.run(branch._drain_signals)
    assert stored(store, session) == session.to_dict()
    assert len(session.default_branch.logs) == 1  # the api_call entry came back too


def test_a_restored_session_resumes_without_rewriting(store):
    session = varied_session()
    store.save(session)
    store.take()
    rows = store.read(str(session.id))
    from lion_nb.store.autosave import Autosaver
    from lion_nb.store.rows import build_session

    restored = build_session(rows)
    saver = Autosaver(store, restored, seed=rows)
    restored.get_branch("main").msgs.add_message(instruction="after the restart")
    saver.checkpoint()
    units = store.take()
    assert units[0].claim is not None and units[0].ops == []  # claiming it is all it costs
    assert rows_written(units) == 1
    assert stored(store, restored) == restored.to_dict()


def test_a_session_imported_again_replaces_what_the_store_held(store):
    session = varied_session()
    store.save(session)
    copy = Session.from_dict(session.to_dict())  # the same ids, as `%lion load FILE` gives
    copy.remove_branch("side")
    store.autosave(copy)
    assert stored(store, copy) == copy.to_dict()
    assert [b.name for b in store.load(str(copy.id)).branches] == ["main"]


def test_a_model_change_rewrites_only_the_branch_header(store):
    session = varied_session()
    saver = store.autosave(session)
    store.take()
    session.get_branch("side").chat_model = iModel(
        provider="offline", model="scripted", responses=[]
    )
    saver.checkpoint()
    assert op_kinds(store.take()) == ["branch"]
    assert store.load(str(session.id)).get_branch("side").chat_model.model == "scripted"


def test_stop_ends_the_following(store):
    session = Session()
    saver = store.autosave(session)
    session.default_branch.msgs.add_message(instruction="kept")
    saver.stop()
    session.default_branch.msgs.add_message(instruction="not saved")
    session.default_branch.msgs.clear_messages()
    assert not saver.active
    assert len(store.load(str(session.id)).default_branch.messages) == 1
