"""Files named on a ``%lion`` line that cannot be used: each is a one-line `UsageError` that
names the file and the fix, never a traceback."""

from __future__ import annotations

import pytest

from tests.notebook.nbshell import run, usage_error


def test_load_of_a_folder(ip, tmp_path):
    message = usage_error(ip, f"%lion load {tmp_path}")
    assert f"`{tmp_path}` is a folder" in message and "\n" not in message


def test_save_into_a_missing_folder(ip, tmp_path):
    target = tmp_path / "missing" / "x.json"
    message = usage_error(ip, f"%lion save {target}")
    assert f"the folder `{target.parent}` does not exist" in message and "mkdir -p" in message
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("line", ["%lion save /proc/lion_x.json", "%lion export -o /proc/x.md"])
def test_save_where_no_file_can_be_made(ip, line):
    message = usage_error(ip, line)
    assert "cannot write `/proc/" in message and "\n" not in message


def test_a_cassette_name_too_long(ip, tmp_path):
    name = "c" * 300 + ".jsonl"
    message = usage_error(ip, f"%lion cassette {tmp_path / name}")
    assert "too long (306 characters" in message and "shorter name" in message
    assert len(message) < 300 and "\n" not in message


def test_a_usable_path_still_works(ip, tmp_path):
    ran = run(ip, f"%lion save {tmp_path / 'ok.json'}")
    assert ran.error is None and (tmp_path / "ok.json").is_file()
