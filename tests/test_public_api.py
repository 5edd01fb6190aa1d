"""The public surface: what `lion_nb` exports, and that importing it stays cheap."""

from __future__ import annotations

import json
import subprocess
import sys

import lion_nb

EXPECTED = {
    # conversation and notebook
    "Session", "Branch", "current_session", "load_ipython_extension", "unload_ipython_extension",
    # cost
    "Budget", "Cost", "BudgetExceeded",
    # models and tools
    "iModel", "iModelManager", "StreamChunk", "Tool", "ActionManager", "MCPServer",
    # operations
    "Operation", "OperationManager", "ChatParam", "RunParam", "ParseParam", "ActionParam",
    "InterpretParam", "Middle",
    # messages and containers
    "RoledMessage", "System", "Instruction", "AssistantResponse", "ActionRequest",
    "ActionResponse", "MessageRole", "MessageManager", "Element", "Pile", "Progression",
    # signals
    "Signal", "RunStart", "RunEnd", "RunFailed", "MessageAdded", "StructuredOutput",
    "CapabilityViolation", "EmissionRejected",
    # memory, context, logs
    "MemoryStore", "InMemoryStore", "ContextProvider", "ContextProviderRegistry",
    "ProviderReport", "DataLogger", "DataLoggerConfig", "Log", "Undefined",
    # values as context
    "register_ai_repr",
    # errors
    "LionError", "ConfigurationError", "ItemNotFoundError", "ItemExistsError", "ExecutionError",
    "OperationError", "ParseError", "ScriptExhaustedError", "ProviderError",
    "AuthenticationError", "PermissionDeniedError", "NotFoundError", "BadRequestError",
    "ContextWindowError", "RateLimitError", "QuotaExceededError", "ServerError",
    "OverloadedError", "StreamInterruptedError", "ProviderConnectionError",
    "ProviderTimeoutError", "CLIError", "MCPError",
}  # fmt: skip


def test_all_is_pinned():
    assert set(lion_nb.__all__) == EXPECTED


def test_every_public_name_resolves():
    for name in lion_nb.__all__:
        assert getattr(lion_nb, name) is not None, name


def test_unknown_attribute_is_an_attribute_error():
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        lion_nb.Nope  # noqa: B018


def test_operations_exports_the_implementation_functions():
    from lion_nb import operations

    for name in ("chat", "communicate", "run", "run_and_collect", "operate"):
        assert callable(getattr(operations, name)), name


_PROBE = """
import json, sys
import lion_nb
from lion_nb import Branch, Session, iModel
#USE
heavy = [m.split('.')[0] for m in sys.modules if m.split('.')[0] in ('httpx', 'httpx_sse', 'ipywidgets', 'IPython', 'markdown_it', 'tenacity', 'mcp')]
print(json.dumps(sorted(set(heavy))))
"""


def test_import_loads_no_http_widget_or_ipython_module():
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_using_an_http_model_is_what_loads_httpx():
    constructed = _PROBE.replace(
        "#USE", "m = iModel(provider='ollama', model='x', base_url='http://127.0.0.1:9/v1')\n#USE"
    )
    used = constructed.replace(
        "#USE",
        "import anyio\nfrom lion_nb.models.endpoints import ChatRequest\n"
        "anyio.run(m.invoke, ChatRequest(messages=[{'role': 'user', 'content': 'x'}]))",
    )
    out = subprocess.run([sys.executable, "-c", used], capture_output=True, text=True, check=True)
    assert "httpx" in json.loads(out.stdout)
