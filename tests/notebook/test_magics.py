"""Every ``%%lion`` option, in a real in-process IPython shell with the offline models."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from lion_nb import current_session
from lion_nb.notebook.cell.handle_view import HandleView, set_view_factory
from tests.notebook.nbshell import run
from tests.waiting import until, wait_until

SETUP = '''
from pydantic import BaseModel
from lion_nb import iModel

class Summary(BaseModel):
    title: str
    points: list[str]

calls = []
def lookup(city: str) -> str:
    """The weather in a city."""
    calls.append(city)
    return f"sunny in {city}"

def scripted(*responses):
    return iModel(provider="offline", model="scripted", responses=list(responses))
'''


@pytest.fixture
def nb(ip):
    assert run(ip, SETUP).error is None
    return ip


def branch(name=None):
    session = current_session()
    if name is None:
        return session.default_branch
    return session.get_branch(name)


def test_a_cell_is_an_awaited_turn_whose_value_is_out(nb):
    assert "await" in nb.transform_cell("%%lion\nhi")
    ran = run(nb, "%%lion\nHello")
    assert ran.error is None, ran
    assert ran.value.startswith("Offline model: you asked “Hello”")
    assert nb.user_ns["Out"][nb.execution_count - 1] == ran.value
    assert nb.user_ns["_"] == ran.value
    kinds = [m.kind for m in branch("main").messages]
    assert kinds == ["instruction", "assistant_response"]


def test_the_default_branch_is_main_and_created_lazily(nb):
    from lion_nb.notebook.state.session import notebook_state

    assert notebook_state()._session is None  # loading created nothing
    run(nb, "%%lion -q\nhi")
    assert [b.name for b in current_session().branches] == ["main"]


def test_branch_option_creates_a_branch_with_system_and_model_for_that_cell_only(nb):
    run(nb, "m = scripted('ahoy')")
    ran = run(nb, '%%lion -b pirate -s "You are a pirate." -m m\nGreet me')
    assert ran.error is None, ran
    assert ran.value == "ahoy"
    pirate = branch("pirate")
    assert pirate.system.rendered == "You are a pirate."
    assert pirate.chat_model is nb.user_ns["m"]
    # -b does not switch: the next cell goes to the active branch
    run(nb, "%%lion -q\nnext")
    assert len(branch("main").messages) == 2 and len(pirate.messages) == 3


def test_system_on_an_empty_existing_branch(nb):
    ran = run(nb, '%%lion -s "Be brief." -q\nhi')
    assert ran.error is None, ran
    assert branch("main").system.rendered == "Be brief."


def test_model_for_one_turn_on_an_existing_branch_by_variable_alias_and_string(nb):
    run(nb, "m1 = scripted('one')\nm2 = scripted('two')")
    run(nb, "%config LionMagics.aliases = {'second': 'offline/auto'}")
    assert run(nb, "%%lion -m m1\nA").value == "one"
    assert branch().chat_model.model == "auto"  # unchanged
    assert run(nb, "%%lion -m second\nB").value.startswith("Offline model")
    assert run(nb, "%%lion -m offline/auto\nC").value.startswith("Offline model")
    assert nb.user_ns["m1"].endpoint.calls  # the variable's model was used


def test_a_model_variable_defined_again_gives_the_next_turn_the_new_model(nb):
    make = 'talker = iModel(provider="offline", model="scripted", responses=["{}"])'
    run(nb, make.format("first"))
    assert run(nb, "%%lion -m talker -o said\nHello").error is None
    run(nb, make.format("second"))  # the cell run again: a new model with a fresh script
    ran = run(nb, "%%lion -m talker -o said\nHello again")
    assert ran.error is None, ran
    assert nb.user_ns["said"] == "second"


@pytest.mark.parametrize(
    ("op", "expect"),
    [("chat", 0), ("communicate", 2), ("interpret", 0)],
)
def test_operations_record_as_the_specification_says(nb, op, expect):
    ran = run(nb, f"%%lion --op {op}\nExplain tides")
    assert ran.error is None, ran
    assert isinstance(ran.value, str) and ran.value
    assert len(branch().messages) == expect


def test_response_format_gives_an_instance_bound_to_a_variable(nb):
    ran = run(nb, "%%lion -r Summary -o summary\nSummarize the report")
    assert ran.error is None, ran
    summary = nb.user_ns["summary"]
    assert type(summary).__name__ == "Summary" and isinstance(summary.points, list)
    assert ran.value is summary


def test_response_format_by_dotted_path(nb):
    ran = run(nb, "%%lion -r lion_nb.models.stream.StreamChunk --op operate\nGive a chunk")
    assert ran.error is None, ran
    assert type(ran.value).__name__ == "StreamChunk"


def test_parse_operation(nb):
    ran = run(nb, '%%lion --op parse -r Summary\n{"title": "T", "points": ["a", "b"]}')
    assert ran.error is None, ran
    assert ran.value.title == "T" and ran.value.points == ["a", "b"]


def test_tools_are_notebook_functions_and_get_called(nb):
    ran = run(nb, "%%lion -t lookup\nWeather in Oslo? Use lookup for Oslo.")
    assert ran.error is None, ran
    assert nb.user_ns["calls"], "the tool was not called"
    kinds = [m.kind for m in branch().messages]
    assert "action_request" in kinds and "action_response" in kinds


def test_react_with_tools_and_max_extensions(nb):
    ran = run(
        nb,
        "%%lion --op ReAct -t lookup --max-extensions 1\nWeather in Paris? Use lookup for Paris.",
    )
    assert ran.error is None, ran
    assert nb.user_ns["calls"]
    assert isinstance(ran.value, str)


def test_cli_model_runs_by_default_and_resumes(nb):
    run(nb, 'agent = iModel(provider="offline_cli", model="auto")')
    first = run(nb, "%%lion -b agent -m agent\nList the files")
    assert first.error is None, first
    assert "List the files" in first.value
    second = run(nb, "%%lion -b agent --op run\nNow count them")
    assert second.error is None, second
    agent = nb.user_ns["agent"]
    assert agent.endpoint.calls[0].resume is None
    assert agent.endpoint.calls[1].resume == agent.provider_session_id is not None
    kinds = [m.kind for m in branch("agent").messages]
    assert kinds.count("instruction") == 2


def test_registered_operation(nb):
    run(nb, "async def shout(branch, instruction, **kw):\n    return instruction.upper()")
    assert run(nb, "%lion operation shout").error is None
    ran = run(nb, "%%lion --op shout\nquiet please")
    assert ran.error is None, ran
    assert ran.value == "QUIET PLEASE"


def test_quiet_shows_nothing_but_keeps_the_value(nb):
    ran = run(nb, "%%lion -q -o kept\nHello")
    assert ran.error is None
    assert ran.outputs == [] and ran.stdout == ""
    assert nb.user_ns["kept"] == ran.value and nb.user_ns["_"] == ran.value


def test_output_format_markdown_is_sanitized_html(nb):
    run(nb, "evil = scripted('# Title\\n<script>alert(1)</script> [x](javascript:alert(1))')")
    ran = run(nb, "%%lion -m evil\nanything")
    html = ran.last["text/html"]
    assert "<h1>Title</h1>" in html
    assert "<script>" not in html and 'href="javascript' not in html
    assert "&lt;script&gt;" in html  # shown as text, never run


def test_output_format_code_fills_the_next_cell_and_never_runs_it(nb):
    run(nb, "coder = scripted('Here:\\n```python\\nran_it = True\\n```')")
    ran = run(nb, "%%lion -m coder -f code\nwrite code")
    assert ran.error is None, ran
    assert nb.rl_next_input == "ran_it = True"
    assert "ran_it" not in nb.user_ns


def test_output_format_json(nb):
    ran = run(nb, "%%lion -r Summary -f json\nsummarize")
    data = ran.last["application/json"]
    assert set(data) == {"title", "points"}


def test_output_format_html_is_sanitized(nb):
    run(nb, "h = scripted('<b>bold</b><img src=x onerror=alert(1)><script>x()</script>')")
    ran = run(nb, "%%lion -m h -f html\nanything")
    html = ran.last["text/html"]
    assert "<b>bold</b>" in html and "onerror" not in html and "script" not in html


def test_output_format_text(nb):
    run(nb, "t = scripted('<b>plain</b>')")
    ran = run(nb, "%%lion -m t -f text\nanything")
    assert ran.last == {"text/plain": "<b>plain</b>"}


def test_default_format_from_config(nb):
    run(nb, "%config LionMagics.output_format = 'text'")
    run(nb, "t = scripted('**x**')")
    assert run(nb, "%%lion -m t\nhi").last == {"text/plain": "**x**"}


def test_streaming_updates_the_display_in_batches(nb):
    words = " ".join(f"word{i}" for i in range(120))
    run(
        nb,
        f'slow = iModel(provider="offline", model="scripted", responses=["{words}"], delay=0.002)',
    )
    ran = run(nb, "%%lion -m slow\nTalk")
    assert ran.error is None, ran
    updates = [o for o in ran.outputs if getattr(o, "update", False)]
    assert len(updates) >= 2  # it streamed
    assert len(updates) < 60  # far fewer updates than fragments (~130)
    assert "word119" in ran.last["text/plain"]


def test_background_run_returns_a_handle_and_binds_the_result(nb):
    run(nb, 'slow = iModel(provider="offline", model="auto", delay=0.01)')
    ran = run(nb, "%%lion --bg -m slow -o later\nTake your time")
    assert ran.error is None, ran
    handle = ran.value
    assert type(handle).__name__ == "RunHandle" and handle.status == "running"
    assert "later" not in nb.user_ns
    waited = run(nb, f"result = await Out[{nb.execution_count - 1}]")
    assert waited.error is None, waited
    assert nb.user_ns["result"] == nb.user_ns["later"]
    assert handle.status == "done" and "Take your time" in handle.result()


class ShownView(HandleView):
    """The text view, keeping every fragment and message kind it was given, so a test can
    wait for the turn to reach a point instead of sleeping."""

    shown: list[str] = []
    kinds: list[str] = []

    def text(self, fragment):
        ShownView.shown.append(fragment)
        super().text(fragment)

    def message(self, message):
        ShownView.kinds.append(message.kind)
        super().message(message)


@pytest.fixture
def shown_view(nb):
    ShownView.shown, ShownView.kinds = [], []
    set_view_factory(ShownView)
    nb.user_ns.update(until=until, shown=ShownView.shown, kinds=ShownView.kinds)
    yield ShownView
    set_view_factory(None)


def test_background_run_can_be_cancelled_and_keeps_what_was_received(nb, shown_view):
    run(nb, 'slow = iModel(provider="offline", model="auto", delay=0.05)')
    handle = run(nb, "%%lion --bg -m slow\nA long answer please").value
    nb.user_ns["handle"] = handle
    assert run(nb, "await until(lambda: shown, what='the first fragment')").error is None
    handle.cancel()
    ran = run(nb, "await handle")
    import asyncio

    assert isinstance(ran.error, asyncio.CancelledError)  # awaiting a cancelled run raises
    assert handle.status == "cancelled"
    # a cancelled turn keeps what arrived, marked incomplete (ADR-0106)
    messages = list(branch().messages)
    assert [m.kind for m in messages] == ["instruction", "assistant_response"]
    assert messages[0].instruction == "A long answer please"
    assert messages[1].metadata["incomplete"] is True
    assert messages[1].metadata["incomplete_reason"] == "interrupted"
    assert messages[1].response == "".join(shown_view.shown)  # exactly the text that was shown
    assert run(nb, "%%lion -q\nstill usable").error is None


def test_a_background_run_holds_its_branch(nb):
    run(nb, 'slow = iModel(provider="offline", model="auto", delay=0.05)')
    run(nb, "%%lion --bg -m slow\nbusy")
    ran = run(nb, "%%lion\nme too")
    assert isinstance(ran.error, UsageError) and "background run in progress" in str(ran.error)
    assert run(nb, "%%lion -b other -q\nfine elsewhere").error is None
    assert run(nb, "%lion cancel --all").error is None


def test_interrupting_an_awaited_turn_is_clean(nb, shown_view):
    """Cancelling the cell's task (what the kernel's interrupt does) ends the turn cleanly."""
    from lion_nb import RunEnd, RunFailed, RunStart

    run(nb, 'slow = iModel(provider="offline_cli", model="auto", delay=0.05)')
    seen = []
    current_session().observe(RunStart, seen.append)
    current_session().observe(RunEnd, seen.append)
    current_session().observe(RunFailed, seen.append)
    code = (
        "import asyncio\n"
        "src = '%%lion -m slow\\nplease write a long essay'\n"
        "task = asyncio.ensure_future(get_ipython().run_cell_async("
        "src, store_history=False, transformed_cell=get_ipython().transform_cell(src)))\n"
        "await until(lambda: 'instruction' in kinds, what='the instruction recorded')\n"
        "task.cancel()\n"
        "inner = await task"
    )
    ran = run(nb, code)
    assert ran.error is None, ran
    inner = nb.user_ns["inner"]
    assert type(inner.error_in_exec).__name__ == "RunInterrupted"
    assert [type(s).__name__ for s in seen] == ["RunStart", "RunFailed"]
    # a CLI run records its instruction first and keeps what arrived (ADR-0021 D3)
    assert next(m.kind for m in branch().messages) == "instruction"
    assert run(nb, "%%lion -q\nafter").error is None


def test_raw_option_and_interpolation_config(nb):
    run(nb, "%%lion --raw -q\n{not_defined}")
    run(nb, "%config LionMagics.interpolate = False")
    assert run(nb, "%%lion -q\n{also_not_defined}").error is None
    texts = [m.rendered for m in branch().messages if m.kind == "instruction"]
    assert texts == ["{not_defined}", "{also_not_defined}"]


def test_direct_run_cell_magic_uses_the_sync_fallback(nb):
    nb.run_cell_magic("lion", "-q -o direct", "hello")
    assert nb.user_ns["direct"].startswith("Offline model")


def test_autoawait_off_still_runs(nb):
    run(nb, "%autoawait False")
    try:
        assert "await" not in nb.transform_cell("%%lion\nhi")
        ran = run(nb, "%%lion -q -o v\nhello")
        assert ran.error is None, ran
        assert nb.user_ns["v"].startswith("Offline model")
    finally:
        run(nb, "%autoawait True")


def test_help_is_the_docstring_with_examples(nb):
    from lion_nb.notebook.magics import LionMagics

    doc = LionMagics.lion_cell.__doc__
    for option in (
        "--branch",
        "--model",
        "--system",
        "--op",
        "--response-format",
        "--tools",
        "--out",
        "--format",
        "--quiet",
        "--bg",
        "--policy",
        "--raw",
    ):
        assert option in doc
    assert "Examples" in doc and "%%lion -r Summary" in doc
    ran = run(nb, "%%lion?")
    assert ran.error is None
    shown = ran.stdout
    for text in (
        "%%lion [-b NAME] [-m MODEL]",
        "-b NAME, --branch NAME",
        "-r MODEL, --response-format MODEL",
        "-t FUNCS, --tools FUNCS",
        "--bg",
        "-h, --help",
        "Examples:",
        "%%lion -t get_weather,convert_units",
        "%%lion -m offline_cli/scripted --bg -o answer",
        "{{ and }} are literal braces",
    ):
        assert text in shown, text


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_flag_prints_the_help_and_runs_nothing(nb, flag):
    ran = run(nb, f"%%lion {flag}\nThis is not sent.")
    assert ran.error is None, ran
    assert "-b NAME, --branch NAME" in ran.stdout and "Examples:" in ran.stdout
    assert ran.value is None
    assert list(branch("main").messages) == []
    flagged = run(nb, f"%%lion -q -b other {flag}\nNot sent either.")
    assert flagged.error is None and "--response-format" in flagged.stdout
    assert [b.name for b in current_session().branches] == ["main"]


def test_help_suggests_help_for_a_misspelt_help(nb):
    ran = run(nb, "%%lion --hepl\nhi")
    assert isinstance(ran.error, UsageError) and "Did you mean `--help`?" in str(ran.error)


def test_redefining_a_tool_and_rerunning_the_cell_uses_the_new_function(nb):
    assert run(nb, "%%lion -t lookup -q\nWeather in Oslo? Use lookup for Oslo.").error is None
    run(
        nb,
        "def lookup(city: str) -> str:\n    'The weather in a city.'\n    calls.append('new ' + city)\n    return 'rain'",
    )
    ran = run(nb, "%%lion -t lookup -q\nWeather in Rome? Use lookup for Rome.")
    assert ran.error is None, ran
    assert nb.user_ns["calls"][-1].startswith("new ")


def test_named_operation_gets_response_format_and_tools(nb):
    run(
        nb,
        "async def inspect_args(branch, instruction, **kw):\n"
        "    return {'instruction': instruction, 'keys': sorted(kw)}",
    )
    run(nb, "%lion operation inspect_args")
    ran = run(nb, "%%lion --op inspect_args -r Summary -t lookup -f json\nhello")
    assert ran.error is None, ran
    assert ran.value == {"instruction": "hello", "keys": ["response_format", "tools"]}


def test_explicit_branch_does_not_change_the_active_branch(nb):
    run(nb, "%%lion -q -b side\nx")
    run(nb, "%%lion -q\ny")
    assert [m.rendered for m in branch("main").messages if m.kind == "instruction"] == ["y"]


def test_interrupting_a_cli_run_kills_its_subprocess(nb, monkeypatch, tmp_path):
    """A real CLI agent (the fake ``claude`` executable) hangs; cancelling the cell kills it."""
    import json
    import os
    from pathlib import Path

    fake_bin = Path(__file__).resolve().parents[1] / "fakes" / "bin"
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CLI_MODE", "hang")
    monkeypatch.setenv("FAKE_CLI_RECORD", str(record))
    seen = []
    from lion_nb import RunEnd, RunFailed

    current_session().observe(RunEnd, seen.append)
    current_session().observe(RunFailed, seen.append)
    nb.user_ns["record_path"] = str(record)
    nb.user_ns["until"] = until

    def agent_started():
        agent = next((b for b in current_session().branches if b.name == "agent"), None)
        return agent is not None and any(m.kind == "instruction" for m in agent.messages)

    nb.user_ns["agent_started"] = agent_started
    code = (
        "import asyncio, os\n"
        "src = '%%lion -b agent -m claude_code/sonnet\\nrefactor everything'\n"
        "task = asyncio.ensure_future(get_ipython().run_cell_async("
        "src, store_history=False, transformed_cell=get_ipython().transform_cell(src)))\n"
        "for _ in range(200):  # until the agent's process has started\n"
        "    await asyncio.sleep(0.05)\n"
        "    if os.path.exists(record_path):\n"
        "        break\n"
        "await until(agent_started, what='the instruction recorded')\n"
        "task.cancel()\n"
        "inner = await task"
    )
    ran = run(nb, code)
    assert ran.error is None, ran
    assert type(nb.user_ns["inner"].error_in_exec).__name__ == "RunInterrupted"
    pid = json.loads(record.read_text().splitlines()[0])["pid"]

    def ended():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_until(ended, timeout=5, what=f"the CLI process {pid} to end")
    assert len(seen) == 1  # exactly one terminal lifecycle signal
    assert next(m.kind for m in current_session().get_branch("agent").messages) == "instruction"
    assert run(nb, "%%lion -q\nthe kernel is still usable").error is None
