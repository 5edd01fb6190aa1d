# ADR-0016 D1/D2 clause → test (the logger a Branch constructs and serializes)
#
# ADR-0016 D1 supplied logs initialize the logger rather than a second pile
#     → test_supplied_pile_is_used_by_identity
# ADR-0016 D1 log configuration validated as DataLoggerConfig (unknown options refused)
#     → test_config_forbids_unknown_fields_and_non_positive_capacity
# ADR-0016 D2 logs serialize as a Pile; empty logs stay empty
#     → test_to_dict_round_trips_through_from_dict
# (lion_nb: logs stay in memory; a dump without a path or persist_dir goes under the store's
#  folder, never loose into the working directory)
#     → test_default_logger_never_writes_to_the_working_directory,
#       test_dump_without_a_destination_writes_under_the_store_folder
# (lion_nb: secrets never reach a dump)
#     → test_dump_and_to_dict_redact_secrets
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel, ValidationError

from lion_nb.models.secrets import Secret
from lion_nb.protocols.logs import DataLogger, DataLoggerConfig, Log
from lion_nb.protocols.pile import Pile


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_default_logger_never_writes_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    logger = DataLogger()
    for i in range(1500):  # past the default capacity of 1000
        logger.log({"i": i})
    assert logger.config.persist_dir is None
    assert not logger.persistent
    assert len(logger.logs) == 1000
    assert logger.logs[0].content == {"i": 500}  # the oldest were dropped
    assert list(tmp_path.iterdir()) == []


def test_dump_without_a_destination_writes_under_the_store_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LION_NB_STORE", str(tmp_path / "store"))
    logger = DataLogger()
    logger.log({"event": "x"})
    written = logger.dump()
    assert written.parent == tmp_path / "store" / "logs"
    assert read_jsonl(written)[0]["content"] == {"event": "x"}
    assert [p.name for p in tmp_path.iterdir()] == ["store"]  # no loose file in the folder


def test_dump_without_a_destination_defaults_to_the_hidden_store_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LION_NB_STORE")
    logger = DataLogger()
    logger.log({"event": "x"})
    assert logger.dump().parent == tmp_path / ".lion_nb" / "logs"


def test_dump_to_a_path_writes_jsonl_appends_and_clears(tmp_path):
    logger = DataLogger()
    first = logger.log({"n": 1})
    target = tmp_path / "sub" / "run.jsonl"
    assert logger.dump(target) == target
    assert len(logger.logs) == 0
    logger.log({"n": 2})
    logger.dump(target, clear=False)
    assert len(logger.logs) == 1
    rows = read_jsonl(target)
    assert [r["content"] for r in rows] == [{"n": 1}, {"n": 2}]
    assert rows[0]["id"] == str(first.id)


def test_dump_with_nothing_logged_writes_no_file(tmp_path):
    assert DataLogger(DataLoggerConfig(persist_dir=tmp_path)).dump() is None
    assert list(tmp_path.iterdir()) == []


def test_dump_into_persist_dir_uses_the_configured_extension(tmp_path):
    logger = DataLogger({"persist_dir": tmp_path / "logs", "extension": "ndjson"})
    logger.log({"event": "a"})
    path = logger.dump()
    assert path.parent == tmp_path / "logs"
    assert path.suffix == ".ndjson"
    assert read_jsonl(path)[0]["content"] == {"event": "a"}


def test_dump_to_a_directory_path_creates_a_file_inside_it(tmp_path):
    logger = DataLogger()
    logger.log({"event": "a"})
    path = logger.dump(tmp_path)
    assert path.parent == tmp_path and path.suffix == ".jsonl"


def test_capacity_flushes_to_persist_dir_when_set(tmp_path):
    logger = DataLogger(DataLoggerConfig(persist_dir=tmp_path, capacity=3))
    for i in range(7):
        logger.log({"i": i})
    logger.wait_for_writes()  # the flush is written by a background thread
    files = sorted(tmp_path.iterdir())
    written = [row["content"]["i"] for f in files for row in read_jsonl(f)]
    assert written == [0, 1, 2, 3]  # one flush, when the fourth entry went past capacity
    assert [log.content["i"] for log in logger.logs] == [4, 5, 6]


def test_failed_flush_is_reported_and_memory_stays_bounded(tmp_path, caplog):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    logger = DataLogger(DataLoggerConfig(persist_dir=blocker, capacity=2))
    for i in range(5):
        logger.log({"i": i})
    logger.wait_for_writes()
    assert len(logger.logs) <= 2
    assert any("could not flush 3 log entries" in r.getMessage() for r in caplog.records)


def test_unbounded_capacity_keeps_everything():
    logger = DataLogger(DataLoggerConfig(capacity=None))
    for i in range(1200):
        logger.log({"i": i})
    assert len(logger) == 1200


def test_config_forbids_unknown_fields_and_non_positive_capacity():
    with pytest.raises(ValidationError, match="persist_path"):
        DataLoggerConfig(persist_path="logs")
    with pytest.raises(ValidationError):
        DataLoggerConfig(capacity=0)
    with pytest.raises(ValidationError, match="extension"):
        DataLoggerConfig(extension=".")
    assert DataLoggerConfig().model_dump() == {
        "persist_dir": None,
        "capacity": 1000,
        "extension": ".jsonl",
        "auto_save_on_exit": False,
    }


def test_auto_save_without_persist_dir_writes_under_the_store_folder(tmp_path):
    script = textwrap.dedent(
        """
        from lion_nb.protocols.logs import DataLogger, DataLoggerConfig
        logger = DataLogger(DataLoggerConfig(auto_save_on_exit=True))
        logger.log({"event": "last words"})
        """
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "LION_NB_STORE": str(tmp_path / "store")}
    subprocess.run([sys.executable, "-c", script], check=True, env=env, cwd=tmp_path, timeout=60)
    [path] = list((tmp_path / "store" / "logs").iterdir())
    assert read_jsonl(path)[0]["content"] == {"event": "last words"}
    assert [p.name for p in tmp_path.iterdir()] == ["store"]


def test_auto_save_on_exit_writes_what_is_left_when_the_process_ends(tmp_path):
    script = textwrap.dedent(
        f"""
        from lion_nb.protocols.logs import DataLogger, DataLoggerConfig
        logger = DataLogger(DataLoggerConfig(persist_dir={str(tmp_path)!r}, auto_save_on_exit=True))
        logger.log({{"event": "last words"}})
        """
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    subprocess.run([sys.executable, "-c", script], check=True, env=env, cwd=tmp_path, timeout=60)
    [path] = list(tmp_path.iterdir())
    assert read_jsonl(path)[0]["content"] == {"event": "last words"}


def test_supplied_pile_is_used_by_identity():
    pile = Pile([Log(content={"old": True})], item_type=Log)
    logger = DataLogger(logs=pile)
    logger.log({"new": True})
    assert logger.logs is pile
    assert [log.content for log in pile] == [{"old": True}, {"new": True}]
    from_dicts = DataLogger(logs=[{"content": {"a": 1}}])
    assert from_dicts.logs[0].content == {"a": 1}


def test_log_accepts_dicts_models_and_logs_and_refuses_the_rest():
    class Event(BaseModel):
        kind: str

    logger = DataLogger()
    assert logger.log({"a": 1}).content == {"a": 1}
    assert logger.log(Event(kind="x")).content == {"kind": "x"}
    entry = Log(content={"b": 2})
    assert logger.log(entry) is entry
    with pytest.raises(TypeError, match=r"`DataLogger\.log` takes a dict"):
        logger.log("text")


def test_dump_and_to_dict_redact_secrets(tmp_path, monkeypatch):
    key = "sk-test-" + "A1b2C3d4E5f6"
    Secret(key)  # a key the process knows is secret
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ant-env-secret-value")
    logger = DataLogger()
    logger.log(
        {
            "note": f"provider said: invalid key {key}",
            "api_key": "plain-looking-value",
            "headers": {"Authorization": "Bearer abc", "x-trace": "kept"},
            "env": ["ant-env-secret-value"],
        }
    )
    snapshot = json.dumps(logger.to_dict(mode="json"))
    path = logger.dump(tmp_path / "out.jsonl")
    written = path.read_text(encoding="utf-8")
    for text in (snapshot, written):
        assert key not in text
        assert "plain-looking-value" not in text
        assert "Bearer abc" not in text
        assert "ant-env-secret-value" not in text
        assert "kept" in text
    content = read_jsonl(path)[0]["content"]
    assert content["note"] == "provider said: invalid key ****"


def test_non_json_content_is_written_as_text(tmp_path):
    logger = DataLogger()
    logger.log({"error": ValueError("bad"), "path": Path("/x")})
    content = read_jsonl(logger.dump(tmp_path / "o.jsonl"))[0]["content"]
    assert content == {"error": "bad", "path": "/x"}


def test_to_dict_round_trips_through_from_dict(tmp_path):
    logger = DataLogger(DataLoggerConfig(persist_dir=tmp_path, capacity=10))
    entry = logger.log({"a": 1})
    data = json.loads(json.dumps(logger.to_dict(mode="json")))
    again = DataLogger.from_dict(data)
    assert again.config.capacity == 10
    assert Path(again.config.persist_dir) == tmp_path
    assert [log.id for log in again.logs] == [entry.id]
    assert again.logs[0].content == {"a": 1}
    empty = DataLogger().to_dict()
    assert empty["logs"] == {"collections": [], "progression": {"order": []}}


def test_adump_writes_from_a_worker_thread(tmp_path):
    logger = DataLogger()
    logger.log({"a": 1})
    path = anyio.run(logger.adump, tmp_path / "a.jsonl")
    assert read_jsonl(path)[0]["content"] == {"a": 1}
    assert len(logger) == 0
