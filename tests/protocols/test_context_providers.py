# ADR-0016 D3 clause → test
#
# ADR-0016 D3 default total injection budget is 2,000 tokens
#     → test_default_budget_is_2000_tokens
# ADR-0016 D3 truthy per-provider max_tokens imposes a lower independent bound
#     → test_output_over_provider_max_tokens_is_skipped
# ADR-0016 D3 max_tokens=0 disables the check (truthiness test)
#     → test_max_tokens_zero_disables_the_check
# ADR-0016 D3 negative max_tokens skips every non-empty output
#     → test_negative_max_tokens_skips_every_non_empty_output
# ADR-0016 D3 non-positive total budget admits no positive-token output
#     → test_non_positive_budget_admits_no_positive_token_output,
#       test_zero_token_output_is_admitted_only_while_the_running_total_fits
# ADR-0016 D3 untouched registry is falsy; operation path returns without a report
#     → test_untouched_registry_is_falsy, test_prepare_context_without_providers_returns_none_and_builds_nothing
# ADR-0016 D3 providers run in registration order
#     → test_providers_run_sequentially_in_registration_order
# ADR-0016 D3 provider exception is logged, named in failed, the turn continues
#     → test_provider_exception_is_logged_listed_and_turn_continues
# ADR-0016 D3 None or empty text: no block, not recorded as fired
#     → test_none_or_empty_output_adds_no_block_and_is_not_fired
# ADR-0016 D3 text over the provider's max_tokens is recorded as skipped
#     → test_output_over_provider_max_tokens_is_skipped
# ADR-0016 D3 budget admission by descending priority
#     → test_budget_admits_by_descending_priority
# ADR-0016 D3 equal priorities keep registration order
#     → test_equal_priorities_admit_in_registration_order
# ADR-0016 D3 (output that does not fit is skipped; later smaller ones may still fit)
#     → test_output_that_does_not_fit_is_skipped_and_a_smaller_one_still_fits
# ADR-0016 D3 retained blocks rendered back in registration order
#     → test_admitted_blocks_render_in_registration_order
# ADR-0016 D3 branch without a system message: providers not invoked, all names skipped
#     → test_branch_without_system_skips_every_provider_without_invoking_it
# ADR-0016 D3 blocks folded into one request and cleared from the slot; never durable messages
#     → test_blocks_wait_in_the_injection_slot_until_taken_once,
#       test_injection_is_never_appended_as_a_message
# ADR-0016 D3 last_context_report is the last report; zero-provider path keeps an older one
#     → test_prepare_context_stores_the_report_as_last_context_report,
#       test_zero_provider_path_keeps_an_older_report
# ADR-0016 D3 writeback after actions with at least one non-None response
#     → test_writeback_receives_only_the_non_none_responses
# ADR-0016 D3 writeback visits providers sequentially in registration order
#     → test_writeback_runs_sequentially_in_registration_order
# ADR-0016 D3 provider with no writeback attribute, or None, is skipped
#     → test_provider_without_writeback_or_with_none_is_skipped
# ADR-0016 D3 non-callable or synchronous hook fails at await, logged, contained, later run
#     → test_non_callable_or_sync_writeback_is_logged_contained_and_later_providers_run
# ADR-0016 D3 no writeback when no responses or every response is None
#     → test_no_writeback_when_responses_are_empty_or_all_none,
#       test_no_writeback_without_providers
# ADR-0016 D3 writeback is not part of ProviderReport or the pre-turn budget
#     → test_gather_never_calls_writeback_and_writeback_does_not_touch_the_report
from __future__ import annotations

import logging
from uuid import uuid4

import anyio
import pytest

from lion_nb.protocols.context_providers import (
    BranchContext,
    ContextProvider,
    ContextProviderRegistry,
    ProviderReport,
    prepare_context,
    take_context_injection,
    writeback_after_actions,
)
from lion_nb.protocols.message_manager import MessageManager
from lion_nb.protocols.messages import Instruction, System
from lion_nb.tokens import estimate_tokens


class StubBranch:
    """The attributes the context helpers use, over a real MessageManager."""

    def __init__(self, system: str | None = "You are terse.", name: str = "main"):
        self.id = uuid4()
        self.name = name
        self.msgs = MessageManager()
        if system is not None:
            self.msgs.set_system(System(system_message=system))
        self.context = BranchContext()
        self.capability_grant = None

    # the names a Branch's context had before it was a part (`BranchContext`)
    @property
    def _providers(self):
        return self.context.providers

    @_providers.setter
    def _providers(self, value):
        self.context.providers = value

    @property
    def _last_context_report(self):
        return self.context.last_report

    @_last_context_report.setter
    def _last_context_report(self, value):
        self.context.last_report = value

    @property
    def _context_injection(self):
        return self.context.injection

    @property
    def system(self):
        return self.msgs.system


def words(n: int) -> str:
    text = " ".join(["alpha"] * n)
    assert estimate_tokens(text) == n
    return text


class Static:
    def __init__(self, text, calls: list | None = None, name: str | None = None):
        self.text = text
        self.calls = calls if calls is not None else []
        if name is not None:
            self.name = name

    async def provide(self, branch, instruction):
        self.calls.append(getattr(self, "name", type(self).__name__))
        return self.text


class Boom:
    name = "boom"

    async def provide(self, branch, instruction):
        raise RuntimeError("index unavailable")


def gather(registry: ContextProviderRegistry, branch=None) -> ProviderReport:
    return anyio.run(registry.gather, branch or StubBranch(), Instruction(instruction="hi"))


# -- registry basics ---------------------------------------------------------------------


def test_default_budget_is_2000_tokens():
    assert ContextProviderRegistry().budget == 2000


def test_untouched_registry_is_falsy():
    registry = ContextProviderRegistry()
    assert not registry
    assert len(registry) == 0
    registry.register(Static("x", name="a"))
    assert registry
    assert len(registry) == 1


def test_name_defaults_to_name_attribute_then_class_name():
    registry = ContextProviderRegistry()
    registry.register(Static("x", name="notes"))
    registry.register(Static("x"))
    registry.register(Static("x", name="ignored"), name="explicit")
    assert registry.names == ["notes", "Static", "explicit"]


def test_register_rejects_an_object_without_provide():
    with pytest.raises(TypeError, match="`object` is not a context provider"):
        ContextProviderRegistry().register(object())


def test_context_provider_protocol_is_structural():
    assert isinstance(Static("x"), ContextProvider)
    assert not isinstance(object(), ContextProvider)


# -- gather ------------------------------------------------------------------------------


def test_providers_run_sequentially_in_registration_order():
    events: list[str] = []

    class Slow:
        def __init__(self, name, delay):
            self.name, self.delay = name, delay

        async def provide(self, branch, instruction):
            events.append(f"{self.name}-start")
            await anyio.sleep(self.delay)
            events.append(f"{self.name}-end")
            return self.name

    registry = ContextProviderRegistry()
    registry.register(Slow("first", 0.02), priority=-5)
    registry.register(Slow("second", 0.0), priority=10)
    registry.register(Slow("third", 0.0))
    gather(registry)
    assert events == [
        "first-start",
        "first-end",
        "second-start",
        "second-end",
        "third-start",
        "third-end",
    ]


def test_provider_exception_is_logged_listed_and_turn_continues(caplog):
    calls: list[str] = []
    registry = ContextProviderRegistry()
    registry.register(Static("before", calls, name="before"))
    registry.register(Boom())
    registry.register(Static("after", calls, name="after"))
    with caplog.at_level(logging.WARNING, logger="lion_nb.context_providers"):
        report = gather(registry)
    assert report.failed == ["boom"]
    assert report.blocks == ["before", "after"]
    assert calls == ["before", "after"]
    record = next(r for r in caplog.records if "`boom`" in r.getMessage())
    assert record.exc_info and isinstance(record.exc_info[1], RuntimeError)


def test_none_or_empty_output_adds_no_block_and_is_not_fired():
    registry = ContextProviderRegistry()
    registry.register(Static(None, name="none"))
    registry.register(Static("", name="empty"))
    registry.register(Static("kept", name="kept"))
    report = gather(registry)
    assert report.blocks == ["kept"]
    assert [f["name"] for f in report.fired] == ["kept"]
    assert report.skipped == []
    assert report.failed == []


def test_fired_entries_carry_name_tokens_and_priority():
    registry = ContextProviderRegistry()
    registry.register(Static(words(3), name="notes"), priority=7)
    report = gather(registry)
    assert report.fired == [{"name": "notes", "tokens": 3, "priority": 7}]
    assert report.tokens == 3


def test_output_over_provider_max_tokens_is_skipped():
    registry = ContextProviderRegistry()
    registry.register(Static(words(5), name="long"), max_tokens=4)
    registry.register(Static(words(4), name="exact"), max_tokens=4)
    report = gather(registry)
    assert report.skipped == ["long"]
    assert report.blocks == [words(4)]


def test_max_tokens_zero_disables_the_check():
    registry = ContextProviderRegistry()
    registry.register(Static(words(50), name="zero"), max_tokens=0)
    report = gather(registry)
    assert report.blocks == [words(50)]
    assert report.skipped == []


def test_negative_max_tokens_skips_every_non_empty_output():
    registry = ContextProviderRegistry()
    registry.register(Static(words(1), name="one"), max_tokens=-1)
    registry.register(Static(" ", name="zero-token"), max_tokens=-1)  # non-empty, 0 tokens
    report = gather(registry)
    assert estimate_tokens(" ") == 0
    assert report.skipped == ["one", "zero-token"]
    assert report.blocks == []


def test_non_positive_budget_admits_no_positive_token_output():
    for budget in (0, -10):
        registry = ContextProviderRegistry(budget=budget)
        registry.register(Static(words(1), name="tiny"), priority=100)
        report = gather(registry)
        assert report.blocks == []
        assert report.skipped == ["tiny"]


def test_zero_token_output_is_admitted_only_while_the_running_total_fits():
    # admission is `total + tokens <= budget`: a 0-token block fits a 0 budget, not a negative one
    for budget, admitted in ((0, True), (-1, False)):
        registry = ContextProviderRegistry(budget=budget)
        registry.register(Static(" ", name="blank"))
        report = gather(registry)
        assert (report.blocks == [" "]) is admitted
        assert (report.skipped == []) is admitted


def test_budget_admits_by_descending_priority():
    registry = ContextProviderRegistry(budget=10)
    registry.register(Static(words(6), name="low"), priority=1)
    registry.register(Static(words(6), name="high"), priority=5)
    report = gather(registry)
    assert report.blocks == [words(6)]
    assert [f["name"] for f in report.fired] == ["high"]
    assert report.skipped == ["low"]


def test_equal_priorities_admit_in_registration_order():
    registry = ContextProviderRegistry(budget=10)
    registry.register(Static(words(6), name="first"), priority=3)
    registry.register(Static(words(6), name="second"), priority=3)
    report = gather(registry)
    assert [f["name"] for f in report.fired] == ["first"]
    assert report.skipped == ["second"]


def test_output_that_does_not_fit_is_skipped_and_a_smaller_one_still_fits():
    registry = ContextProviderRegistry(budget=10)
    registry.register(Static(words(8), name="big"), priority=3)
    registry.register(Static(words(5), name="medium"), priority=2)
    registry.register(Static(words(2), name="small"), priority=1)
    report = gather(registry)
    assert [f["name"] for f in report.fired] == ["big", "small"]
    assert report.skipped == ["medium"]


def test_admitted_blocks_render_in_registration_order():
    registry = ContextProviderRegistry(budget=100)
    registry.register(Static("A " + words(1), name="a"), priority=0)
    registry.register(Static("B " + words(1), name="b"), priority=9)
    registry.register(Static("C " + words(1), name="c"), priority=5)
    report = gather(registry)
    assert report.blocks == ["A alpha", "B alpha", "C alpha"]
    assert [f["name"] for f in report.fired] == ["a", "b", "c"]
    assert report.text == "A alpha\n\nB alpha\n\nC alpha"


def test_report_is_frozen():
    report = ProviderReport()
    with pytest.raises(AttributeError):
        report.blocks = ["x"]  # type: ignore[misc]


# -- operation path ----------------------------------------------------------------------


def test_prepare_context_without_providers_returns_none_and_builds_nothing():
    branch = StubBranch()
    assert anyio.run(prepare_context, branch, Instruction(instruction="hi")) is None
    assert branch._providers is None
    assert branch._last_context_report is None
    assert branch._context_injection is None


def test_zero_provider_path_keeps_an_older_report():
    older = ProviderReport(blocks=["stale"])
    for registry in (None, ContextProviderRegistry()):
        branch = StubBranch()
        branch._providers = registry
        branch._last_context_report = older
        assert anyio.run(prepare_context, branch, Instruction(instruction="hi")) is None
        assert branch._last_context_report is older


def test_branch_without_system_skips_every_provider_without_invoking_it():
    calls: list[str] = []
    branch = StubBranch(system=None)
    branch._providers = ContextProviderRegistry()
    branch._providers.register(Static("a", calls, name="a"))
    branch._providers.register(Boom())
    report = anyio.run(prepare_context, branch, Instruction(instruction="hi"))
    assert calls == []
    assert report == ProviderReport(skipped=["a", "boom"])
    assert branch._last_context_report is report
    assert branch._context_injection is None


def test_prepare_context_stores_the_report_as_last_context_report():
    branch = StubBranch()
    branch._providers = ContextProviderRegistry()
    branch._providers.register(Static("note", name="n"))
    first = anyio.run(prepare_context, branch, Instruction(instruction="one"))
    assert branch._last_context_report is first
    second = anyio.run(prepare_context, branch, Instruction(instruction="two"))
    assert branch._last_context_report is second
    assert second is not first


def test_blocks_wait_in_the_injection_slot_until_taken_once():
    branch = StubBranch()
    branch._providers = ContextProviderRegistry()
    branch._providers.register(Static("one", name="a"))
    branch._providers.register(Static("two", name="b"))
    anyio.run(prepare_context, branch, Instruction(instruction="hi"))
    assert branch._context_injection == "one\n\ntwo"
    assert take_context_injection(branch) == "one\n\ntwo"
    assert branch._context_injection is None
    assert take_context_injection(branch) is None


def test_prepare_context_leaves_no_injection_when_nothing_fired():
    branch = StubBranch()
    branch._providers = ContextProviderRegistry()
    branch._providers.register(Static(None, name="quiet"))
    report = anyio.run(prepare_context, branch, Instruction(instruction="hi"))
    assert report.blocks == []
    assert branch._context_injection is None


def test_injection_is_never_appended_as_a_message():
    branch = StubBranch()
    branch._providers = ContextProviderRegistry()
    branch._providers.register(Static("ephemeral", name="n"))
    before = [m.id for m in branch.msgs.messages]
    anyio.run(prepare_context, branch, Instruction(instruction="hi"))
    take_context_injection(branch)
    assert [m.id for m in branch.msgs.messages] == before
    assert all("ephemeral" not in m.rendered for m in branch.msgs.messages)


# -- writeback ---------------------------------------------------------------------------


class Recorder:
    def __init__(self, name: str, events: list):
        self.name, self.events = name, events

    async def provide(self, branch, instruction):
        return None

    async def writeback(self, branch, action_responses):
        self.events.append((self.name, list(action_responses)))


def test_writeback_receives_only_the_non_none_responses():
    events: list = []
    branch = StubBranch()
    branch._providers = ContextProviderRegistry()
    branch._providers.register(Recorder("r", events))
    anyio.run(writeback_after_actions, branch, [None, "ok", None, "done"])
    assert events == [("r", ["ok", "done"])]


def test_writeback_runs_sequentially_in_registration_order():
    events: list[str] = []

    class Slow(Recorder):
        def __init__(self, name, delay):
            super().__init__(name, events)
            self.delay = delay

        async def writeback(self, branch, action_responses):
            events.append(f"{self.name}-start")
            await anyio.sleep(self.delay)
            events.append(f"{self.name}-end")

    registry = ContextProviderRegistry()
    registry.register(Slow("a", 0.02), priority=-1)
    registry.register(Slow("b", 0.0), priority=5)
    anyio.run(registry.gather_writeback, StubBranch(), ["r"])
    assert events == ["a-start", "a-end", "b-start", "b-end"]


def test_provider_without_writeback_or_with_none_is_skipped(caplog):
    events: list = []
    plain = Static("x", name="plain")
    disabled = Recorder("disabled", events)
    disabled.writeback = None
    registry = ContextProviderRegistry()
    registry.register(plain)
    registry.register(disabled)
    registry.register(Recorder("on", events))
    with caplog.at_level(logging.WARNING, logger="lion_nb.context_providers"):
        anyio.run(registry.gather_writeback, StubBranch(), ["r"])
    assert events == [("on", ["r"])]
    assert [r for r in caplog.records if r.name == "lion_nb.context_providers"] == []


def test_non_callable_or_sync_writeback_is_logged_contained_and_later_providers_run(caplog):
    events: list = []
    sync_calls: list = []
    not_callable = Recorder("not-callable", events)
    not_callable.writeback = "persist"
    sync = Recorder("sync", events)
    sync.writeback = lambda branch, responses: sync_calls.append(responses)

    class Raising(Recorder):
        async def writeback(self, branch, action_responses):
            raise OSError("disk full")

    registry = ContextProviderRegistry()
    registry.register(not_callable)
    registry.register(sync)
    registry.register(Raising("raising", events))
    registry.register(Recorder("last", events))
    with caplog.at_level(logging.WARNING, logger="lion_nb.context_providers"):
        anyio.run(registry.gather_writeback, StubBranch(), ["r"])
    assert events == [("last", ["r"])]
    assert sync_calls == [["r"]]  # a sync hook runs, then fails at the await
    failed = [r.getMessage() for r in caplog.records]
    assert any("`not-callable`" in m for m in failed)
    assert any("`sync`" in m for m in failed)
    assert any("`raising`" in m for m in failed)
    assert not any("`last`" in m for m in failed)


def test_no_writeback_when_responses_are_empty_or_all_none():
    events: list = []
    branch = StubBranch()
    branch._providers = ContextProviderRegistry()
    branch._providers.register(Recorder("r", events))
    for responses in (None, [], [None, None]):
        anyio.run(writeback_after_actions, branch, responses)
    assert events == []


def test_no_writeback_without_providers():
    branch = StubBranch()
    anyio.run(writeback_after_actions, branch, ["r"])
    assert branch._providers is None


def test_gather_never_calls_writeback_and_writeback_does_not_touch_the_report():
    events: list = []

    class Both(Recorder):
        async def provide(self, branch, instruction):
            return words(2)

    branch = StubBranch()
    branch._providers = ContextProviderRegistry(budget=2)
    branch._providers.register(Both("both", events))
    report = anyio.run(prepare_context, branch, Instruction(instruction="hi"))
    assert events == []
    assert anyio.run(writeback_after_actions, branch, ["r"]) is None
    assert events == [("both", ["r"])]
    assert branch._last_context_report is report
    assert report.tokens == 2


# -- with the real Branch ----------------------------------------------------------------


def test_real_branch_slots_drive_prepare_context():
    import lion_nb.session.branch as branch_module

    branch = branch_module.Branch(system="You are terse.")
    assert anyio.run(prepare_context, branch, Instruction(instruction="hi")) is None
    branch.providers.register(Static("note", name="n"))
    report = anyio.run(prepare_context, branch, Instruction(instruction="hi"))
    assert branch.last_context_report is report
    assert take_context_injection(branch) == "note"
