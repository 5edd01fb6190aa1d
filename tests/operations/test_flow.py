"""The flow executor: a DAG of Operation nodes run concurrently within a bound.

ADR clauses covered (clause -> test):

ADR-0023 D1 (acyclic by construction; the cycle is named)         -> test_cycle_refused_and_named
ADR-0023 D2 (concurrency bound respected, reached when width allows) -> test_fifty_node_dag_respects_bound
ADR-0023 D2 (a node starts only after its predecessors settle)    -> test_fifty_node_dag_respects_bound
ADR-0023 D3 (predecessor results passed as `context`)             -> test_results_flow_along_edges
ADR-0023 D3 (own context merged; `context_key=None` passes none)  -> test_context_merging_rules
ADR-0023 D4 (a failure skips only its dependents, naming it)      -> test_failure_skips_only_dependents
ADR-0023 D4 (run does not raise; raise_for_failures does)         -> test_failure_skips_only_dependents
ADR-0023 D5 (branch per node: branch_id or default)               -> test_branch_per_node_and_early_resolution
ADR-0023 D5 (clone_per_node runs each node on a session split)    -> test_clone_per_node_with_a_real_model
ADR-0023 D6 (cancelling run cancels the running nodes)            -> test_cancelling_the_flow
ADR-0021 D2 (graph nodes resolve names like run_operation)        -> test_results_flow_along_edges
"""

from __future__ import annotations

import random

import anyio
import pytest

from lion_nb.errors import ConfigurationError, ItemExistsError, ItemNotFoundError, OperationError
from lion_nb.models.imodel import iModel
from lion_nb.operations.flow import Flow
from lion_nb.operations.node import Operation
from lion_nb.session.branch import Branch
from lion_nb.session.session import Session


class Tracker:
    """A registered operation that counts how many nodes run at once."""

    def __init__(self, delay: float = 0.01):
        self.delay = delay
        self.running = 0
        self.peak = 0
        self.events: list[tuple[str, str]] = []  # ("start" | "end", label)

    async def __call__(self, branch: Branch, *, label: str, fail: bool = False, context=None):
        self.running += 1
        self.peak = max(self.peak, self.running)
        self.events.append(("start", label))
        try:
            await anyio.sleep(self.delay)
            if fail:
                raise RuntimeError(f"{label} broke")
            return {"label": label, "upstream": sorted(context or {})}
        finally:
            self.running -= 1
            self.events.append(("end", label))


def random_dag(seed: int, size: int = 50, failing: set[int] = frozenset()):
    rng = random.Random(seed)
    flow = Flow()
    nodes = []
    for i in range(size):
        k = rng.choice([0, 1, 1, 2, 3]) if i else 0
        deps = rng.sample(nodes, min(k, len(nodes)))
        node = Operation(
            operation="track", name=f"n{i}", parameters={"label": f"n{i}", "fail": i in failing}
        )
        flow.add(node, depends_on=deps)
        nodes.append(node)
    return flow, nodes


def descendants(flow: Flow, node: Operation) -> set[str]:
    seen: set[str] = set()
    stack = [node]
    while stack:
        for nxt in flow.successors(stack.pop()):
            if nxt.name not in seen:
                seen.add(nxt.name)
                stack.append(nxt)
    return seen


def session_with(tracker: Tracker) -> Session:
    session = Session()
    session.register_operation("track", tracker)
    return session


@pytest.mark.parametrize("bound", [1, 4, 7])
def test_fifty_node_dag_respects_bound(bound):
    tracker = Tracker()
    session = session_with(tracker)
    flow, nodes = random_dag(seed=20260709)
    roots = [n for n in nodes if not flow.predecessors(n)]
    assert len(roots) >= bound  # the graph is wide enough for the bound to be reached

    result = anyio.run(lambda: flow.run(session, max_concurrency=bound))

    assert tracker.peak == bound  # counted by the operation itself
    assert result.peak_concurrency == bound
    assert result.ok and len(result) == 50 and len(result.completed) == 50
    for node in nodes:
        outcome = result[node]
        assert outcome.status == "completed" and node.status == "completed"
        assert outcome.result["label"] == node.name
        assert outcome.branch_id == str(session.default_branch.id)
    # every node started only after each of its predecessors ended
    position = {event: i for i, event in enumerate(tracker.events)}
    for node in nodes:
        for pred in flow.predecessors(node):
            assert position[("end", pred.name)] < position[("start", node.name)]


def test_results_flow_along_edges():
    tracker = Tracker(delay=0)
    session = session_with(tracker)
    flow, nodes = random_dag(seed=7)
    result = anyio.run(lambda: flow.run(session, max_concurrency=5))
    for node in nodes:
        expected = sorted(p.name for p in flow.predecessors(node))
        assert result[node.name].result["upstream"] == expected
    assert result.results["n0"] == {"label": "n0", "upstream": []}


def test_failure_skips_only_dependents():
    tracker = Tracker(delay=0.002)
    session = session_with(tracker)
    flow, nodes = random_dag(seed=99, failing={3})
    failing = nodes[3]
    downstream = descendants(flow, failing)
    assert len(downstream) >= 3  # the failure has something to propagate to

    result = anyio.run(lambda: flow.run(session, max_concurrency=6))

    assert [o.label for o in result.failed] == ["n3"]
    assert "RuntimeError: n3 broke" in result["n3"].error
    assert {o.label for o in result.skipped} == downstream
    for name in downstream:
        outcome = result[name]
        assert outcome.status == "skipped" and outcome.result is None
        assert "`n3` failed" in outcome.error and "n3 broke" in outcome.error
        assert ("start", name) not in tracker.events  # skipped nodes never ran
    independent = {n.name for n in nodes} - downstream - {"n3"}
    assert {o.label for o in result.completed} == independent
    assert not result.ok
    with pytest.raises(OperationError, match="`n3`"):
        result.raise_for_failures()


def test_skipped_error_names_every_failed_ancestor():
    tracker = Tracker(delay=0)
    session = session_with(tracker)
    flow = Flow()
    a = flow.add_operation("track", name="a", label="a", fail=True)
    b = flow.add_operation("track", name="b", label="b", fail=True)
    mid = flow.add_operation("track", name="mid", label="mid", depends_on=[a])
    last = flow.add_operation("track", name="last", label="last", depends_on=[mid, b])
    result = anyio.run(lambda: flow.run(session))
    assert result[mid].status == "skipped" and "`a` failed" in result[mid].error
    text = result[last].error
    assert "`a` failed" in text and "`b` failed" in text and "`mid`" not in text


def test_cycle_refused_and_named():
    flow = Flow()
    a = flow.add_operation("track", name="a", label="a")
    b = flow.add_operation("track", name="b", label="b", depends_on=[a])
    c = flow.add_operation("track", name="c", label="c", depends_on=[b])
    with pytest.raises(ConfigurationError) as info:
        flow.add(a, depends_on=[c])
    assert "`c` -> `a` -> `b` -> `c`" in str(info.value)
    assert "acyclic" in str(info.value)
    assert flow.predecessors(a) == []  # graph unchanged
    with pytest.raises(ConfigurationError, match="`b` -> `b`"):
        flow.add_edge(b, b)
    assert [n.name for n in flow.order()] == ["a", "b", "c"]


def test_building_errors_are_clear():
    flow = Flow()
    flow.add_operation("track", name="same", label="x")
    with pytest.raises(ItemExistsError, match="already has a node named `same`"):
        flow.add_operation("track", name="same", label="y")
    with pytest.raises(ItemNotFoundError, match="add it first"):
        flow.add_operation("track", label="z", depends_on=["unknown"])
    with pytest.raises(TypeError, match="takes an Operation"):
        flow.add("chat")  # type: ignore[arg-type]
    # a dependency given as a new node is added with it
    up = Operation(operation="track", parameters={"label": "up"})
    down = flow.add(Operation(operation="track", parameters={"label": "down"}), depends_on=up)
    assert up in flow and flow.predecessors(down) == [up]


def test_context_merging_rules():
    session = Session()
    seen: dict[str, object] = {}

    async def grab(branch: Branch, *, key: str, **kwargs) -> str:
        seen[key] = kwargs.get("context", "<absent>")
        return key.upper()

    session.register_operation("grab", grab)
    flow = Flow()
    up = flow.add_operation("grab", name="up", key="up")
    flow.add_operation("grab", name="plain", key="plain", depends_on=[up])
    flow.add_operation("grab", name="mapping", key="mapping", context={"own": 1}, depends_on=[up])
    flow.add_operation("grab", name="text", key="text", context="notes", depends_on=[up])
    anyio.run(lambda: flow.run(session))
    assert seen["up"] == "<absent>"
    assert seen["plain"] == {"up": "UP"}
    assert seen["mapping"] == {"own": 1, "up": "UP"}
    assert seen["text"] == {"given": "notes", "up": "UP"}
    assert flow.get("mapping").parameters["context"] == {"own": 1}  # node not edited

    seen.clear()
    anyio.run(lambda: flow.run(session, context_key=None))
    assert seen["plain"] == "<absent>" and seen["text"] == "notes"


def test_branch_per_node_and_early_resolution():
    tracker = Tracker(delay=0)
    session = session_with(tracker)
    other = session.new_branch(name="other")
    flow = Flow()
    flow.add_operation("track", name="on_default", label="d")
    flow.add_operation("track", name="on_other", label="o", branch=other)
    flow.add_operation("track", name="by_name", label="n", branch="other")
    result = anyio.run(lambda: flow.run(session))
    assert result["on_default"].branch_id == str(session.default_branch.id)
    assert result["on_other"].branch_id == str(other.id)
    assert result["by_name"].branch_id == str(other.id)

    # an unknown branch is reported before any node runs
    flow.add_operation("track", name="lost", label="l", branch="nowhere")
    tracker.events.clear()
    with pytest.raises(ItemNotFoundError, match="No branch `nowhere`"):
        anyio.run(lambda: flow.run(session))
    assert tracker.events == []


def test_run_on_a_single_branch():
    branch = Branch(chat_model=iModel(provider="offline", model="scripted", responses=["x"]))
    flow = Flow()
    flow.add_operation("chat", name="ask", instruction="hi")
    result = anyio.run(lambda: flow.run(branch))
    assert result["ask"].result == "x" and result["ask"].branch_id == str(branch.id)

    elsewhere = Branch()
    flow.add_operation("chat", name="elsewhere", instruction="hi", branch=elsewhere)
    with pytest.raises(ConfigurationError, match="run it on the session"):
        anyio.run(lambda: flow.run(branch))
    with pytest.raises(ConfigurationError, match="needs a Session"):
        anyio.run(lambda: Flow().run(branch, clone_per_node=True))
    with pytest.raises(ConfigurationError, match="at least 1"):
        anyio.run(lambda: Flow().run(branch, max_concurrency=0))


def test_clone_per_node_with_a_real_model():
    calls: list[list[dict]] = []

    def model(messages, **request):
        calls.append(messages)
        return f"answer {len(calls)}"

    session = Session(
        default_branch=Branch(
            chat_model=iModel(provider="offline", model="function", function=model)
        )
    )
    base = session.default_branch
    flow = Flow()
    a = flow.add_operation("communicate", name="research_a", instruction="find A")
    b = flow.add_operation("communicate", name="research_b", instruction="find B")
    flow.add_operation("communicate", name="combine", instruction="combine", depends_on=[a, b])
    result = anyio.run(lambda: flow.run(session, clone_per_node=True, max_concurrency=2))

    assert result.ok
    used = {o.branch_id for o in result}
    assert len(used) == 3 and str(base.id) not in used
    assert len(base.messages) == 0  # nothing interleaved into the source branch
    assert all(session.get_branch(bid)._owning_session_id == session.id for bid in used)
    combine_branch = session.get_branch(result["combine"].branch_id)
    assert len(combine_branch.messages) == 2
    # the upstream answers reached the model through the instruction's context
    last_request = " ".join(str(m.get("content")) for m in calls[-1])
    assert result["research_a"].result in last_request
    assert result["research_b"].result in last_request


def test_cancelling_the_flow():
    session = Session()
    started: list[str] = []

    async def slow(branch: Branch, *, label: str, **kwargs) -> str:
        started.append(label)
        await anyio.sleep(10)
        return label

    session.register_operation("slow", slow)
    flow = Flow()
    first = flow.add_operation("slow", name="first", label="first")
    after = flow.add_operation("slow", name="after", label="after", depends_on=[first])

    async def main():
        with anyio.move_on_after(0.05):
            await flow.run(session)

    anyio.run(main)
    assert started == ["first"]
    assert first.status == "failed" and first.error == "cancelled"
    assert after.status == "pending"
    # the flow can run again afterwards
    assert not flow._running


def test_a_flow_cannot_run_twice_at_once():
    session = Session()
    gate, entered = anyio.Event(), anyio.Event()

    async def wait(branch: Branch, **kwargs) -> str:
        entered.set()
        await gate.wait()
        return "ok"

    session.register_operation("wait", wait)
    flow = Flow()
    flow.add_operation("wait", name="w")
    errors: list[str] = []

    async def main():
        async with anyio.create_task_group() as tg:
            tg.start_soon(flow.run, session)
            await entered.wait()  # the first run is under way
            try:
                await flow.run(session)
            except OperationError as exc:
                errors.append(str(exc))
            gate.set()

    anyio.run(main)
    assert errors and "already running" in errors[0]
