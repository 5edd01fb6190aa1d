"""Every bad input is a one-line `UsageError` that names the problem and gives the fix;
a provider failure is one line in the provider's words; keys are never shown."""

from __future__ import annotations

import pytest

from lion_nb import current_session
from tests.notebook.nbshell import run, usage_error

SETUP = """
from pydantic import BaseModel
from lion_nb import iModel
class Summary(BaseModel):
    title: str
not_a_model = 3
not_callable = "text"
def tool(x: int) -> int:
    return x
def sync_op(branch, instruction):
    return instruction
"""


@pytest.fixture
def nb(ip):
    assert run(ip, SETUP).error is None
    return ip


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        (
            "%%lion --fromat json\nhi",
            ["unknown option `--fromat`", "Did you mean `--format`?", "%%lion?"],
        ),
        ("%%lion -f yaml\nhi", ["invalid choice: 'yaml'", "%%lion?"]),
        ("%%lion -b\nhi", ["-b/--branch", "expected one argument"]),
        ("%%lion --policy sometimes\nhi", ["invalid choice: 'sometimes'"]),
        ("%%lion --max-extensions many\nhi", ["invalid int value"]),
        (
            "%%lion --op ReAct --max-extensions -1\nhi",
            ["`--max-extensions -1`", "0 or more", "`--max-extensions 2`"],
        ),
        ("%%lion -o 1x\nhi", ["`--out 1x`", "not a valid Python variable name"]),
        ("%%lion -o class\nhi", ["`--out class`"]),
        (
            "%%lion -r Missing\nhi",
            [
                "`--response-format Missing`",
                "no pydantic model named `Missing`",
                "dotted import path",
            ],
        ),
        ("%%lion -r not_a_model\nhi", ["`not_a_model` is a int", "pydantic.BaseModel"]),
        ("%%lion -r json.NoSuchThing\nhi", ["cannot import `NoSuchThing` from `json`"]),
        (
            "%%lion -t missing_tool\nhi",
            ["`--tools missing_tool`", "no function named `missing_tool`"],
        ),
        ("%%lion -t not_callable\nhi", ["`not_callable` is a str, not a function"]),
        (
            "%%lion -t tool --op chat\nhi",
            ["`--tools` works with `--op operate`", "not `--op chat`"],
        ),
        ("%%lion --op parse\nhi", ["`--op parse` needs `--response-format"]),
        (
            "%%lion --op nope\nhi",
            ["`--op nope`: no such operation", "`communicate`", "%lion operation NAME"],
        ),
        ("%%lion --op run\nhi", ["`--op run` needs a CLI agent model", "offline_cli"]),
        ("%%lion --max-extensions 2\nhi", ["`--max-extensions` only applies to `--op ReAct`"]),
        ("%%lion -f code --bg\nhi", ["`--format code` cannot be combined with `--bg`"]),
        ("%%lion -m gibberish\nhi", ["`--model gibberish`", "provider/model", "%lion alias"]),
        ("%%lion -m nosuch/model\nhi", ["`--model nosuch/model`", "Unknown provider `nosuch`"]),
        ("%%lion\n   \n", ["the cell has no instruction"]),
        ("%%lion\nWhat about {nowhere}?", ["no variable named `nowhere`", "{{nowhere}}"]),
        ("%%lion\n{len(nowhere)}", ["no variable named `nowhere`"]),
        ("%%lion\n{not_a_model + 'x'}", ["could not be evaluated: TypeError"]),
        ('%%lion -s "unclosed\nhi', ["No closing quotation"]),
    ],
)
def test_bad_cell_options(nb, cell, expected):
    text = usage_error(nb, cell)
    for part in expected:
        assert part in text, (part, text)


def test_system_on_a_branch_with_a_conversation(nb):
    run(nb, "%%lion -q\nfirst")
    text = usage_error(nb, '%%lion -s "late"\nsecond')
    assert "`--system`" in text and "already has a conversation" in text and "-b NEW" in text


def test_cli_model_with_an_api_operation(nb):
    run(nb, 'agent = iModel(provider="offline_cli", model="auto")')
    text = usage_error(nb, "%%lion -m agent --op communicate\nhi")
    assert "is a CLI agent" in text and "--op run" in text


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("%lion brnches", ["no such subcommand", "Did you mean `%lion branches`?"]),
        ("%lion switch nowhere", ["No branch named `nowhere`", "`main`", "%lion new nowhere"]),
        ("%lion new main", ["that branch exists", "%lion switch main"]),
        ("%lion clone main", ["a branch with that name exists"]),
        ("%lion remove nowhere", ["No branch named `nowhere`"]),
        ("%lion history nowhere", ["No branch named `nowhere`"]),
        ("%lion explain", ["no error has been raised"]),
        ("%lion load /nonexistent/lion.json", ["no file `/nonexistent/lion.json`"]),
        ("%lion config nonsense", ["no such option", "rerun"]),
        ("%lion config rerun sometimes", ["`%lion config rerun sometimes`", "fork"]),
        ("%lion config max_updates_per_second fast", ["max_updates_per_second"]),
        ("%lion alias fast", ["give a name and a provider/model"]),
        ("%lion alias --remove nothing", ["no such alias"]),
        ("%lion tool missing_tool", ["no function named `missing_tool`"]),
        ("%lion tool --remove tool", ["has no tool `tool`"]),
        ("%lion operation missing_op", ["no function named `missing_op`", "async def"]),
        ("%lion operation sync_op", ["must be an async function"]),
        ("%lion cancel", ["needs a run id", "--all"]),
        ("%lion cancel 99", ["no background run 99"]),
        ("%lion ask", ["needs an instruction"]),
        ("%lion ask --nope hi", ["unknown option `--nope`"]),
        ("%lion model gibberish", ["`--model gibberish`"]),
        ("%lion history -n lots", ["`%lion history -n lots`", "%lion help history"]),
        ("%lion history -n -3", ["`%lion history -n -3`", "0 for all", "`%lion history -n 10`"]),
        ("%lion signals -n -1", ["`%lion signals -n -1`", "0 for all", "`%lion signals -n 10`"]),
        ("%lion help nothing", ["no such subcommand"]),
    ],
)
def test_bad_line_subcommands(nb, line, expected):
    text = usage_error(nb, line)
    for part in expected:
        assert part in text, (part, text)


def test_load_rejects_files_it_did_not_write(nb, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    assert "is not JSON" in usage_error(nb, f"%lion load {bad}")
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    assert "was not written by `%lion save`" in usage_error(nb, f"%lion load {other}")


def test_provider_failure_is_one_line_in_the_providers_words(nb):
    run(
        nb,
        'failing = iModel(provider="offline", model="scripted", responses=[{"error": "model overloaded, try later", "status": 529}])',
    )
    ran = run(nb, "%%lion -m failing\nhi")
    assert ran.error is not None
    assert "model overloaded, try later" in ran.stderr + ran.stdout
    assert "Traceback" not in ran.stderr + ran.stdout
    assert len([line for line in (ran.stderr + ran.stdout).splitlines() if line.strip()]) <= 3


def test_missing_key_error_names_the_variable_never_a_value_and_never_env(nb, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    ran = run(nb, "%%lion -m openai/gpt-4o-mini\nhi")
    shown = ran.stderr + ran.stdout
    assert "OPENAI_API_KEY" in shown and "api_key=" in shown
    assert "getpass" in shown
    assert "%env" not in shown
    assert "Traceback" not in shown


def test_a_key_never_appears_in_output(nb, monkeypatch, tmp_path):
    secret = "sk-test-DO-NOT-SHOW-1234567890"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    run(nb, "%lion new remote -m openai/gpt-4o-mini")
    shown = ""
    for line in (
        "%lion models",
        "%lion branches",
        "%lion config",
        f"%lion save {tmp_path / 'saved.json'}",
    ):
        ran = run(nb, line)
        shown += ran.stdout + ran.stderr + repr(ran.value)
    shown += (tmp_path / "saved.json").read_text()
    assert secret not in shown


def test_a_rejected_cell_leaves_the_session_unchanged(nb):
    from lion_nb import current_session

    text = usage_error(nb, "%%lion -b fresh -s 'hi' --op nope\nhello")
    assert "`--op nope`" in text
    assert [b.name for b in current_session().branches] == ["main"]
    run(nb, "%%lion -q\nfirst")
    usage_error(nb, "%%lion -s 'late' --op nope\nhello")
    assert current_session().get_branch("main").system is None


def test_unknown_operation_lists_the_registered_ones(nb):
    setup = "async def summarize(branch, instruction=None, **kw):\n    return 'ok'\n"
    assert run(nb, setup).error is None
    assert run(nb, "%lion operation summarize").error is None
    message = usage_error(nb, "%%lion --op summarise\nhi")
    assert "`--op summarise`: no such operation" in message
    assert "Registered: `summarize`." in message


@pytest.mark.parametrize(
    "code", ["%%lion -m ''\nhi", '%lion ask -m "" hi', "%lion new side -m ''", "%lion model ''"]
)
def test_an_empty_model_is_refused_not_replaced_by_the_offline_one(nb, code):
    text = usage_error(nb, code)
    assert "the model is empty" in text and "leave `-m` out" in text
    assert [b.name for b in current_session().branches] == ["main"]
    assert len(current_session().default_branch.messages) == 0  # nothing was sent
