"""`Any` in a public signature of the strict packages says why, in a comment beside it.

A public function or method (its name, its class's and its module's have no leading
underscore; ``__init__`` and ``__call__`` count) whose parameters or return name `Any`
carries a comment starting ``# Any:`` in the comment lines just above it (and its
decorators) or on a line of its signature, from ``def`` to the line before its body. A public type alias that holds `Any` carries one on its lines or in the
comment block just above it (`lion_nb.shapes` names the common shapes once, with why).
Narrowing the type is the better fix: a JSON body is `JsonObject`, keyword arguments passed
on are `Keywords`, a value only looked at is `object`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tests.typing.check_types import STRICT_PACKAGES

ROOT = Path(__file__).resolve().parents[2]
REASON = "# Any:"


def _public(path: Path) -> bool:
    parts = path.relative_to(ROOT / "lion_nb").parts
    return not any(p.startswith("_") and p != "__init__.py" for p in parts)


def _names_any(node: ast.AST | None) -> bool:
    if node is None:
        return False
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id == "Any":
            return True
        if isinstance(sub, ast.Attribute) and sub.attr == "Any":
            return True
        quoted = sub.value if isinstance(sub, ast.Constant) else None  # a quoted annotation
        if isinstance(quoted, str) and "Any" in re.findall(r"\w+", quoted):
            return True
    return False


def _signature_annotations(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST | None]:
    a = func.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
    return [p.annotation for p in params if p is not None] + [func.returns]


def _unexplained(path: Path, root: Path = ROOT) -> Iterator[str]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text)
    where = path.relative_to(root).as_posix()

    def visit(body: list[ast.stmt], owner: str) -> Iterator[str]:
        for node in body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                yield from visit(node.body, f"{owner}{node.name}.")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name.startswith("_") and node.name not in ("__init__", "__call__"):
                    continue
                if not any(_names_any(a) for a in _signature_annotations(node)):
                    continue
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                last = max(node.lineno, node.body[0].lineno - 1)
                said = [*_comment_block_above(lines, first), *lines[first - 1 : last]]
                if not any(REASON in line for line in said):
                    yield f"{where}:{node.lineno} {owner}{node.name}"
            elif owner == "" and _is_alias(node) and _names_any(_value(node)):
                name = _target(node)
                if name.startswith("_"):
                    continue
                above = _comment_block_above(lines, node.lineno)
                own = lines[node.lineno - 1 : node.end_lineno or node.lineno]
                if not any(REASON in line for line in [*above, *own]):
                    yield f"{where}:{node.lineno} {name} (a type alias)"

    yield from visit(tree.body, "")


def _is_alias(node: ast.stmt) -> bool:
    if isinstance(node, ast.AnnAssign):
        return ast.unparse(node.annotation).endswith("TypeAlias")
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Subscript)
    )


def _value(node: ast.stmt) -> ast.AST | None:
    return getattr(node, "value", None)


def _target(node: ast.stmt) -> str:
    target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]  # type: ignore[attr-defined]
    return getattr(target, "id", "")


def _comment_block_above(lines: list[str], lineno: int) -> list[str]:
    block = []
    i = lineno - 2
    while i >= 0 and lines[i].lstrip().startswith("#"):
        block.append(lines[i])
        i -= 1
    return block


def unexplained() -> list[str]:
    found = []
    for package in STRICT_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if _public(path):
                found.extend(_unexplained(path))
    return found


def test_any_in_a_public_signature_of_the_strict_packages_has_a_reason():
    found = unexplained()
    assert not found, (
        f"{len(found)} public signature(s) name `Any` with no `# Any: why` comment (narrow "
        "the type -- `lion_nb.shapes`, a TypedDict, a Protocol, `object` -- or say why):\n"
        + "\n".join(found)
    )


def test_the_check_sees_a_signature_without_a_reason(tmp_path):
    path = tmp_path / "example.py"
    path.write_text(
        "from typing import Any\n"
        "Loose = dict[str, Any]\n"
        "# Any: because\n"
        "Kept = dict[str, Any]\n"
        "def bare(x: Any) -> None: ...\n"
        "def kept(x: Any) -> None:  # Any: because\n"
        "    pass\n"
        "# Any: because\n"
        "@decorated\n"
        "def above(x: Any) -> None: ...\n"
        "def _private(x: Any) -> None: ...\n"
        "def narrow(x: object) -> None: ...\n"
        "class Public:\n"
        "    def method(self, *, x: 'Any') -> None: ...\n"
        "    def __init__(self, **kw: Any):\n"
        "        pass\n"
        "class _Private:\n"
        "    def method(self) -> Any: ...\n",
        encoding="utf-8",
    )
    found = [line.split(" ", 1)[1] for line in _unexplained(path, tmp_path)]
    assert found == ["Loose (a type alias)", "bare", "Public.method", "Public.__init__"]
