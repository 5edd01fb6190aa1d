# ADR-0016 D3 clause → test
#
# ADR-0016 D3 grant_capabilities stores the runtime grant
#     → test_grant_installs_the_runtime_grant
# ADR-0016 D3 prompt=True removes one balanced marked block and appends a fresh schema block
#     → test_grant_appends_a_marked_block_after_the_prompt,
#       test_grant_removes_a_balanced_block_in_the_middle_and_appends_a_fresh_one
# ADR-0016 D3 re-granting replaces rather than stacks a well-formed block
#     → test_regrant_replaces_the_block_instead_of_stacking
# ADR-0016 D3 (no system message: one is created holding just the block)
#     → test_grant_without_system_creates_one_holding_just_the_block
# ADR-0016 D3 unbalanced markers are left untouched
#     → test_unbalanced_markers_leave_the_prompt_untouched_but_install_the_grant,
#       test_revoke_with_unbalanced_markers_clears_the_grant_and_leaves_the_prompt
# ADR-0016 D3 prompt=False installs only the runtime grant
#     → test_prompt_false_installs_only_the_runtime_grant
# ADR-0016 D3 revoke_capabilities clears the grant and removes a balanced block
#     → test_revoke_clears_the_grant_and_removes_the_block,
#       test_revoke_of_a_block_only_prompt_removes_the_system_message
# ADR-0016 D3 extraction ignores blocks with no granted key
#     → test_block_without_granted_keys_is_ignored, test_non_json_and_other_fences_are_ignored
# ADR-0016 D3 block mixing granted and ungranted keys → CapabilityViolation
#     → test_mixed_block_is_a_capability_violation
# ADR-0016 D3 wholly granted blocks validated against a generated model → StructuredOutput
#     → test_wholly_granted_valid_block_is_structured_output,
#       test_block_with_a_subset_of_keys_validates_against_just_those_keys
# ADR-0016 D3 validation failure → EmissionRejected as an ordinary Signal payload
#     → test_wholly_granted_invalid_block_is_emission_rejected
# ADR-0016 D3 (observation only: no grant, no signals)
#     → test_no_grant_means_no_signals
# Not covered here: "every observed assistant message first emits MessageAdded" and concurrent
# emission of StructuredOutput are the Branch's emission path (lion_nb/session/branch.py).
from __future__ import annotations

import logging
from uuid import uuid4

import pytest
from pydantic import BaseModel, Field, field_validator

from lion_nb.errors import ConfigurationError
from lion_nb.protocols.capabilities import (
    CAP_BEGIN,
    CAP_END,
    CapabilityGrant,
    extract_capability_signals,
    grant_capabilities,
    render_capability_block,
    revoke_capabilities,
)
from lion_nb.protocols.message_manager import MessageManager
from lion_nb.protocols.messages import AssistantResponse, Instruction, System
from lion_nb.protocols.signals import (
    CapabilityViolation,
    EmissionRejected,
    Signal,
    StructuredOutput,
)


class StubBranch:
    """The attributes the capability helpers use, over a real MessageManager."""

    def __init__(self, system: str | System | None = "You are terse.", name: str | None = "main"):
        self.id = uuid4()
        self.name = name
        self.msgs = MessageManager()
        if isinstance(system, str):
            system = System(system_message=system)
        if system is not None:
            self.msgs.set_system(system)
        self.capability_grant = None

    @property
    def _capability_grant(self):  # the name a Branch's grant had before it was a part
        return self.capability_grant

    @property
    def system(self):
        return self.msgs.system


class Plan(BaseModel):
    summary: str
    steps: int = Field(ge=1)

    @field_validator("summary")
    @classmethod
    def _no_shouting(cls, v: str) -> str:
        if v.isupper():
            raise ValueError("summary must not be all caps")
        return v


def reply(text: str) -> AssistantResponse:
    return AssistantResponse(response=text)


def fenced(body: str, tag: str = "json") -> str:
    return f"```{tag}\n{body}\n```"


# -- granting ----------------------------------------------------------------------------


def test_grant_installs_the_runtime_grant():
    branch = StubBranch()
    grant = grant_capabilities(branch, Plan)
    assert branch._capability_grant is grant
    assert grant.model is Plan
    assert grant.allowed == frozenset({"summary", "steps"})


def test_grant_from_a_mapping_builds_a_model():
    grant = CapabilityGrant.from_operable({"mood": str, "score": (int, Field(ge=0))})
    assert grant.allowed == frozenset({"mood", "score"})
    assert issubclass(grant.model, BaseModel)
    assert grant.model(mood="ok", score=1).score == 1
    with pytest.raises(ValueError):
        grant.model(mood="ok", score=-1)


@pytest.mark.parametrize(
    ("operable", "message"),
    [
        (Plan(summary="x", steps=1), "got an instance of `Plan`"),
        ({}, "has no fields"),
        (["summary"], "got `list`"),
        ({"_hidden": str}, "not usable"),
    ],
)
def test_grant_rejects_unusable_operables(operable, message):
    branch = StubBranch()
    with pytest.raises(ConfigurationError, match=message):
        grant_capabilities(branch, operable)
    assert branch._capability_grant is None


def test_grant_appends_a_marked_block_after_the_prompt():
    branch = StubBranch("You are terse.")
    grant = grant_capabilities(branch, Plan)
    text = branch.system.system_message
    block = render_capability_block(grant)
    assert text == "You are terse.\n\n" + block
    assert block.startswith(CAP_BEGIN) and block.endswith(CAP_END)
    assert "```json" in block
    assert "steps, summary" in block
    assert '"minimum": 1' in block  # the JSON schema is rendered


def test_grant_removes_a_balanced_block_in_the_middle_and_appends_a_fresh_one():
    old = f"{CAP_BEGIN}\nold rules\n{CAP_END}"
    branch = StubBranch(f"Intro.\n\n{old}\n\nOutro.")
    grant_capabilities(branch, {"mood": str})
    text = branch.system.system_message
    assert "old rules" not in text
    assert text.startswith("Intro.\n\nOutro.\n\n" + CAP_BEGIN)
    assert text.count(CAP_BEGIN) == 1 and text.count(CAP_END) == 1
    assert "mood" in text


def test_regrant_replaces_the_block_instead_of_stacking():
    branch = StubBranch("You are terse.")
    grant_capabilities(branch, Plan)
    grant_capabilities(branch, {"mood": str})
    text = branch.system.system_message
    assert text.count(CAP_BEGIN) == 1 and text.count(CAP_END) == 1
    assert text.startswith("You are terse.\n\n" + CAP_BEGIN)
    assert "mood" in text and "summary" not in text


def test_grant_without_system_creates_one_holding_just_the_block():
    branch = StubBranch(system=None)
    grant = grant_capabilities(branch, Plan)
    assert branch.system is not None
    assert branch.system.system_message == render_capability_block(grant)
    assert branch.system.recipient == str(branch.id)


def test_grant_keeps_the_system_message_fields_and_replaces_the_message():
    original = System(system_message="Base.", system_datetime="2026-01-01T09:00", sender="u1")
    branch = StubBranch(original)
    grant_capabilities(branch, Plan)
    new = branch.system
    assert new.id != original.id  # a new message, so render caches cannot go stale
    assert original.system_message == "Base."
    assert new.system_datetime == "2026-01-01T09:00"
    assert new.sender == "u1"
    assert len(branch.msgs.messages) == 1


@pytest.mark.parametrize(
    "prompt",
    [
        f"Base.\n{CAP_BEGIN}\nno end",
        f"Base.\n{CAP_END}\nthen\n{CAP_BEGIN}",
        f"{CAP_BEGIN}\na\n{CAP_BEGIN}\nb\n{CAP_END}",
        f"Base.\n{CAP_END}",
        f"{CAP_BEGIN}\na\n{CAP_END}\n{CAP_BEGIN}\nb\n{CAP_END}",
    ],
    ids=["begin-without-end", "end-before-begin", "two-begins", "end-only", "two-blocks"],
)
def test_unbalanced_markers_leave_the_prompt_untouched_but_install_the_grant(prompt, caplog):
    branch = StubBranch(prompt)
    before = branch.system
    with caplog.at_level(logging.WARNING, logger="lion_nb.capabilities"):
        grant = grant_capabilities(branch, Plan)
    assert branch.system is before
    assert branch.system.system_message == prompt
    assert branch._capability_grant is grant
    assert any("unbalanced" in r.getMessage() for r in caplog.records)


def test_prompt_false_installs_only_the_runtime_grant():
    branch = StubBranch("You are terse.")
    before = branch.system
    grant = grant_capabilities(branch, Plan, prompt=False)
    assert branch._capability_grant is grant
    assert branch.system is before
    assert branch.system.system_message == "You are terse."
    no_system = StubBranch(system=None)
    grant_capabilities(no_system, Plan, prompt=False)
    assert no_system.system is None


# -- revoking ----------------------------------------------------------------------------


def test_revoke_clears_the_grant_and_removes_the_block():
    branch = StubBranch("You are terse.")
    grant_capabilities(branch, Plan)
    revoke_capabilities(branch)
    assert branch._capability_grant is None
    assert branch.system.system_message == "You are terse."


def test_revoke_of_a_block_only_prompt_removes_the_system_message():
    branch = StubBranch(system=None)
    grant_capabilities(branch, Plan)
    revoke_capabilities(branch)
    assert branch.system is None


def test_revoke_with_unbalanced_markers_clears_the_grant_and_leaves_the_prompt(caplog):
    prompt = f"Base.\n{CAP_BEGIN}\nno end"
    branch = StubBranch(prompt)
    grant_capabilities(branch, Plan, prompt=False)
    with caplog.at_level(logging.WARNING, logger="lion_nb.capabilities"):
        revoke_capabilities(branch)
    assert branch._capability_grant is None
    assert branch.system.system_message == prompt
    assert any("unbalanced" in r.getMessage() for r in caplog.records)


def test_revoke_without_a_block_leaves_the_system_message_alone():
    branch = StubBranch("You are terse.")
    before = branch.system
    grant_capabilities(branch, Plan, prompt=False)
    revoke_capabilities(branch)
    assert branch.system is before


# -- extraction --------------------------------------------------------------------------


def test_no_grant_means_no_signals():
    branch = StubBranch()
    assert extract_capability_signals(branch, reply(fenced('{"summary": "a", "steps": 1}'))) == []


def test_only_assistant_text_is_read():
    branch = StubBranch()
    grant_capabilities(branch, Plan)
    block = fenced('{"summary": "a", "steps": 1}')
    assert extract_capability_signals(branch, Instruction(instruction=block)) == []
    assert len(extract_capability_signals(branch, block)) == 1  # a plain string is read


def test_wholly_granted_valid_block_is_structured_output():
    branch = StubBranch(name="planner")
    grant_capabilities(branch, Plan)
    text = "Here is the plan.\n" + fenced('{"summary": "ship it", "steps": 3}') + "\nDone."
    [signal] = extract_capability_signals(branch, reply(text))
    assert isinstance(signal, StructuredOutput)
    assert isinstance(signal.data, Plan)
    assert signal.data == Plan(summary="ship it", steps=3)
    assert signal.block == {"summary": "ship it", "steps": 3}
    assert signal.branch_id == str(branch.id)
    assert signal.branch_name == "planner"


def test_bare_fence_holding_a_json_object_is_read():
    branch = StubBranch()
    grant_capabilities(branch, Plan)
    [signal] = extract_capability_signals(branch, reply(fenced('{"steps": 2}', tag="")))
    assert isinstance(signal, StructuredOutput)
    assert signal.data.steps == 2


def test_block_with_a_subset_of_keys_validates_against_just_those_keys():
    branch = StubBranch()
    grant_capabilities(branch, Plan)
    [ok] = extract_capability_signals(branch, reply(fenced('{"steps": 4}')))
    assert isinstance(ok, StructuredOutput)
    assert type(ok.data).model_fields.keys() == {"steps"}
    [bad] = extract_capability_signals(branch, reply(fenced('{"steps": 0}')))
    assert isinstance(bad.payload, EmissionRejected)  # the field's constraint still applies


def test_full_block_runs_the_user_models_validators():
    branch = StubBranch()
    grant_capabilities(branch, Plan)
    [signal] = extract_capability_signals(branch, reply(fenced('{"summary": "LOUD", "steps": 1}')))
    assert isinstance(signal.payload, EmissionRejected)
    assert "all caps" in signal.payload.error


def test_wholly_granted_invalid_block_is_emission_rejected():
    branch = StubBranch(name="planner")
    grant_capabilities(branch, Plan)
    block = {"summary": "x", "steps": "many"}
    [signal] = extract_capability_signals(
        branch, reply(fenced('{"summary": "x", "steps": "many"}'))
    )
    assert type(signal) is Signal
    assert isinstance(signal.payload, EmissionRejected)
    assert signal.payload.branch_name == "planner"
    assert signal.payload.block == block
    assert "steps" in signal.payload.error
    assert signal.branch_id == str(branch.id)


def test_emission_rejected_branch_name_is_empty_for_an_unnamed_branch():
    branch = StubBranch(name=None)
    grant_capabilities(branch, Plan)
    [signal] = extract_capability_signals(branch, reply(fenced('{"steps": "x"}')))
    assert signal.payload.branch_name == ""


def test_mixed_block_is_a_capability_violation():
    branch = StubBranch(name="planner")
    grant_capabilities(branch, Plan)
    text = fenced('{"steps": 1, "delete_repo": true, "admin": 1}')
    [signal] = extract_capability_signals(branch, reply(text))
    assert type(signal) is Signal
    assert isinstance(signal.payload, CapabilityViolation)
    assert signal.payload.offending == ["admin", "delete_repo"]
    assert signal.payload.allowed == ["steps", "summary"]
    assert signal.payload.block == {"steps": 1, "delete_repo": True, "admin": 1}
    assert signal.branch_name == "planner"


def test_block_without_granted_keys_is_ignored():
    branch = StubBranch()
    grant_capabilities(branch, Plan)
    text = fenced('{"unrelated": 1}') + "\n" + fenced("{}")
    assert extract_capability_signals(branch, reply(text)) == []


def test_non_json_and_other_fences_are_ignored():
    branch = StubBranch()
    grant_capabilities(branch, Plan)
    text = "\n".join(
        [
            fenced('{"steps": 1,'),  # broken JSON
            fenced('{"steps": 1}', tag="python"),  # not a JSON fence
            fenced('[{"steps": 1}]'),  # not an object
            '{"steps": 1}',  # not fenced
        ]
    )
    assert extract_capability_signals(branch, reply(text)) == []


def test_several_blocks_yield_signals_in_block_order():
    branch = StubBranch()
    grant_capabilities(branch, Plan)
    text = "\n".join(
        [
            fenced('{"steps": 1}'),
            fenced('{"steps": 1, "extra": 2}'),
            fenced('{"steps": -1}'),
            fenced('{"summary": "b"}'),
        ]
    )
    signals = extract_capability_signals(branch, reply(text))
    assert [type(s).__name__ for s in signals] == [
        "StructuredOutput",
        "Signal",
        "Signal",
        "StructuredOutput",
    ]
    assert isinstance(signals[1].payload, CapabilityViolation)
    assert isinstance(signals[2].payload, EmissionRejected)


# -- with the real Branch ----------------------------------------------------------------


def test_real_branch_grant_and_revoke_edit_its_system_prompt():
    import lion_nb.session.branch as branch_module

    branch = branch_module.Branch(system="You are terse.", name="real")
    branch.grant_capabilities(Plan)
    assert CAP_BEGIN in branch.system.system_message
    [signal] = extract_capability_signals(branch, reply(fenced('{"steps": 2}')))
    assert isinstance(signal, StructuredOutput)
    assert signal.branch_name == "real"
    branch.revoke_capabilities()
    assert branch.system.system_message == "You are terse."
