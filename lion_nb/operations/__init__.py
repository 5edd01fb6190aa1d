"""The operation implementations behind the Branch facade (ADR-0021 D3), loaded on use.

``from lion_nb.operations import chat, communicate, run, run_and_collect, operate`` gives the
implementation-level functions with the ADR's signatures.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "chat": "lion_nb.operations.chat_op",
    "communicate": "lion_nb.operations.communicate_op",
    "run": "lion_nb.operations.run_op",
    "run_and_collect": "lion_nb.operations.run_op",
    "operate": "lion_nb.operations.operate_op",
    "act": "lion_nb.operations.act_op",
    "parse": "lion_nb.operations.parse_op",
    "select": "lion_nb.operations.select_op",
    "interpret": "lion_nb.operations.interpret_op",
    "ReAct": "lion_nb.operations.react",
    "ReActStream": "lion_nb.operations.react",
    "Operation": "lion_nb.operations.node",
    "BranchOperations": "lion_nb.operations.node",
    "Flow": "lion_nb.operations.flow",
    "FlowResult": "lion_nb.operations.flow",
    "OperationManager": "lion_nb.operations.manager",
    "ChatParam": "lion_nb.operations.types",
    "RunParam": "lion_nb.operations.types",
    "ParseParam": "lion_nb.operations.types",
    "ActionParam": "lion_nb.operations.types",
    "InterpretParam": "lion_nb.operations.types",
    "Middle": "lion_nb.operations.types",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
