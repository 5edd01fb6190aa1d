"""parse: JSON extraction and repair, fuzzy keys, the parse model; and communicate's parse half.

ADR-0021 D3 clause -> test
- communicate with ParseParam + response format parses the text
    -> test_communicate_structured_output_with_the_auto_model
- ... preserves the original model response in metadata when a parse-model response exists
    -> test_communicate_keeps_the_original_response_when_the_parse_model_rewrote_it
- ... wraps a parsing ValueError with the requested type
    -> test_communicate_wraps_a_parse_failure_naming_the_requested_type
- request_fields without a structured parse: fuzzy-validated, unmatched (Undefined) removed
    -> test_communicate_request_fields_are_fuzzy_matched_and_unmatched_removed,
       test_fuzzy_mapping_fills_undefined_then_drop_removes_it
- num_parse_retries defaults to 3 -> test_communicate_default_num_parse_retries_is_3
- num_parse_retries above 5 warns (UserWarning) and is clamped to 5
    -> test_communicate_num_parse_retries_above_5_warns_and_clamps
ADR-0021 D1 exceptions propagate unless documented -> test_parse_handle_validation_raise_gives_a_parse_error
"""

from __future__ import annotations

import json

import anyio
import pytest
from pydantic import BaseModel

from lion_nb import Branch, iModel
from lion_nb._sentinel import Undefined
from lion_nb.errors import ParseError
from lion_nb.operations.parse_op import extract_json, fuzzy_validate_mapping, parse
from lion_nb.operations.types import ParseParam


class Person(BaseModel):
    name: str
    age: int


def _scripted(*responses):
    return iModel(provider="offline", model="scripted", responses=list(responses))


# -- extract_json ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("[1, 2]", [1, 2]),
        ('Here:\n```json\n{"a": 1}\n```\nDone.', {"a": 1}),
        ('```\n{"a": 2}\n```', {"a": 2}),
        ('The result is {"a": {"b": [1, 2]}} as asked.', {"a": {"b": [1, 2]}}),
        ('Braces in strings: {"t": "x } y {"} end', {"t": "x } y {"}),
        ('{"a": 1, "b": [1, 2,],}', {"a": 1, "b": [1, 2]}),
        ("{'a': 'it\\'s', 'b': 2}", {"a": "it's", "b": 2}),
        ("{'ok': True, 'no': False, 'x': None}", {"ok": True, "no": False, "x": None}),
        ('{"a": [1, {"b": "c"', {"a": [1, {"b": "c"}]}),
        ('{"a": 1, // note\n "b": /* inline */ 2}', {"a": 1, "b": 2}),
        ("{name: 'Bo', n: -.5}", {"name": "Bo", "n": -0.5}),
        ('```json\n{"a": 1, "b": "cut', {"a": 1, "b": "cut"}),
    ],
)
def test_extract_json_finds_and_repairs(text, expected):
    assert extract_json(text) == expected


def test_extract_json_prefers_the_json_fence_and_returns_none_without_json():
    text = '```python\n{"a": 0}\n```\n```json\n{"a": 1}\n```'
    assert extract_json(text) == {"a": 1}
    assert extract_json("no structured data here") is None
    assert extract_json("") is None


# -- fuzzy_validate_mapping -----------------------------------------------------------------------
def test_fuzzy_mapping_matches_exact_case_and_similar_keys_and_keeps_only_requested():
    data = {"Name": "Ann", "user_age": 3, "colour": "red", "noise": 1}
    out = fuzzy_validate_mapping(data, ["name", "userAge", "color"])
    assert out == {"name": "Ann", "userAge": 3, "color": "red"}


def test_fuzzy_mapping_fills_undefined_then_drop_removes_it():
    out = fuzzy_validate_mapping({"name": "Ann"}, ["name", "mood"])
    assert out["mood"] is Undefined
    assert fuzzy_validate_mapping({"name": "Ann"}, ["name", "mood"], drop_undefined=True) == {
        "name": "Ann"
    }
    assert fuzzy_validate_mapping({}, ["x"], fill_value=0) == {"x": 0}


def test_fuzzy_mapping_threshold_decides_similar_matches():
    assert fuzzy_validate_mapping({"colr": 1}, ["color"], similarity_threshold=0.8) == {"color": 1}
    assert (
        fuzzy_validate_mapping({"colr": 1}, ["color"], similarity_threshold=0.95)["color"]
        is Undefined
    )


# -- parse -------------------------------------------------------------------------------------------
def _parse(branch, text, **kw):
    return anyio.run(parse, branch, text, ParseParam(**kw))


def test_parse_validates_repaired_and_fuzzy_matched_json():
    b = Branch(chat_model=_scripted())  # a parse-model call would exhaust the script
    got = _parse(b, "Sure: {'Name': 'Ann', 'AGE': 7,}", response_format=Person)
    assert got == Person(name="Ann", age=7)
    assert len(b.messages) == 0


def test_parse_without_fuzzy_match_does_not_rename_keys():
    b = Branch()
    out = _parse(
        b,
        '{"Name": "Ann", "AGE": 7}',
        response_format=Person,
        fuzzy_match=False,
        max_retries=0,
        handle_validation="return_none",
    )
    assert out is None


def test_parse_retries_with_the_parse_model_until_valid():
    parse_model = _scripted("still not json", '{"name": "Ann", "age": 7}')
    b = Branch(parse_model=parse_model)
    got = _parse(b, "Ann is seven", response_format=Person, max_retries=3)
    assert got == Person(name="Ann", age=7)
    calls = parse_model.endpoint.calls
    assert len(calls) == 2
    assert calls[0].response_format["name"] == "Person"
    assert "Ann is seven" in calls[0].messages[-1]["content"]
    # the second attempt is told why the first failed
    assert "no JSON object" in calls[1].messages[-1]["content"]
    assert len(b.messages) == 0  # parse-model calls are never recorded


def test_parse_stops_after_max_retries_and_applies_handle_validation():
    parse_model = _scripted("nope", "nope", "nope", "nope")
    b = Branch(parse_model=parse_model)
    assert (
        _parse(b, "Ann", response_format=Person, max_retries=2, handle_validation="return_value")
        == "Ann"
    )
    assert len(parse_model.endpoint.calls) == 2
    assert (
        _parse(b, "Ann", response_format=Person, max_retries=1, handle_validation="return_none")
        is None
    )
    assert len(parse_model.endpoint.calls) == 3


def test_parse_handle_validation_raise_gives_a_parse_error():
    b = Branch(parse_model=_scripted("nope"))
    with pytest.raises(ParseError, match="`Person` after 1 parse-model attempt") as info:
        _parse(b, "Ann", response_format=Person, max_retries=1, handle_validation="raise")
    assert isinstance(info.value, ValueError) and info.value.target is Person


def test_parse_never_sends_empty_text_to_the_parse_model():
    parse_model = _scripted('{"name": "invented", "age": 1}')
    b = Branch(parse_model=parse_model)
    assert _parse(b, "  ", response_format=Person, handle_validation="return_none") is None
    assert parse_model.endpoint.calls == []


def test_parse_json_schema_dict_checks_required_keys():
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    b = Branch()
    assert _parse(b, '{"City": "Oslo", "x": 1}', response_format=schema) == {"city": "Oslo", "x": 1}
    with pytest.raises(ParseError, match="`city`"):
        _parse(b, '{"town": "Oslo"}', response_format=schema, max_retries=0)


def test_parse_facade_uses_the_branch_parse_model():
    parse_model = _scripted('{"name": "Bo", "age": 2}')
    b = Branch(parse_model=parse_model)

    async def go():
        return await b.parse("Bo, two", Person)

    assert anyio.run(go) == Person(name="Bo", age=2)
    assert len(parse_model.endpoint.calls) == 1


# -- communicate's parse half ------------------------------------------------------------------------
def test_communicate_structured_output_with_the_auto_model():
    b = Branch()

    async def go():
        return await b.communicate("Who?", response_format=Person)

    got = anyio.run(go)
    assert isinstance(got, Person)
    assert json.loads(b.messages[-1].response) == got.model_dump()


def test_communicate_keeps_the_original_response_when_the_parse_model_rewrote_it():
    b = Branch(
        chat_model=_scripted("Ann, aged 7"), parse_model=_scripted('{"name": "Ann", "age": 7}')
    )

    async def go():
        return await b.communicate("Who?", response_format=Person)

    assert anyio.run(go) == Person(name="Ann", age=7)
    meta = b.messages[-1].metadata
    assert meta["original_model_response"]["choices"][0]["message"]["content"] == "Ann, aged 7"
    assert "Ann" in json.dumps(meta["parse_model_response"])
    assert b.messages[-1].response == "Ann, aged 7"


def test_communicate_wraps_a_parse_failure_naming_the_requested_type():
    b = Branch(chat_model=_scripted("gibberish"), parse_model=_scripted())

    async def go():
        return await b.communicate("Who?", response_format=Person, num_parse_retries=0)

    with pytest.raises(ParseError, match="`Person`") as info:
        anyio.run(go)
    assert info.value.target is Person
    assert [m.kind for m in b.messages] == ["instruction", "assistant_response"]


def test_communicate_request_fields_are_fuzzy_matched_and_unmatched_removed():
    b = Branch(chat_model=_scripted('{"Topic": "tides", "extra": 1}'))

    async def go():
        return await b.communicate("q", request_fields=["topic", "mood"])

    assert anyio.run(go) == {"topic": "tides"}


def _always_bad_parse_model():
    return iModel(provider="offline", model="function", function=lambda messages: "still bad")


def test_communicate_default_num_parse_retries_is_3():
    parse_model = _always_bad_parse_model()
    b = Branch(chat_model=_scripted("bad"), parse_model=parse_model)
    with pytest.raises(ParseError):
        anyio.run(lambda: b.communicate("q", response_format=Person))
    assert len(parse_model.endpoint.calls) == 3


def test_communicate_num_parse_retries_above_5_warns_and_clamps():
    parse_model = _always_bad_parse_model()
    b = Branch(chat_model=_scripted("bad"), parse_model=parse_model)
    with pytest.warns(UserWarning, match="num_parse_retries=9"):
        with pytest.raises(ParseError):
            anyio.run(lambda: b.communicate("q", response_format=Person, num_parse_retries=9))
    assert len(parse_model.endpoint.calls) == 5
