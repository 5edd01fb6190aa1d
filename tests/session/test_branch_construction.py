"""ADR-0016 D1: Branch construction semantics.

ADR-0016 D1 clause -> test
- no chat model -> iModel from settings (LION_CHAT_PROVIDER / LION_CHAT_MODEL) -> test_default_chat_model_comes_from_settings, test_default_chat_model_is_offline_auto
- no parse model -> parse is the chat-model object -> test_parse_model_aliases_chat_model_object
- dict inputs use iModel.from_dict; strings use iModel(model=value) -> test_model_inputs_accept_dict_and_string
- tools registered into the ActionManager; duplicates delegated -> test_tools_are_registered_and_duplicates_delegated
- truthy dict log config validated; None / {} -> default; supplied logs initialise that logger -> test_log_config_rules, test_supplied_logs_initialise_the_logger
- system only when system / system_datetime / use_lion_system_message truthy -> test_system_message_rules
- Lion system message prepended when requested -> test_lion_system_message_is_prepended
- system_template(_context) warn DeprecationWarning and do nothing -> test_template_arguments_warn_and_do_nothing
- on_message_added receives Branch._schedule_emit -> test_message_added_callback_is_wired
- five managers constructed -> test_construction_creates_the_five_managers
"""

from __future__ import annotations

import pytest

from lion_nb import Branch, DataLoggerConfig, iModel
from lion_nb.errors import ConfigurationError, ItemExistsError
from lion_nb.protocols.logs import Log
from lion_nb.session.prompts import LION_SYSTEM_MESSAGE


def test_construction_creates_the_five_managers():
    b = Branch()
    from lion_nb import ActionManager, DataLogger, MessageManager, OperationManager, iModelManager

    assert isinstance(b.msgs, MessageManager) and isinstance(b.acts, ActionManager)
    assert isinstance(b.mdls, iModelManager) and isinstance(b.log_manager, DataLogger)
    assert isinstance(b._operation_manager, OperationManager)
    assert len(b.messages) == 0 and b.tools == {}


def test_default_chat_model_is_offline_auto():
    b = Branch()
    assert (b.chat_model.provider, b.chat_model.model) == ("offline", "auto")


def test_default_chat_model_comes_from_settings(monkeypatch):
    monkeypatch.setenv("LION_CHAT_PROVIDER", "offline_cli")
    monkeypatch.setenv("LION_CHAT_MODEL", "auto")
    model = Branch().chat_model
    assert (model.provider, model.model, model.is_cli) == ("offline_cli", "auto", True)
    monkeypatch.setenv("LION_CHAT_PROVIDER", "offline")
    monkeypatch.setenv("LION_CHAT_MODEL", "scripted")
    assert Branch().chat_model.model == "scripted"


def test_bad_default_model_settings_name_the_variables(monkeypatch):
    monkeypatch.setenv("LION_CHAT_MODEL", "gpt-4o")
    with pytest.raises(ConfigurationError, match=r"LION_CHAT_PROVIDER` / `LION_CHAT_MODEL.*gpt-4o"):
        Branch()
    monkeypatch.delenv("LION_CHAT_MODEL")
    monkeypatch.setenv("LION_CHAT_PROVIDER", "openai")
    with pytest.raises(ConfigurationError, match="`LION_CHAT_MODEL` is not"):
        Branch()


def test_unknown_keywords_are_refused_with_a_suggestion():
    with pytest.raises(TypeError, match=r"unknown keyword `systme`\. Did you mean `system`"):
        Branch(systme="hi")


def test_tools_may_be_any_collection_or_a_single_function():
    def add(a: int, b: int) -> int:
        return a + b

    def sub(a: int, b: int) -> int:
        return a - b

    assert set(Branch(tools=(add, sub)).tools) == {"add", "sub"}
    assert set(Branch(tools=add).tools) == {"add"}


def test_setting_the_chat_model_moves_an_aliased_parse_model_too():
    b = Branch()
    new = iModel(provider="offline", model="scripted", responses=["x"])
    b.chat_model = new
    assert b.parse_model is new
    distinct = Branch(parse_model=iModel(provider="offline", model="auto"))
    kept = distinct.parse_model
    distinct.chat_model = new
    assert distinct.parse_model is kept


def test_bad_log_config_lists_the_valid_fields():
    with pytest.raises(ConfigurationError, match=r"`persist_dir`.*`capacity`"):
        Branch(log_config={"persist_dirr": "/tmp"})


def test_parse_model_aliases_chat_model_object():
    chat = iModel(provider="offline", model="auto")
    b = Branch(chat_model=chat)
    assert b.parse_model is chat and b.chat_model is chat


def test_model_inputs_accept_dict_and_string():
    b = Branch(chat_model="offline/auto", parse_model={"provider": "offline", "model": "scripted"})
    assert b.chat_model.provider == "offline" and b.chat_model.model == "auto"
    assert b.parse_model.model == "scripted" and b.parse_model is not b.chat_model


def test_unknown_provider_error_names_the_fix():
    with pytest.raises(ConfigurationError, match=r"Unknown provider `nope`. Use one of: .*offline"):
        Branch(chat_model="nope/model-x")
    with pytest.raises(ConfigurationError, match="names no provider"):
        Branch(chat_model="just-a-model")
    with pytest.raises(ConfigurationError, match="takes an iModel"):
        Branch(chat_model=3.5)


def test_tools_are_registered_and_duplicates_delegated():
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    b = Branch(tools=[add])
    assert list(b.tools) == ["add"]
    with pytest.raises(ItemExistsError):
        Branch(tools=[add, add])
    with pytest.raises(TypeError, match=r"not callable|pass a function"):
        Branch(tools=[42])


def test_log_config_rules(tmp_path):
    truthy = Branch(log_config={"persist_dir": str(tmp_path), "capacity": 5})
    assert truthy.log_manager.config.capacity == 5
    for empty in (None, {}):
        assert Branch(log_config=empty).log_manager.config == DataLoggerConfig()
    given = DataLoggerConfig(capacity=7)
    assert Branch(log_config=given).log_manager.config is given


def test_supplied_logs_initialise_the_logger():
    logs = [Log(content={"n": 1}), Log(content={"n": 2})]
    b = Branch(logs=logs)
    assert [log.content["n"] for log in b.logs] == [1, 2]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, None),
        ({"system": ""}, None),
        ({"system": False}, None),
        ({"system_datetime": False}, None),
        ({"system": "be brief"}, "be brief"),
        ({"system": {"rules": [1]}}, '{"rules": [1]}'),
    ],
)
def test_system_message_rules(kwargs, expected):
    b = Branch(**kwargs)
    if expected is None:
        assert b.system is None and len(b.messages) == 0
    else:
        assert b.system.system_message == expected and b.messages[0] is b.system


def test_system_datetime_alone_creates_a_system_message():
    b = Branch(system_datetime="2026-11-30T12:00")
    assert b.system is not None and b.system.system_datetime == "2026-11-30T12:00"
    assert Branch(system="x", system_datetime=True).system.system_datetime is not None


def test_lion_system_message_is_prepended():
    b = Branch(system="Be brief.", use_lion_system_message=True)
    assert b.system.system_message == LION_SYSTEM_MESSAGE + "\n\nBe brief."
    alone = Branch(use_lion_system_message=True)
    assert alone.system.system_message == LION_SYSTEM_MESSAGE


def test_template_arguments_warn_and_do_nothing():
    with pytest.warns(DeprecationWarning, match="no effect"):
        b = Branch(
            system="plain", system_template="Hello {{name}}", system_template_context={"name": "x"}
        )
    assert b.system.system_message == "plain"
    with pytest.warns(DeprecationWarning):
        assert Branch(system_template_context={}).system is None


def test_message_added_callback_is_wired():
    b = Branch()
    assert b.msgs.on_message_added == [b._schedule_emit]


def test_explicit_memory_store_is_retained_by_identity():
    from lion_nb import InMemoryStore

    store = InMemoryStore()
    assert Branch(memory=store).memory is store


def test_system_sender_is_recorded():
    assert Branch(system="x", system_sender="ops").system.sender == "ops"


def test_private_state_starts_at_the_declared_defaults_and_is_not_shared():
    a, b = Branch(), Branch()
    declared = Branch.__private_attributes__
    assert set(a.__pydantic_private__) == set(declared)
    for name, attr in declared.items():
        if name.endswith("_manager"):
            continue  # built by __init__
        assert getattr(a, name) == attr.get_default(call_default_factory=True), name
    assert a._pending_signals is not b._pending_signals


def test_a_subclass_with_private_state_of_its_own_starts_at_its_defaults():
    from pydantic import PrivateAttr

    class Tagged(Branch):
        _tags: list = PrivateAttr(default_factory=list)
        _label: str = PrivateAttr("plain")

    t = Tagged()
    assert (t._tags, t._label, t._observer, t._pending_signals) == ([], "plain", None, set())
    assert t._tags is not Tagged()._tags and t.msgs.on_message_added == [t._schedule_emit]
