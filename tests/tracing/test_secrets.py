"""No secret in any exported attribute or event, content capture on and off: a provider's
key (also typed into the prompt and passed to a tool), a password in ``base_url``, an MCP
server's header token, a tool argument named like a key."""

from __future__ import annotations

import json

import anyio
import pytest

import lion_nb.tracing as tracing
from lion_nb import Branch, iModel
from tests.fakes.http_server import FakeProvider, openai_completion
from tests.fakes.mcp_fixtures import TOKEN, mcp_http  # noqa: F401  (the fixture)

pytestmark = pytest.mark.timeout(120)

KEY = "sk-trace-test-9b1f4e2a7c3d"
PASSWORD = "basic-auth-pw-71c2e9"
ARG = "an-argument-secret-4d2b"


def everything(spans) -> str:
    """Every exported name and value, events included, as one text."""
    return json.dumps([[s.name, s.attributes, s.events, s.resource] for s in spans], default=str)


def lookup(city: str, api_key: str) -> str:
    """Look the city up with a key."""
    return f"{city}: sunny (asked with {api_key})"


@pytest.mark.parametrize("capture", [False, True])
def test_a_provider_key_and_a_url_password_never_leave(collector, capture):
    tracing.enable(collector.endpoint, capture_content=capture)
    with FakeProvider() as fake:
        fake.push_json(
            {
                **openai_completion(""),
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {
                                        "name": "lookup",
                                        "arguments": json.dumps({"city": "Paris", "api_key": ARG}),
                                    },
                                }
                            ],
                        },
                    }
                ],
            }
        )
        fake.push_json(openai_completion(f"It is sunny; your key {KEY} worked."))
        url = fake.openai_url.replace("http://", f"http://user:{PASSWORD}@")
        model = iModel(provider="openai", model="m", base_url=url, api_key=KEY)
        branch = Branch(chat_model=model, tools=[lookup])

        async def turn():
            await branch.operate(instruction=f"Weather in Paris? My key is {KEY}.", actions=True)
            await branch.communicate("Thanks.")
            await model.aclose()

        anyio.run(turn)
    assert tracing.flush(5)
    spans = collector.spans
    assert {s.name for s in spans} >= {"operate", "chat m", "execute_tool lookup"}
    text = everything(spans)
    assert KEY not in text and PASSWORD not in text and ARG not in text
    chat = next(s for s in spans if s.name == "chat m")
    assert chat.attributes["server.address"] == "127.0.0.1"
    if capture:  # content is there, masked
        assert "Weather in Paris" in text and "****" in text
        tool = next(s for s in spans if s.name == "execute_tool lookup")
        assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {
            "city": "Paris",
            "api_key": "****",
        }
    else:
        assert "Weather in Paris" not in text


@pytest.mark.parametrize("capture", [False, True])
def test_an_mcp_servers_header_token_never_leaves(collector, mcp_http, capture):  # noqa: F811
    url, _log = mcp_http
    tracing.enable(collector.endpoint, capture_content=capture)
    responses = [
        {"tool_calls": [{"name": "record", "arguments": {"note": f"token {TOKEN}"}}]},
        json.dumps({"analysis": f"recorded {TOKEN}", "extension_needed": False}),
        f"done with {TOKEN}",
    ]
    branch = Branch(chat_model=iModel(provider="offline", model="scripted", responses=responses))

    async def main():
        await branch.connect_mcp("web", url=url, headers={"Authorization": f"Bearer {TOKEN}"})
        try:
            await branch.ReAct({"instruction": "note it"}, max_extensions=0)
        finally:
            await branch.aclose()

    anyio.run(main)
    assert tracing.flush(5)
    spans = collector.spans
    tool = next(s for s in spans if s.name == "execute_tool record")
    assert tool.attributes["lion_nb.mcp.server"] == "web"
    assert tool.attributes["gen_ai.tool.type"] == "extension"
    assert any(s.name == "ReAct" for s in spans)
    assert TOKEN not in everything(spans)
