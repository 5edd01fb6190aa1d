"""Property tests: any input to the magics' parsing and to interpolation gives a result or
a `UsageError` (one line, no traceback), never another exception.

Inputs are built from the pieces that matter (every option string, values, quotes, braces,
backslashes) mixed with arbitrary text, so that the examples reach the parsers' corners.
Names that interpolation may evaluate come only from those pieces: random text carries no
letters, so no example calls something like ``input()`` or ``exit()``.
"""

from __future__ import annotations

import importlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError

from lion_nb.notebook.cell.options import (
    long_options,
    resolve_model,
    resolve_response_format,
    resolve_tools,
    turn_parser,
    validate_name,
)
from lion_nb.notebook.commands.registry import COMMANDS, _parse
from lion_nb.notebook.state.lasterror import ErrorLog

interpolation = importlib.import_module("lion_nb.notebook.cell.interpolate")

SETTINGS = settings(
    max_examples=150,
    deadline=None,  # two shared cores: time is not the property
    database=None,  # nothing written into the repository
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# -- inputs ------------------------------------------------------------------------------------
SHORT_OPTIONS = ["-b", "-m", "-s", "-r", "-t", "-o", "-f", "-q", "-h", "-n"]
VALUES = [
    "x",
    "main",
    "Summary",
    ".Cls",
    "..Cls",
    "a.b",
    "openai/",
    "/gpt",
    "offline/auto",
    "fast",
    "json",
    "code",
    "fork",
    "ReAct",
    "operate",
    "-1",
    "0",
    "3",
    "1e999",
    "nan",
    "",
    " ",
    "--",
    "-",
    "=",
    ",",
    "weather,",
]
QUOTES = ['"', "'", "\\", '""', "''", '"a b"', "'it''s'", "{", "}", "{x}"]
NO_LETTERS = st.characters(exclude_categories=("Lu", "Ll", "Lt", "Lm", "Lo", "Nl"))

word = st.one_of(
    st.sampled_from(long_options(turn_parser("%%lion")) + SHORT_OPTIONS),
    st.sampled_from(VALUES),
    st.sampled_from(QUOTES),
    st.text(max_size=8),
)
line = st.lists(word, max_size=10).map(" ".join)

PIECES = [
    "{",
    "}",
    "{{",
    "}}",
    "'",
    '"',
    "\\",
    " ",
    "\n",
    "x",
    "a",
    "bad",
    "missing",
    "fails()",
    "{bad}",
    "{fails()}",
    "{x}",
    "In[1]",
    "In[9]",
    "Out[1]",
    "Err",
    "Err[3]",
    "error",
    "len(",
    "str(",
    "(",
    ")",
    "[",
    "]",
    ".",
    "+",
    "-",
    "*",
    ",",
    ":",
    "1",
    "0",
    "{'k': 1}",
    "-" * 3000,
]
prompt = st.lists(
    st.one_of(st.sampled_from(PIECES), st.text(alphabet=NO_LETTERS, max_size=6)), max_size=30
).map("".join)


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text")

    __repr__ = __str__


class BadMessage(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message")


def _fails() -> None:
    raise BadMessage()


NAMESPACE = {
    "x": 1,
    "a": "A",
    "bad": Unprintable(),
    "fails": _fails,
    "In": ["", "cell one"],
    "Out": {1: "one"},
}
SPECIALS = {"Err": ErrorLog(), "error": ErrorLog()}


def result_or_usage_error(call, *args, **kwargs):
    try:
        return call(*args, **kwargs)
    except UsageError as exc:
        assert str(exc).strip(), "a UsageError says what is wrong"
        return exc


# -- option parsing ----------------------------------------------------------------------------
@pytest.fixture
def magics(ip):
    return ip.magics_manager.registry["LionMagics"]


@SETTINGS
@given(text=line)
def test_any_cell_line_parses_or_is_a_usage_error(magics, capsys, text):
    result_or_usage_error(magics.parse_turn, text, "%%lion")
    result_or_usage_error(magics.parse_turn, text, "%lion ask", prompt=True)


@SETTINGS
@given(name=st.sampled_from(sorted(COMMANDS)), text=line)
def test_any_subcommand_line_parses_or_is_a_usage_error(name, text, capsys):
    result_or_usage_error(_parse, COMMANDS[name], text)


@SETTINGS
@given(
    name=st.sampled_from(
        [
            "signal_log_size",
            "max_updates_per_second",
            "default_model",
            "aliases",
            "output_format",
            "interpolate",
            "live_view",
            "rerun",
        ]
    ),
    value=st.one_of(st.sampled_from(VALUES + QUOTES), st.text(max_size=12)),
)
def test_any_config_value_is_taken_or_a_usage_error(magics, capsys, name, value):
    from lion_nb.notebook.cell.options import split_line

    try:
        words = split_line(value, "%lion config")
    except UsageError:
        return
    if len(words) != 1:
        return  # several words are the parser's business, tested above
    result_or_usage_error(magics.run_line, f"config {name} {value}")
    assert magics.signal_log_size >= 1 and magics.max_updates_per_second > 0


# every character that can appear in a dotted path, but no module that exists
dotted = st.text(alphabet="._Z1 -/", max_size=12)


@SETTINGS
@given(name=dotted, names=st.lists(st.text(max_size=8), max_size=3), spec=st.text(max_size=16))
def test_resolving_any_name_is_a_result_or_a_usage_error(name, names, spec):
    result_or_usage_error(resolve_response_format, name, NAMESPACE)
    result_or_usage_error(resolve_tools, names, NAMESPACE)
    result_or_usage_error(resolve_model, spec, NAMESPACE, {"fast": "offline/auto"})
    result_or_usage_error(validate_name, spec, "--out")


# -- interpolation -----------------------------------------------------------------------------
@SETTINGS
@given(text=prompt)
def test_interpolating_any_text_is_a_result_or_a_usage_error(text):
    out = result_or_usage_error(interpolation.interpolate, text, NAMESPACE, SPECIALS)
    if isinstance(out, str) and "{" not in text and "}" not in text:
        assert out == text


def reference_close(text: str, start: int) -> int:
    """The closing brace of the ``{`` at ``start``, by scanning forward from it (the rule,
    written the obvious way; quadratic over many unmatched braces)."""
    depth, quote, i = 0, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def reference_interpolate(text: str, namespace: dict) -> str:
    """Interpolation by the rule, scanning forward from every brace."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("{{", i) or text.startswith("}}", i):
            out.append(text[i])
            i += 2
        elif text[i] == "{" and (end := reference_close(text, i)) >= 0:
            value = interpolation._resolve(text[i + 1 : end], namespace, {})
            out.append(text[i : end + 1] if value is interpolation._NOT_AN_EXPRESSION else value)
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


braces = st.text(alphabet="{}'\"\\ ax", max_size=60)


@settings(max_examples=500, deadline=None, database=None)
@given(text=braces)
def test_linear_brace_matching_agrees_with_the_scan_from_each_brace(text):
    closing = interpolation._closing_braces(text)
    for i, ch in enumerate(text):
        if ch == "{":
            assert closing[i] == reference_close(text, i), (text, i)


@settings(max_examples=500, deadline=None, database=None)
@given(text=braces)
def test_interpolation_agrees_with_the_rule_written_the_obvious_way(text):
    namespace = {"a": "A", "x": "X"}
    expected = result_or_usage_error(reference_interpolate, text, namespace)
    got = result_or_usage_error(interpolation.interpolate, text, namespace)
    if isinstance(expected, UsageError):
        assert isinstance(got, UsageError) and str(got) == str(expected)
    else:
        assert got == expected
