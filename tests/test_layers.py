"""The import graph of lion_nb has no circles, so each layer can be read, tested and changed
from the bottom up (docs/adr/0108-notebook-layers.md).

Every import counts -- module-level and lazy ones inside functions alike, since a lazy import
is still a dependency -- except those under ``if TYPE_CHECKING:``. Two levels are checked:

- **modules**: no two modules of lion_nb import each other, directly or through others;
- **packages**: inside every package, its parts (sub-packages and modules) import each other
  one way only -- ``lion_nb``'s own sub-packages included, ``lion_nb.notebook``'s
  ``cell`` / ``commands`` / ``state`` too.

The one circle allowed is the ADR-0021 one: `Branch` imports each operation inside its verb
and the operations use the session package, so ``operations`` and ``session`` may reach each
other (with ``protocols`` inside such a module circle).
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


def _hidden(tree: ast.AST) -> set[int]:
    """Ids of the nodes under ``if TYPE_CHECKING:`` (imports there exist only for typing)."""
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(sub) for sub in ast.walk(node))
    return hidden


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the lion_nb modules it imports (a submodule's import of its own package
    does not count: Python imports the package first anyway)."""
    files = sorted((root / "lion_nb").rglob("*.py"))
    modules = {_module_of(f, root) for f in files}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for f in files:
        me = _module_of(f, root)
        here = f.relative_to(root).with_suffix("").parts[:-1]
        tree = ast.parse(f.read_text(encoding="utf-8"))
        hidden = _hidden(tree)
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


def sanctioned_modules(circle: list[str]) -> bool:
    """ADR-0021's circle: modules of ``operations`` and ``session`` (and ``protocols``)."""
    return {"operations", "session"} <= _layers(circle) <= {"operations", "session", "protocols"}


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


def bad_circles(root: Path = ROOT) -> list[str]:
    """One line per circle that is not the sanctioned one, at either level."""
    edges = import_graph(root)
    lines = ["modules: " + " <-> ".join(c) for c in circles(edges) if not sanctioned_modules(c)]
    for package, graph in sorted(package_graphs(edges).items()):
        for c in circles(graph):
            if package == "lion_nb" and c == ["operations", "session"]:
                continue
            lines.append(f"parts of {package}: " + " <-> ".join(c))
    return lines


#: The parts of a package from the bottom up: a part imports parts of its own layer or below.
LAYERS: dict[str, list[set[str]]] = {
    "lion_nb": [
        # the base: imports nothing of lion_nb but `errors`
        {
            "_callables",
            "_lazy",
            "_sentinel",
            "errors",
            "settings",
            "store_location",
            "tokens",
            "untrusted",
        },
        {"rendering"},
        {"models"},
        {"context"},  # notebook values as model content (ADR-0110)
        {"protocols"},
        {"mcp"},  # MCP servers' tools: protocols' `Tool`s on the models' process handling
        {"operations", "session", "_seams"},  # the core; ADR-0021's circle is inside
        {"store", "extensions"},  # the store persists Sessions; extensions load into them
        {"evals"},  # evaluations drive `Session.map` and save their runs in the store
        {"widgets"},
        {"notebook"},
    ],
    "lion_nb.notebook": [
        {"state"},  # the notebook's Session, errors, signals, autosave
        {"cell"},  # one %%lion turn: options, plan, run, display
        {"commands"},  # the %lion subcommands
        {"magics", "formatters"},
        {"extension"},  # %load_ext
    ],
}


def upward_imports(root: Path = ROOT) -> list[str]:
    """One line per import of a part by a part of a lower layer, or of a part not placed."""
    graphs = package_graphs(import_graph(root))
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
