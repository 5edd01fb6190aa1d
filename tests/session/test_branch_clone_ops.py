"""ADR-0016 D5: attribute-first lookup, the registry rules, clone's subset, connect().

ADR-0016 D5 clause -> test
- get_operation is attribute-first; registry second -> test_get_operation_is_attribute_first
- a registered name cannot override a Branch attribute -> test_registered_name_never_shadows_an_attribute
- duplicate names fail unless update=True; non-async rejected -> test_registry_rules
- clone: system and messages cloned, sender/recipient rewritten -> test_clone_copies_messages_with_new_identity_and_routing
- clone: tools passed into the new action manager -> test_clone_passes_tools
- clone: CLI models copied, API models reused, distinct parse model stays distinct -> test_clone_model_rules
- clone: metadata clone_from (id, user, created_at, progression) and the source user -> test_clone_from_reduces_the_source
- clone: logs, memory, providers, report, capabilities, operations, observer, hooks, owner not copied -> test_clone_leaves_runtime_state_behind
- connect(): queue capacity 100 / refresh 60 s forwarded to the model -> test_connect_defaults_map_to_rate_limits
"""

from __future__ import annotations

import anyio
import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import ItemExistsError


async def summarize(branch, text: str = "") -> str:
    return f"summary of {text}"


def test_get_operation_is_attribute_first():
    b = Branch()
    assert b.get_operation("communicate") == b.communicate
    assert b.get_operation("summarize") is None
    b._operation_manager.register("summarize", summarize)
    assert b.get_operation("summarize") is summarize


def test_registered_name_never_shadows_an_attribute():
    b = Branch()
    b._operation_manager.register("chat", summarize)
    b._operation_manager.register("chat", summarize, update=True)
    assert b.get_operation("chat") == b.chat


def test_registry_rules():
    b = Branch()
    b._operation_manager.register("s", summarize)
    with pytest.raises(ItemExistsError, match="pass `update=True`"):
        b._operation_manager.register("s", summarize)

    def sync_op(branch):
        return 1

    with pytest.raises(ValueError, match="must be an async function"):
        b._operation_manager.register("sync", sync_op)


def test_clone_copies_messages_with_new_identity_and_routing():
    b = Branch(system="sys", user="ana")
    b.msgs.add_message(instruction="q")
    b.msgs.add_message(assistant_response="a")
    c = b.clone()
    assert c.id != b.id
    assert [m.kind for m in c.messages] == ["system", "instruction", "assistant_response"]
    assert all(cm.id != om.id for cm, om in zip(c.messages, b.messages, strict=True))
    assert c.system is c.messages[0] and c.system.system_message == "sys"
    assert {m.sender for m in c.messages} == {str(b.id)}
    assert {m.recipient for m in c.messages} == {str(c.id)}
    assert c.clone(sender="bob").messages[1].sender == "bob"


def test_clone_passes_tools():
    def add(a: int, b: int) -> int:
        return a + b

    b = Branch(tools=[add])
    assert b.clone().tools["add"] is b.tools["add"]


def test_clone_model_rules():
    api = Branch(parse_model=iModel(provider="offline", model="auto"))
    c = api.clone()
    assert c.chat_model is api.chat_model and c.parse_model is api.parse_model
    cli = Branch(chat_model=iModel(provider="offline_cli", model="scripted", turns=[]))
    cli.chat_model.provider_session_id = "s-1"
    cc = cli.clone()
    assert cc.chat_model is not cli.chat_model and cc.chat_model.provider == "offline_cli"
    assert cc.parse_model is cc.chat_model  # aliasing is preserved


def test_clone_from_reduces_the_source():
    b = Branch(user="ana")
    b.msgs.add_message(instruction="q")
    meta = b.clone().metadata["clone_from"]
    assert meta == {
        "id": str(b.id),
        "user": "ana",
        "created_at": b.created_at,
        "progression": [str(i) for i in b.messages.progression],
    }
    assert b.clone().user == "ana"


def test_clone_leaves_runtime_state_behind():
    from pydantic import BaseModel

    class Cap(BaseModel):
        x: int

    from lion_nb import Session

    b = Branch(system="s")
    Session(memory=None).include_branches(b)  # observer, owner and the shared registry
    b.log_manager.log({"e": 1})
    b.memory  # noqa: B018
    b.providers.register(type("P", (), {"provide": lambda self, br, ins: None})(), name="p")
    b.grant_capabilities(Cap, prompt=False)
    b._operation_manager.register("summarize", summarize)
    b._hooks = object()  # a session's optional hook bus
    assert b._observer is not None and b._owning_session_id is not None
    c = b.clone()
    assert len(c.logs) == 0 and c._memory is None and c._providers is None
    assert c._last_context_report is None and c._capability_grant is None
    assert c.get_operation("summarize") is None
    assert c._observer is None and c._hooks is None and c._owning_session_id is None


def test_connect_defaults_map_to_rate_limits():
    b = Branch()
    tool = b.connect("offline", model="auto", name="ask_helper")
    assert "ask_helper" in b.tools and tool.name == "ask_helper"
    assert b.tools["ask_helper"] is tool
    answer = anyio.run(tool.call, {"instruction": "hello"})
    assert "hello" in answer
    custom = Branch().connect(
        "offline", model="auto", queue_capacity=10, capacity_refresh_time=1, name="t"
    )
    assert custom.name == "t"


def test_connect_forwards_capacity_as_requests_per_minute():
    b = Branch()
    b.connect("offline", model="auto", name="a")
    b.connect("offline", model="auto", name="b", queue_capacity=10, capacity_refresh_time=30)
    limits = {name: t.func_callable.imodel._limits["limit_requests"] for name, t in b.tools.items()}
    assert limits == {"a": 100, "b": 20}


def test_connect_refuses_non_chat_endpoints():
    from lion_nb.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=r'only chat endpoints.*endpoint="chat"'):
        Branch().connect("offline", model="auto", endpoint="embeddings")
