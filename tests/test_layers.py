"""The import graph of lion_nb has no circles, so each layer can be read, tested and changed
from the bottom up (docs/adr/0108-notebook-layers.md, docs/adr/0113-layers-and-branch-parts.md).

Every import counts -- module-level and lazy ones inside functions alike, since a lazy import
is still a dependency. Two levels are checked:

- **modules**: no two modules of lion_nb import each other, directly or through others;
- **packages**: inside every package, its parts (sub-packages and modules) import each other
  one way only -- ``lion_nb``'s own sub-packages included, ``lion_nb.notebook``'s
  ``cell`` / ``commands`` / ``state`` too.

At run time (imports under ``if TYPE_CHECKING:`` left out) there is no circle and no import
of a layer above, with no exception. The type-level graph (those imports counted too) has
the same two properties but for one edge: `lion_nb.operations` names `Branch`
(``lion_nb.session.branch``) under ``TYPE_CHECKING``, the ADR-0021 facade its functions
take. `LAYERS` below is the layer order, written once.

A last check keeps `Branch`'s private state in `lion_nb/session/branch.py`: no other module
reads ``__pydantic_private__`` of anything but ``self``, nor an underscore attribute of a
branch; they use its parts (``branch.spend``, ``branch.attachment``, ``branch.context``...).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module_of(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _hidden(tree: ast.AST, typing: bool = False) -> set[int]:
    """Ids of the nodes under ``if TYPE_CHECKING:`` (imports there exist only for typing);
    none with ``typing``, where those imports count too."""
    hidden: set[int] = set()
    if typing:
        return hidden
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(sub) for sub in ast.walk(node))
    return hidden


def import_graph(root: Path = ROOT, typing: bool = False) -> dict[str, set[str]]:
    """module -> the lion_nb modules it imports (a submodule's import of its own package
    does not count: Python imports the package first anyway); with ``typing``, the imports
    under ``if TYPE_CHECKING:`` too."""
    files = sorted((root / "lion_nb").rglob("*.py"))
    modules = {_module_of(f, root) for f in files}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for f in files:
        me = _module_of(f, root)
        here = f.relative_to(root).with_suffix("").parts[:-1]
        tree = ast.parse(f.read_text(encoding="utf-8"))
        hidden = _hidden(tree, typing)
        for node in ast.walk(tree):
            if id(node) in hidden:
                continue
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ".".join(
                        list(here[: len(here) - node.level + 1])
                        + ([node.module] if node.module else [])
                    )
                else:
                    base = node.module or ""
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for t in targets:
                if t in modules and t != me and not me.startswith(t + "."):
                    edges[me].add(t)
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for m in sorted(edges):
        if m not in index:
            visit(m)
    return found


def _layers(modules: Iterable[str]) -> set[str]:
    return {m.split(".")[1] for m in modules if m.count(".") >= 1}


#: The one import of a layer above: the operations name the `Branch` they take, for typing.
TYPING_EDGE = ("lion_nb.operations", "lion_nb.session.branch")


def _allowed_typing_edge(me: str, target: str) -> bool:
    return me.startswith(TYPING_EDGE[0] + ".") and target == TYPING_EDGE[1]


def typing_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """The type-level graph without the allowed edge (`TYPING_EDGE`, when it is type-only)."""
    run = import_graph(root)
    edges = import_graph(root, typing=True)
    return {
        me: {t for t in targets if t in run[me] or not _allowed_typing_edge(me, t)}
        for me, targets in edges.items()
    }


def package_graphs(edges: dict[str, set[str]]) -> dict[str, dict[str, set[str]]]:
    """For each package, its parts (the next name below it) and which part imports which."""
    packages = {m for m in edges if any(other.startswith(m + ".") for other in edges)}
    graphs: dict[str, dict[str, set[str]]] = {p: {} for p in packages}
    for me, targets in edges.items():
        for target in targets:
            for package in packages:
                prefix = package + "."
                if not (me.startswith(prefix) and target.startswith(prefix)):
                    continue
                a = me.removeprefix(prefix).split(".")[0]
                b = target.removeprefix(prefix).split(".")[0]
                graph = graphs[package]
                graph.setdefault(a, set())
                graph.setdefault(b, set())
                if a != b:
                    graph[a].add(b)
    return graphs


def bad_circles(root: Path = ROOT, typing: bool = False) -> list[str]:
    """One line per circle, at either level: of the run-time graph, or with ``typing`` of
    the type-level one (`typing_graph`)."""
    edges = typing_graph(root) if typing else import_graph(root)
    lines = ["modules: " + " <-> ".join(c) for c in circles(edges)]
    for package, graph in sorted(package_graphs(edges).items()):
        lines += [f"parts of {package}: " + " <-> ".join(c) for c in circles(graph)]
    return lines


#: The parts of a package from the bottom up: a part imports parts of its own layer or below.
LAYERS: dict[str, list[set[str]]] = {
    "lion_nb": [
        # the base: imports nothing of lion_nb but `errors`
        {
            "_callables",
            "_files",
            "_lazy",
            "_sentinel",
            "errors",
            "settings",
            "shapes",
            "store_location",
            "tokens",
            "untrusted",
        },
        {"rendering"},
        {"models"},
        {"tracing"},  # OpenTelemetry spans of turns, calls and tools (ADR-0116), when on
        {"context"},  # notebook values as model content (ADR-0110)
        {"protocols"},
        {"mcp"},  # MCP servers' tools: protocols' `Tool`s on the models' process handling
        {"runtime"},  # spend (ledger, budgets), a turn's lifecycle, the signal bus
        {"operations"},  # the operation functions (ADR-0021), over a branch they take
        {"session", "_seams"},  # Branch, Session and batches; a verb imports its operation
        {"store", "extensions"},  # the store persists Sessions; extensions load into them
        {"evals"},  # evaluations drive `Session.map` and save their runs in the store
        {"widgets"},
        {"notebook"},
    ],
    "lion_nb.notebook": [
        {"state"},  # the notebook's Session, errors, signals, autosave
        {"agent"},  # the notebook tools: the model runs code in the kernel (ADR-0114)
        {"cell"},  # one %%lion turn: options, plan, run, display
        {"commands"},  # the %lion subcommands
        {"magics", "formatters"},
        {"extension"},  # %load_ext
    ],
}


def upward_imports(root: Path = ROOT, typing: bool = False) -> list[str]:
    """One line per import of a part by a part of a lower layer, or of a part not placed
    (with ``typing``: in the type-level graph, `TYPING_EDGE` aside)."""
    graphs = package_graphs(typing_graph(root) if typing else import_graph(root))
    lines = []
    for package, layers in LAYERS.items():
        rank = {part: i for i, layer in enumerate(layers) for part in layer}
        graph = graphs.get(package, {})
        parts = {p for p in (root / Path(*package.split("."))).iterdir() if p.name != "__pycache__"}
        names = {p.stem for p in parts if p.suffix == ".py" or p.is_dir()} - {"__init__"}
        lines += [f"{package}.{n} is in no layer of LAYERS" for n in sorted(names - set(rank))]
        for a, targets in sorted(graph.items()):
            for b in sorted(targets):
                if a in rank and b in rank and rank[a] < rank[b]:
                    lines.append(f"{package}.{a} imports {package}.{b}, a layer above it")
    return lines


def test_no_import_circle_between_modules_or_between_the_parts_of_a_package():
    assert bad_circles() == []


def test_imports_point_down_the_layers():
    assert upward_imports() == []


def test_the_type_level_graph_has_no_circle_but_the_operations_typing_edge():
    assert bad_circles(typing=True) == []
    assert upward_imports(typing=True) == []


def test_the_typing_edge_is_allowed_only_under_type_checking(tmp_path):
    pkg = tmp_path / "lion_nb"
    for part in ("operations", "session"):
        (pkg / part).mkdir(parents=True)
        (pkg / part / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "session" / "branch.py").write_text("def f():\n    from ..operations import chat\n")
    typed = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..session.branch import B\n"
    )
    (pkg / "operations" / "chat.py").write_text(typed)
    assert bad_circles(tmp_path) == bad_circles(tmp_path, typing=True) == []
    # the same edge at run time is a circle; another typing-only edge up is one too
    (pkg / "operations" / "chat.py").write_text("from ..session.branch import B\n")
    assert bad_circles(tmp_path) == [
        "modules: lion_nb.operations.chat <-> lion_nb.session.branch",
        "parts of lion_nb: operations <-> session",
    ]
    (pkg / "operations" / "chat.py").write_text(typed.replace("branch import", "other import"))
    (pkg / "session" / "other.py").write_text("from .branch import f\n")
    assert bad_circles(tmp_path) == []
    assert bad_circles(tmp_path, typing=True) == [
        "modules: lion_nb.operations.chat <-> lion_nb.session.branch <-> lion_nb.session.other",
        "parts of lion_nb: operations <-> session",
    ]


def _branch_private_names() -> set[str]:
    """The underscore attributes a `Branch` has that a pydantic model does not."""
    from pydantic import BaseModel

    from lion_nb.session.branch import Branch

    names = set(Branch.__private_attributes__)
    names |= {n for n in dir(Branch) if n.startswith("_") and not n.startswith("__")}
    return names - set(dir(BaseModel))


def private_reaches(root: Path = ROOT, names: set[str] | None = None) -> list[str]:
    """One line per reach into a branch's private state outside ``session/branch.py``: any
    ``x.__pydantic_private__`` but ``self``'s, and ``x._name`` for a private name of `Branch`
    where ``x`` is not ``self`` -- or, for a name a `Session` has too (``_memory``,
    ``_mcp_servers``...), where ``x`` is spelled as a branch (``branch``, ``self.branch``)."""
    names = _branch_private_names() if names is None else names
    from lion_nb.session.session import Session

    shared = names & set(Session.__private_attributes__)
    lines = []
    for f in sorted((root / "lion_nb").rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        if rel == "lion_nb/session/branch.py":
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute):
                continue
            owner = ast.unparse(node.value)
            if node.attr == "__pydantic_private__":
                bad = owner != "self"
            elif node.attr in shared:
                bad = "branch" in owner.split(".")[-1] or owner in ("b", "target")
            else:
                bad = node.attr in names and owner != "self"
            if bad:
                lines.append(f"{rel}:{node.lineno}: {owner}.{node.attr}")
    return lines


def test_only_branch_py_touches_a_branchs_private_state():
    assert private_reaches() == []


def test_the_private_state_check_sees_a_reach(tmp_path):
    (tmp_path / "lion_nb" / "session").mkdir(parents=True)
    (tmp_path / "lion_nb" / "ops.py").write_text(
        "def f(branch, session):\n"
        "    branch._spend = None\n"
        "    session.__pydantic_private__\n"
        "    self.branch._memory\n"
        "    session._memory\n"
        "    self._spend\n"
    )
    (tmp_path / "lion_nb" / "session" / "branch.py").write_text("x.__pydantic_private__\n")
    assert private_reaches(tmp_path) == [
        "lion_nb/ops.py:2: branch._spend",
        "lion_nb/ops.py:3: session.__pydantic_private__",
        "lion_nb/ops.py:4: self.branch._memory",
    ]


def test_the_check_sees_lazy_imports_and_skips_type_checking_ones(tmp_path):
    pkg = tmp_path / "lion_nb"
    (pkg / "low").mkdir(parents=True)
    (pkg / "high").mkdir()
    for f in ("__init__.py", "low/__init__.py", "high/__init__.py"):
        (pkg / f).write_text("")
    (pkg / "high" / "view.py").write_text("from ..low import data\n")
    (pkg / "low" / "data.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..high.view import x\n"
    )
    assert bad_circles(tmp_path) == []
    (pkg / "low" / "data.py").write_text("def f():\n    from lion_nb.high import view\n")
    assert bad_circles(tmp_path) == [
        "modules: lion_nb.high.view <-> lion_nb.low.data",
        "parts of lion_nb: high <-> low",
    ]
    # a circle between two packages through different modules is still one
    (pkg / "low" / "data.py").write_text("")
    (pkg / "low" / "other.py").write_text("def f():\n    from ..high import view\n")
    (pkg / "high" / "view.py").write_text("from ..low.data import f\n")
    assert bad_circles(tmp_path) == ["parts of lion_nb: high <-> low"]


def test_the_layer_check_sees_an_import_of_a_layer_above(tmp_path, monkeypatch):
    pkg = tmp_path / "lion_nb"
    for part in ("store", "widgets", "notebook"):
        (pkg / part).mkdir(parents=True)
        (pkg / part / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "store" / "export.py").write_text("def f():\n    from ..widgets import tree\n")
    (pkg / "widgets" / "tree.py").write_text("")
    (pkg / "notebook" / "new.py").write_text("")
    monkeypatch.setitem(LAYERS, "lion_nb.notebook", [{"old"}])
    assert upward_imports(tmp_path) == [
        "lion_nb.store imports lion_nb.widgets, a layer above it",
        "lion_nb.notebook.new is in no layer of LAYERS",
    ]


def test_every_module_imports():
    """The graph is of modules that exist: each one imports on its own, in a fresh process."""
    modules = sorted(import_graph())
    probe = (
        "import importlib, json, sys\n"
        "failed = []\n"
        f"for name in {modules!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as exc:\n"
        "        failed.append(f'{name}: {exc!r}')\n"
        "print(json.dumps(failed))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert len(modules) > 100
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
