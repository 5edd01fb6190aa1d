"""Structured output against servers that take a different ``response_format`` form.

llama-cpp-python 0.3 refuses ``{"type": "json_schema", ...}`` with HTTP 500 and takes
``{"type": "json_object", "schema": ...}``. The form is chosen per preset (``llamacpp``:
``json_object``), can be set per model (``structured_output=``), and a refusal makes the
model fall back once to the other form -- not retried in the refused form -- with a note in
the answer's metadata and in the branch's log. The loopback server plays the refusing
server.
"""

from __future__ import annotations

import json

import anyio
import pytest
from pydantic import BaseModel

from lion_nb import Branch, iModel
from lion_nb.errors import ExecutionError, ServerError
from tests.fakes.http_server import Recorded, Script

# what llama-cpp-python 0.3 answers a json_schema response_format (its error wrapper, 500)
LLAMA_CPP_REFUSAL = {
    "error": {
        "message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
        "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}]",
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
}
STRICT_REFUSAL = {
    "error": {
        "message": "Invalid parameter: 'response_format' of type 'json_object' is not supported.",
        "type": "invalid_request_error",
    }
}


class Forecast(BaseModel):
    city: str
    celsius: int


def answer(text: str) -> dict:
    message = {"role": "assistant", "content": text}
    return {"id": "c", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


def server_taking(fake, *forms: str):
    """Make the loopback server take only these ``response_format`` types."""

    def route(recorded: Recorded) -> Script | None:
        fmt = (recorded.body or {}).get("response_format")
        if fmt is None:
            return None
        if fmt.get("type") not in forms:
            refusal = LLAMA_CPP_REFUSAL if fmt["type"] == "json_schema" else STRICT_REFUSAL
            status = 500 if fmt["type"] == "json_schema" else 400
            return Script(status=status, body=refusal)
        return Script(body=answer(json.dumps({"city": "Paris", "celsius": 18})))

    fake.routes.append(route)


def sent_formats(fake) -> list[str]:
    return [r.body["response_format"]["type"] for r in fake.requests]


def branch_on(fake, provider: str = "openai", **kw) -> Branch:
    model = iModel(provider=provider, model="local", base_url=fake.openai_url, **kw)
    return Branch(chat_model=model)


def ask(branch: Branch, times: int = 1) -> list:
    async def main():
        try:
            return [
                await branch.communicate("Weather?", response_format=Forecast) for _ in range(times)
            ]
        finally:
            await branch.chat_model.aclose()

    return anyio.run(main)


def test_the_llamacpp_preset_sends_the_json_object_form(http_fake):
    server_taking(http_fake, "json_object")
    branch = branch_on(http_fake, "llamacpp")
    (result,) = ask(branch)
    assert result == Forecast(city="Paris", celsius=18)
    assert sent_formats(http_fake) == ["json_object"]
    sent = http_fake.requests[0].body["response_format"]
    assert sent["schema"]["properties"]["celsius"]["type"] == "integer"
    assert "notes" not in branch.messages[-1].metadata


def test_a_refused_form_falls_back_once_with_a_note(http_fake):
    server_taking(http_fake, "json_object")
    branch = branch_on(http_fake, max_retries=2)
    first, second = ask(branch, times=2)
    assert first == second == Forecast(city="Paris", celsius=18)
    # refused once (not retried in that form), then the other form, which the model keeps
    assert sent_formats(http_fake) == ["json_schema", "json_object", "json_object"]
    answers = branch.msgs.assistant_responses
    (note,) = answers[0].metadata["notes"]
    assert "`json_schema`" in note and "`json_object`" in note and "HTTP 500" in note
    assert "notes" not in answers[1].metadata  # only the turn that fell back says so
    logged = [e.content for e in branch.logs if e.content.get("event") == "api_call"]
    assert logged[0]["notes"] == [note]
    assert "notes" not in logged[1]


def test_a_server_refusing_json_object_falls_back_to_json_schema(http_fake):
    server_taking(http_fake, "json_schema")
    branch = branch_on(http_fake, structured_output="json_object")
    (result,) = ask(branch)
    assert result.city == "Paris"
    assert sent_formats(http_fake) == ["json_object", "json_schema"]
    assert "HTTP 400" in branch.messages[-1].metadata["notes"][0]


def test_the_form_can_be_set_per_model(http_fake):
    server_taking(http_fake, "json_object")
    branch = branch_on(http_fake, structured_output="json_object")
    ask(branch)
    assert sent_formats(http_fake) == ["json_object"]


def test_a_server_refusing_both_forms_fails_after_one_fallback(http_fake):
    server_taking(http_fake)  # takes neither
    branch = branch_on(http_fake)
    with pytest.raises(ExecutionError) as caught:
        ask(branch)
    assert isinstance(caught.value.__cause__, Exception)
    assert sent_formats(http_fake) == ["json_schema", "json_object"]
    assert len(branch.messages) == 0


def test_an_unrelated_server_error_is_retried_as_usual_without_a_fallback(http_fake):
    for _ in range(2):
        http_fake.push_error(500, {"error": {"message": "out of memory", "type": "server_error"}})
    http_fake.push_json(answer(json.dumps({"city": "Oslo", "celsius": 3})))
    branch = branch_on(http_fake, max_retries=2)
    (result,) = ask(branch)
    assert result.city == "Oslo"
    assert sent_formats(http_fake) == ["json_schema"] * 3
    assert "notes" not in branch.messages[-1].metadata


def test_the_form_survives_saving_the_model():
    from lion_nb.models.endpoints.openai import OpenAIEndpoint

    for spec, form in [
        ({"provider": "llamacpp"}, "json_object"),
        ({"provider": "llamacpp", "structured_output": "json_schema"}, "json_schema"),
        ({"provider": "openai", "structured_output": "json_object"}, "json_object"),
        ({"provider": "vllm"}, "json_schema"),
    ]:
        model = iModel(model="m", **spec)
        again = iModel.from_dict(json.loads(json.dumps(model.to_dict())))
        assert isinstance(again.endpoint, OpenAIEndpoint)
        assert again.endpoint.structured_output == form, spec


def test_an_unknown_form_is_refused_when_the_model_is_made():
    from lion_nb.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="json_object"):
        iModel(provider="openai", model="m", structured_output="yaml")


def test_server_error_type_is_kept_when_nothing_falls_back(http_fake):
    http_fake.push_error(500, {"error": {"message": "boom"}})
    branch = branch_on(http_fake, max_retries=0)
    with pytest.raises(ExecutionError) as caught:
        anyio.run(branch.communicate, "hi")
    assert isinstance(caught.value.__cause__, ServerError)
