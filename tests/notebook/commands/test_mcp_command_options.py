"""``%lion mcp add`` options, secrets and errors, and ``%%lion -t`` with several servers, in a
real in-process IPython shell against fake MCP servers run as real processes.

Acceptance -> test
- ``--approve`` and ``--timeout`` work with a stdio command, in any order before ``--``
    -> test_options_before_the_command_in_any_order
- a token in the command is masked in every echo; ``--env NAME=VALUE`` values reach the
  server and are never shown or saved -> test_secrets_in_the_command_and_env_are_masked
- a non-positive or NaN ``--timeout`` is a UsageError; a name in use is refused without
  ``--replace`` -> test_bad_timeouts_and_names_in_use
- ``--url`` with nothing listening says the server could not be reached
    -> test_an_unreachable_url_is_one_line
- a program that is not an MCP server: only the one-line error, no SDK traceback (a real
  IPython in its own process, logging as configured there)
    -> test_a_program_that_is_not_a_server_prints_one_line
- ``%%lion -t a -t b`` with an ``echo`` on both (and a notebook ``echo``) offers all three
    -> test_two_servers_with_the_same_tool_offer_both
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap

import pytest

from tests.fakes.mcp_fixtures import QUICK_SERVER, children, server_command
from tests.notebook.nbshell import run, usage_error

pytestmark = pytest.mark.timeout(180)

QUICK = shlex.join([sys.executable, str(QUICK_SERVER)])


def _servers(ip):
    return ip.magics_manager.registry["LionMagics"].state.mcp


def _shown(ran) -> str:
    """Everything a cell showed: stdout, stderr and its display data."""
    return ran.stdout + ran.stderr + json.dumps([o.data for o in ran.outputs], default=str)


def test_options_before_the_command_in_any_order(ip):
    before = children()
    orders = [
        "--approve ask --timeout 5",
        "--timeout 5 --approve ask",
        "--timeout=5 --approve=ask",
    ]
    for n, options in enumerate(orders):
        ran = run(ip, f"%lion mcp add s{n} {options} -- {QUICK} --tools echo")
        assert ran.error is None, (options, ran)
        server = _servers(ip)[f"s{n}"]
        assert server.approve == "ask" and server.timeout == 5.0, options
        assert "echo" in server.tool_names
    assert run(ip, f"%lion mcp add plain -- {QUICK}").error is None
    assert _servers(ip)["plain"].approve is None and _servers(ip)["plain"].timeout == 30.0
    for name in [*(f"s{n}" for n in range(len(orders))), "plain"]:
        assert run(ip, f"%lion mcp remove {name}").error is None
    assert children() == before


def test_secrets_in_the_command_and_env_are_masked(ip, monkeypatch):
    token = "tok-5e1c7d9a3b8f"
    hidden = "hidden-0a9b8c7d6e5f"
    monkeypatch.setenv("FAKE_SERVICE_TOKEN", token)  # a secret the notebook knows
    command = shlex.join(server_command(None, "--token", token))
    added = run(ip, f"%lion mcp add leaky --env PLAIN_SETTING={hidden} -- {command}")
    assert added.error is None, added
    listed = run(ip, "%lion mcp list")
    assert listed.error is None, listed
    assert run(ip, "t = %lion mcp list").error is None
    [row] = ip.user_ns["t"].rows
    assert row["target"].endswith("--token ****"), row
    responses = [
        {"tool_calls": [{"name": "leak", "arguments": {"env": "PLAIN_SETTING"}}]},
        "Leaked.",
    ]
    model = f"rec = iModel(provider='offline', model='scripted', responses={responses!r})"
    assert run(ip, f"from lion_nb import iModel\n{model}").error is None
    turn = run(ip, "%%lion -m rec -t leaky\nLeak it.")
    assert turn.error is None, turn
    from lion_nb import current_session

    branch = current_session().default_branch
    [response] = [m for m in branch.messages if m.kind == "action_response"]
    assert response.output == "env ****"  # the server got it; its echo is masked
    server = _servers(ip)["leaky"]
    saved = " ".join(
        [json.dumps(branch.to_dict(mode="json")), repr(server), json.dumps(server.describe())]
    )
    for ran in (added, listed):
        assert token not in _shown(ran) and hidden not in _shown(ran)
    assert token not in saved and hidden not in saved
    assert run(ip, "%lion mcp remove leaky").error is None


def test_bad_timeouts_and_names_in_use(ip):
    for bad in ("-5", "0", "nan", "inf"):
        text = usage_error(ip, f"%lion mcp add t --timeout {bad} -- {QUICK}")
        assert "positive number of seconds" in text and "\n" not in text, bad
    assert _servers(ip) == {}
    assert run(ip, f"%lion mcp add calc -- {QUICK}").error is None
    first = _servers(ip)["calc"]
    again = run(ip, f"%lion mcp add calc -- {QUICK}")  # the cell run again: kept
    assert again.error is None and _servers(ip)["calc"] is first
    assert first.status == "connected"
    refused = usage_error(ip, f"%lion mcp add calc -- {QUICK} --tools echo")
    assert "`calc`" in refused and "--replace" in refused and "\n" not in refused
    assert _servers(ip)["calc"] is first and first.status == "connected"
    replaced = run(ip, f"%lion mcp add calc --replace -- {QUICK} --tools echo")
    assert replaced.error is None, replaced
    assert _servers(ip)["calc"] is not first and first.status == "closed"
    assert "echo" in _servers(ip)["calc"].tool_names
    assert run(ip, "%lion mcp remove calc").error is None


def test_an_unreachable_url_is_one_line(ip):
    url = "http://127.0.0.1:9/mcp"
    text = usage_error(ip, f"%lion mcp add web --url {url}")
    assert "could not be reached" in text and url in text and "\n" not in text
    assert "interrupted" not in text


def test_a_program_that_is_not_a_server_prints_one_line(tmp_path):
    """In its own process: pytest's log capture would hide what the SDK logs to stderr."""
    not_a_server = shlex.join([sys.executable, "-c", "print('hello, I am not a server')"])
    script = textwrap.dedent(
        f"""
        from IPython.testing.globalipapp import start_ipython
        shell = start_ipython()
        shell.run_line_magic("load_ext", "lion_nb")
        result = shell.run_cell({f"%lion mcp add bad -- {not_a_server}"!r})
        print("ERROR-TYPE", type(result.error_in_exec).__name__)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.stdout.split() == ["ERROR-TYPE", "UsageError"], out.stdout
    [error] = [line for line in out.stderr.splitlines() if line.strip()]
    assert "did not start" in error and "not an MCP server" in error
    assert "hello, I am not a server" in error
    assert "Traceback" not in out.stderr and "pydantic" not in out.stderr


def test_two_servers_with_the_same_tool_offer_both(ip):
    for name in ("a", "b"):
        assert run(ip, f"%lion mcp add {name} -- {QUICK} --tools echo").error is None
    define = (
        'def echo(text: str) -> str:\n    """The notebook\'s echo."""\n    return "local " + text'
    )
    assert run(ip, define).error is None
    calls = [{"name": n, "arguments": {"text": n}} for n in ("echo", "a_echo", "b_echo")]
    responses = [{"tool_calls": calls}, "Echoed."]
    model = f"rec = iModel(provider='offline', model='scripted', responses={responses!r})"
    assert run(ip, f"from lion_nb import iModel\n{model}").error is None
    turn = run(ip, "%%lion -m rec -t echo -t a -t b\nEcho everywhere.")
    assert turn.error is None, turn
    from lion_nb import current_session

    branch = current_session().default_branch
    outs = {m.function: m for m in branch.messages if m.kind == "action_response"}
    assert outs["echo"].output == "local echo"
    assert outs["a_echo"].output == "echo: a_echo" and outs["a_echo"].metadata["mcp_server"] == "a"
    assert outs["b_echo"].output == "echo: b_echo" and outs["b_echo"].metadata["mcp_server"] == "b"
    assert not any(m.is_error for m in outs.values())
    assert "echo" not in branch.tools  # offered for that turn only
    for name in ("a", "b"):
        assert run(ip, f"%lion mcp remove {name}").error is None
