"""Branch's named parts (docs/adr/0113-layers-and-branch-parts.md): each is made on first
use, holds what the old private slots held, and is what other modules work through."""

from __future__ import annotations

import anyio

from lion_nb import Branch, Budget, Session
from lion_nb.protocols.context_providers import BranchContext
from lion_nb.protocols.messages import Instruction
from lion_nb.runtime.parts import Attachment, Spend


class Note:
    name = "note"
    priority = 0
    max_tokens = None

    def __init__(self, text: str):
        self.text = text
        self.calls = 0

    async def provide(self, branch, instruction):
        self.calls += 1
        return self.text


def test_a_new_branch_has_no_part_until_one_is_asked_for():
    b = Branch()
    private = b.__pydantic_private__
    assert (private["_spend"], private["_attachment"], private["_context"]) == (None, None, None)
    assert b.budget is None and b._observer is None and b._providers is None
    assert isinstance(b.spend, Spend) and b.spend is b.spend
    assert isinstance(b.attachment, Attachment) and b.attachment is b.attachment
    assert isinstance(b.context, BranchContext) and b.context is b.context


def test_joining_and_leaving_a_session_goes_through_the_attachment():
    session = Session()
    branch = Branch()
    session.include_branches(branch)
    part = branch.attachment
    assert part.session_id == session.id and part.observer is not None
    assert branch._owning_session_id == session.id and branch._observer is part.observer
    session.remove_branch(branch)
    assert (part.session_id, part.observer, part.hooks) == (None, None, None)
    assert branch.get_operation("no_such_operation") is None


def test_budgets_live_in_the_spend_of_the_branch_and_of_the_session():
    session = Session()
    branch = session.new_branch()
    branch.budget = 1.0
    session.budget = Budget(usd=2.0)
    assert branch.spend.budget is branch.budget and branch.budget.usd == 1.0
    assert session.spend.budget is session.budget and session.budget.usd == 2.0
    assert branch.cost().calls == 0 and branch.spend.ledger is not None


def test_the_injected_context_is_taken_once_per_request():
    b = Branch(system="You are terse.")
    note = Note("FACT: the sky is green")
    b.providers.register(note)
    ins = Instruction(instruction="hi")
    assert anyio.run(b.take_context, ins) == "FACT: the sky is green"
    assert b.context.injection is None and b._context_injection is None
    assert b.last_context_report.blocks == ["FACT: the sky is green"]
    assert note.calls == 1
    assert anyio.run(Branch().take_context, ins) is None  # no providers: nothing gathered


def test_the_grant_and_the_mcp_servers_are_the_branchs_own():
    b = Branch(system="s")
    assert b.capability_grant is None and b.connected_mcp == {}
    from pydantic import BaseModel

    class Plan(BaseModel):
        summary: str

    b.grant_capabilities(Plan)
    assert b.capability_grant is not None and b._capability_grant is b.capability_grant
    b.revoke_capabilities()
    assert b.capability_grant is None
    assert b.connected_mcp is b.connected_mcp  # the live dict `lion_nb.mcp.connect` keeps
