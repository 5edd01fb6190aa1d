"""lion_nb: language-model conversations you can see, branch, test and keep.

Every public name is importable from here and loaded on first use, so ``import lion_nb``
(and ``%load_ext lion_nb``) stays cheap: no HTTP client, widget or Markdown code is imported
until something needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports, register_upcall

__version__ = "0.1.0"

# The one list of public names: name -> module that defines it, grouped as in DESIGN.md. It
# drives ``__getattr__``, ``__dir__`` and ``__all__``; the TYPE_CHECKING block at the end
# repeats it for static checkers, which cannot read a dict (tests/test_public_api.py keeps
# the two equal).
_EXPORTS: dict[str, str] = {
    # conversation
    "Session": "lion_nb.session.session",
    "Branch": "lion_nb.session.branch",
    "current_session": "lion_nb.notebook.state.session",
    # cost
    "Budget": "lion_nb.runtime.budget",
    "Cost": "lion_nb.runtime.ledger",
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
    # the notebook agent
    "notebook_tools": "lion_nb.notebook.agent.tools",
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
    "ExtensionError": "lion_nb.errors",
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


register_upcall("evaluate", _evaluate)


if TYPE_CHECKING:  # the same names, spelled out for static checkers (a test keeps them equal)
    from ._sentinel import Undefined as Undefined
    from .context.convert import register_ai_repr as register_ai_repr
    from .errors import AuthenticationError as AuthenticationError
    from .errors import BadRequestError as BadRequestError
    from .errors import BudgetExceeded as BudgetExceeded
    from .errors import CLIError as CLIError
    from .errors import ConfigurationError as ConfigurationError
    from .errors import ContextWindowError as ContextWindowError
    from .errors import ExecutionError as ExecutionError
    from .errors import ExtensionError as ExtensionError
    from .errors import ItemExistsError as ItemExistsError
    from .errors import ItemNotFoundError as ItemNotFoundError
    from .errors import LionError as LionError
    from .errors import MCPError as MCPError
    from .errors import NotFoundError as NotFoundError
    from .errors import OperationError as OperationError
    from .errors import OverloadedError as OverloadedError
    from .errors import ParseError as ParseError
    from .errors import PermissionDeniedError as PermissionDeniedError
    from .errors import ProviderConnectionError as ProviderConnectionError
    from .errors import ProviderError as ProviderError
    from .errors import ProviderTimeoutError as ProviderTimeoutError
    from .errors import QuotaExceededError as QuotaExceededError
    from .errors import RateLimitError as RateLimitError
    from .errors import ScriptExhaustedError as ScriptExhaustedError
    from .errors import ServerError as ServerError
    from .errors import StreamInterruptedError as StreamInterruptedError
    from .mcp.server import MCPServer as MCPServer
    from .models.imodel import iModel as iModel
    from .models.imodel import iModelManager as iModelManager
    from .models.stream import StreamChunk as StreamChunk
    from .notebook.agent.tools import notebook_tools as notebook_tools
    from .notebook.extension import load_ipython_extension as load_ipython_extension
    from .notebook.extension import unload_ipython_extension as unload_ipython_extension
    from .notebook.state.session import current_session as current_session
    from .operations.manager import OperationManager as OperationManager
    from .operations.node import Operation as Operation
    from .operations.types import ActionParam as ActionParam
    from .operations.types import ChatParam as ChatParam
    from .operations.types import InterpretParam as InterpretParam
    from .operations.types import Middle as Middle
    from .operations.types import ParseParam as ParseParam
    from .operations.types import RunParam as RunParam
    from .protocols.actions import ActionManager as ActionManager
    from .protocols.actions import Tool as Tool
    from .protocols.context_providers import ContextProvider as ContextProvider
    from .protocols.context_providers import ContextProviderRegistry as ContextProviderRegistry
    from .protocols.context_providers import ProviderReport as ProviderReport
    from .protocols.element import Element as Element
    from .protocols.logs import DataLogger as DataLogger
    from .protocols.logs import DataLoggerConfig as DataLoggerConfig
    from .protocols.logs import Log as Log
    from .protocols.memory import InMemoryStore as InMemoryStore
    from .protocols.memory import MemoryStore as MemoryStore
    from .protocols.message_manager import MessageManager as MessageManager
    from .protocols.messages import ActionRequest as ActionRequest
    from .protocols.messages import ActionResponse as ActionResponse
    from .protocols.messages import AssistantResponse as AssistantResponse
    from .protocols.messages import Instruction as Instruction
    from .protocols.messages import MessageRole as MessageRole
    from .protocols.messages import RoledMessage as RoledMessage
    from .protocols.messages import System as System
    from .protocols.pile import Pile as Pile
    from .protocols.progression import Progression as Progression
    from .protocols.signals import CapabilityViolation as CapabilityViolation
    from .protocols.signals import EmissionRejected as EmissionRejected
    from .protocols.signals import MessageAdded as MessageAdded
    from .protocols.signals import RunEnd as RunEnd
    from .protocols.signals import RunFailed as RunFailed
    from .protocols.signals import RunStart as RunStart
    from .protocols.signals import Signal as Signal
    from .protocols.signals import StructuredOutput as StructuredOutput
    from .runtime.budget import Budget as Budget
    from .runtime.ledger import Cost as Cost
    from .session.branch import Branch as Branch
    from .session.session import Session as Session
