"""A session saved in the store comes back equal: ``load(id).to_dict() == to_dict()``.

Also: listing, deleting, finding a session by the start of its id and by notebook, and a whole
``save`` that replaces what the store held.
"""

from __future__ import annotations

import pytest

from lion_nb import Branch, Session, iModel
from lion_nb.errors import ItemNotFoundError
from lion_nb.store import SessionStore
from tests.store.helpers import varied_session


@pytest.fixture
def store(tmp_path):
    store = SessionStore(tmp_path / "sessions.db")
    yield store
    store.close()


def test_a_saved_session_loads_back_equal_to_its_to_dict(store):
    session = varied_session()
    store.save(session)
    loaded = store.load(str(session.id))
    assert loaded.to_dict() == session.to_dict()
    assert loaded.to_dict(mode="json") == session.to_dict(mode="json")
    assert loaded.default_branch.name == "side"
    main = loaded.get_branch("main")
    assert not main.mdls.parse_is_chat  # the distinct parse model survived as distinct
    assert main.messages[3].action_request_id == str(main.messages[2].id)
    assert [log.content for log in main.logs] == [{"event": "api_call", "n": 1}]


def test_each_branch_round_trips_through_from_dict_as_well(store):
    session = varied_session()
    store.save(session)
    for branch in store.load(str(session.id)).branches:
        original = session.get_branch(branch.id)
        assert branch.to_dict() == original.to_dict()
        assert Branch.from_dict(original.to_dict()).to_dict() == branch.to_dict()


def test_an_autosaved_session_round_trips(store):
    session = Session()
    saver = store.autosave(session)
    branch = session.default_branch
    for i in range(5):
        branch.msgs.add_message(instruction=f"q{i}")
        branch.msgs.add_message(assistant_response=f"a{i}")
    other = session.split(branch)
    other.msgs.add_message(instruction="only on the copy")
    saver.checkpoint()
    store.flush()
    assert store.load(str(session.id)).to_dict() == session.to_dict()


def test_a_cli_model_keeps_its_provider_session(store):
    agent = iModel(provider="offline_cli", model="scripted", turns=[])
    agent.provider_session_id = "resume-me"
    session = Session(default_branch=Branch(chat_model=agent))
    session.default_branch.msgs.add_message(instruction="go")
    store.save(session)
    restored = store.load(str(session.id)).default_branch.chat_model
    assert restored.is_cli and restored.provider_session_id == "resume-me"


def test_sessions_are_listed_newest_first_with_counts(store):
    first, second = varied_session(), Session(name="later")
    second.default_branch.msgs.add_message(instruction="x")
    store.save(first)
    store.save(second)
    infos = store.sessions()
    assert [i.id for i in infos] == [str(second.id), str(first.id)]
    older = infos[1]
    assert (older.name, older.branches, older.messages, older.default_branch) == (
        "analysis",
        2,
        8,  # main: system, instruction, tool call, tool result, answer; side: three
        "side",
    )


def test_a_session_is_found_by_the_start_of_its_id_and_deleted(store):
    session = varied_session()
    store.save(session)
    sid = str(session.id)
    assert store.resolve(sid[:6]) == sid
    assert store.delete(sid[:6]) is True
    assert store.sessions() == []
    with pytest.raises(ItemNotFoundError, match="No saved session"):
        store.load(sid)
    import sqlite3

    conn = sqlite3.connect(store.path)
    counts = [
        conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("branches", "messages", "logs")
    ]
    conn.close()
    assert counts == [0, 0, 0]  # nothing of it is left behind


def test_an_ambiguous_id_prefix_is_refused(store):
    from uuid import UUID

    for last in "12":
        session = Session(id=UUID(f"abcdef00-0000-4000-8000-00000000000{last}"))
        session.default_branch.msgs.add_message(instruction="x")
        store.save(session)
    with pytest.raises(ItemNotFoundError, match="starts 2 session ids"):
        store.resolve("abcdef")
    assert store.resolve("abcdef00-0000-4000-8000-000000000002").endswith("2")
    with pytest.raises(ItemNotFoundError, match="No saved session"):
        store.resolve("")  # an empty reference names nothing


def test_latest_by_notebook_skips_the_excluded_one(store):
    ids = []
    for notebook in ("a.ipynb", "b.ipynb", "a.ipynb"):
        session = Session()
        session.default_branch.msgs.add_message(instruction=notebook)
        store.save(session, notebook=notebook)
        ids.append(str(session.id))
    assert store.latest(notebook="a.ipynb") == ids[2]
    assert store.latest(notebook="a.ipynb", exclude=ids[2]) == ids[0]
    assert store.latest(notebook="b.ipynb") == ids[1]
    assert store.latest() == ids[2]
    assert store.latest(notebook="c.ipynb") is None


def test_save_replaces_what_the_store_held(store):
    session = varied_session()
    store.save(session)
    session.remove_branch("side")
    session.default_branch.msgs.clear_messages()
    store.save(session)
    loaded = store.load(str(session.id))
    assert loaded.to_dict() == session.to_dict()
    assert [b.name for b in loaded.branches] == ["main"]


def test_listing_and_loading_never_create_the_file(tmp_path):
    store = SessionStore(tmp_path / "nothing-here.db")
    assert store.sessions() == [] and store.latest() is None
    with pytest.raises(ItemNotFoundError):
        store.load("abc")
    assert not store.path.exists() and list(tmp_path.iterdir()) == []


def test_load_takes_the_start_of_an_id_and_refuses_an_ambiguous_one(store):
    from uuid import UUID

    for last in "12":
        session = Session(id=UUID(f"abcdef{last}0-0000-4000-8000-00000000000{last}"))
        session.default_branch.msgs.add_message(instruction=f"session {last}")
        store.save(session)
    for ref, last in ((" abcdef1 ", "1"), (str(session.id), "2")):
        loaded = store.load(ref)
        assert loaded.default_branch.messages[0].rendered.startswith(f"session {last}")
    with pytest.raises(ItemNotFoundError, match="starts 2 session ids"):
        store.load("abcdef")
    with pytest.raises(ItemNotFoundError, match="No saved session `0bcdef`"):
        store.load("0bcdef")
    with pytest.raises(ItemNotFoundError, match="No saved session"):
        store.load(" ")


def test_rows_with_a_gap_read_back_in_order_and_are_not_resumed_as_contiguous(store):
    session = Session()
    branch = session.default_branch
    for i in range(5):
        branch.msgs.add_message(instruction=f"question {i}")
    store.save(session)
    ids = [str(m.id) for m in branch.messages]
    from tests.store.helpers import connect

    conn = connect(store.path)
    conn.execute("DELETE FROM messages WHERE position = 2")
    conn.close()
    rows = store.read(str(session.id)).branches[0]
    assert rows.message_ids == ids[:2] + ids[3:]
    assert rows.ordered and not rows.contiguous
    loaded = store.load(str(session.id)).default_branch
    assert [str(m.id) for m in loaded.messages] == rows.message_ids


def test_rows_out_of_order_are_refused_as_corrupt(store):
    from lion_nb.store import StoreCorruptError
    from lion_nb.store.rows import build_branch

    session = Session()
    session.default_branch.msgs.add_message(instruction="one")
    session.default_branch.msgs.add_message(instruction="two")
    store.save(session)
    rows = store.read(str(session.id)).branches[0]
    assert build_branch(rows).messages[1].rendered.startswith("two")
    rows.ordered = False  # what positions coming out of the aggregate unsorted record
    with pytest.raises(StoreCorruptError, match="does not read back in order"):
        build_branch(rows)
