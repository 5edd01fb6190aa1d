"""`Flow`: run a DAG of `Operation` nodes concurrently, within a bound (ADR-0023).

Decisions (the ADR says why):

- The graph is kept acyclic as it is built: an edge that would close a cycle is refused at
  `add` / `add_edge`, with the cycle spelled out; the graph is left unchanged.
- `run` starts every node as soon as all its predecessors have settled, at most
  ``max_concurrency`` at a time (an anyio `CapacityLimiter` inside one task group).
- Results travel along edges: a node with predecessors is called with ``context`` (the
  ``context_key``) set to ``{predecessor label: result}``, merged over its own ``context``
  when that is a mapping, or as ``{"given": own, ...}`` when it is anything else. A label is
  the node's ``name`` or ``<operation>#<id prefix>``; names are unique within a flow.
- A failed node fails only its dependents, transitively: each is marked ``"skipped"`` (it
  never ran) with an error naming the failed ancestor(s). Every other node still runs; `run`
  itself does not raise for a node's failure -- read the `FlowResult` or call
  `FlowResult.raise_for_failures`. Cancelling `run` cancels the running nodes.
- Branch per node: its ``branch_id`` (resolved in the session), else the default branch (or
  the branch given to `run`). ``clone_per_node=True`` runs each node on a fresh
  `Session.split` of that branch, so concurrent model calls never interleave one history.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

import anyio

from ..errors import ConfigurationError, ItemExistsError, ItemNotFoundError, OperationError
from .node import Operation, OperationStatus

if TYPE_CHECKING:
    from ..session.branch import Branch


class BranchHolder(Protocol):
    """A session as a flow runs on it (a `lion_nb.session.session.Session`, above this layer:
    named by its shape): its branches by id, its default one, and a clone joining it."""

    @property
    def id(self) -> UUID: ...
    @property
    def default_branch(self) -> Branch | None: ...
    def get_branch(self, ref: Branch | UUID | str) -> Branch: ...
    def split(self, branch: Branch | UUID | str | None = None) -> Branch: ...


__all__ = ["Flow", "FlowResult", "NodeOutcome"]

NodeRef = Operation | UUID | str


@dataclass(frozen=True, slots=True)
class NodeOutcome:
    """What one node did in one flow run."""

    node_id: UUID
    label: str
    operation: str
    status: OperationStatus
    result: Any = None
    error: str | None = None
    branch_id: str | None = None
    started_at: float | None = None
    ended_at: float | None = None


@dataclass(slots=True)
class FlowResult:
    """Every node's outcome, in topological order, plus run-wide figures."""

    outcomes: dict[UUID, NodeOutcome] = field(default_factory=dict)
    peak_concurrency: int = 0
    duration: float = 0.0

    def __getitem__(self, ref: NodeRef) -> NodeOutcome:
        if isinstance(ref, Operation):
            ref = ref.id
        if isinstance(ref, UUID) and ref in self.outcomes:
            return self.outcomes[ref]
        for outcome in self.outcomes.values():
            if str(outcome.node_id) == ref or outcome.label == ref:
                return outcome
        raise ItemNotFoundError(f"No node `{ref}` in this flow result.")

    def __iter__(self) -> Iterator[NodeOutcome]:
        return iter(self.outcomes.values())

    def __len__(self) -> int:
        return len(self.outcomes)

    def _with(self, status: str) -> list[NodeOutcome]:
        return [o for o in self.outcomes.values() if o.status == status]

    @property
    def completed(self) -> list[NodeOutcome]:
        return self._with("completed")

    @property
    def failed(self) -> list[NodeOutcome]:
        return self._with("failed")

    @property
    def skipped(self) -> list[NodeOutcome]:
        return self._with("skipped")

    @property
    def ok(self) -> bool:
        return all(o.status == "completed" for o in self.outcomes.values())

    # Any: each node's result, of its operation's own type
    @property
    def results(self) -> dict[str, Any]:
        """``{label: result}`` of the completed nodes."""
        return {o.label: o.result for o in self.completed}

    def raise_for_failures(self) -> None:
        """Raise `OperationError` listing the failed nodes, if any failed."""
        failed = self.failed
        if failed:
            lines = "; ".join(f"`{o.label}`: {o.error}" for o in failed)
            raise OperationError(
                f"{len(failed)} node(s) failed ({lines}); "
                f"{len(self.skipped)} dependent node(s) were skipped."
            )

    def __repr__(self) -> str:
        return (
            f"FlowResult(completed={len(self.completed)}, failed={len(self.failed)}, "
            f"skipped={len(self.skipped)}, peak_concurrency={self.peak_concurrency})"
        )


class Flow:
    """A directed acyclic graph of `Operation` nodes. See the module docstring."""

    def __init__(self, nodes: Iterable[Operation] = ()) -> None:
        self._nodes: dict[UUID, Operation] = {}
        self._preds: dict[UUID, list[UUID]] = {}
        self._succs: dict[UUID, list[UUID]] = {}
        self._running = False
        for node in nodes:
            self.add(node)

    # -- building ----------------------------------------------------------------------------------
    def add(self, node: Operation, depends_on: Iterable[NodeRef] = ()) -> Operation:
        """Add ``node`` (if new) and make it depend on ``depends_on``. A dependency may be a
        node (added here when new), or the id or name of a node already in the flow."""
        if not isinstance(node, Operation):
            raise TypeError(f"`Flow.add` takes an Operation node, got {type(node).__name__}.")
        if isinstance(depends_on, (Operation, UUID, str)):
            depends_on = [depends_on]
        if node.id not in self._nodes:
            self._check_name(node)
            self._nodes[node.id] = node
            self._preds[node.id] = []
            self._succs[node.id] = []
        for dep in depends_on:
            if isinstance(dep, Operation) and dep.id not in self._nodes:
                self.add(dep)
            self.add_edge(dep, node)
        return node

    def add_operation(
        self,
        operation: str,
        *,
        depends_on: Iterable[NodeRef] = (),
        name: str | None = None,
        branch: Any = None,  # Any: a Branch, its id or name (`Operation.branch_id` reads it)
        **parameters: Any,  # Any: the operation's own keywords, each of its own type
    ) -> Operation:
        """Shorthand: build an `Operation` from a name and keyword parameters and add it."""
        node = Operation(operation=operation, parameters=parameters, name=name, branch_id=branch)
        return self.add(node, depends_on)

    def add_edge(self, upstream: NodeRef, downstream: NodeRef) -> None:
        """``downstream`` runs after ``upstream`` and receives its result. Refused (graph
        unchanged) when it would close a cycle."""
        up, down = self.get(upstream), self.get(downstream)
        if up.id in self._preds[down.id]:
            return
        path = self._path(down.id, up.id)
        if path is not None:
            cycle = " -> ".join(f"`{self._nodes[i].label}`" for i in [up.id, *path])
            raise ConfigurationError(
                f"Making `{down.label}` depend on `{up.label}` would close a cycle: {cycle}. "
                "A flow must be acyclic; drop one of these dependencies."
            )
        self._preds[down.id].append(up.id)
        self._succs[up.id].append(down.id)

    def _check_name(self, node: Operation) -> None:
        if node.name is not None and any(n.name == node.name for n in self._nodes.values()):
            raise ItemExistsError(
                f"This flow already has a node named `{node.name}`; node names label results "
                "and upstream context, so they must be unique. Rename one."
            )

    def _path(self, start: UUID, goal: UUID) -> list[UUID] | None:
        """A successor path from ``start`` to ``goal`` (both included), or ``None``."""
        stack: list[tuple[UUID, list[UUID]]] = [(start, [start])]
        seen: set[UUID] = set()
        while stack:
            current, path = stack.pop()
            if current == goal:
                return path
            if current in seen:
                continue
            seen.add(current)
            stack.extend((nxt, [*path, nxt]) for nxt in self._succs[current])
        return None

    # -- reading -----------------------------------------------------------------------------------
    def get(self, ref: NodeRef) -> Operation:
        """A node of this flow by object, id, id string or name."""
        if isinstance(ref, Operation):
            key: Any = ref.id
        elif isinstance(ref, UUID):
            key = ref
        elif isinstance(ref, str):
            named = [n for n in self._nodes.values() if n.name == ref or str(n.id) == ref]
            if named:
                return named[0]
            key = ref
        else:
            raise TypeError(f"A node reference is an Operation, a UUID or a name; got {ref!r}.")
        if key not in self._nodes:
            raise ItemNotFoundError(
                f"No node `{ref}` in this flow; add it first with `flow.add(node)`."
            )
        return self._nodes[key]

    @property
    def nodes(self) -> list[Operation]:
        return list(self._nodes.values())

    def predecessors(self, ref: NodeRef) -> list[Operation]:
        return [self._nodes[i] for i in self._preds[self.get(ref).id]]

    def successors(self, ref: NodeRef) -> list[Operation]:
        return [self._nodes[i] for i in self._succs[self.get(ref).id]]

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, ref: object) -> bool:
        try:
            self.get(ref)  # type: ignore[arg-type]
        except (ItemNotFoundError, TypeError):
            return False
        return True

    def order(self) -> list[Operation]:
        """The nodes in a topological order (stable: insertion order among ready nodes)."""
        indegree = {i: len(p) for i, p in self._preds.items()}
        ready = [i for i in self._nodes if indegree[i] == 0]
        ordered: list[UUID] = []
        while ready:
            current = ready.pop(0)
            ordered.append(current)
            for nxt in self._succs[current]:
                indegree[nxt] -= 1
                if indegree[nxt] == 0:
                    ready.append(nxt)
        return [self._nodes[i] for i in ordered]

    def __repr__(self) -> str:
        edges = sum(len(p) for p in self._preds.values())
        return f"Flow(nodes={len(self._nodes)}, edges={edges})"

    # -- running -----------------------------------------------------------------------------------
    async def run(
        self,
        target: BranchHolder | Branch,
        *,
        max_concurrency: int = 8,
        context_key: str | None = "context",
        clone_per_node: bool = False,
    ) -> FlowResult:
        """Run every node on ``target`` (a Session, or one Branch for all nodes) and return
        each node's outcome. ``context_key=None`` passes no upstream results."""
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
            raise TypeError(f"`max_concurrency` is a positive int, got {max_concurrency!r}.")
        if max_concurrency < 1:
            raise ConfigurationError(
                f"`max_concurrency` must be at least 1, got {max_concurrency}."
            )
        if self._running:
            raise OperationError("This flow is already running; wait for it to finish first.")
        plan = self._plan(target, clone_per_node)
        run = _FlowRun(self, target, plan, max_concurrency, context_key, clone_per_node)
        self._running = True
        try:
            return await run.execute()
        finally:
            self._running = False

    def _plan(self, target: Any, clone_per_node: bool) -> dict[UUID, Branch]:
        """The branch each node runs on (before cloning), resolved before anything runs."""
        is_session = hasattr(target, "get_branch") and hasattr(target, "split")
        if not is_session and not hasattr(target, "get_operation"):
            raise TypeError(f"`Flow.run` takes a Session or a Branch, got {type(target).__name__}.")
        if clone_per_node and not is_session:
            raise ConfigurationError(
                "`clone_per_node=True` needs a Session to include the clones in (so they keep "
                "its registered operations); run the flow on `session`, not on a branch."
            )
        plan: dict[UUID, Branch] = {}
        for node in self._nodes.values():
            if is_session:
                if node.branch_id is not None:
                    plan[node.id] = target.get_branch(node.branch_id)
                elif target.default_branch is not None:
                    plan[node.id] = target.default_branch
                else:
                    raise ConfigurationError(
                        f"Node `{node.label}` names no branch and the session has no default "
                        "branch; create one with `session.new_branch()`."
                    )
            else:
                if node.branch_id is not None and node.branch_id != str(target.id):
                    raise ConfigurationError(
                        f"Node `{node.label}` asks for branch `{node.branch_id}`, but the flow "
                        f"runs on branch `{target.id}` alone; run it on the session instead."
                    )
                plan[node.id] = target
        return plan


class _FlowRun:
    """The state of one `Flow.run`: events per node, the limiter, the running count."""

    def __init__(
        self,
        flow: Flow,
        target: Any,
        plan: dict[UUID, Branch],
        max_concurrency: int,
        context_key: str | None,
        clone_per_node: bool,
    ):
        self.flow, self.target, self.plan = flow, target, plan
        self.limiter = anyio.CapacityLimiter(max_concurrency)
        self.context_key, self.clone_per_node = context_key, clone_per_node
        self.settled = {i: anyio.Event() for i in flow._nodes}
        self.failed_roots: dict[UUID, list[Operation]] = {}
        self.ran_on: dict[UUID, str] = {}
        self.running = self.peak = 0

    async def execute(self) -> FlowResult:
        order = self.flow.order()
        for node in order:
            node.reset()
        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for node in order:
                tg.start_soon(self._run_node, node)
        result = FlowResult(peak_concurrency=self.peak, duration=time.perf_counter() - started)
        for node in order:
            result.outcomes[node.id] = NodeOutcome(
                node_id=node.id,
                label=node.label,
                operation=node.operation,
                status=node.status,
                result=node.result,
                error=node.error,
                branch_id=self.ran_on.get(node.id),
                started_at=node.started_at,
                ended_at=node.ended_at,
            )
        return result

    async def _run_node(self, node: Operation) -> None:
        try:
            preds = [self.flow._nodes[i] for i in self.flow._preds[node.id]]
            for pred in preds:
                await self.settled[pred.id].wait()
            roots = self._failed_ancestors(preds)
            if roots:
                self.failed_roots[node.id] = roots
                node.status = "skipped"
                causes = "; ".join(f"`{r.label}` failed ({r.error})" for r in roots)
                node.error = f"Skipped: upstream node {causes}."
                return
            parameters = self._parameters(node, preds)
            async with self.limiter:
                branch = self.plan[node.id]
                if self.clone_per_node:
                    branch = self.target.split(branch)
                self.ran_on[node.id] = str(branch.id)
                self.running += 1
                self.peak = max(self.peak, self.running)
                try:
                    await node.invoke(branch, parameters=parameters)
                except Exception:
                    pass  # recorded on the node; only its dependents are affected
                finally:
                    self.running -= 1
        finally:
            self.settled[node.id].set()

    def _failed_ancestors(self, preds: list[Operation]) -> list[Operation]:
        """The failed nodes upstream of a node, through any skipped ones."""
        roots: list[Operation] = []
        for pred in preds:
            if pred.status == "failed":
                found = [pred]
            elif pred.status == "skipped":
                found = self.failed_roots.get(pred.id, [])
            else:
                continue
            roots.extend(r for r in found if r not in roots)
        return roots

    def _parameters(self, node: Operation, preds: list[Operation]) -> dict[str, Any]:
        parameters = dict(node.parameters)
        key = self.context_key
        if not preds or key is None:
            return parameters
        upstream = {pred.label: pred.result for pred in preds}
        own = parameters.get(key)
        if own is None:
            parameters[key] = upstream
        elif isinstance(own, Mapping):
            parameters[key] = {**own, **upstream}
        else:
            parameters[key] = {"given": own, **upstream}
        return parameters
