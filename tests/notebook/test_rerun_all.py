"""Run All twice in one kernel gives the same outputs, for every tutorial in ``notebooks/``.

A reader runs a tutorial again without restarting the kernel; the second pass must show no
error and the same outputs as the first. Each notebook is executed with nbclient, then all
its cells are executed again by the same client in the same kernel. Outputs are compared the
way nbval compares a notebook with its saved outputs: streams coalesced, the sanitizer's
substitutions (``notebooks/nbval_sanitize.cfg``) applied, widget model ids, images and
metadata left out, and cells marked ``NBVAL_IGNORE_OUTPUT`` (inherently variable) not
compared; ``NBVAL_SKIP`` cells are not run and ``NBVAL_RAISES_EXCEPTION`` cells may fail.

One output is expected to differ and is taken out of the second pass before comparing:
IPython's own notice that ``%load_ext`` found the extension already loaded, which it prints
for any extension loaded twice in one kernel.

The kernel runs in a copy of ``notebooks/``, so that whatever a tutorial writes stays out of
the repository.
"""

from __future__ import annotations

import asyncio
import configparser
import copy
import re
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbval.plugin import coalesce_streams

pytestmark = pytest.mark.kernel

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
SKIPPED_KEYS = {
    "metadata",
    "traceback",
    "execution_count",
    "transient",
    "application/vnd.jupyter.widget-view+json",  # model ids are random
    "image/png",
    "image/jpeg",
}
ALREADY_LOADED = re.compile(
    r"The (\S+) extension is already loaded\. To reload it, use:\n  %reload_ext \1\n"
)


def _sanitizers() -> list[tuple[re.Pattern[str], str]]:
    config = configparser.ConfigParser()
    config.read(NOTEBOOKS / "nbval_sanitize.cfg", encoding="utf-8")
    return [(re.compile(config[s]["regex"]), config[s]["replace"]) for s in config.sections()]


SANITIZERS = _sanitizers()


def _sanitize(value: Any) -> Any:
    if isinstance(value, str):
        for pattern, replace in SANITIZERS:
            value = pattern.sub(replace, value)
    return value


def _markers(cell: Any) -> set[str]:
    """nbval's markers of a cell: comments (``# NBVAL_SKIP``) and metadata tags."""
    found = {
        line.strip().lstrip("#").strip()
        for line in cell.source.splitlines()
        if line.strip().startswith("#")
    }
    tags = {str(tag).upper().replace("-", "_") for tag in cell.metadata.get("tags", [])}
    if "RAISES_EXCEPTION" in tags:
        tags.add("NBVAL_RAISES_EXCEPTION")
    return found | tags


def _comparable(outputs: list[Any], *, second_pass: bool) -> list[dict[str, Any]]:
    shown = []
    for output in coalesce_streams(copy.deepcopy(outputs)):
        if output.output_type == "stream":
            text = output.text
            if second_pass:
                text = ALREADY_LOADED.sub("", text)
            if text:
                shown.append({"stream": output.name, "text": _sanitize(text)})
        elif output.output_type == "error":
            shown.append({"error": output.ename, "value": _sanitize(output.evalue)})
        else:
            data = {k: _sanitize(v) for k, v in output.get("data", {}).items()}
            shown.append({k: v for k, v in data.items() if k not in SKIPPED_KEYS})
    return shown


def _errors(cells: list[Any], outputs: list[list[Any]]) -> list[str]:
    found = []
    for cell, outs in zip(cells, outputs, strict=True):
        if "NBVAL_RAISES_EXCEPTION" in _markers(cell):
            continue
        for output in outs:
            if output.output_type == "error":
                found.append(f"cell {cell.id}: {output.ename}: {output.evalue}")
            elif output.get("name") == "stderr" and "Traceback" in output.text:
                found.append(f"cell {cell.id}: a traceback on stderr")
    return found


def _run_twice(path: Path, workdir: Path) -> tuple[list[Any], list[list[Any]], list[list[Any]]]:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(workdir)}},
    )
    cells = [
        (i, cell)
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and "NBVAL_SKIP" not in _markers(cell)
    ]
    passes: list[list[list[Any]]] = []

    async def run() -> None:
        async with client.async_setup_kernel():
            for _ in range(2):
                for i, cell in cells:
                    await client.async_execute_cell(cell, i)
                passes.append([copy.deepcopy(cell.outputs) for _, cell in cells])

    asyncio.run(run())
    return [cell for _, cell in cells], passes[0], passes[1]


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name.removesuffix(".ipynb")
)
def test_run_all_twice_in_one_kernel_gives_the_same_outputs(path, tmp_path, monkeypatch):
    monkeypatch.delenv("LION_CHAT_PROVIDER", raising=False)  # the tutorials run offline
    monkeypatch.delenv("LION_CHAT_MODEL", raising=False)
    workdir = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, workdir, ignore=shutil.ignore_patterns(".*", "__pycache__"))
    # tutorial 07 loads the examples beside the notebooks: `%lion extend ../extensions/x.py`
    examples = NOTEBOOKS.parent / "extensions"
    shutil.copytree(examples, tmp_path / "extensions", ignore=shutil.ignore_patterns("__pycache__"))

    cells, first, second = _run_twice(path, workdir)

    assert not _errors(cells, first), "first pass:\n" + "\n".join(_errors(cells, first))
    assert not _errors(cells, second), "second pass:\n" + "\n".join(_errors(cells, second))
    differences = []
    for cell, one, two in zip(cells, first, second, strict=True):
        if "NBVAL_IGNORE_OUTPUT" in _markers(cell):
            continue
        once, again = _comparable(one, second_pass=False), _comparable(two, second_pass=True)
        if once != again:
            differences.append(
                f"cell {cell.id} ({cell.source.splitlines()[0][:60]!r}):\n"
                f"  first:  {once}\n  second: {again}"
            )
    assert not differences, "the second Run All differs:\n" + "\n".join(differences)
