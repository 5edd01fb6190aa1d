"""The SQLite full-text memory store: the MemoryStore contract (as the in-memory store is
tested), persistence, the FTS5 fallback, and the remember / recall operations."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import anyio
import pytest

from extensions.memory_recall import MemoryRecall
from extensions.sqlite_memory import SCHEMA_VERSION, SQLiteMemoryStore, fts5_available
from lion_nb import InMemoryStore, MemoryStore, Session, iModel
from lion_nb.extensions import load_extension
from lion_nb.protocols.memory import MemoryRecord

EXAMPLES = Path(__file__).resolve().parents[2] / "extensions"


def run(fn, *args, **kwargs):
    return anyio.run(lambda: fn(*args, **kwargs))


@pytest.fixture(params=["fts5", "words"])
def store(request, tmp_path):
    with SQLiteMemoryStore(tmp_path / "memory.sqlite3", fts=request.param == "fts5") as s:
        yield s


def test_it_satisfies_the_memory_store_protocol(store):
    assert isinstance(store, MemoryStore)


def test_add_returns_an_id_and_get_returns_the_record(store):
    meta = {"source": "notes", "n": 1}
    rid = run(store.add, "the cat sat", metadata=meta)
    meta["source"] = "changed"  # the store keeps its own copy
    record = run(store.get, rid)
    assert isinstance(record, MemoryRecord)
    assert (record.id, record.content, record.metadata) == (
        rid,
        "the cat sat",
        {"source": "notes", "n": 1},
    )
    assert record.created_at > 0
    assert run(store.get, "missing") is None


def test_add_rejects_non_text_with_a_clear_error(store):
    with pytest.raises(TypeError, match=r"`SQLiteMemoryStore.add` stores text, got `dict`"):
        run(store.add, {"a": 1})


def test_list_and_len_follow_insertion_and_delete(store):
    ids = [run(store.add, text) for text in ("one", "two", "three")]
    assert len(store) == 3
    assert run(store.delete, ids[1]) is True
    assert run(store.delete, ids[1]) is False
    assert [r.content for r in run(store.list)] == ["one", "three"]
    assert len(store) == 2
    assert run(store.search, "two") == []  # gone from the index too


def test_search_is_deterministic_and_honours_limit(store):
    for i in range(10):
        run(store.add, f"shared term {i}")
    first = run(store.search, "shared", limit=3)
    assert [r.content for r in first] == ["shared term 0", "shared term 1", "shared term 2"]
    assert run(store.search, "shared", limit=3) == first
    assert run(store.search, "shared", limit=0) == []
    assert len(run(store.search, "shared")) == 5  # the default limit


def test_search_with_no_words_returns_nothing_and_query_syntax_is_inert(store):
    run(store.add, "text with NEAR and OR in it")
    assert run(store.search, "") == []
    assert run(store.search, "  ?! ") == []
    # FTS5 operators and quotes in a query are just words (or nothing), never syntax errors
    assert [r.content for r in run(store.search, 'NEAR( "text" * OR')] == [
        "text with NEAR and OR in it"
    ]


def test_fts_ranks_records_with_more_of_the_words_first_and_stems():
    with SQLiteMemoryStore(fts=True) as store:
        run(store.add, "green apples")
        run(store.add, "nothing here")
        run(store.add, "red apples")
        run(store.add, "a red car")
        found = [r.content for r in run(store.search, "red apple")]
        assert found[0] == "red apples"  # both words (stemmed: "apple" finds "apples")
        assert set(found[1:]) == {"green apples", "a red car"}
        assert "nothing here" not in found


def test_without_fts5_search_ranks_like_the_in_memory_store():
    texts = [
        "apples are red",
        "Red apples and green apples",
        "green apples",
        "nothing here",
        "red apples",
    ]
    reference = InMemoryStore()
    with SQLiteMemoryStore(fts=False) as store:
        for text in texts:
            run(store.add, text)
            run(reference.add, text)
        for query in ("RED apples!", "green", "here red", "missing"):
            assert [r.content for r in run(store.search, query)] == [
                r.content for r in run(reference.search, query)
            ], query
    assert store.fts is False


def test_fts5_detection_agrees_with_how_sqlite_was_built():
    db = sqlite3.connect(":memory:")
    options = {row[0] for row in db.execute("PRAGMA compile_options")}
    db.close()
    assert fts5_available() == ("ENABLE_FTS5" in options)


def test_records_survive_reopening_the_file(tmp_path):
    path = tmp_path / "memory.sqlite3"
    with SQLiteMemoryStore(path) as store:
        rid = run(store.add, "the invoice is due on Friday", metadata={"tool": "calendar"})
    with SQLiteMemoryStore(path) as again:
        assert len(again) == 1
        record = run(again.get, rid)
        assert record.metadata == {"tool": "calendar"}
        assert [r.id for r in run(again.search, "when is the invoice due")] == [rid]


def test_records_written_without_the_index_are_indexed_on_opening(tmp_path):
    path = tmp_path / "memory.sqlite3"
    with SQLiteMemoryStore(path, fts=False) as plain:  # as a Python without FTS5 would
        run(plain.add, "meetings happen in the morning")
    with SQLiteMemoryStore(path, fts=True) as store:
        assert [r.content for r in run(store.search, "meeting")] == [
            "meetings happen in the morning"
        ]


def test_a_file_from_a_newer_schema_is_refused_with_its_name(tmp_path):
    path = tmp_path / "future.sqlite3"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(RuntimeError, match=r"future\.sqlite3` was written by a newer version"):
        SQLiteMemoryStore(path)


def test_queries_run_off_the_event_loop_thread():
    with SQLiteMemoryStore() as store:
        threads: list[int] = []
        store._db.create_function("note_thread", 0, lambda: threads.append(threading.get_ident()))

        async def main():
            loop_thread = threading.get_ident()
            await store.add("x")
            await store._run(lambda: store._db.execute("SELECT note_thread()").fetchone())
            return loop_thread

        loop_thread = anyio.run(main)
        assert threads and loop_thread not in threads


def test_it_is_a_branch_memory_and_recall_survives_a_restart(tmp_path):
    """Tool results written back by the memory-recall provider into the SQLite store are
    recalled by a new branch on a new store object over the same file."""
    path = tmp_path / "memory.sqlite3"

    def lookup_capital(country: str) -> str:
        """Look up the capital city of a country."""
        return {"France": "Paris"}.get(country, "unknown")

    def first_model(messages, **request):
        if request.get("tools") and not any(m["role"] == "tool" for m in messages):
            return {"tool_calls": [{"name": "lookup_capital", "arguments": {"country": "France"}}]}
        return "done"

    with SQLiteMemoryStore(path) as store:
        session = Session(memory=store)
        branch = session.new_branch(
            system="s",
            chat_model=iModel(provider="offline", model="function", function=first_model),
        )
        branch.providers.register(MemoryRecall())
        run(branch.operate, instruction="Capital of France?", tools=[lookup_capital])
        assert branch.memory is store and len(store) == 1

    sent: list = []
    with SQLiteMemoryStore(path) as reopened:
        later = Session(memory=reopened).new_branch(
            system="s",
            chat_model=iModel(
                provider="offline", model="function", function=lambda m: sent.append(m) or "ok"
            ),
        )
        later.providers.register(MemoryRecall())
        run(later.communicate, "Remind me: the capital of France?")
    assert "returned Paris" in sent[0][0]["content"]


def test_the_extension_remembers_once_and_recalls(tmp_path, monkeypatch):
    monkeypatch.setenv("LION_NB_MEMORY_DB", str(tmp_path / "notes.sqlite3"))
    session = Session()
    record = load_extension(session, EXAMPLES / "sqlite_memory.py")
    assert record.operations == ("remember", "recall")
    store = record.value
    assert store.path == str(tmp_path / "notes.sqlite3")

    async def main():
        said = await session.run_operation("remember", instruction="The client likes mornings.")
        await session.run_operation("remember", instruction="The client likes mornings.")
        await session.run_operation("remember", instruction="Invoices go out on Fridays.")
        return said, await session.run_operation("recall", instruction="When do invoices go?")

    said, recalled = anyio.run(main)
    assert said == "Remembered: The client likes mornings."
    assert len(store) == 2  # the same text twice is kept once
    assert recalled.splitlines()[0] == "- Invoices go out on Fridays."
    assert run(store.list)[0].metadata["branch"] == session.default_branch.name
    assert anyio.run(lambda: session.run_operation("recall", instruction="zebra")) == (
        "Nothing remembered matches that."
    )
    store.close()
