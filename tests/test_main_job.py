"""The README's main job -- open the tutorials in JupyterLab -- works whoever runs it.

- The command is read from README.md (the first block under "Run the tutorials"), and its
  ``jupyter lab`` part is started as it is written, from the repository root, with only what
  a test needs added (no browser, a free port on 127.0.0.1, a token) and a scratch Jupyter
  configuration, so no user setting can make it pass. It must answer on 127.0.0.1. These
  machines and containers run it as root, which Jupyter refuses without ``--allow-root``.
- The ``notebooks`` extra, with the package's own dependencies, holds every distribution a
  tutorial imports.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import httpx
import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
TUTORIALS = sorted(p for p in (REPO / "notebooks").glob("*.ipynb") if not p.name.startswith("."))


def readme_main_job() -> str:
    """The README's first command under "Run the tutorials"."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Run the tutorials", 1)[1]
    return re.search(r"```bash\n(.+?)\n```", section, re.S).group(1).strip()


def test_the_readme_command_installs_the_notebooks_extra_then_opens_jupyterlab():
    steps = [s.strip() for s in readme_main_job().split("&&")]
    assert '".[notebooks]"' in steps[-2]
    assert shlex.split(steps[-1])[:4] == ["python", "-m", "jupyter", "lab"]
    assert shlex.split(steps[-1])[-1] == "notebooks/"


# -- the extra ------------------------------------------------------------------------------------
def _extras() -> tuple[list[str], dict[str, list[str]]]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project["dependencies"], project["optional-dependencies"]


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)).lower()


def _closure(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` install, with what they require in turn (as
    installed here; requirements behind an extra are not followed)."""
    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = [_name(r) for r in requirements]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for line in requires:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(_name(req.name))
    return seen


def _imports(path: Path) -> set[str]:
    """Top-level modules the code cells of a notebook import, read as IPython runs them
    (magics become calls, a cell magic's body a string)."""
    from IPython.core.inputtransformer2 import TransformerManager

    python = TransformerManager()
    found: set[str] = set()
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        tree = compile(python.transform_cell(cell.source), str(path), "exec", flags=flags)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.partition(".")[0])
    return found


def test_the_notebooks_extra_holds_what_every_tutorial_imports():
    base, extras = _extras()
    installed = _closure(base + extras["notebooks"])
    owners = metadata.packages_distributions()
    missing = {}
    for path in TUTORIALS:
        for module in _imports(path) - set(sys.stdlib_module_names) - {"lion_nb"}:
            dists = {_name(d) for d in owners.get(module, [module])}
            if not dists & installed:
                missing[module] = path.name
    assert len(TUTORIALS) >= 11
    assert missing == {}, f"add to the `notebooks` extra what these tutorials import: {missing}"


# -- the command ----------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.kernel
def test_the_main_job_command_answers_on_loopback_whoever_runs_it(tmp_path):
    argv = shlex.split(readme_main_job().split("&&")[-1])
    assert argv[0] == "python"
    port, token = _free_port(), "main-job-test-token"
    argv = [
        sys.executable,
        *argv[1:],
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
    ]
    scratch = {
        "HOME": str(tmp_path),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "IPYTHONDIR": str(tmp_path / "ipython"),
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "LION_"))}
    env.update(scratch, JUPYTER_PLATFORM_DIRS="1")
    log = tmp_path / "lab.log"
    with log.open("wb") as out:
        process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        answered = None
        deadline = time.monotonic() + 120  # a guard against a hang; it answers in seconds
        while answered is None and process.poll() is None and time.monotonic() < deadline:
            try:
                answered = httpx.get(
                    f"http://127.0.0.1:{port}/api/status", params={"token": token}, timeout=5
                )
            except httpx.TransportError:
                time.sleep(0.2)
        output = log.read_text(errors="replace")
        who = "root" if os.geteuid() == 0 else "a user"
        assert process.poll() is None, f"as {who}, it exited ({process.returncode}):\n{output}"
        assert answered is not None and answered.status_code == 200, output
        lab = httpx.get(f"http://127.0.0.1:{port}/lab", params={"token": token}, timeout=30)
        assert lab.status_code == 200 and "JupyterLab" in lab.text
        tree = httpx.get(
            f"http://127.0.0.1:{port}/api/contents", params={"token": token}, timeout=30
        ).json()
        assert {"01-first-conversation.ipynb", "README.md"} <= {c["name"] for c in tree["content"]}
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
