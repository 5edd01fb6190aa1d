"""Hostile and unusual input to the magics: each is a one-line `UsageError` (or a result),
never a traceback, and interpolation stays linear in the length of the cell."""

from __future__ import annotations

import importlib
import sys
import time

import pytest

from lion_nb.notebook.commands.registry import COMMANDS
from tests.notebook.nbshell import run, usage_error

interpolation = importlib.import_module("lion_nb.notebook.cell.interpolate")

SETUP = """
class Unprintable:
    def __str__(self):
        raise RuntimeError("no text for you")
    __repr__ = __str__

class BadMessage(Exception):
    def __str__(self):
        raise RuntimeError("no message either")

def fails():
    raise BadMessage()

bad = Unprintable()
"""


@pytest.fixture
def nb(ip):
    assert run(ip, SETUP).error is None
    return ip


def _magics(shell):
    return shell.magics_manager.registry["LionMagics"]


# -- options -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("%%lion -r .Cls\nhi", ["`--response-format .Cls`", "dotted import path"]),
        ("%%lion -r ..Cls\nhi", ["`--response-format ..Cls`", "dotted import path"]),
        ("%%lion -r json..Cls\nhi", ["`--response-format json..Cls`"]),
        ("%%lion -r 1json.Cls\nhi", ["`--response-format 1json.Cls`"]),
        ('%%lion ""\nhi', ["unexpected argument ''", "%%lion?"]),
        ('%%lion " "\nhi', ["unexpected argument ' '"]),
        ("%%lion -m openai/\nhi", ["`--model openai/`", "provider and a model name"]),
        ("%%lion -m /gpt-4o\nhi", ["`--model /gpt-4o`", "provider and a model name"]),
        ("%lion new fresh -m openai/", ["`openai/`", "provider and a model name"]),
        ("%lion model openai/", ["`openai/`", "provider and a model name"]),
    ],
)
def test_bad_options_are_usage_errors(nb, cell, expected):
    text = usage_error(nb, cell)
    for part in expected:
        assert part in text, (part, text)


def test_a_module_that_fails_on_import_is_a_usage_error(nb, tmp_path, monkeypatch):
    (tmp_path / "broken_models.py").write_text("raise RuntimeError('broken on import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    text = usage_error(nb, "%%lion -r broken_models.Summary\nhi")
    assert "cannot import `Summary` from `broken_models`" in text
    assert "RuntimeError: broken on import" in text


# -- interpolation -----------------------------------------------------------------------------
def test_a_value_whose_str_raises_is_a_usage_error(nb):
    text = usage_error(nb, "%%lion\nShow {bad}")
    assert "`{bad}`" in text and "could not be turned into text" in text
    assert "RuntimeError: no text for you" in text
    text = usage_error(nb, "%%lion\nShow {[bad][0]}")
    assert "could not be turned into text" in text


def test_an_error_whose_message_raises_is_a_usage_error(nb):
    text = usage_error(nb, "%%lion\nCall {fails()}")
    assert "`{fails()}` could not be evaluated: BadMessage" in text


@pytest.mark.parametrize(
    "expression",
    ["-" * 100_000 + "x", "a+" * 50_000 + "a", "not " * 25_000 + "x", "(" * 50_000 + "x"],
    ids=["unary-minus", "sum", "not", "parentheses"],
)
def test_a_100k_character_expression_is_a_usage_error_or_left_as_written(nb, expression):
    nb.user_ns.update(x=1, a=1)
    ran = run(nb, "%%lion -q\nValue: {" + expression + "}")
    if ran.error is None:  # not an expression: the text is sent as written
        sent = [m for m in _branch_messages() if m.kind == "instruction"][-1].rendered
        assert expression in sent
        return
    from IPython.core.error import UsageError

    assert isinstance(ran.error, UsageError), ran
    assert "Traceback" not in ran.stderr + ran.stdout
    assert len(str(ran.error)) < 1_000  # the expression is not repeated in full


def _branch_messages():
    from lion_nb import current_session

    return list(current_session().default_branch.messages)


class _OverBudget(Exception):
    pass


def _work(text: str, budget: int) -> int:
    """Lines of the interpolation module executed to interpolate ``text``; stops with
    `_OverBudget` past ``budget`` (quadratic work would take minutes to count)."""
    target = interpolation.__file__
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
            if count > budget:
                raise _OverBudget(f"more than {budget:,} lines for {len(text):,} characters")
        return local

    def calls(frame, event, arg):
        return local if frame.f_code.co_filename == target else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        interpolation.interpolate(text, {"a": 1, "x": 2})
    finally:
        sys.settrace(previous)
    return count


def _cell(size: int) -> str:
    """``size`` characters of unmatched braces: bare, before a quote, and nested."""
    unit = "{a {'x {\"y {{a} "
    return (unit * (size // len(unit) + 1))[:size]


def test_unmatched_braces_cost_linear_work():
    small, large = _cell(10_000), _cell(40_000)
    per_char = 40  # generous for linear work; the quadratic scan needs thousands
    work_small = _work(small, per_char * len(small))
    work_large = _work(large, per_char * len(large))
    started = time.perf_counter()
    interpolation.interpolate(large, {"a": 1})
    took = time.perf_counter() - started
    ratio = work_large / work_small
    print(f"\ninterpolation work: 10 KB {work_small:,} lines, 40 KB {work_large:,} lines, ")
    print(f"ratio {ratio:.2f} (linear: 4, quadratic: 16); 40 KB took {took * 1000:.1f} ms")
    assert ratio < 6


# -- configuration -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("%lion config signal_log_size -5", "`signal_log_size`"),
        ("%lion config signal_log_size 0", "`signal_log_size`"),
        ("%lion config signal_log_size 10**99", "signal_log_size"),
        ("%lion config signal_log_size 99999999999999999999999", "`signal_log_size`"),
        ("%lion config max_updates_per_second -1", "`max_updates_per_second`"),
        ("%lion config max_updates_per_second 0", "`max_updates_per_second`"),
        ("%lion config max_updates_per_second 1e999", "`max_updates_per_second`"),
        ("%lion config default_model openai/", "provider and a model name"),
        ("%lion config default_model /gpt", "provider and a model name"),
        ("%lion config aliases \"{'fast': 'openai/'}\"", "provider and a model name"),
        ("%lion alias fast openai/", "provider/model"),
        ("%lion config signal_log_size " + "-" * 100_000 + "1", "signal_log_size"),
    ],
)
def test_config_refuses_values_out_of_range(nb, line, expected):
    magics = _magics(nb)
    before = {n: getattr(magics, n) for n in magics.traits(config=True)}
    text = usage_error(nb, line)
    assert expected in text
    assert {n: getattr(magics, n) for n in magics.traits(config=True)} == before


def test_config_still_takes_good_values(nb):
    assert run(nb, "%lion config signal_log_size 5").error is None
    assert run(nb, "%lion config max_updates_per_second 2.5").error is None
    assert run(nb, "%lion config default_model offline/auto").error is None
    magics = _magics(nb)
    assert (magics.signal_log_size, magics.max_updates_per_second) == (5, 2.5)


def test_a_bad_environment_value_warns_and_keeps_the_default(monkeypatch):
    from lion_nb.notebook.magics import LionMagics

    monkeypatch.setenv("LION_NB_SIGNAL_LOG", "-3")
    monkeypatch.setenv("LION_NB_MAX_UPDATES", "-1")
    with pytest.warns(UserWarning) as warned:
        magics = LionMagics(shell=None)
    assert len(warned) == 2
    assert (magics.signal_log_size, magics.max_updates_per_second) == (1000, 20.0)


# -- messages and help -------------------------------------------------------------------------
def test_alias_confirms_what_it_did(nb):
    ran = run(nb, "%lion alias fast offline/auto")
    assert ran.error is None and "`fast`" in ran.stdout and "offline/auto" in ran.stdout
    ran = run(nb, "%lion alias --remove fast")
    assert ran.error is None and "Removed" in ran.stdout and "`fast`" in ran.stdout
    assert dict(_magics(nb).aliases) == {}


def test_ask_usage_speaks_of_its_line_not_a_cell(nb):
    shown = run(nb, "%lion ask -h").stdout
    assert "Run the cell" not in shown and "usage: %lion ask" in shown


def _help_texts(shell) -> dict[str, str]:
    texts = {
        "%%lion?": run(shell, "%%lion?").stdout,
        "%lion?": run(shell, "%lion?").stdout,
        "%lion help": run(shell, "%lion help").stdout,
        "%lion ask -h": run(shell, "%lion ask -h").stdout,
    }
    for name in COMMANDS:
        texts[f"%lion help {name}"] = run(shell, f"%lion help {name}").stdout
    return texts


def test_help_texts_have_no_restructuredtext_leftovers(nb):
    for where, text in _help_texts(nb).items():
        assert text.strip(), where
        assert "::" not in text, (where, text[:300])
        assert "``" not in text, (where, text[:300])
