# ADR-0016 D3 clause → test
#
# ADR-0016 D3 memory contract: a branch's memory is a MemoryStore; the standalone default is a
# private InMemoryStore (the lazy creation, identity retention, no setter and exclusion from
# to_dict/clone are Branch behaviour, tested with lion_nb/session/branch.py)
#     → test_in_memory_store_satisfies_the_memory_store_protocol,
#       test_real_branch_memory_defaults_to_one_private_in_memory_store
# (store semantics this module defines: add/get/delete/list/len, deterministic term search)
#     → the remaining tests, named after the behaviour they pin.
from __future__ import annotations

import anyio
import pytest

from lion_nb.protocols.memory import InMemoryStore, MemoryRecord, MemoryStore


def run(fn, *args, **kwargs):
    return anyio.run(lambda: fn(*args, **kwargs))


def test_in_memory_store_satisfies_the_memory_store_protocol():
    assert isinstance(InMemoryStore(), MemoryStore)
    assert not isinstance(object(), MemoryStore)


def test_add_returns_an_id_and_get_returns_the_record():
    store = InMemoryStore()
    meta = {"source": "notes"}
    rid = run(store.add, "the cat sat", metadata=meta)
    meta["source"] = "changed"  # the store keeps its own copy
    record = run(store.get, rid)
    assert isinstance(record, MemoryRecord)
    assert (record.id, record.content, record.metadata) == (rid, "the cat sat", {"source": "notes"})
    assert record.created_at > 0
    assert run(store.get, "missing") is None


def test_add_rejects_non_text_with_a_clear_error():
    with pytest.raises(TypeError, match=r"`InMemoryStore.add` stores text, got `dict`"):
        run(InMemoryStore().add, {"a": 1})


def test_list_and_len_follow_insertion_and_delete():
    store = InMemoryStore()
    ids = [run(store.add, text) for text in ("one", "two", "three")]
    assert len(store) == 3
    assert run(store.delete, ids[1]) is True
    assert run(store.delete, ids[1]) is False
    assert [r.content for r in run(store.list)] == ["one", "three"]
    assert len(store) == 2


def test_search_ranks_by_distinct_shared_terms_then_frequency_then_insertion():
    store = InMemoryStore()
    run(store.add, "apples are red")  # 2 distinct terms, 2 hits
    run(store.add, "Red apples and green apples")  # 2 distinct terms, 3 hits
    run(store.add, "green apples")  # 1 distinct term
    run(store.add, "nothing here")  # no shared term
    run(store.add, "red apples")  # 2 distinct terms, 2 hits, inserted later
    results = run(store.search, "RED apples!")
    assert [r.content for r in results] == [
        "Red apples and green apples",
        "apples are red",
        "red apples",
        "green apples",
    ]


def test_search_is_deterministic_and_honours_limit():
    store = InMemoryStore()
    for i in range(10):
        run(store.add, f"shared term {i}")
    first = run(store.search, "shared", limit=3)
    assert [r.content for r in first] == ["shared term 0", "shared term 1", "shared term 2"]
    assert run(store.search, "shared", limit=3) == first
    assert run(store.search, "shared", limit=0) == []
    assert len(run(store.search, "shared")) == 5  # the default limit


def test_search_with_no_terms_returns_nothing():
    store = InMemoryStore()
    run(store.add, "text")
    assert run(store.search, "") == []
    assert run(store.search, "  ?! ") == []


def test_real_branch_memory_defaults_to_one_private_in_memory_store():
    import lion_nb.session.branch as branch_module

    branch = branch_module.Branch()
    assert isinstance(branch.memory, InMemoryStore)
    assert branch.memory is branch.memory
    explicit = InMemoryStore()
    assert branch_module.Branch(memory=explicit).memory is explicit
