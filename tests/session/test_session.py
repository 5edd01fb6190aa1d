"""Session: membership (attach / detach), named operations, observers, serialization.

ADR clauses covered (clause -> test):

ADR-0016 D4 / ADR-0021 D2 (include_branches sets owner)          -> test_include_sets_owner_observer_hooks
ADR-0016 D4 / ADR-0021 D2 (include sets session observer, hooks) -> test_include_sets_owner_observer_hooks
ADR-0021 D2 (same OperationManager instance for all branches)    -> test_included_branches_share_one_operation_manager
ADR-0021 D2 (later registrations visible to every branch)        -> test_later_registration_visible_to_every_branch
ADR-0021 D2 (standalone branch has a private manager until incl.) -> test_standalone_branch_private_registry_until_included
ADR-0021 D2 (first included branch becomes default)              -> test_first_included_branch_becomes_default
ADR-0016 D4 (session user set on the branch)                     -> test_session_user_stamped_only_on_branch_without_user
ADR-0016 D4 (memory: session store adopted when unclaimed)       -> test_memory_adopted_when_unclaimed
ADR-0016 D4 (memory: reading branch.memory first is a claim)     -> test_memory_read_before_inclusion_is_a_claim
ADR-0016 D4 (memory: explicit store kept)                        -> test_memory_explicit_store_kept
ADR-0016 D4 (adopted memory survives removal and reparenting)    -> test_adopted_memory_survives_removal_and_reparenting
ADR-0016 D4 (removal: owner/observer/hooks cleared, fresh reg.)  -> test_remove_detaches_and_gives_fresh_registry
ADR-0016 D4 (removal keeps conversation, models, tools, logs...) -> test_remove_keeps_conversation_state
ADR-0016 D4 (removal drops access to session operations)         -> test_remove_detaches_and_gives_fresh_registry
ADR-0017 (branch owned by another session is refused)            -> test_branch_owned_by_other_session_refused
ADR-0017 (including the same branch again is a no-op)            -> test_include_same_branch_twice_is_noop
ADR-0017 (removing the default selects another, or None)         -> test_remove_default_selects_next_or_none
ADR-0016 D5 (clone registration is a Session responsibility)     -> test_split_clones_and_includes
ADR-0021 D2 (registration rejects existing name w/o update)      -> test_duplicate_registration_needs_update
ADR-0021 D2 (registration rejects non-async; no wrapping)        -> test_sync_function_refused
ADR-0021 D2 (Session.operation decorator, default __name__)      -> test_operation_decorator_default_and_explicit_name
ADR-0021 D2 (registered name never shadows an attribute)         -> test_registered_name_never_shadows_branch_attribute
ADR-0021 D2 (run_operation: default branch when absent)          -> test_run_operation_uses_default_branch
ADR-0021 D2 (run_operation: string / UUID refs via branches)     -> test_run_operation_resolves_string_and_uuid_refs
ADR-0021 D2 (run_operation: ValueError "Unknown operation: ...") -> test_run_operation_unknown_operation_value_error
this project (calling convention: func(branch, **kw) / method)   -> test_calling_convention_registered_vs_builtin
ADR-0021 D4 (observer sees MessageAdded + RunStart/RunEnd)       -> test_observer_receives_messages_and_lifecycle
ADR-0021 D4 (observer errors never change a result)              -> test_failing_observer_changes_no_result
ADR-0016 D2 (session coordination never serialized; no keys)     -> test_to_dict_from_dict_round_trip
"""

from __future__ import annotations

import json
import uuid
import warnings

import anyio
import pytest

from lion_nb.errors import ConfigurationError, ItemExistsError, ItemNotFoundError
from lion_nb.models.imodel import iModel
from lion_nb.operations.manager import OperationManager
from lion_nb.protocols.memory import InMemoryStore
from lion_nb.protocols.signals import MessageAdded, RunEnd, RunStart, Signal
from lion_nb.runtime.observer import SignalBus
from lion_nb.session.branch import Branch
from lion_nb.session.session import Session


def scripted(*responses: str) -> iModel:
    return iModel(provider="offline", model="scripted", responses=list(responses))


async def whoami(branch: Branch, **kwargs) -> dict:
    return {"branch": branch.id, "kwargs": kwargs}


# -- attach ------------------------------------------------------------------------------------
def test_session_creates_default_branch_at_construction():
    session = Session()
    assert len(session) == 1
    assert isinstance(session.default_branch, Branch)
    assert session.default_branch._owning_session_id == session.id


def test_include_sets_owner_observer_hooks():
    hooks = object()
    session = Session(hooks=hooks)
    branch = Branch()
    assert branch._owning_session_id is None and branch._observer is None
    session.include_branches(branch)
    assert branch._owning_session_id == session.id
    assert isinstance(session._observer, SignalBus)
    assert branch._observer is session._observer
    assert branch._hooks is hooks


def test_included_branches_share_one_operation_manager():
    session = Session()
    a, b = Branch(), Branch()
    session.include_branches([a, b])
    c = session.new_branch()
    managers = {id(x._operation_manager) for x in (session.default_branch, a, b, c)}
    assert managers == {id(session._operation_manager)}


def test_later_registration_visible_to_every_branch():
    session = Session()
    a, b = session.new_branch(), session.new_branch()
    session.register_operation("whoami", whoami)
    assert a.get_operation("whoami") is whoami
    assert b.get_operation("whoami") is whoami
    out = anyio.run(lambda: session.run_operation("whoami", branch=b))
    assert out["branch"] == b.id


def test_standalone_branch_private_registry_until_included():
    session = Session()
    session.register_operation("whoami", whoami)
    branch = Branch()
    assert isinstance(branch._operation_manager, OperationManager)
    assert branch._operation_manager is not session._operation_manager
    assert branch.get_operation("whoami") is None
    session.include_branches(branch)
    assert branch.get_operation("whoami") is whoami


def test_first_included_branch_becomes_default():
    first, second = Branch(name="first"), Branch(name="second")
    session = Session(default_branch=first)
    session.include_branches(second)
    assert session.default_branch is first
    # a session emptied of branches picks the next one it is given
    session.remove_branch(first)
    session.remove_branch(second)
    assert session.default_branch is None
    third, fourth = Branch(), Branch()
    session.include_branches([third, fourth])
    assert session.default_branch is third


def test_session_user_stamped_only_on_branch_without_user():
    session = Session(user="alice")
    anonymous, bob = Branch(), Branch(user="bob")
    session.include_branches([anonymous, bob])
    assert anonymous.user == "alice"
    assert bob.user == "bob"  # an identity already on the branch (and its messages) is kept
    assert session.new_branch().user == "alice"


def test_include_same_branch_twice_is_noop():
    session = Session()
    branch = session.new_branch(name="x")
    before = (len(session), session.default_branch.id, branch._operation_manager)
    session.include_branches(branch)
    session.include_branches([branch, branch])
    assert (len(session), session.default_branch.id, branch._operation_manager) == before


def test_branch_owned_by_other_session_refused():
    owner = Session(name="research")
    other = Session(name="drafts")
    branch = owner.new_branch(name="notes")
    free = Branch()
    with pytest.raises(ConfigurationError) as info:
        other.include_branches([free, branch])
    text = str(info.value)
    assert "`research`" in text and "`drafts`" in text and "`notes`" in text
    assert "Remove it from the other session first" in text
    # not taken, and the refusal is all-or-nothing
    assert branch._owning_session_id == owner.id
    assert branch._operation_manager is owner._operation_manager
    assert branch not in other and free not in other
    assert free._owning_session_id is None
    # after removal from its owner it may join
    owner.remove_branch(branch)
    other.include_branches(branch)
    assert branch._owning_session_id == other.id


# -- memory first claim ----------------------------------------------------------------------------
def test_memory_adopted_when_unclaimed():
    store = InMemoryStore()
    session = Session(memory=store)
    branch = Branch()
    session.include_branches(branch)
    assert branch.memory is store
    assert session.default_branch.memory is store


def test_memory_read_before_inclusion_is_a_claim():
    store = InMemoryStore()
    session = Session(memory=store)
    branch = Branch()
    private = branch.memory  # reading creates the private store: a claim
    session.include_branches(branch)
    assert branch.memory is private
    assert branch.memory is not store


def test_memory_explicit_store_kept():
    mine, shared = InMemoryStore(), InMemoryStore()
    session = Session(memory=shared)
    branch = Branch(memory=mine)
    session.include_branches(branch)
    assert branch.memory is mine


def test_adopted_memory_survives_removal_and_reparenting():
    first, second = InMemoryStore(), InMemoryStore()
    s1, s2 = Session(memory=first), Session(memory=second)
    branch = s1.new_branch()
    assert branch.memory is first
    s1.remove_branch(branch)
    assert branch.memory is first
    s2.include_branches(branch)
    assert branch.memory is first


def test_session_without_memory_leaves_branch_store_private():
    session = Session()
    branch = session.new_branch()
    assert branch._memory is None
    assert isinstance(branch.memory, InMemoryStore)
    assert branch.memory is not session.default_branch.memory


# -- detach ---------------------------------------------------------------------------------------
def test_remove_detaches_and_gives_fresh_registry():
    session = Session(hooks=object())
    session.register_operation("whoami", whoami)
    branch = session.new_branch()
    removed = session.remove_branch(branch)
    assert removed is branch
    assert branch not in session
    assert branch._owning_session_id is None
    assert branch._observer is None and branch._hooks is None
    assert isinstance(branch._operation_manager, OperationManager)
    assert branch._operation_manager is not session._operation_manager
    assert len(branch._operation_manager) == 0
    assert branch.get_operation("whoami") is None
    # later session registrations do not reach it either
    session.register_operation("later", whoami)
    assert branch.get_operation("later") is None


def test_remove_keeps_conversation_state():
    store = InMemoryStore()
    session = Session(memory=store)
    model = scripted("the answer")

    async def shout(text: str) -> str:
        return text.upper()

    branch = session.new_branch(name="keep", system="be brief", chat_model=model, tools=[shout])
    branch.metadata["topic"] = "x"
    provider_registry = branch.providers
    anyio.run(lambda: branch.communicate("question"))
    branch.log_manager.log({"event": "custom"})
    messages = [m.id for m in branch.messages]
    session.remove_branch(branch)
    assert [m.id for m in branch.messages] == messages and len(messages) == 3
    assert branch.system is not None and branch.chat_model is model
    assert "shout" in branch.tools
    assert len(branch.logs) >= 1
    assert branch.metadata["topic"] == "x"
    assert branch.providers is provider_registry
    assert branch.memory is store
    assert branch.name == "keep"


def test_remove_default_selects_next_or_none():
    session = Session()
    first = session.default_branch
    second = session.new_branch()
    session.remove_branch(first)
    assert session.default_branch is second
    session.remove_branch(second.id)
    assert session.default_branch is None and len(session) == 0
    with pytest.raises(ConfigurationError, match="has no branches"):
        anyio.run(lambda: session.run_operation("chat"))


def test_remove_with_delete_clears_the_conversation():
    session = Session()
    branch = session.new_branch(system="sys", chat_model=scripted("a"))
    anyio.run(lambda: branch.communicate("q"))
    assert len(branch.messages) == 3
    assert session.remove_branch(str(branch.id), delete=True) is None
    assert [type(m).__name__ for m in branch.messages] == ["System"]
    assert branch._owning_session_id is None


def test_remove_unknown_branch_is_a_clear_error():
    session = Session()
    with pytest.raises(ItemNotFoundError, match="include it first"):
        session.remove_branch(Branch())


# -- split and lookup ------------------------------------------------------------------------------
def test_split_clones_and_includes():
    session = Session()
    source = session.new_branch(name="src", chat_model=scripted("one"))
    anyio.run(lambda: source.communicate("hello"))
    clone = session.split(source)
    assert clone in session and clone.id != source.id
    assert [m.rendered for m in clone.messages] == [m.rendered for m in source.messages]
    assert clone._operation_manager is session._operation_manager
    assert clone._owning_session_id == session.id
    assert clone.metadata["clone_from"]["id"] == str(source.id)
    assert session.default_branch is not clone


def test_get_branch_by_object_uuid_string_and_name():
    session = Session()
    branch = session.new_branch(name="writer")
    assert session.get_branch(branch) is branch
    assert session.get_branch(branch.id) is branch
    assert session.get_branch(str(branch.id)) is branch
    assert session.get_branch("writer") is branch
    with pytest.raises(ItemNotFoundError, match="No branch `nobody`"):
        session.get_branch("nobody")
    session.new_branch(name="writer")
    with pytest.raises(ConfigurationError, match="2 branches are named `writer`"):
        session.get_branch("writer")


# -- registration ----------------------------------------------------------------------------------
def test_duplicate_registration_needs_update():
    session = Session()

    async def second(branch: Branch) -> str:
        return "second"

    session.register_operation("op", whoami)
    with pytest.raises(ItemExistsError, match="update=True"):
        session.register_operation("op", second)
    assert session.default_branch.get_operation("op") is whoami
    session.register_operation("op", second, update=True)
    assert anyio.run(lambda: session.run_operation("op")) == "second"


def test_sync_function_refused():
    session = Session()

    def not_async(branch: Branch) -> str:
        return "sync"

    with pytest.raises(ValueError, match="must be an async function"):
        session.register_operation("sync_op", not_async)
    assert session.default_branch.get_operation("sync_op") is None
    with pytest.raises(ValueError, match="must be an async function"):
        session.operation()(not_async)


def test_operation_decorator_default_and_explicit_name():
    session = Session()

    @session.operation()
    async def summarize(branch: Branch) -> str:
        return "summary"

    @session.operation("renamed")
    async def original(branch: Branch) -> str:
        return "renamed"

    @session.operation
    async def bare(branch: Branch) -> str:
        return "bare"

    assert summarize.__name__ == "summarize"  # returned unchanged
    registry = session._operation_manager.registry
    assert registry["summarize"] is summarize
    assert registry["renamed"] is original and "original" not in registry
    assert registry["bare"] is bare
    with pytest.raises(ItemExistsError):

        @session.operation("renamed")
        async def again(branch: Branch) -> None: ...

    @session.operation("renamed", update=True)
    async def replaced(branch: Branch) -> str:
        return "replaced"

    assert anyio.run(lambda: session.run_operation("renamed")) == "replaced"


def test_registered_name_never_shadows_branch_attribute():
    session = Session(default_branch=Branch(chat_model=scripted("from the model")))

    async def fake_chat(branch: Branch, **kwargs) -> str:
        return "registered"

    with pytest.warns(UserWarning, match="`chat` is a Branch attribute"):
        session.register_operation("chat", fake_chat)
    with pytest.warns(UserWarning):
        session.register_operation("chat", fake_chat, update=True)
    branch = session.default_branch
    assert branch.get_operation("chat") == branch.chat  # the bound built-in
    assert session._operation_manager.registry["chat"] is fake_chat  # update replaced the entry
    out = anyio.run(lambda: session.run_operation("chat", instruction="hi"))
    assert out == "from the model"


def test_registering_an_ordinary_name_does_not_warn():
    session = Session()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        session.register_operation("whoami", whoami)
        session.register_operation("user_visible_name", whoami)


# -- run_operation --------------------------------------------------------------------------------
def test_run_operation_uses_default_branch():
    session = Session()
    session.new_branch()
    session.register_operation("whoami", whoami)
    out = anyio.run(lambda: session.run_operation("whoami"))
    assert out["branch"] == session.default_branch.id


def test_run_operation_resolves_string_and_uuid_refs():
    session = Session()
    session.register_operation("whoami", whoami)
    target = session.new_branch(name="target")

    async def main():
        return [
            await session.run_operation("whoami", branch=str(target.id)),
            await session.run_operation("whoami", branch=target.id),
            await session.run_operation("whoami", branch="target"),
            await session.run_operation("whoami", branch=target),
        ]

    assert all(out["branch"] == target.id for out in anyio.run(main))
    with pytest.raises(ItemNotFoundError):
        anyio.run(lambda: session.run_operation("whoami", branch=str(uuid.uuid4())))
    with pytest.raises(ItemNotFoundError, match="not in session"):
        anyio.run(lambda: session.run_operation("whoami", branch=Branch()))


def test_run_operation_unknown_operation_value_error():
    session = Session()
    with pytest.raises(ValueError) as info:
        anyio.run(lambda: session.run_operation("does_not_exist"))
    assert str(info.value).startswith("Unknown operation: does_not_exist")
    assert "register_operation" in str(info.value)
    with pytest.raises(ValueError, match=r"^Unknown operation: messages"):
        anyio.run(lambda: session.run_operation("messages"))  # an attribute, not callable


def test_calling_convention_registered_vs_builtin():
    session = Session(default_branch=Branch(chat_model=scripted("text reply")))
    seen = {}

    async def record(branch: Branch, *, value: int) -> int:
        seen["branch"] = branch
        return value * 2

    session.register_operation("record", record)
    assert anyio.run(lambda: session.run_operation("record", value=21)) == 42
    assert seen["branch"] is session.default_branch  # branch first, then the keywords
    # a built-in is the bound method, called with the keywords only; chat records nothing
    out = anyio.run(lambda: session.run_operation("chat", instruction="hello"))
    assert out == "text reply"
    assert len(session.default_branch.messages) == 0


def test_run_operation_consumes_a_stream_into_a_list():
    session = Session(
        default_branch=Branch(chat_model=iModel(provider="offline_cli", model="auto"))
    )
    out = anyio.run(lambda: session.run_operation("run", instruction="hi"))
    assert isinstance(out, list)
    assert [type(m).__name__ for m in out] == ["Instruction", "AssistantResponse"]


# -- observer -------------------------------------------------------------------------------------
def test_observer_receives_messages_and_lifecycle():
    session = Session()
    branch = session.new_branch(name="observed", chat_model=scripted("hello there"))
    sync_seen: list[Signal] = []
    async_seen: list[str] = []

    async def on_any(signal: Signal) -> None:
        await anyio.sleep(0)
        async_seen.append(signal.kind)

    session.observe(MessageAdded, sync_seen.append)
    session.observe(RunStart, sync_seen.append)
    session.observe(RunEnd, sync_seen.append)
    session.observe(Signal, on_any)
    result = anyio.run(lambda: branch.communicate("hi"))
    assert result == "hello there"
    kinds = [s.kind for s in sync_seen]
    assert kinds == ["RunStart", "MessageAdded", "MessageAdded", "RunEnd"]
    assert all(s.branch_id == str(branch.id) for s in sync_seen)
    assert sync_seen[-1].result == "hello there"
    assert async_seen == kinds  # async callbacks drained before the terminal signal


def test_failing_observer_changes_no_result(caplog):
    session = Session()
    branch = session.new_branch(chat_model=scripted("unchanged", "unchanged"))
    baseline = Branch(chat_model=scripted("unchanged"))
    expected = anyio.run(lambda: baseline.communicate("q"))
    delivered: list[str] = []

    def broken(signal: Signal) -> None:
        raise RuntimeError("observer bug")

    async def broken_async(signal: Signal) -> None:
        raise RuntimeError("async observer bug")

    session.observe(Signal, broken)
    session.observe(Signal, broken_async)
    session.observe(Signal, lambda s: delivered.append(s.kind))
    result = anyio.run(lambda: branch.communicate("q"))
    assert result == expected == "unchanged"
    assert len(branch.messages) == len(baseline.messages) == 2
    assert delivered == ["RunStart", "MessageAdded", "MessageAdded", "RunEnd"]
    assert "observer" in caplog.text


def test_unsubscribe_and_removed_branch_stop_delivery():
    session = Session()
    branch = session.new_branch(chat_model=scripted("a", "b", "c"))
    seen: list[str] = []
    subscription = session.observe(MessageAdded, lambda s: seen.append(s.branch_id))
    anyio.run(lambda: branch.communicate("1"))
    assert len(seen) == 2
    subscription()
    anyio.run(lambda: branch.communicate("2"))
    assert len(seen) == 2
    session.observe(MessageAdded, lambda s: seen.append(s.branch_id))
    session.remove_branch(branch)
    anyio.run(lambda: branch.communicate("3"))
    assert len(seen) == 2


# -- serialization --------------------------------------------------------------------------------
def test_to_dict_from_dict_round_trip():
    secret = "sk-test-" + "z" * 24
    session = Session(name="saved", user="alice")
    keyed = Branch(
        name="keyed", chat_model=iModel(provider="openai", model="gpt-4o", api_key=secret)
    )
    session.include_branches(keyed)
    writer = session.new_branch(name="writer", chat_model=scripted("saved answer"))
    anyio.run(lambda: writer.communicate("remember"))
    session.default_branch = writer
    session.register_operation("whoami", whoami)

    data = session.to_dict(mode="json")
    text = json.dumps(data)
    assert secret not in text
    assert data["default_branch_id"] == str(writer.id)
    assert [b["name"] for b in data["branches"]] == [None, "keyed", "writer"]
    snapshot = json.loads(text)

    restored = Session.from_dict(data)
    assert data == snapshot  # input untouched
    assert restored.id == session.id and restored.name == "saved" and restored.user == "alice"
    assert [b.id for b in restored.branches] == [b.id for b in session.branches]
    assert restored.default_branch.id == writer.id
    assert [m.rendered for m in restored.default_branch.messages] == [
        m.rendered for m in writer.messages
    ]
    # live coordination is rebuilt, not restored: the registry is empty again
    assert all(b._operation_manager is restored._operation_manager for b in restored.branches)
    assert restored.default_branch.get_operation("whoami") is None
    assert all(b._owning_session_id == restored.id for b in restored.branches)


def test_from_dict_of_empty_session_stays_empty():
    session = Session()
    session.remove_branch(session.default_branch)
    restored = Session.from_dict(session.to_dict())
    assert len(restored) == 0 and restored.default_branch is None
    with pytest.raises(ConfigurationError, match=r"Session\.to_dict"):
        Session.from_dict(["not", "a", "dict"])  # type: ignore[arg-type]
