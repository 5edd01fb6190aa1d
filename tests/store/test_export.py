"""Exports of a branch: JSON that `Branch.from_dict` reads back, the explorer's Markdown
transcript, and a pandas DataFrame (one row per message) -- with a clear error naming the
``pandas`` extra when pandas is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lion_nb import Branch
from lion_nb.models.secrets import Secret
from lion_nb.rendering.transcript import markdown_transcript
from lion_nb.store import export_branch, to_dataframe, to_json, to_markdown
from lion_nb.store.export import COLUMNS
from tests.store.helpers import varied_session

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def branch():
    return varied_session().get_branch("main")


def test_json_reads_back_as_the_same_branch(branch, tmp_path):
    text = to_json(branch)
    assert Branch.from_dict(json.loads(text)).to_dict() == branch.to_dict()
    written = export_branch(branch, tmp_path / "out" / "main.json")
    assert json.loads(written.read_text()) == json.loads(text)


def test_markdown_is_the_explorers_transcript(branch, tmp_path):
    text = to_markdown(branch)
    assert text == markdown_transcript(branch)
    assert "## Tool call: `add`" in text and "What is 2 + 2?" in text
    assert export_branch(branch, tmp_path / "main.md").read_text() == text


def test_exports_are_scrubbed_of_secrets(branch, tmp_path):
    key = Secret("sk-test-abcdefghijklmnop")
    branch.msgs.add_message(instruction=f"my key is {key.reveal()}")
    for text in (to_json(branch), to_markdown(branch)):
        assert key.reveal() not in text and "****" in text


def test_an_unknown_format_is_refused(branch, tmp_path):
    with pytest.raises(ValueError, match=r"`\.json` or `\.md`"):
        export_branch(branch, tmp_path / "main.txt")
    assert list(tmp_path.iterdir()) == []


def test_the_dataframe_has_one_row_per_message(branch):
    df = to_dataframe(branch)
    assert list(df.columns) == list(COLUMNS)
    assert len(df) == len(branch.messages)
    assert list(df["kind"]) == [m.kind for m in branch.messages]
    assert df.loc[1, "text"] == "What is 2 + 2?" and df.loc[1, "cell_id"] == "c1"
    assert df.loc[2, "function"] == "add" and json.loads(df.loc[2, "arguments"]) == {"a": 2, "b": 2}
    assert df.loc[4, "input_tokens"] == 5 and df.loc[4, "output_tokens"] == 1
    assert str(df["created_at"].dtype).startswith("datetime64")


def test_without_pandas_the_error_names_the_extra():
    code = (
        "import sys\nsys.modules['pandas'] = None  # as if it were not installed\n"
        "from lion_nb import Session\nfrom lion_nb.store import to_dataframe\n"
        "try:\n    to_dataframe(Session().default_branch)\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert "pip install 'lion-nb[pandas]'" in out.stdout, out.stderr
