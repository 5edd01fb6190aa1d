"""Every ``%lion`` subcommand, in a real in-process IPython shell."""

from __future__ import annotations

import json

import pytest

from lion_nb import current_session
from tests.notebook.nbshell import run


@pytest.fixture
def nb(ip):
    assert run(ip, "from lion_nb import iModel").error is None
    return ip


def names():
    return [b.name for b in current_session().branches]


def test_help_lists_every_subcommand_with_examples(nb):
    from lion_nb.notebook.commands.registry import COMMANDS

    ran = run(nb, "%lion help")
    for name in COMMANDS:
        if name != "help":
            assert f"  {name} " in ran.stdout, name
    assert "ask" in ran.stdout and "Examples" in ran.stdout
    assert run(nb, "%lion").stdout == ran.stdout  # bare %lion is help
    assert "--branch" in run(nb, "%lion help ask").stdout
    assert "-n N" in run(nb, "%lion help history").stdout
    ran = run(nb, "%lion?")
    assert ran.error is None
    for text in (
        "%lion SUBCOMMAND [options]",
        "ask        run a turn from one line",
        "branches   list the branches (ls)",
        "explain    explain the last error",
        "config     show or set LionMagics options",
        "Examples:",
        'answer = %lion ask -b critic "Is {Out[4]} right?"',
        'handle = %lion ask --bg "Write the report."',
        "%lion config rerun append",
    ):
        assert text in ran.stdout, text


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("%lion ask -h", ["prompt", "--branch", "--bg"]),
        ('%lion ask --help "not sent"', ["prompt", "--branch"]),
        ("%lion switch -h", ["lion switch", "name"]),
        ("%lion history --help", ["lion history", "-n N"]),
        ("%lion explain -h", ["lion explain", "--branch"]),
        ("%lion -h", ["ask        Run a turn from one line", "Examples:"]),
        ("%lion --help", ["ask        Run a turn from one line"]),
    ],
)
def test_h_and_help_print_a_subcommands_usage(nb, line, expected):
    ran = run(nb, line)
    assert ran.error is None, ran
    for text in expected:
        assert text in ran.stdout, (text, ran.stdout)
    assert list(current_session().default_branch.messages) == []  # nothing was sent


def test_a_quoted_h_in_a_prompt_is_text(nb):
    ran = run(nb, 'a = %lion ask "what does -h mean?"')
    assert ran.error is None, ran
    assert nb.user_ns["a"].startswith("Offline model")


def test_branches_switch_new_clone_remove(nb):
    run(nb, "%%lion -q\nfirst")
    table = run(nb, "%lion branches").value
    assert [r["branch"] for r in table.rows] == ["main"] and table.rows[0][""] == "*"
    assert "<table>" in table._repr_html_()

    assert run(nb, '%lion new critic -s "Be harsh." -m offline/auto').error is None
    assert names() == ["main", "critic"]
    critic = current_session().get_branch("critic")
    assert critic.system.rendered == "Be harsh."
    run(nb, "%%lion -q\nto the critic")
    assert len(critic.messages) == 3  # new made it active

    assert run(nb, "%lion switch main").error is None
    run(nb, "%%lion -q\nback on main")
    assert len(current_session().get_branch("main").messages) == 4

    assert run(nb, "%lion clone copy --from critic").error is None
    copy = current_session().get_branch("copy")
    assert [m.rendered for m in copy.messages] == [m.rendered for m in critic.messages]
    assert run(nb, "%lion ls").value.rows[-1][""] == "*"  # the clone is active

    assert run(nb, "%lion rm copy --force").error is None  # the active one: --force
    assert names() == ["main", "critic"]
    run(nb, "%%lion -q\nafter removal")  # the active branch fell back to a member
    assert "copy" not in names()


def test_history_shows_cells_and_kinds(nb):
    run(nb, "%%lion -q\none")
    count = nb.execution_count - 1
    run(nb, "%%lion -q\ntwo")
    table = run(nb, "%lion history").value
    assert [r["kind"] for r in table.rows] == ["instruction", "assistant_response"] * 2
    assert table.rows[0]["cell"] == count and table.rows[2]["cell"] == count + 1
    assert len(run(nb, "%lion history -n 1").value.rows) == 1
    assert len(run(nb, "%lion history main -n 0").value.rows) == 4


def test_signals_are_logged(nb):
    run(nb, "%%lion -q\nhello")
    table = run(nb, "%lion signals").value
    kinds = [r["signal"] for r in table.rows]
    assert kinds == ["RunStart", "MessageAdded", "MessageAdded", "RunEnd"]
    only = run(nb, "%lion signals --kind RunEnd -n 5").value
    assert [r["signal"] for r in only.rows] == ["RunEnd"]


def test_models_model_and_alias(nb):
    run(nb, "%lion alias quick offline/auto")
    assert run(nb, "%lion alias").value.rows == [{"alias": "quick", "model": "offline/auto"}]
    run(nb, "scripted = iModel(provider='offline', model='scripted', responses=['set!'])")
    assert run(nb, "%lion model scripted").error is None
    assert run(nb, "%%lion\nhi").value == "set!"
    rows = run(nb, "%lion models").value.rows
    assert {"name": "main", "kind": "branch", "model": "offline/scripted", "cli": ""} in rows
    assert any(r["kind"] == "alias" and r["name"] == "quick" for r in rows)
    assert any(r["kind"] == "default" for r in rows)
    run(nb, "%lion alias --remove quick")
    assert run(nb, "%lion alias").value.rows == []


def test_tool_registration_and_removal(nb):
    run(nb, "def add(a: int, b: int) -> int:\n    'Add two numbers.'\n    return a + b")
    assert run(nb, "%lion tool add").error is None
    main = current_session().get_branch("main")
    assert "add" in main.tools
    ran = run(nb, "%%lion --op operate\nadd 2 and 3")  # a registered tool is offered
    assert ran.error is None, ran
    assert "action_response" in [m.kind for m in main.messages]
    run(nb, "%lion tool --remove add")
    assert "add" not in main.tools


def test_operation_registration(nb):
    run(nb, "async def echo(branch, instruction, **kw):\n    return f'{branch.name}:{instruction}'")
    run(nb, "%lion operation repeat echo")
    assert run(nb, "%%lion --op repeat\nhey").value == "main:hey"


def test_explain_sends_the_traceback_and_source_of_the_last_error(nb):
    run(nb, "def broken():\n    return {'a': 1}['b']")
    failing = run(nb, "broken()")
    assert failing.error is not None
    ran = run(nb, "%lion explain")
    assert ran.error is None, ran
    instruction = current_session().default_branch.messages[0].rendered
    assert "KeyError: 'b'" in instruction and "broken()" in instruction
    assert "{'a': 1}['b']" in instruction  # braces reach the model verbatim
    assert isinstance(ran.value, str)
    # an error of a lion cell itself is not the one explained
    run(nb, "%%lion --bad-option\nx")
    run(nb, "%lion explain -q -b second")
    second = current_session().get_branch("second")
    assert "KeyError: 'b'" in second.messages[0].rendered


def test_ask_runs_a_turn_from_one_line(nb):
    ran = run(nb, 'answer = %lion ask -b side "what is {1 + x}?"'.replace("x", "len('ab')"))
    assert ran.error is None, ran
    assert nb.user_ns["answer"].startswith("Offline model")
    assert current_session().get_branch("side").messages[0].rendered == "what is 3?"


def test_ask_in_the_background_returns_a_handle(nb):
    ran = run(nb, "h = %lion ask --bg 'take your time'\nresult = await h")
    assert ran.error is None, ran
    assert nb.user_ns["result"].startswith("Offline model")
    assert run(nb, "%lion runs").value.rows[0]["status"] == "done"


def test_save_and_load_round_trip(nb, tmp_path):
    path = tmp_path / "session.json"
    run(nb, "%%lion -q\nremember this")
    run(nb, "%lion new other")
    run(nb, "%%lion -q\nand this")
    assert run(nb, f"%lion save {path}").error is None
    data = json.loads(path.read_text())
    assert data["format"] == "lion_nb.session/1" and data["active"] == "other"
    run(nb, "%lion reset --all")
    assert names() == ["main"] and len(current_session().default_branch.messages) == 0
    assert run(nb, f"%lion load {path}").error is None
    assert sorted(names()) == ["main", "other"]
    main = current_session().get_branch("main")
    assert main.messages[0].rendered == "remember this"
    assert main.messages[0].metadata["lion"]["cell_id"] is None  # cell tags are saved too
    run(nb, "%%lion -q\ncontinues on other")
    assert len(current_session().get_branch("other").messages) == 4


def test_save_uses_the_configured_path(nb, tmp_path):
    run(nb, f"%config LionMagics.save_path = {str(tmp_path / 'default.json')!r}")
    run(nb, "%lion save")
    assert (tmp_path / "default.json").exists()


def test_reset_clears_a_branch_but_keeps_its_system_prompt(nb):
    run(nb, '%%lion -q -s "Stay."\nhello')
    assert run(nb, "%lion reset").error is None
    main = current_session().get_branch("main")
    assert [m.kind for m in main.messages] == ["system"]


def test_config_shows_and_sets(nb):
    table = run(nb, "%lion config").value
    options = {r["option"] for r in table.rows}
    assert {"rerun", "output_format", "aliases", "default_model", "interpolate"} <= options
    run(nb, "%lion config rerun append")
    assert run(nb, "%lion config rerun").value == "append"
    run(nb, "%lion config max_updates_per_second 5")
    assert run(nb, "%lion config max_updates_per_second").value == 5.0
    run(nb, "%config LionMagics.rerun = 'replace'")
    assert run(nb, "%lion config rerun").value == "replace"


def test_runs_and_cancel(nb):
    run(nb, "slow = iModel(provider='offline', model='auto', delay=0.05)")
    run(nb, "%%lion --bg -m slow\nlong")
    rows = run(nb, "%lion runs").value.rows
    assert rows[0]["status"] == "running"
    run(nb, f"%lion cancel {rows[0]['id']}")
    run(nb, "import asyncio\nawait asyncio.sleep(0)")
    assert run(nb, "%lion runs").value.rows[0]["status"] == "cancelled"


def test_configuration_from_environment(ip, monkeypatch):
    monkeypatch.setenv("LION_NB_FORMAT", "text")
    monkeypatch.setenv("LION_NB_RERUN", "append")
    monkeypatch.setenv("LION_NB_ALIASES", "fast=offline/auto")
    monkeypatch.setenv("LION_NB_INTERPOLATE", "0")
    ip.run_line_magic("unload_ext", "lion_nb")
    ip.run_line_magic("load_ext", "lion_nb")
    magics = ip.magics_manager.registry["LionMagics"]
    assert magics.output_format == "text" and magics.rerun == "append"
    assert magics.aliases == {"fast": "offline/auto"} and magics.interpolate is False


def test_bad_environment_value_warns_and_keeps_the_default(ip, monkeypatch):
    monkeypatch.setenv("LION_NB_RERUN", "sometimes")
    ip.run_line_magic("unload_ext", "lion_nb")
    with pytest.warns(UserWarning, match="LION_NB_RERUN"):
        ip.run_line_magic("load_ext", "lion_nb")
    assert ip.magics_manager.registry["LionMagics"].rerun == "fork"
