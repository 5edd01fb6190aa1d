"""A run's figure reaches an OpenAI-compatible server (a real loopback one) the way it takes
images: Chat Completions has images in user messages only, so the tool result is its text and
the figure follows it in one user message; a model without vision gets a description."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from lion_nb import Branch, iModel, notebook_tools
from tests.fakes.http_server import FakeProvider, openai_completion

CODE = (
    "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 4])"
)
TOOL_CALL = {
    "id": "chatcmpl-fig",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_fig",
                        "type": "function",
                        "function": {"name": "run_python", "arguments": json.dumps({"code": CODE})},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
}


def _second_request(ip: Any, vision: bool) -> list[dict[str, Any]]:
    pytest.importorskip("matplotlib")
    with FakeProvider() as fake:
        fake.push_json(TOOL_CALL)
        fake.push_json(openai_completion("A line going up."))
        model = iModel(provider="openai", model="gpt-4o", base_url=fake.openai_url,
                       api_key="sk-test-0123456789", api="chat", vision=vision)  # fmt: skip
        branch = Branch(chat_model=model, tools=notebook_tools(approve=True, shell=ip))

        async def main() -> None:
            await branch.operate("Plot it.", actions=True)
            await branch.communicate("What does it show?")

        asyncio.run(main())
        messages: list[dict[str, Any]] = fake.requests[-1].body["messages"]
        return messages


def test_a_figure_follows_its_tool_result_as_a_user_image(ip):
    messages = _second_request(ip, vision=True)
    roles = [m["role"] for m in messages]
    tool = roles.index("tool")
    assert (
        isinstance(messages[tool]["content"], str)
        and "[images] 1 image attached" in messages[tool]["content"]
    )
    after = messages[tool + 1]
    assert after["role"] == "user"
    kinds = [p["type"] for p in after["content"]]
    assert kinds == ["text", "image_url"]
    assert after["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_a_model_without_vision_gets_the_figure_described(ip):
    messages = _second_request(ip, vision=False)
    wire = json.dumps(messages)
    assert "data:image/png" not in wire
    assert "PNG" in wire  # the description of the image


def test_on_the_responses_api_the_figure_is_an_input_image_of_the_call_output(ip):
    pytest.importorskip("matplotlib")
    from tests.fakes.http_server import FIXTURES

    call = {
        "id": "resp_fig",
        "object": "response",
        "status": "completed",
        "model": "gpt-4o",
        "output": [
            {"type": "function_call", "id": "fc_fig", "call_id": "call_fig", "name": "run_python",
             "arguments": json.dumps({"code": CODE}), "status": "completed"}
        ],
        "usage": {"input_tokens": 5, "output_tokens": 5, "total_tokens": 10},
    }  # fmt: skip
    with FakeProvider() as fake:
        fake.push_json(call)
        fake.push_json(json.loads((FIXTURES / "openai_responses_nonstream.json").read_text()))
        model = iModel(provider="openai", model="gpt-4o", base_url=fake.openai_url,
                       api_key="sk-test-0123456789", api="responses")  # fmt: skip
        branch = Branch(chat_model=model, tools=notebook_tools(approve=True, shell=ip))

        async def main() -> None:
            await branch.operate("Plot it.", actions=True)
            await branch.communicate("What does it show?")

        asyncio.run(main())
        items = fake.requests[-1].body["input"]
    [output] = [i for i in items if i.get("type") == "function_call_output"]
    kinds = [part["type"] for part in output["output"]]
    assert kinds == ["input_text", "input_image"]
    assert output["output"][1]["image_url"].startswith("data:image/png;base64,")
