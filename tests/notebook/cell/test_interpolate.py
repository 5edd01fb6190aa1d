"""One-pass interpolation: names, expressions, In/Out/Err, literal braces, no re-interpolation."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from pydantic import BaseModel

from lion_nb.notebook.cell.interpolate import format_value, interpolate
from lion_nb.notebook.state.lasterror import ErrorLog
from tests.notebook.nbshell import run, usage_error


def test_name_and_expression_are_interpolated():
    ns = {"x": 3, "rows": [1, 2, 3], "name": "Ada"}
    assert interpolate("{name} has {x} items, {len(rows)} rows", ns) == "Ada has 3 items, 3 rows"
    assert interpolate("{ name }", ns) == "Ada"


def test_a_value_holding_braces_is_inserted_verbatim_and_never_interpolated_again():
    ns = {"x": "{secret}", "secret": "hunter2"}
    out = interpolate("value: {x}", ns)
    assert out == "value: {secret}"
    assert "hunter2" not in out


def test_literal_dict_in_a_prompt_survives():
    ns = {"a": 99}
    assert interpolate("Return JSON like {'a': 1}.", ns) == "Return JSON like {'a': 1}."
    assert (
        interpolate('Shape: {"k": [1, 2], "n": {"m": 3}}', ns)
        == 'Shape: {"k": [1, 2], "n": {"m": 3}}'
    )


def test_braces_without_a_name_stay_as_written():
    assert interpolate("a set {1, 2} and {} and { }", {}) == "a set {1, 2} and {} and { }"
    assert interpolate("C: if (x) { return y; }", {}) == "C: if (x) { return y; }"


def test_doubled_braces_are_literal_braces():
    assert interpolate("{{x}} and {x}", {"x": 1}) == "{x} and 1"
    assert interpolate("{{{x}}}", {"x": 1}) == "{1}"
    assert interpolate("}} closing", {}) == "} closing"


def test_unmatched_braces_are_kept():
    assert interpolate("open { only", {}) == "open { only"
    assert interpolate("close } only", {}) == "close } only"
    assert interpolate("an apostrophe {don't} {x}", {"x": 5}) == "an apostrophe {don't} 5"


def test_missing_name_is_a_usage_error_that_names_it():
    with pytest.raises(UsageError) as err:
        interpolate("Explain {missing_var}", {})
    text = str(err.value)
    assert "`missing_var`" in text and "{{missing_var}}" in text and "--raw" in text


def test_missing_name_inside_an_expression_names_it():
    with pytest.raises(UsageError, match=r"no variable named `nope`"):
        interpolate("{len(nope)}", {})


def test_failing_expression_is_a_usage_error_with_the_reason():
    with pytest.raises(UsageError, match=r"`\{d\['k'\]\}` could not be evaluated: KeyError"):
        interpolate("{d['k']}", {"d": {}})


def test_pydantic_and_containers_are_inserted_as_json():
    class Point(BaseModel):
        x: int

    assert '"x": 1' in format_value(Point(x=1))
    assert interpolate("{p}", {"p": {"a": [1]}}) == '{\n  "a": [\n    1\n  ]\n}'


def test_errors_are_available_as_err_and_error():
    log = ErrorLog()
    try:
        raise ValueError("bad value")
    except ValueError as exc:
        log.record(exc, execution_count=7, source="raise ValueError('bad value')")
    specials = {"Err": log, "error": log}
    assert "ValueError: bad value" in interpolate("{Err}", {}, specials)
    assert "ValueError: bad value" in interpolate("{error}", {}, specials)
    assert "ValueError: bad value" in interpolate("{Err[7]}", {}, specials)
    with pytest.raises(UsageError, match=r"cell 3 raised no recorded error"):
        interpolate("{Err[3]}", {}, specials)
    # the namespace wins over the special names
    assert interpolate("{error}", {"error": "mine"}, specials) == "mine"


def test_no_error_yet_is_a_usage_error():
    log = ErrorLog()
    with pytest.raises(UsageError, match="no error has been raised"):
        interpolate("{Err}", {}, {"Err": log})


# -- in a real shell --------------------------------------------------------------------------
def test_in_out_and_the_last_error_reach_the_prompt(ip):
    run(ip, "x = '{secret}'\nsecret = 'hunter2'")
    run(ip, "21 * 2")
    out_count = ip.execution_count - 1
    run(ip, "1 / 0")
    ran = run(
        ip, f"%%lion -o said\nIn: {{In[{out_count}]}} Out: {{Out[{out_count}]}} x: {{x}}\n{{Err}}"
    )
    assert ran.error is None, ran
    from lion_nb import current_session

    instruction = current_session().default_branch.messages[0].rendered
    assert "In: 21 * 2 Out: 42 x: {secret}" in instruction
    assert "hunter2" not in instruction
    assert "ZeroDivisionError: division by zero" in instruction
    assert "1 / 0" in instruction


def test_raw_turns_interpolation_off(ip):
    from lion_nb import current_session

    ran = run(ip, "%%lion --raw -q\nkeep {this} as is")
    assert ran.error is None, ran
    assert current_session().default_branch.messages[0].rendered == "keep {this} as is"


def test_missing_name_in_a_cell_is_one_line_usage_error(ip):
    text = usage_error(ip, "%%lion\nWhat is {undefined_thing}?")
    assert "`undefined_thing`" in text
