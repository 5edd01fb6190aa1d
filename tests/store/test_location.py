"""Where the store lives: ``.lion_nb/sessions.db`` under the working directory, moved by
``LION_NB_STORE`` (a file or a folder) or by the notebook's configuration; a folder it
creates is git-ignored. Importing the store costs nothing (no ``sqlite3``, no file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lion_nb import store_location as location
from lion_nb.store_location import configure, ensure_dir, store_dir, store_path

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _unconfigured():
    configure(None)
    yield
    configure(None)


def test_the_default_is_a_hidden_folder_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("LION_NB_STORE")
    monkeypatch.chdir(tmp_path)
    assert store_path() == tmp_path / ".lion_nb" / "sessions.db"
    assert store_dir() == tmp_path / ".lion_nb"


def test_the_environment_names_a_file_or_a_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("LION_NB_STORE", str(tmp_path / "mine.sqlite"))
    assert store_path() == tmp_path / "mine.sqlite"
    monkeypatch.setenv("LION_NB_STORE", str(tmp_path / "folder"))
    assert store_path() == tmp_path / "folder" / "sessions.db"
    assert store_dir() == tmp_path / "folder"


def test_configure_wins_over_the_environment_and_can_be_undone(tmp_path, monkeypatch):
    monkeypatch.setenv("LION_NB_STORE", str(tmp_path / "env.db"))
    configure(tmp_path / "configured.db")
    assert store_path() == tmp_path / "configured.db"
    assert store_path(tmp_path / "given.db") == tmp_path / "given.db"  # an explicit path wins
    configure("")
    assert store_path() == tmp_path / "env.db"


def test_a_created_folder_is_ignored_by_git(tmp_path):
    folder = tmp_path / "a" / ".lion_nb"
    ensure_dir(folder)
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"
    existing = tmp_path / "mine"
    existing.mkdir()
    ensure_dir(existing)
    assert list(existing.iterdir()) == []  # a folder it did not create is left alone


def test_importing_the_store_loads_no_sqlite_and_touches_no_file(tmp_path):
    code = (
        "import json, sys\nimport lion_nb.store\nfrom lion_nb.store import store_path\n"
        "store_path()\nprint(json.dumps({'sqlite3': 'sqlite3' in sys.modules}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LION_NB_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert json.loads(out.stdout) == {"sqlite3": False}, out.stderr
    assert list(tmp_path.iterdir()) == []


def test_names_are_stable():
    assert (location.ENV_VAR, location.DIR_NAME, location.FILE_NAME) == (
        "LION_NB_STORE",
        ".lion_nb",
        "sessions.db",
    )
