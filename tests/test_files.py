"""`write_atomically`: writers at once never mix their bytes, a reader never sees half a file,
and a failed write leaves the old file and no temporary one."""

from __future__ import annotations

import json
import threading

import pytest

from lion_nb._files import write_atomically


def test_writers_at_once_each_leave_a_whole_file_and_no_temporary_one(tmp_path):
    target = tmp_path / "record.json"
    write_atomically(target, json.dumps({"writer": -1, "pad": ""}))
    seen: list[dict] = []
    stop = threading.Event()

    def write(n: int) -> None:
        for i in range(150):
            body = {"writer": n, "i": i, "pad": str(n) * 20_000}  # big enough to interleave
            write_atomically(target, json.dumps(body))

    def read() -> None:
        while not stop.is_set():
            seen.append(json.loads(target.read_text(encoding="utf-8")))  # never half a file

    readers = [threading.Thread(target=read)]
    writers = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    readers[0].join()
    final = json.loads(target.read_text(encoding="utf-8"))
    assert final["pad"] == str(final["writer"]) * 20_000  # one writer's bytes, whole
    assert all(r["pad"] == (str(r["writer"]) * 20_000 if r["writer"] >= 0 else "") for r in seen)
    assert len(seen) > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]


def test_lines_are_written_as_given_and_the_folder_is_made(tmp_path):
    target = tmp_path / "new" / "rows.jsonl"
    write_atomically(target, (f"{n}\n" for n in range(3)))
    assert target.read_text(encoding="utf-8") == "0\n1\n2\n"


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary_one(tmp_path):
    target = tmp_path / "kept.txt"
    write_atomically(target, "old")

    def pieces():
        yield "half of the new"
        raise RuntimeError("the data ran out")

    with pytest.raises(RuntimeError, match="ran out"):
        write_atomically(target, pieces())
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["kept.txt"]


def test_without_make_folder_a_missing_folder_is_the_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_atomically(tmp_path / "absent" / "f.txt", "x", make_folder=False)
    assert not (tmp_path / "absent").exists()
