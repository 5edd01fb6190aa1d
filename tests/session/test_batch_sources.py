"""`map` over inputs it reads as it goes: a generator, CSV / JSONL / Parquet files, a polars
frame; results in input order, as a frame for files and frames; in flight never more than
``concurrency`` items read ahead."""

from __future__ import annotations

import json

import anyio
import pytest

from lion_nb import Session, iModel
from lion_nb.errors import ConfigurationError


def echo_session(seen=None, fail=()):
    async def play(messages, **_request):
        prompt = messages[-1]["content"]
        if seen is not None:
            seen.append(prompt)
        if prompt in fail:
            raise RuntimeError(f"refused: {prompt}")
        return f"answer: {prompt}"

    session = Session()
    session.default_branch.chat_model = iModel(provider="offline", model="function", function=play)
    return session


def test_a_generator_is_read_only_as_workers_are_free():
    read: list[int] = []
    seen: list[str] = []

    def rows():
        for i in range(200):
            read.append(i)
            yield f"g{i}"

    session = echo_session(seen)
    run = session.map(rows(), "{item}", concurrency=4)
    checked: list[int] = []
    run.on_progress(lambda r: checked.append(len(read) - len(seen)))
    assert anyio.run(run.wait) == [f"answer: g{i}" for i in range(200)]
    assert max(checked) <= 4 + 1  # never more read ahead than the workers hold
    assert run.items[10].item is None and run.branch(10).messages[-1].response == "answer: g10"


def test_csv_jsonl_and_parquet_files_give_a_frame_in_input_order(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame({"id": range(300), "city": [f"c{i}" for i in range(300)]})
    frame.to_csv(tmp_path / "rows.csv", index=False)
    frame.to_parquet(tmp_path / "rows.parquet")
    (tmp_path / "rows.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in frame.to_dict(orient="records"))
    )
    for name in ("rows.csv", "rows.parquet", "rows.jsonl"):
        session = echo_session(fail={"c7"})
        out = anyio.run(session.map(str(tmp_path / name), "{item[city]}", concurrency=8).wait)
        assert list(out["index"]) == list(range(300)), name
        assert list(out["result"])[:2] == ["answer: c0", "answer: c1"]
        assert out["result"][7] is pd.NA or out["result"][7] is None
        assert "refused: c7" in out["result_error"][7]
        assert str(out["result"].dtype).endswith("[pyarrow]")  # Arrow-backed


def test_a_polars_frame_streams_its_rows():
    pl = pytest.importorskip("polars")
    session = echo_session()
    out = anyio.run(session.map(pl.DataFrame({"x": ["a", "b"]}), "{item[x]}").wait)
    assert list(out["result"]) == ["answer: a", "answer: b"]


def test_a_missing_or_unknown_file_is_a_clear_error(tmp_path):
    session = echo_session()
    with pytest.raises(ConfigurationError, match="no file"):
        session.map(str(tmp_path / "absent.csv"), "{item}")
    bad = tmp_path / "rows.jsonl"
    bad.write_text('{"a": 1}\nnot json\n')
    run = session.map(bad, "{item[a]}")
    with pytest.raises(ConfigurationError, match="line 2 is not JSON"):
        anyio.run(run.wait)
