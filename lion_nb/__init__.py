"""lion_nb: language-model conversations you can see, branch, test and keep.

Every public name is importable from here and loaded on first use, so ``import lion_nb``
(and ``%load_ext lion_nb``) stays cheap: no HTTP client, widget or Markdown code is imported
until something needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

__version__ = "0.1.0"

# name -> module that defines it, grouped as in DESIGN.md
_EXPORTS: dict[str, str] = {
    # conversation
    "Session": "lion_nb.session.session",
    "Branch": "lion_nb.session.branch",
    "current_session": "lion_nb.notebook.state.session",
    # cost
    "Budget": "lion_nb.session.budget",
    "Cost": "lion_nb.session.ledger",
    # models
    "iModel": "lion_nb.models.imodel",
    "iModelManager": "lion_nb.models.imodel",
    "StreamChunk": "lion_nb.models.stream",
    # tools and operations
    "Tool": "lion_nb.protocols.actions",
    "ActionManager": "lion_nb.protocols.actions",
    "MCPServer": "lion_nb.mcp.server",
    "Operation": "lion_nb.operations.node",
    "OperationManager": "lion_nb.operations.manager",
    "ChatParam": "lion_nb.operations.types",
    "RunParam": "lion_nb.operations.types",
    "ParseParam": "lion_nb.operations.types",
    "ActionParam": "lion_nb.operations.types",
    "InterpretParam": "lion_nb.operations.types",
    "Middle": "lion_nb.operations.types",
    # messages
    "RoledMessage": "lion_nb.protocols.messages",
    "System": "lion_nb.protocols.messages",
    "Instruction": "lion_nb.protocols.messages",
    "AssistantResponse": "lion_nb.protocols.messages",
    "ActionRequest": "lion_nb.protocols.messages",
    "ActionResponse": "lion_nb.protocols.messages",
    "MessageRole": "lion_nb.protocols.messages",
    "MessageManager": "lion_nb.protocols.message_manager",
    # containers
    "Element": "lion_nb.protocols.element",
    "Pile": "lion_nb.protocols.pile",
    "Progression": "lion_nb.protocols.progression",
    # signals
    "Signal": "lion_nb.protocols.signals",
    "RunStart": "lion_nb.protocols.signals",
    "RunEnd": "lion_nb.protocols.signals",
    "RunFailed": "lion_nb.protocols.signals",
    "MessageAdded": "lion_nb.protocols.signals",
    "StructuredOutput": "lion_nb.protocols.signals",
    "CapabilityViolation": "lion_nb.protocols.signals",
    "EmissionRejected": "lion_nb.protocols.signals",
    # memory, context providers, logs
    "MemoryStore": "lion_nb.protocols.memory",
    "InMemoryStore": "lion_nb.protocols.memory",
    "ContextProvider": "lion_nb.protocols.context_providers",
    "ContextProviderRegistry": "lion_nb.protocols.context_providers",
    "ProviderReport": "lion_nb.protocols.context_providers",
    "DataLogger": "lion_nb.protocols.logs",
    "DataLoggerConfig": "lion_nb.protocols.logs",
    "Log": "lion_nb.protocols.logs",
    # values as context
    "register_ai_repr": "lion_nb.context.convert",
    # sentinels
    "Undefined": "lion_nb._sentinel",
    # errors
    "LionError": "lion_nb.errors",
    "ConfigurationError": "lion_nb.errors",
    "ItemNotFoundError": "lion_nb.errors",
    "ItemExistsError": "lion_nb.errors",
    "ExecutionError": "lion_nb.errors",
    "BudgetExceeded": "lion_nb.errors",
    "OperationError": "lion_nb.errors",
    "ParseError": "lion_nb.errors",
    "ScriptExhaustedError": "lion_nb.errors",
    "MCPError": "lion_nb.errors",
    "ProviderError": "lion_nb.errors",
    "AuthenticationError": "lion_nb.errors",
    "PermissionDeniedError": "lion_nb.errors",
    "NotFoundError": "lion_nb.errors",
    "BadRequestError": "lion_nb.errors",
    "ContextWindowError": "lion_nb.errors",
    "RateLimitError": "lion_nb.errors",
    "QuotaExceededError": "lion_nb.errors",
    "ServerError": "lion_nb.errors",
    "OverloadedError": "lion_nb.errors",
    "StreamInterruptedError": "lion_nb.errors",
    "ProviderConnectionError": "lion_nb.errors",
    "ProviderTimeoutError": "lion_nb.errors",
    "CLIError": "lion_nb.errors",
    # IPython extension entry points
    "load_ipython_extension": "lion_nb.notebook.extension",
    "unload_ipython_extension": "lion_nb.notebook.extension",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


def _evaluate(session, cases, prompt=None, **kwargs):  # type: ignore[no-untyped-def]
    """`Session.evaluate`, wired at the package root: the evaluation layer (`lion_nb.evals`)
    sits above the core it drives, so the core reaches it only through here (ADR-0111)."""
    from .evals.run import evaluate

    return evaluate(session, cases, prompt, **kwargs)


if TYPE_CHECKING:  # static analysers see the real names
    from ._sentinel import Undefined
    from .context.convert import register_ai_repr
    from .errors import *
    from .models.imodel import iModel, iModelManager
    from .models.stream import StreamChunk
    from .operations.manager import OperationManager
    from .operations.node import Operation
    from .operations.types import (
        ActionParam,
        ChatParam,
        InterpretParam,
        Middle,
        ParseParam,
        RunParam,
    )
    from .protocols.actions import ActionManager, Tool
    from .protocols.context_providers import (
        ContextProvider,
        ContextProviderRegistry,
        ProviderReport,
    )
    from .protocols.element import Element
    from .protocols.logs import DataLogger, DataLoggerConfig, Log
    from .protocols.memory import InMemoryStore, MemoryStore
    from .protocols.message_manager import MessageManager
    from .protocols.messages import (
        ActionRequest,
        ActionResponse,
        AssistantResponse,
        Instruction,
        MessageRole,
        RoledMessage,
        System,
    )
    from .protocols.pile import Pile
    from .protocols.progression import Progression
    from .protocols.signals import (
        CapabilityViolation,
        EmissionRejected,
        MessageAdded,
        RunEnd,
        RunFailed,
        RunStart,
        Signal,
        StructuredOutput,
    )
    from .session.branch import Branch
    from .session.budget import Budget
    from .session.ledger import Cost
    from .session.session import Session
