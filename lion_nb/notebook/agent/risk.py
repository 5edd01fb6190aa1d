"""Risk flags: what a piece of code may do beyond computing, read from its text and syntax.

The approval card shows them beside the code, so a person sees "runs shell commands" or
"reads secrets" before saying yes. They are read, never run: a flag is a hint for the
reader, not a sandbox; code that hides what it does (``exec`` of a built string) is flagged
as such.
"""

from __future__ import annotations

import ast
import re

__all__ = ["FLAGS", "risk_flags"]

#: flag -> what the card says
FLAGS: dict[str, str] = {
    "shell": "runs shell commands",
    "install": "installs packages",
    "file-write": "writes files",
    "file-delete": "deletes files",
    "network": "uses the network",
    "environment": "reads or changes environment variables",
    "secrets": "touches keys or secrets",
    "dynamic": "runs code built at run time",
    "process": "ends or controls processes",
}

_SHELL_MODULES = {"subprocess", "pty", "pexpect", "sh"}
_NET_MODULES = {
    "socket", "urllib", "urllib3", "requests", "httpx", "aiohttp", "http", "ftplib",
    "smtplib", "paramiko", "websocket", "websockets",
}  # fmt: skip
_DELETE = {"remove", "unlink", "rmdir", "removedirs", "rmtree", "truncate"}
_OS_SHELL = {"system", "popen", "spawnl", "spawnv", "execv", "execl", "execvp", "startfile"}
_PROCESS = {"kill", "killpg", "_exit", "abort", "fork"}
_WRITE_METHODS = {"write_text", "write_bytes", "to_csv", "to_parquet", "to_excel", "savefig",
                  "to_pickle", "to_json", "to_feather", "touch", "mkdir", "makedirs",
                  "copy", "copyfile", "move", "rename", "replace", "chmod"}  # fmt: skip
_SECRET = re.compile(r"(?i)api[_-]?key|token|secret|password|credential|\.env\b|\.netrc")
_MAGIC_SHELL = re.compile(r"^\s*(!|%%?(sh|bash|system|script)\b|%sx\b)", re.MULTILINE)
_MAGIC_INSTALL = re.compile(r"^\s*(%|!)\s*(pip|conda|mamba|uv)\b", re.MULTILINE)


def risk_flags(code: str) -> list[str]:
    """The flags of ``code`` (keys of `FLAGS`), in `FLAGS` order."""
    found: set[str] = set()
    if _MAGIC_INSTALL.search(code):
        found.add("install")
    if _MAGIC_SHELL.search(code):
        found.add("shell")
    if _SECRET.search(code):
        found.add("secrets")
    try:
        tree = ast.parse(_without_magics(code))
    except SyntaxError:
        tree = None
    if tree is not None:
        for node in ast.walk(tree):
            _flag_node(node, found)
    return [flag for flag in FLAGS if flag in found]


def _without_magics(code: str) -> str:
    """IPython's ``!`` and ``%`` lines blanked out, so the rest parses as Python."""
    return "\n".join(
        "" if line.lstrip().startswith(("!", "%")) else line for line in code.splitlines()
    )


def _flag_node(node: ast.AST, found: set[str]) -> None:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        names = (
            [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        )
        for name in names:
            top = name.split(".")[0]
            if top in _SHELL_MODULES:
                found.add("shell")
            if top in _NET_MODULES:
                found.add("network")
    elif isinstance(node, ast.Call):
        _flag_call(node, found)
    elif _names_environment(node):
        found.add("environment")


def _names_environment(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "environ"
    return isinstance(node, ast.Name) and node.id in ("getenv", "putenv", "environ")


def _flag_call(node: ast.Call, found: set[str]) -> None:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    owner = _dotted(func.value) if isinstance(func, ast.Attribute) else ""
    if name in ("exec", "eval", "compile", "__import__", "import_module") and not owner.startswith(
        "pd"
    ):
        found.add("dynamic")
    if name in _OS_SHELL or owner.split(".")[0] in _SHELL_MODULES:
        found.add("shell")
    if name in ("getenv", "putenv", "unsetenv"):
        found.add("environment")
    if name in _DELETE and owner:
        found.add("file-delete")
    if name in _PROCESS and owner.split(".")[0] in ("os", "signal", "psutil"):
        found.add("process")
    if name in _WRITE_METHODS and owner:
        found.add("file-write")
    if name == "open" and _opens_for_writing(node):
        found.add("file-write")
    if owner.split(".")[0] in _NET_MODULES:
        found.add("network")


def _opens_for_writing(node: ast.Call) -> bool:
    mode = node.args[1] if len(node.args) > 1 else None
    for keyword in node.keywords:
        if keyword.arg == "mode":
            mode = keyword.value
    if mode is None:
        return False
    if not isinstance(mode, ast.Constant) or not isinstance(mode.value, str):
        return True  # a mode computed at run time: it may write
    return any(c in mode.value for c in "wax+")


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else node.attr
    return ""
