"""``%%lion --effort LEVEL``: the turn's ``reasoning=``, in a real IPython shell against the
loopback OpenAI-compatible fake (Chat Completions sends it as ``reasoning_effort``)."""

from __future__ import annotations

import pytest

from lion_nb.notebook.state.session import current_session
from tests.fakes.http_server import FakeProvider
from tests.notebook.nbshell import run, usage_error

SETUP = """
from lion_nb import iModel
gpt = iModel(provider="openai", model="gpt-5.2", base_url="{url}", api_key="sk-test-0123456789")
"""


@pytest.fixture
def http_fake(monkeypatch):
    from lion_nb.models.secrets import SECRET_ENV_VARS

    for name in SECRET_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    with FakeProvider() as fake:
        yield fake


@pytest.fixture
def shell(ip, http_fake):
    ran = run(ip, SETUP.replace("{url}", http_fake.openai_url))
    assert ran.error is None, ran
    return ip


def _recorded() -> int:
    return sum(len(b.messages) for b in current_session().branches)


@pytest.mark.parametrize("level", ["minimal", "high"])
def test_effort_is_sent_as_the_calls_reasoning(shell, http_fake, level):
    http_fake.push_fixture("openai_stream_text.sse")
    ran = run(shell, f"%%lion -m gpt --effort {level}\nIs 2**61 - 1 prime?")
    assert ran.error is None, ran
    (request,) = http_fake.requests
    assert request.body["reasoning_effort"] == level
    assert _recorded() == 2  # the instruction and the answer


def test_without_effort_the_request_carries_none(shell, http_fake):
    http_fake.push_fixture("openai_stream_text.sse")
    assert run(shell, "%%lion -m gpt\nHello").error is None
    assert "reasoning_effort" not in http_fake.requests[-1].body


def test_ask_takes_effort_too(shell, http_fake):
    http_fake.push_fixture("openai_stream_text.sse")
    ran = run(shell, '%lion ask -m gpt --effort low "Hello"')
    assert ran.error is None, ran
    assert http_fake.requests[-1].body["reasoning_effort"] == "low"


def test_the_effort_holds_for_the_turn_only(shell, http_fake):
    http_fake.push_fixture("openai_stream_text.sse")
    http_fake.push_fixture("openai_stream_text.sse")
    assert run(shell, "%%lion -m gpt --effort medium\nFirst").error is None
    assert run(shell, "%%lion -m gpt\nSecond").error is None
    first, second = http_fake.requests
    assert first.body["reasoning_effort"] == "medium"
    assert "reasoning_effort" not in second.body


def test_a_bad_level_is_a_usage_error_naming_the_levels_and_nothing_is_recorded(shell, http_fake):
    before = _recorded()
    message = usage_error(shell, "%%lion -m gpt --effort extreme\nHello")
    assert "`--effort extreme`" in message
    assert all(level in message for level in ("minimal", "low", "medium", "high"))
    assert http_fake.requests == []
    assert _recorded() == before


def test_effort_on_a_registered_operation_is_a_usage_error(shell, http_fake):
    code = "async def shout(branch, instruction):\n    return instruction.upper()\n"
    assert run(shell, code).error is None
    assert run(shell, "%lion operation shout").error is None
    before = _recorded()
    message = usage_error(shell, "%%lion --op shout --effort low\nhello")
    assert "`--effort`" in message and "shout" in message
    assert http_fake.requests == [] and _recorded() == before


def test_the_help_lists_effort(shell):
    ran = run(shell, "%%lion -h\n")
    assert "--effort LEVEL" in ran.stdout
    assert "--effort" in shell.find_line_magic("lion").__doc__


def _completions(fake, n: int) -> None:
    from tests.fakes.http_server import openai_completion

    for _ in range(n):
        fake.push_json(openai_completion("ok"))


def test_every_item_of_a_map_cell_is_sent_with_the_effort(shell, http_fake):
    _completions(http_fake, 3)
    assert run(shell, "cities = ['Oslo', 'Lima', 'Pune']").error is None
    ran = run(shell, "%%lion -m gpt --map cities --effort low -q\nOne fact about {item}.")
    assert ran.error is None, ran
    assert len(http_fake.requests) == 3
    assert [r.body["reasoning_effort"] for r in http_fake.requests] == ["low"] * 3


def test_every_case_of_an_eval_cell_is_sent_with_the_effort(shell, http_fake):
    _completions(http_fake, 2)
    assert run(shell, "cases = [{'n': 1}, {'n': 2}]").error is None
    ran = run(
        shell, "%%lion --eval cases -m gpt --effort medium --check \"contains('ok')\" -q\n#{n}"
    )
    assert ran.error is None, ran
    assert [r.body["reasoning_effort"] for r in http_fake.requests] == ["medium"] * 2
