"""ADR-0016 D2: the serialized projection and its edge cases.

ADR-0016 D2 clause -> test
- messages always present; empty form explicit -> test_empty_branch_has_explicit_empty_messages
- logs only with include_logs=True and non-empty -> test_logs_present_only_when_asked_and_non_empty
- system present when it exists -> test_system_key_present_only_with_a_system_message
- log_config only with include_log_config=True -> test_log_config_only_when_asked
- chat_model always; parse_model only when distinct -> test_parse_model_serialized_only_when_distinct
- request / processor options forwarded to each model's to_dict -> test_model_options_are_forwarded
- tools, operations, memory, providers, report, grant, observer, hooks, owner not projected -> test_live_extensions_are_not_serialized
- from_dict consumes the keys, passes the rest to the constructor -> test_round_trip_restores_conversation
- messages + top-level system: the system is not re-added -> test_from_dict_does_not_readd_the_system_message
- from_dict does not mutate its input (the original did) -> test_from_dict_leaves_its_input_unchanged
- session references never survive a round trip -> test_deserialized_branch_is_standalone
- tools/providers/capabilities/memory/operations not reconstructed -> test_live_extensions_are_not_reconstructed
- malformed input gets a clear error naming the fix -> test_malformed_serialized_branch_errors
"""

from __future__ import annotations

import copy
import json

import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import ConfigurationError


def _conversation() -> Branch:
    b = Branch(system="be brief", name="main", user="ana")
    b.msgs.add_message(instruction="hello")
    b.msgs.add_message(assistant_response="hi")
    return b


def test_empty_branch_has_explicit_empty_messages():
    data = Branch().to_dict()
    assert data["messages"] == {"collections": [], "progression": {"order": []}}
    assert "system" not in data and "logs" not in data and "log_config" not in data


def test_logs_present_only_when_asked_and_non_empty():
    b = Branch()
    assert "logs" not in b.to_dict(include_logs=True)  # empty logs are omitted
    b.log_manager.log({"event": "x"})
    assert len(b.to_dict()["logs"]["collections"]) == 1
    assert "logs" not in b.to_dict(include_logs=False)


def test_system_key_present_only_with_a_system_message():
    data = _conversation().to_dict()
    assert data["system"]["system_message"] == "be brief"
    assert data["messages"]["collections"][0]["kind"] == "system"


def test_log_config_only_when_asked():
    b = Branch(log_config={"capacity": 3})
    assert "log_config" not in b.to_dict()
    assert b.to_dict(include_log_config=True)["log_config"]["capacity"] == 3


def test_parse_model_serialized_only_when_distinct():
    aliased = Branch().to_dict()
    assert aliased["chat_model"] == {"provider": "offline", "model": "auto"}
    assert "parse_model" not in aliased
    distinct = Branch(parse_model=iModel(provider="offline", model="auto")).to_dict()
    assert distinct["parse_model"] == {"provider": "offline", "model": "auto"}


def test_model_options_are_forwarded():
    b = Branch(
        chat_model=iModel(provider="offline", model="auto", temperature=0.2, limit_requests=5)
    )
    assert "options" not in b.to_dict()["chat_model"]
    data = b.to_dict(include_request_options=True, include_processor_config=True)
    assert data["chat_model"]["options"] == {"temperature": 0.2}
    assert data["chat_model"]["processor"] == {"limit_requests": 5}


def test_live_extensions_are_not_serialized():
    def tool(x: int) -> int:
        return x

    b = Branch(tools=[tool])
    _ = b.memory, b.providers
    data = b.to_dict()
    assert set(data) == {"id", "created_at", "metadata", "user", "name", "messages", "chat_model"}


def test_json_and_db_modes_are_json_safe():
    b = _conversation()
    b.metadata["k"] = "v"
    json.dumps(b.to_dict(mode="json"))
    db = b.to_dict(mode="db")
    assert db["node_metadata"] == {"k": "v"} and "metadata" not in db
    assert Branch.from_dict(db).metadata == {"k": "v"}
    assert b.to_dict(mode="db", db_meta_key="meta")["meta"] == {"k": "v"}
    with pytest.raises(ValueError, match="mode"):
        b.to_dict(mode="yaml")


def test_round_trip_restores_conversation():
    b = _conversation()
    again = Branch.from_dict(json.loads(json.dumps(b.to_dict(mode="json"))))
    assert again.id == b.id and again.name == "main" and again.user == "ana"
    assert [m.id for m in again.messages] == [m.id for m in b.messages]
    assert [m.kind for m in again.messages] == ["system", "instruction", "assistant_response"]
    assert again.chat_model.provider == "offline"


def test_from_dict_does_not_readd_the_system_message():
    data = _conversation().to_dict()
    data["system"] = {**data["system"], "system_message": "a different, stale system"}
    again = Branch.from_dict(data)
    assert sum(m.kind == "system" for m in again.messages) == 1
    assert again.system.system_message == "be brief"  # the pile's, not the top-level one
    only_system = {k: v for k, v in data.items() if k != "messages"}  # no pile: the key is used
    assert Branch.from_dict(only_system).system.system_message == "a different, stale system"


def test_from_dict_leaves_its_input_unchanged():
    data = _conversation().to_dict()
    snapshot = copy.deepcopy(data)
    Branch.from_dict(data)
    assert data == snapshot


def test_deserialized_branch_is_standalone():
    from lion_nb import Session

    b = _conversation()
    session = Session()
    session.include_branches(b)  # the real attachment: owner, observer, shared registry
    assert b._owning_session_id is not None and b._observer is not None
    again = Branch.from_dict(b.to_dict())
    assert again._owning_session_id is None and again._observer is None
    assert again._operation_manager is not b._operation_manager


def test_live_extensions_are_not_reconstructed():
    def tool(x: int) -> int:
        return x

    b = Branch(tools=[tool])
    b.memory  # noqa: B018 - claims a store
    again = Branch.from_dict(b.to_dict())
    assert again.tools == {} and again._memory is None and again._providers is None


def test_distinct_parse_model_survives_round_trip():
    b = Branch(parse_model=iModel(provider="offline", model="auto"))
    again = Branch.from_dict(b.to_dict())
    assert again.parse_model is not again.chat_model


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ("not a dict", "takes the dict from `Branch.to_dict\\(\\)`"),
        ({"messages": [1, 2]}, 'stores `messages` as {"collections"'),
        (
            {"messages": {"collections": [{"kind": "memo"}]}},
            "malformed message at `messages.collections.0",
        ),
        (
            {
                "messages": {
                    "collections": [],
                    "progression": {"order": ["8f1c0c3e-5a4e-4c59-9a43-1b1b1b1b1b1b"]},
                }
            },
            "progression does not match",
        ),
        ({"chat_model": {"model": "x"}}, "A serialized iModel is a dict with `provider`"),
        (
            {"system": {"kind": "instruction", "instruction": "x"}},
            "malformed system: it is a `instruction`",
        ),
        ({"logs": {"collections": [{"content": 5}]}}, "malformed logs"),
        ({"id": "not-a-uuid"}, "malformed identity fields"),
        ({"created_at": "yesterday"}, "malformed identity fields"),
    ],
)
def test_malformed_serialized_branch_errors(data, match):
    with pytest.raises(ConfigurationError, match=match):
        Branch.from_dict(data)


def _with_order(data: dict, order: list[str]) -> dict:
    messages = {**data["messages"], "progression": {"order": order}}
    return {**data, "messages": messages}


def test_progression_must_name_every_message_exactly_once():
    data = _conversation().to_dict(mode="json")
    ids = data["messages"]["progression"]["order"]
    with pytest.raises(ConfigurationError, match="each of the 3 items exactly once"):
        Branch.from_dict(_with_order(data, ids[:1]))
    with pytest.raises(ConfigurationError, match="each of the 3 items exactly once"):
        Branch.from_dict(_with_order(data, [*ids, ids[0]]))


def test_the_system_message_must_come_first():
    data = _conversation().to_dict(mode="json")
    ids = data["messages"]["progression"]["order"]
    with pytest.raises(ConfigurationError, match="system message at position 2"):
        Branch.from_dict(_with_order(data, list(reversed(ids))))
