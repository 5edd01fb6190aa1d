"""The Binder steps, performed in a fresh virtual environment, then every tutorial run there.

Binder builds an image from ``binder/``: ``pip install -r binder/requirements.txt``, then
``binder/postBuild``, both from the repository root. This module does exactly that in a new
``python -m venv`` (never ``--system-site-packages``, which would hide a missing install),
with a scratch ``HOME`` (postBuild may write IPython configuration there, and a developer's
own configuration must not leak in) and no provider keys. Then it runs every notebook in
``notebooks/`` on that environment's own kernel, with nbclient from that environment, and
compares each cell's outputs with the committed ones by nbval's rules: streams coalesced, the
substitutions of ``notebooks/nbval_sanitize.cfg`` applied, widget model ids and images not
compared, ``NBVAL_IGNORE_OUTPUT`` / ``NBVAL_SKIP`` honoured (as comments or tags), and an
error in any cell not marked ``raises-exception`` a failure.

Cost, decided deliberately: one environment per test session (a session-scoped fixture that
also runs all notebooks, a few at a time), and pip's own cache reused across sessions, so a
warm run spends its time executing notebooks, not downloading. The interpreter is the one
running the tests; ``binder/runtime.txt`` names the version Binder uses.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbval.plugin import coalesce_streams, find_comment_markers, find_metadata_tags

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
TUTORIALS = sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not p.name.startswith("."))
# nbval's own skip list for comparison: random widget model ids, and images
SKIP_KEYS = {
    "metadata",
    "traceback",
    "prompt_number",
    "output_type",
    "name",
    "execution_count",
    "application/vnd.jupyter.widget-view+json",
    "image/png",
    "image/jpeg",
}
_DROPPED_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "IPYTHONDIR")
_DROPPED_PREFIXES = ("JUPYTER", "XDG_", "LION_")

pytestmark = [pytest.mark.slow, pytest.mark.kernel, pytest.mark.timeout(1800)]

# Runs inside the Binder environment: execute the given notebooks (a few at once) and save
# them; a probe notebook first reports what the kernel sees at start-up.
RUNNER = r"""
import asyncio, json, sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

out, cwd, jobs, paths = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4:]
PROBE = (
    "import json, sys\n"
    "preloaded = 'lion_nb' in sys.modules\n"
    "import lion_nb\n"
    "print(json.dumps({'prefix': sys.prefix, 'preloaded': preloaded, 'lion_nb': lion_nb.__file__}))"
)


async def execute(nb):
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": cwd}},
    )
    await client.async_execute()
    return nb


async def run(path, gate):
    async with gate:
        try:
            nb = await execute(nbformat.read(path, as_version=4))
        except Exception as exc:  # a dead kernel or a timeout: reported by that notebook's test
            (out / (Path(path).name + ".error")).write_text(f"{type(exc).__name__}: {exc}")
        else:
            nbformat.write(nb, out / Path(path).name)


async def main():
    probe = await execute(new_notebook(cells=[new_code_cell(PROBE)]))
    (out / "probe.json").write_text(probe.cells[0].outputs[0]["text"])
    gate = asyncio.Semaphore(jobs)
    await asyncio.gather(*(run(p, gate) for p in paths))


asyncio.run(main())
"""


def _binder_env(venv: Path, home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _DROPPED_ENV
        and not k.startswith(_DROPPED_PREFIXES)
        and not k.endswith("_API_KEY")
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["HOME"] = str(home)
    env["LION_HOME"] = str(home / ".lion_nb")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _pip_cache(python: Path) -> str | None:
    """pip's cache directory as the real user sees it (the scratch HOME would hide it)."""
    found = subprocess.run(
        [str(python), "-m", "pip", "cache", "dir"], capture_output=True, text=True, check=False
    )
    if found.returncode != 0:  # the cache is turned off
        return None
    return found.stdout.strip() or None


def _step(args: list[str], env: dict[str, str], what: str) -> None:
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{what} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"


def _without_skipped(path: Path, dest: Path) -> Path:
    """A copy of the notebook without its ``NBVAL_SKIP`` cells: nbval does not run them."""
    nb = nbformat.read(path, as_version=4)
    nb.cells = [c for c in nb.cells if not _markers(c).get("skip")]
    target = dest / path.name
    nbformat.write(nb, target)
    return target


@pytest.fixture(scope="session")
def binder(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The Binder steps in a fresh venv, then every tutorial executed there."""
    root = tmp_path_factory.mktemp("binder")
    venv, home, src, out = root / "venv", root / "home", root / "src", root / "out"
    for folder in (home, src, out):
        folder.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = _binder_env(venv, home)
    cache = _pip_cache(python)
    if cache:
        env["PIP_CACHE_DIR"] = cache
    _step(
        [str(python), "-m", "pip", "install", "-r", "binder/requirements.txt"],
        env,
        "pip install -r binder/requirements.txt",
    )
    _step([str(REPO / "binder" / "postBuild")], env, "binder/postBuild")
    runner = root / "run_notebooks.py"
    runner.write_text(RUNNER)
    jobs = str(min(4, os.cpu_count() or 1))
    copies = [str(_without_skipped(p, src)) for p in TUTORIALS]
    _step([str(python), str(runner), str(out), str(NOTEBOOKS), jobs, *copies], env, "notebooks")
    return {"venv": venv, "home": home, "out": out}


# -- nbval's comparison ------------------------------------------------------------------------
def _markers(cell: Any) -> dict[str, bool]:
    found = dict(find_comment_markers(cell.source))
    found.update(dict(find_metadata_tags(cell.metadata)))
    return found


def _patterns() -> list[tuple[str, str]]:
    config = configparser.ConfigParser()
    config.read(NOTEBOOKS / "nbval_sanitize.cfg")
    return [(config[s]["regex"], config[s]["replace"]) for s in config.sections()]


def _comparable(outputs: list[Any], patterns: list[tuple[str, str]]) -> dict[str, list[Any]]:
    """Outputs as nbval compares them: one list of sanitized values per key or mimetype."""

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            for regex, replace in patterns:
                value = re.sub(regex, replace, value)
        return value

    flat: dict[str, list[Any]] = {}
    for output in coalesce_streams([nbformat.from_dict(o) for o in outputs]):
        for key, value in output.items():
            if key == "data":
                for mime, data in value.items():
                    if mime not in SKIP_KEYS:
                        flat.setdefault(mime, []).append(clean(data))
            elif key not in SKIP_KEYS:
                name = f"{output.get('name')}:{key}" if output.output_type == "stream" else key
                flat.setdefault(name, []).append(clean(value))
    return flat


# -- the tests -------------------------------------------------------------------------------------
def test_binder_installs_the_checkout_without_preloading_the_extension(binder):
    seen = json.loads((binder["out"] / "probe.json").read_text())
    assert Path(seen["prefix"]) == binder["venv"]
    assert Path(seen["lion_nb"]).resolve().is_relative_to(REPO)
    assert seen["preloaded"] is False  # each tutorial's own `%load_ext` is its first load
    config = binder["home"] / ".ipython" / "profile_default" / "ipython_config.py"
    assert not config.exists() or "lion_nb" not in config.read_text()


@pytest.mark.parametrize("committed", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_on_binder_shows_the_committed_outputs(binder, committed: Path):
    executed = binder["out"] / committed.name
    failure = binder["out"] / (committed.name + ".error")
    assert not failure.exists(), f"{committed.name} did not run: {failure.read_text()[:2000]}"
    assert executed.exists(), f"{committed.name} was not executed"
    ran = nbformat.read(executed, as_version=4)
    saved = nbformat.read(committed, as_version=4)
    saved_cells = [c for c in saved.cells if not _markers(c).get("skip")]
    assert len(ran.cells) == len(saved_cells)
    patterns = _patterns()
    problems = []
    for index, (new, old) in enumerate(zip(ran.cells, saved_cells, strict=True)):
        if new.cell_type != "code":
            continue
        markers = _markers(old)
        errors = [o for o in new.outputs if o.output_type == "error"]
        if errors and not markers.get("check_exception"):
            problems.append(f"cell {index} raised {errors[0].ename}: {errors[0].evalue}")
            continue
        if markers.get("check") is False:
            continue
        got, want = _comparable(new.outputs, patterns), _comparable(old.outputs, patterns)
        if got != want:
            problems.append(
                f"cell {index} ({old.source.splitlines()[0][:60]!r}):\n"
                f"  committed: {want}\n  on Binder: {got}"
            )
    assert not problems, "\n".join(problems)
