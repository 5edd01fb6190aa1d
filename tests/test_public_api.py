"""The public surface: what `lion_nb` exports, and that importing it stays cheap."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

import lion_nb
import lion_nb.errors

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
    # the notebook agent
    "notebook_tools",
    # errors
    "LionError", "ConfigurationError", "ItemNotFoundError", "ItemExistsError", "ExecutionError",
    "OperationError", "ExtensionError", "ParseError", "ScriptExhaustedError", "ProviderError",
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
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        lion_nb.Nope  # noqa: B018


def _type_checking_imports() -> dict[str, str]:
    """name -> absolute module, as the ``if TYPE_CHECKING:`` block of lion_nb/__init__.py
    imports it (read with `ast`, the way a static checker reads it)."""
    tree = ast.parse(Path(lion_nb.__file__).read_text(encoding="utf-8"))
    blocks = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    ]  # fmt: skip
    assert len(blocks) == 1
    names: dict[str, str] = {}
    for stmt in blocks[0].body:
        assert isinstance(stmt, ast.ImportFrom) and stmt.level == 1, ast.unparse(stmt)
        for alias in stmt.names:
            # `X as X` is what marks a re-export for mypy (no_implicit_reexport) and pyright
            assert alias.name != "*" and alias.asname == alias.name, ast.unparse(stmt)
            assert alias.name not in names, f"{alias.name} imported twice"
            names[alias.name] = f"lion_nb.{stmt.module}"
    return names


def test_type_checkers_see_exactly_the_lazy_exports():
    assert _type_checking_imports() == lion_nb._EXPORTS


def test_every_name_in_all_imports_from_the_package():
    for name in lion_nb.__all__:
        namespace: dict[str, object] = {}
        exec(f"from lion_nb import {name}", namespace)
        source = importlib.import_module(lion_nb._EXPORTS[name])
        assert namespace[name] is getattr(source, name), name
        assert name in dir(lion_nb), name


def test_each_export_is_public_where_it_is_defined():
    for name, module in lion_nb._EXPORTS.items():
        assert name in importlib.import_module(module).__all__, f"{module} does not export {name}"


def test_every_error_class_is_exported():
    """Every exception class lion_nb.errors defines is in its `__all__` and at the top."""
    defined = {
        name
        for name, value in vars(lion_nb.errors).items()
        if inspect.isclass(value) and issubclass(value, BaseException)
        and value.__module__ == "lion_nb.errors" and not name.startswith("_")
    }  # fmt: skip
    assert defined == set(lion_nb.errors.__all__)
    assert defined <= set(lion_nb.__all__), sorted(defined - set(lion_nb.__all__))


def test_a_public_subclass_of_an_export_is_exported():
    """Families stay whole: a class that a source module of the exports lists in its own
    `__all__` and that derives from an exported class (an error, a signal, a message) is
    exported too."""
    exported = [getattr(lion_nb, name) for name in lion_nb.__all__]
    exported_classes = tuple(value for value in exported if inspect.isclass(value))
    missing = []
    for module_name in sorted(set(lion_nb._EXPORTS.values())):
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if name in lion_nb.__all__ or not inspect.isclass(value):
                continue
            if any(base in exported_classes for base in value.__mro__[1:]):
                missing.append(f"{module_name}.{name}")
    assert missing == []


def test_extension_error_is_importable_from_the_top():
    from lion_nb import ExtensionError
    from lion_nb.extensions import ExtensionError as from_extensions

    assert lion_nb.ExtensionError is ExtensionError is from_extensions
    assert issubclass(ExtensionError, lion_nb.LionError)


@pytest.mark.parametrize("package", ["lion_nb.operations", "lion_nb.notebook", "lion_nb.context"])
def test_a_name_exported_twice_is_one_object(package):
    sub = importlib.import_module(package)
    shared = set(sub.__all__) & set(lion_nb.__all__)
    assert shared
    for name in shared:
        assert getattr(sub, name) is getattr(lion_nb, name), name


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


def test_import_alone_loads_only_the_loader():
    probe = (
        "import json, sys\nimport lion_nb\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('lion_nb', 'pydantic')))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == ["lion_nb", "lion_nb._lazy"]


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
