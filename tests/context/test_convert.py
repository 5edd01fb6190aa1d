"""`to_content`: the order of preference, the registry, text and containers in a budget."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import pytest

from lion_nb import register_ai_repr
from lion_nb.context import to_content
from lion_nb.models.media import read_data_url
from lion_nb.tokens import estimate_tokens

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAEklEQVR4nGP8z8DAwMDAxMDAAAAOFAEDpcnA3wAAAABJRU5ErkJggg=="
)


class Table:
    def __str__(self) -> str:
        return "STR OF TABLE"


def test_ai_repr_text_plain_is_sent_not_str():
    class Report(Table):
        def _ai_repr_(self, **kwargs):
            return {"text/plain": "quarterly report, 3 sections"}

    content = to_content(Report())
    assert content.text == "quarterly report, 3 sections" and not content.images


def test_ai_repr_image_png_is_an_image():
    class Chart:
        def _ai_repr_(self, **kwargs):
            return {"image/png": PNG, "text/plain": "a tiny chart"}

    content = to_content(Chart(), name="chart")
    kind, data = read_data_url(content.images[0])
    assert kind == "image/png" and data == PNG
    assert content.text == "a tiny chart" and content.summary == "image 2×3"


def test_ai_repr_is_told_the_budget_and_vision_it_accepts():
    seen = {}

    class Only:
        def _ai_repr_(self, budget):  # no **kwargs: only what it takes
            seen["budget"] = budget
            return "ok"

    class All:
        def _ai_repr_(self, **kwargs):
            seen["all"] = kwargs
            return "ok"

    to_content(Only(), budget=123)
    to_content(All(), budget=77, vision=False)
    assert seen == {"budget": 123, "all": {"budget": 77, "vision": False}}


def test_ai_repr_comes_before_repr_llm_then_the_registry():
    class Both:
        def _ai_repr_(self, **kw):
            return "from _ai_repr_"

        def _repr_llm_(self):
            return "from _repr_llm_"

    class LLM:
        def _repr_llm_(self):
            return "from _repr_llm_"

    register_ai_repr(LLM, lambda v, **kw: "from the registry")
    try:
        assert to_content(Both()).text == "from _ai_repr_"
        assert to_content(LLM()).text == "from _repr_llm_"
    finally:
        register_ai_repr(LLM, None)


def test_registry_covers_subclasses_and_can_be_removed():
    class Sub(Table):
        pass

    register_ai_repr(Table, lambda v, budget: f"a table within {budget} tokens")
    try:
        assert to_content(Sub(), budget=300).text == "a table within 300 tokens"
    finally:
        register_ai_repr(Table, None)
    assert to_content(Sub()).text == "STR OF TABLE"


def test_register_needs_a_class_and_a_callable():
    with pytest.raises(TypeError, match="takes a class"):
        register_ai_repr("Table", str)
    with pytest.raises(TypeError, match="not callable"):
        register_ai_repr(Table, "nope")


def test_an_ai_repr_of_an_unknown_shape_says_what_is_read():
    class Odd:
        def _ai_repr_(self, **kw):
            return {"application/x-thing": 1}

    with pytest.raises(TypeError, match="text/plain"):
        to_content(Odd())


def test_a_long_string_is_cut_with_a_marker_within_the_budget():
    text = "word " * 50_000
    content = to_content(text, budget=500)
    assert estimate_tokens(content.text) <= 500
    assert "characters cut" in content.text and content.text.startswith("word word")
    assert content.summary == "text, 250,000 characters, trimmed"


def test_a_short_string_and_a_small_container_are_unchanged():
    assert to_content("hello").text == "hello"
    data = {"a": [1, 2], "b": "x"}
    assert to_content(data).text == json.dumps(data, indent=2)


def test_a_long_list_keeps_leading_items_and_says_how_many_were_cut():
    content = to_content(list(range(100_000)), budget=300)
    assert estimate_tokens(content.text) <= 300
    assert content.text.startswith("[\n  0,\n  1,")
    assert "more items not shown (100,000 in all)" in content.text
    shown = int(content.summary.split(", ")[1].split()[0].replace(",", ""))
    assert f"{100_000 - shown:,} more items" in content.text


def test_a_big_dict_keeps_its_first_keys():
    content = to_content({f"k{i}": "v" * 50 for i in range(5000)}, budget=400)
    assert '"k0": ' in content.text and "more entries not shown (5,000 in all)" in content.text


def test_an_exception_keeps_its_type_message_and_innermost_frames():
    def inner():
        raise KeyError("missing_column")

    def middle():
        return inner()

    def outer():
        return middle()

    try:
        outer()
    except KeyError as exc:
        content = to_content(exc, budget=90)
    assert content.text.startswith("KeyError: 'missing_column'")
    assert "outer frames cut" in content.text and "in inner" in content.text
    assert estimate_tokens(content.text) <= 90


def test_secrets_in_a_value_are_masked(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-context-secret-0123456789")
    from lion_nb.models import secrets

    secrets._env_data.cache_clear() if hasattr(secrets._env_data, "cache_clear") else None

    class Leaky:
        def _ai_repr_(self, **kw):
            return "key is sk-context-secret-0123456789"

    assert "sk-context-secret-0123456789" not in to_content(Leaky()).text


def test_bytes_that_are_not_media_are_described_not_decoded():
    content = to_content(b"\x00\x01binary")
    assert content.text.startswith("[8 bytes of binary data") and not content.images


def test_converting_plain_values_imports_no_data_or_imaging_library():
    probe = (
        "import sys, json\n"
        "from lion_nb.context import to_content\n"
        "class Mine: pass\n"
        "for v in ['s', {'a': 1}, [1] * 10, Mine(), ValueError('x'), b'\\x89PNG']:\n"
        "    to_content(v)\n"
        "heavy = {'pandas', 'numpy', 'matplotlib', 'PIL', 'polars'}\n"
        "print(json.dumps(sorted(heavy & {m.split('.')[0] for m in sys.modules})))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
