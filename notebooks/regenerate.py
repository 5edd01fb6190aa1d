"""Execute the tutorials and save them with their outputs (and their widgets' state).

Run from the repository root::

    python notebooks/regenerate.py              # every notebook in notebooks/
    python notebooks/regenerate.py 04 05        # those whose names start with 04 or 05

Each notebook runs top to bottom in a fresh kernel started in ``notebooks/`` (as nbval runs
it), on the offline models, with no key and no network. Widget state is stored in the
notebook, so GitHub and nbviewer show the widgets' static renderings. Run this after
changing what a tutorial shows, then run ``python -m pytest notebooks`` to check that the
saved outputs compare equal.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def notebooks(prefixes: list[str]) -> list[Path]:
    found = sorted(p for p in HERE.glob("*.ipynb") if not p.name.startswith("."))
    if prefixes:
        found = [p for p in found if any(p.name.startswith(x) for x in prefixes)]
    return found


def regenerate(path: Path, timeout: int = 300) -> float:
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    notebook.metadata.pop("widgets", None)  # only this run's widgets: none left from an older one
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(HERE)}},
        store_widget_state=True,
    )
    start = time.perf_counter()
    client.execute()
    nbformat.write(notebook, path)
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    os.environ.pop("LION_CHAT_PROVIDER", None)  # the tutorials run on the offline default
    os.environ.pop("LION_CHAT_MODEL", None)
    chosen = notebooks(argv)
    if not chosen:
        print(f"no notebook in {HERE} matches {argv}", file=sys.stderr)
        return 2
    for path in chosen:
        seconds = regenerate(path)
        print(f"{path.name}: executed and saved in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
