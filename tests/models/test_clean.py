"""`lion_nb.models.clean`: lone surrogates replaced, known secrets masked, nothing else."""

from __future__ import annotations

import json

from lion_nb.models.clean import clean_data, clean_text, loads, whole_data, whole_text
from lion_nb.models.secrets import MASK, Secret

KEY = "sk-test-not-a-real-key-clean-0123456789"


def test_lone_surrogates_become_the_replacement_character_and_pairs_stay():
    assert whole_text("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    assert whole_text("ok 😀 é") == "ok 😀 é"
    text = "plain ascii"
    assert whole_text(text) is text
    assert loads('{"a": "\\ud800", "b": "\\ud83d\\ude00", "\\udc00": 1}') == {
        "a": "\ufffd",
        "b": "😀",
        "\ufffd": 1,
    }
    assert loads(b'["\\ud800"]') == ["\ufffd"]
    assert whole_data(["x", {"k": ("\ud800",)}]) == ["x", {"k": ("\ufffd",)}]


def test_known_secrets_are_masked_and_short_texts_and_placeholders_kept():
    Secret(KEY)
    Secret("ollama")  # a placeholder a local server takes for a key
    assert clean_text(f"key={KEY} via ollama \ud800") == f"key={MASK} via ollama \ufffd"
    assert clean_text("ollama") == "ollama"
    data = {"a": [f"the key {KEY}", 3, None, True], KEY: {"n": 1.5}}
    assert clean_data(data) == {"a": [f"the key {MASK}", 3, None, True], MASK: {"n": 1.5}}
    assert KEY not in json.dumps(clean_data(data))


def test_clean_data_returns_the_same_object_when_nothing_changed():
    Secret(KEY)
    data = {"usage": {"input_tokens": 3}, "text": "a long enough answer", "items": [1, "x"]}
    assert clean_data(data) is data
    assert clean_data(data["items"]) is data["items"]


def test_a_secret_or_a_lone_surrogate_deep_in_nested_data_is_found_and_the_rest_kept():
    Secret(KEY)
    untouched = {"usage": {"input_tokens": 3}}
    data = {
        "raw": {"choices": [{"message": {"content": f"echo {KEY}"}}], "usage": untouched},
        "deep": [[("fine", {"k\ud800": 1})]],
    }
    cleaned = clean_data(data)
    assert cleaned["raw"]["choices"][0]["message"]["content"] == f"echo {MASK}"
    assert cleaned["deep"] == [[("fine", {"k\ufffd": 1})]]
    assert cleaned["raw"]["usage"] is untouched  # what had nothing to clean is not copied
    assert data["raw"]["choices"][0]["message"]["content"] == f"echo {KEY}"  # not in place
