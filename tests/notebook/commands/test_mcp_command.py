"""``%lion mcp add/list/remove`` and ``%%lion -t NAME`` in a real in-process IPython shell,
against the fake MCP server run as a real process.

Issue acceptance -> test
- add (stdio and URL), list (servers, status, tools), remove
    -> test_add_list_offer_and_remove_a_stdio_server, test_add_a_url_server_with_a_header_from_env
- ``%%lion -t NAME`` offers that server's tools for the turn only
    -> test_add_list_offer_and_remove_a_stdio_server
- errors (unknown server, a command that does not start) are one-line UsageErrors
    -> test_errors_are_one_line_usage_errors
"""

from __future__ import annotations

import json
import shlex

import pytest

from tests.fakes.mcp_fixtures import TOKEN, children, server_command
from tests.notebook.nbshell import run, usage_error

pytestmark = pytest.mark.timeout(180)


def _model_code(note: str) -> str:
    responses = [
        {"tool_calls": [{"name": "record", "arguments": {"note": note}}]},
        "Recorded.",
    ]
    return (
        "from lion_nb import iModel\n"
        f"rec = iModel(provider='offline', model='scripted', responses={json.dumps(responses)})"
    )


def test_add_list_offer_and_remove_a_stdio_server(ip, mcp_log):
    before = children()
    command = shlex.join(server_command(mcp_log))
    ran = run(ip, f"%lion mcp add notes -- {command}")
    assert ran.error is None, ran
    listing = run(ip, "t = %lion mcp list")
    assert listing.error is None, listing
    [row] = ip.user_ns["t"].rows
    assert row["server"] == "notes" and row["status"] == "connected"
    assert "record" in row["tools"] and row["transport"] == "stdio"
    assert run(ip, _model_code("from a cell")).error is None
    turn = run(ip, "%%lion -m rec -t notes -o answer\nRecord a note.")
    assert turn.error is None, turn
    assert ip.user_ns["answer"] == "Recorded."
    assert mcp_log.read_text().splitlines() == ["from a cell"]
    from lion_nb import current_session

    branch = current_session().default_branch
    [response] = [m for m in branch.messages if m.kind == "action_response"]
    assert response.output == "recorded from a cell"
    assert response.metadata["mcp_server"] == "notes"
    assert "record" not in branch.tools  # offered for that turn only
    removed = run(ip, "%lion mcp remove notes")
    assert removed.error is None and "stopped and removed" in removed.stdout
    assert run(ip, "t = %lion mcp list").error is None
    assert ip.user_ns["t"].rows == []
    assert children() == before


def test_add_a_url_server_with_a_header_from_env(ip, mcp_http, monkeypatch):
    url, _log = mcp_http
    monkeypatch.setenv("FAKE_MCP_AUTH", f"Bearer {TOKEN}")
    ran = run(ip, f"t = %lion mcp add web --url {url} --header-env Authorization=FAKE_MCP_AUTH")
    assert ran.error is None, ran
    [row] = ip.user_ns["t"].rows
    assert row["transport"] == "http" and row["status"] == "connected"
    assert TOKEN not in json.dumps(row) and TOKEN not in ran.stdout
    assert run(ip, "%lion mcp remove web").error is None


def test_errors_are_one_line_usage_errors(ip, tmp_path):
    unknown = usage_error(ip, "%lion mcp remove nothere")
    assert "no MCP server named `nothere`" in unknown and "\n" not in unknown
    missing = usage_error(ip, f"%lion mcp add bad -- {tmp_path / 'no-such-server'}")
    assert "did not start" in missing and "\n" not in missing
    exits = usage_error(
        ip, f"%lion mcp add bad -- {shlex.join(server_command(None, '--exit-at-start'))}"
    )
    assert "did not start" in exits and "refusing to start" in exits and "\n" not in exits
    neither = usage_error(ip, "%lion mcp add bad")
    assert "`-- CMD ARGS` (stdio) or `--url URL`" in neither
    env = usage_error(ip, "%lion mcp add web --url http://127.0.0.1:9/mcp --header-env A=NOPE_VAR")
    assert "`NOPE_VAR`" in env and "not set" in env
    assert "needs the server's NAME" in usage_error(ip, "%lion mcp remove")


def test_a_notebook_replays_its_server_from_the_cassette(ip, mcp_log, tmp_path, monkeypatch):
    """``%lion cassette`` covers ``%lion mcp add``: recorded once, then replayed with the
    server's command unusable -- as CI runs a tutorial (``LION_NB_CASSETTE_MODE=none``)."""
    from lion_nb import current_session
    from lion_nb.models.cassettes import ENV_MODE, use_cassette

    path = tmp_path / "notebook.jsonl"

    def session(command: str, branch: str) -> tuple:
        assert run(ip, f"%lion cassette {path}").error is None
        added = run(ip, f"t = %lion mcp add notes -- {command}")
        assert added.error is None, added
        [row] = ip.user_ns["t"].rows
        assert run(ip, _model_code("from a cell")).error is None
        turn = run(ip, f"%%lion -b {branch} -m rec -t notes -o answer\nRecord a note.")
        assert turn.error is None, turn
        messages = current_session().get_branch(branch).messages
        [response] = [m for m in messages if m.kind == "action_response"]
        assert run(ip, "%lion mcp remove notes").error is None
        return row, ip.user_ns["answer"], response.output

    try:
        recorded = session(shlex.join(server_command(mcp_log)), "recording")
        monkeypatch.setenv(ENV_MODE, "none")
        before = children()
        replayed = session("/nonexistent/lion-nb-mcp-server", "replay")
        assert children() == before
    finally:
        use_cassette(None)
    assert recorded[0]["tools"] == replayed[0]["tools"] and "record" in recorded[0]["tools"]
    assert recorded[1:] == replayed[1:] == ("Recorded.", "recorded from a cell")
    assert mcp_log.read_text().splitlines() == ["from a cell"]  # once, while recording
