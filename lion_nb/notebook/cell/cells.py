"""Cell-linked turns: which cell produced a turn, and what re-running that cell does.

Every message a turn records carries ``metadata["lion"] = {"cell_id", "execution_count",
"turn", "kernel"}``; ``kernel`` names the kernel process that ran it (`KERNEL_RUN`), because
execution counts start again at 1 after a restart: ``%lion history`` marks the counts of an
earlier kernel instead of showing two different turns as the same cell. The cell id is the one the frontend sends with the execute request
(``metadata.cellId``: JupyterLab, Notebook 7, VS Code); IPython hands it to ``run_cell`` and
the ``pre_run_cell`` hook, and the kernel's parent header is the fallback. Because the tag
lives on the messages, it survives cloning, saving and loading.

Re-running a cell whose earlier turn is on the target branch follows the re-run policy:

- ``fork`` (default): the branch is forked just before that earlier turn; the fork takes the
  branch's name (so if the branch was the active one, the fork is), and the old timeline --
  the earlier turn and everything after it -- is kept under ``NAME~N``. Nothing is lost,
  nothing is duplicated. Forking a branch named with ``-b`` does not change the active one.
- ``append``: the new turn is appended; the history holds both answers.
- ``replace``: the earlier turn and every message after it are removed (lossy), then the new
  turn is appended.

A forked or replaced timeline no longer holds the earlier turn, so a CLI agent on it starts
a fresh provider session (its old session remembers the dropped turns); the old timeline
keeps the old session. A ``--system`` prompt is checked against the branch as the policy
leaves it, so re-running a cell that set one is no conflict.

A frontend that sends no cell id (a plain IPython terminal, some older clients) gives no
re-run detection: every run appends.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CellRef",
    "Rerun",
    "apply_policy",
    "current_cell",
    "messages_after_policy",
    "tag_messages",
    "turn_index",
]

TAG = "lion"
KERNEL_RUN = uuid.uuid4().hex[:12]  # this process: execution counts are only unique within it


@dataclass(frozen=True, slots=True)
class CellRef:
    """The cell a turn comes from."""

    cell_id: str | None
    execution_count: int | None


def current_cell(shell: Any, hooked_cell_id: str | None = None) -> CellRef:
    """The running cell: the id seen by ``pre_run_cell`` or sent in the request's metadata."""
    cell_id = hooked_cell_id or _parent_cell_id(shell)
    return CellRef(cell_id=cell_id, execution_count=_running_count(shell))


def _running_count(shell: Any) -> int | None:
    """The running cell's number, as its ``Out[n]`` shows it. IPython 9 increments
    ``execution_count`` before a cell runs and IPython 8 after, so read the display hook's
    ``prompt_count``, which is the cell's number in both."""
    hook = getattr(shell, "displayhook", None)
    count = getattr(hook, "prompt_count", None)
    if isinstance(count, int):
        return count
    return getattr(shell, "execution_count", None)


def _parent_cell_id(shell: Any) -> str | None:
    kernel = getattr(shell, "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return None
    try:
        parent = get_parent()
    except TypeError:
        parent = get_parent("shell")
    except Exception:
        return None
    metadata = (parent or {}).get("metadata") or {}
    value = metadata.get("cellId")
    return str(value) if value else None


def tag_messages(messages: Iterable[Any], cell: CellRef, turn_id: str) -> int:
    """Mark untagged ``messages`` as produced by ``cell``; returns how many were marked."""
    marked = 0
    for message in messages:
        if TAG in message.metadata:
            continue
        message.metadata[TAG] = {
            "cell_id": cell.cell_id,
            "execution_count": cell.execution_count,
            "turn": turn_id,
            "kernel": KERNEL_RUN,
        }
        marked += 1
    return marked


def turn_index(branch: Any, cell_id: str | None) -> int | None:
    """Index (in ``branch.messages``) of the first message a turn of ``cell_id`` recorded."""
    if not cell_id:
        return None
    for i, message in enumerate(branch.messages):
        tag = message.metadata.get(TAG)
        if isinstance(tag, dict) and tag.get("cell_id") == cell_id:
            return i
    return None


def _truncate(branch: Any, index: int) -> list[Any]:
    doomed = list(branch.messages)[index:]
    for message in doomed:
        branch.msgs.remove_message(message.id)
    return doomed


def sibling_name(name: str, taken: Iterable[str]) -> str:
    """``NAME~1``, ``NAME~2``, ...: the first name not ``taken``."""
    used = set(taken)
    n = 1
    while f"{name}~{n}" in used:
        n += 1
    return f"{name}~{n}"


@dataclass(frozen=True, slots=True)
class Rerun:
    """Where a turn goes after the re-run policy: its branch, what the policy did (``None``
    when the cell had no earlier turn there or the policy is ``append``) and, for a fork, the
    name the old timeline is kept under."""

    branch: Any
    action: str | None = None  # "fork" or "replace"
    kept_as: str | None = None


def messages_after_policy(branch: Any, cell: CellRef, policy: str) -> list[Any]:
    """The messages the turn's branch will hold once ``policy`` is applied (nothing changes)."""
    messages = list(branch.messages)
    index = turn_index(branch, cell.cell_id)
    if index is None or policy == "append":
        return messages
    return messages[:index]


def apply_policy(session: Any, branch: Any, cell: CellRef, policy: str) -> Rerun:
    """Apply the re-run ``policy`` for ``cell`` on ``branch``.

    ``session`` must hold ``branch``; a fork is included in it under the branch's name.
    """
    index = turn_index(branch, cell.cell_id)
    if index is None or policy == "append":
        return Rerun(branch)
    if policy == "replace":
        _truncate(branch, index)
        return Rerun(branch, "replace")
    fork = branch.clone()
    _truncate(fork, index)
    name = branch.name
    old_name = sibling_name(name, (b.name for b in session.branches if b.name))
    branch.name = old_name
    fork.name = name
    session.include_branches(fork)
    return Rerun(fork, "fork", old_name)
