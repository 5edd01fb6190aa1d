"""Shared pieces of the session store tests: a varied session, a store that records the
units it is given (and still writes them), and a raw look at the database."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from lion_nb import ActionRequest, ActionResponse, Session, iModel
from lion_nb.store.store import SessionStore, Unit


class RecordingStore(SessionStore):
    """A real store that also keeps every unit the autosaver hands it."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.units: list[Unit] = []

    def write(self, unit: Unit) -> Any:
        self.units.append(unit)
        return super().write(unit)

    def take(self) -> list[Unit]:
        units, self.units = self.units, []
        return units


def rows_written(units: list[Unit]) -> int:
    """How many message rows the units put."""
    return sum(len(op[2]) for u in units for op in u.ops if op[0] == "put")


def op_kinds(units: list[Unit]) -> list[str]:
    return [op[0] for u in units for op in u.ops]


def varied_session() -> Session:
    """Two branches: a system prompt, a tool call and its result, logs, a distinct parse model,
    metadata with nested data; the second branch is the default."""
    session = Session(name="analysis", user="ada")
    main = session.default_branch
    main.name = "main"
    main.parse_model = iModel(provider="offline", model="auto")
    main.msgs.add_message(system="You are terse.")
    main.msgs.add_message(instruction="What is 2 + 2?", metadata={"lion": {"cell_id": "c1"}})
    request = ActionRequest(function="add", arguments={"a": 2, "b": 2})
    main.msgs.add_message(action_request=request)
    response = ActionResponse(
        function="add", arguments={"a": 2, "b": 2}, output=4, action_request_id=str(request.id)
    )
    main.msgs.add_message(action_response=response)
    request.action_response_id = str(response.id)
    main.msgs.add_message(
        assistant_response="4", metadata={"usage": {"input_tokens": 5, "output_tokens": 1}}
    )
    main.log_manager.log({"event": "api_call", "n": 1})
    side = session.new_branch(name="side", system="Be kind.")
    side.msgs.add_message(instruction="Hello ünïcode ✓")
    side.msgs.add_message(assistant_response="Hi!")
    session.default_branch = side
    return session


def connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def integrity(path: Path) -> str:
    conn = connect(path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()
