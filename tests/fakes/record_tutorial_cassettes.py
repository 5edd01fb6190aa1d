"""Record the cassettes of the tutorials that replay providers, against the test doubles.

Run from the repository root, then regenerate the notebook from the new recording::

    python tests/fakes/record_tutorial_cassettes.py         # 10 (the default)
    python tests/fakes/record_tutorial_cassettes.py 12      # 12, cost and budgets
    python tests/fakes/record_tutorial_cassettes.py 16      # 16, reasoning models
    python notebooks/regenerate.py 10

Tutorial 12's Anthropic calls are answered by `tests.fakes.anthropic_cache`, which accounts
for the prompt cache as the Messages API does (its breakpoints, reads and writes).
Tutorial 16's are answered from the provider wire fixtures by `tests.fakes.responses_api`
and `tests.fakes.anthropic_thinking`, one conversation each (by its first prompt), so each
refuses a request that drops or changes the reasoning items it sent.

The notebook runs in a fresh kernel with ``LION_NB_CASSETTE_MODE=all`` (every model call
made for real and the cassette rewritten), the fake ``claude`` / ``codex`` executables of
``tests/fakes/bin`` first on ``PATH``, and one cell put before its own that points the
OpenAI, Anthropic and preset (Ollama, ...) default URLs at the loopback server of
`tests.fakes.http_server`. The server answers the notebook's prompts from `ANSWERS`,
`STRUCTURED` and `TOOL_CALLS` below, in the provider's wire format, streamed when asked; a
prompt it does not know is an HTTP 500, which fails the recording. No key is used: the
kernel's environment has none.

To record against the real services instead, skip this script: set the keys, start Ollama,
log in to ``claude`` and ``codex``, and run
``LION_NB_CASSETTE_MODE=all python notebooks/regenerate.py 10``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.fakes.http_server import FakeProvider, Recorded, Script  # noqa: E402

NOTEBOOK = ROOT / "notebooks" / "10-real-providers.ipynb"
CASSETTE = ROOT / "notebooks" / "cassettes" / "10-real-providers.jsonl"
TUTORIALS = {
    "10": "10-real-providers",
    "12": "12-cost-and-budgets",
    "16": "16-reasoning-models",
}
FAKE_BIN = ROOT / "tests" / "fakes" / "bin"

ANSWERS = {
    "What is a context window?": (
        "A context window is how much text a model can read at once: your prompt plus the "
        "conversation so far, counted in tokens. What does not fit is cut off or has to be "
        "summarized."
    ),
    "Should I take an umbrella in Lisbon today?": (
        "No umbrella needed: Lisbon is sunny today, at 24 °C."
    ),
    "Give me three tips for naming variables.": (
        "1. **Say what it holds**: `invoice_total`, not `x`.\n"
        "2. **Match the scope**: short names for short loops, full words for module-level "
        "names.\n"
        "3. **Be consistent**: one word per concept, not `fetch`, `get` and `load` for the "
        "same thing."
    ),
    'Translate "good morning" into Portuguese.': "*Bom dia.*",
}
STRUCTURED = {
    "Which city is the capital of Portugal?": {
        "name": "Lisbon",
        "country": "Portugal",
        "population_millions": 0.55,
    },
}
TOOL_CALLS = {"Should I take an umbrella in Lisbon today?": ("get_weather", {"city": "Lisbon"})}

PREAMBLE = """\
import os
from lion_nb.models.endpoints import PRESETS
from lion_nb.models.endpoints.anthropic import AnthropicEndpoint
from lion_nb.models.endpoints.openai import OpenAIEndpoint

_url = os.environ["LION_NB_RECORDING_URL"]
OpenAIEndpoint.default_base_url = _url + "/v1"
AnthropicEndpoint.default_base_url = _url
for _name, (_endpoint, _, _key) in list(PRESETS.items()):
    PRESETS[_name] = (_endpoint, _url + "/v1", None)
"""


# -- the prompts' answers ------------------------------------------------------------------------
def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict)]


def _prompt(messages: list[dict[str, Any]], known: dict[str, Any]) -> str:
    """The known prompt in the latest user message that contains one."""
    for message in reversed(messages):
        if message.get("role") == "user":
            for text in _texts(message.get("content")):
                for prompt in known:
                    if prompt in text:
                        return prompt
    raise LookupError(f"no known prompt in {json.dumps(messages)[:300]}")


def _words(text: str) -> list[str]:
    parts = text.split(" ")
    return [p + " " for p in parts[:-1]] + [parts[-1]]


# -- OpenAI-compatible -----------------------------------------------------------------------------
def _openai(body: dict[str, Any]) -> Script:
    messages = body["messages"]
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    if body.get("response_format"):
        message["content"] = json.dumps(STRUCTURED[_prompt(messages, STRUCTURED)])
    elif body.get("tools") and not any(m.get("role") == "tool" for m in messages):
        name, args = TOOL_CALLS[_prompt(messages, TOOL_CALLS)]
        call = {"name": name, "arguments": json.dumps(args)}
        message["tool_calls"] = [{"id": "call_rec_1", "type": "function", "function": call}]
        finish = "tool_calls"
    else:
        message["content"] = ANSWERS[_prompt(messages, ANSWERS)]
    usage = {"prompt_tokens": 40, "completion_tokens": 25, "total_tokens": 65}
    head = {"id": "chatcmpl-rec", "created": 1767225600, "model": body["model"]}
    if not body.get("stream"):
        choice = {"index": 0, "message": message, "finish_reason": finish}
        return Script(
            body={**head, "object": "chat.completion", "choices": [choice], "usage": usage}
        )

    def event(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        chunk = {**head, "object": "chat.completion.chunk", "choices": [choice], **extra}
        return "data: " + json.dumps(chunk)

    events = [event({"role": "assistant", "content": ""})]
    if message["content"]:
        events += [event({"content": w}) for w in _words(message["content"])]
    for i, call in enumerate(message.get("tool_calls") or []):
        events.append(event({"tool_calls": [{"index": i, **call}]}))
    events.append(event({}, finish))
    events += ["data: " + json.dumps({**head, "choices": [], "usage": usage}), "data: [DONE]"]
    return Script(events=events)


# -- Anthropic -----------------------------------------------------------------------------------
def _anthropic(body: dict[str, Any]) -> Script:
    messages = body["messages"]
    choice = body.get("tool_choice") or {}
    if choice.get("type") == "tool":  # a structured answer, as the forced tool's input
        blocks = [
            {
                "type": "tool_use",
                "id": "toolu_rec_1",
                "name": choice["name"],
                "input": STRUCTURED[_prompt(messages, STRUCTURED)],
            }
        ]
        stop = "tool_use"
    else:
        blocks = [{"type": "text", "text": ANSWERS[_prompt(messages, ANSWERS)]}]
        stop = "end_turn"
    usage = {"input_tokens": 40, "output_tokens": 25}
    message = {"id": "msg_rec", "type": "message", "role": "assistant", "model": body["model"]}
    if not body.get("stream"):
        return Script(body={**message, "content": blocks, "stop_reason": stop, "usage": usage})
    events = [("message_start", {"message": {**message, "content": [], "usage": usage}})]
    for i, block in enumerate(blocks):
        start = {**block, "text": ""} if block["type"] == "text" else {**block, "input": {}}
        events.append(("content_block_start", {"index": i, "content_block": start}))
        if block["type"] == "text":
            deltas = [{"type": "text_delta", "text": w} for w in _words(block["text"])]
        else:
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        events += [("content_block_delta", {"index": i, "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"index": i}))
    events.append(("message_delta", {"delta": {"stop_reason": stop}, "usage": usage}))
    events.append(("message_stop", {}))
    return Script(events=[f"event: {n}\ndata: {json.dumps({'type': n, **d})}" for n, d in events])


def answer(request: Recorded) -> Script:
    """The loopback server's reply to one of the notebook's requests."""
    try:
        if request.path.endswith("/chat/completions"):
            return _openai(request.body)
        if request.path.endswith("/v1/messages"):
            return _anthropic(request.body)
    except LookupError as exc:
        return Script(status=500, body={"error": {"message": f"not in the script: {exc}"}})
    return Script(status=404, body={"error": {"message": f"no route {request.path}"}})


def _cache_answer(question: str) -> str:
    """Tutorial 12's support assistant: one line per question, from its topic number."""
    topic = question.split("topic ")[-1].rstrip("?") if "topic " in question else "?"
    return (
        f"The handbook says to answer politely and cite section {topic}.{int(topic) % 7} "
        f"for topic {topic}; if the issue is still open, offer form F-{int(topic):03d}."
        if topic.isdigit()
        else "Not covered by the handbook."
    )


# -- tutorial 16: reasoning models, from the wire fixtures -----------------------------------------
STRAWBERRY = "openai_responses_stream_reasoning_text.sse"
CALL = "openai_responses_stream_function_call.sse"


def _reworded(name: str, tag: str, words: tuple[str, str, str]) -> str:
    """A variant of the strawberry stream fixture that answers with ``words`` instead."""
    from tests.fakes.responses_api import variant

    text = variant(name, tag)
    said = ("There are", " 3 r's in", ' \\"strawberry\\".')
    text = text.replace("".join(said), json.dumps("".join(words))[1:-1])
    for old, new in zip(said, words, strict=True):
        text = text.replace(f'"delta":"{old}"', f'"delta":{json.dumps(new)}')
    return text


class _Conversations:
    """Routes each request to the fake of its conversation, found by its first prompt."""

    def __init__(self) -> None:
        self.routes: list[Any] = []  # each fake appends itself here
        self.by_prompt: dict[str, Any] = {}

    def add(self, prompt: str, make: Any, replies: list[Any]) -> None:
        self.by_prompt[prompt] = make(self, replies)

    def __call__(self, request: Recorded) -> Script | None:
        body = request.body if isinstance(request.body, dict) else {}
        turns = body.get("input") or body.get("messages") or []
        first = next((m for m in turns if m.get("role") == "user"), {})
        said = " ".join(_texts(first.get("content")))
        for prompt, fake in self.by_prompt.items():
            if prompt in said:
                return fake(request)
        return None


def _reasoning_routes(server: FakeProvider) -> None:
    from tests.fakes.anthropic_thinking import ThinkingAPI
    from tests.fakes.http_server import anthropic_message
    from tests.fakes.responses_api import ResponsesAPI

    talks = _Conversations()
    talks.add("How many r's in strawberry?", ResponsesAPI, [STRAWBERRY])
    after_call = _reworded(STRAWBERRY, "Paris", ("It is 14 C", " in Paris,", " with light rain."))
    fork = _reworded(STRAWBERRY, "Fork", ("Yes: take", " an umbrella", " to Paris."))
    talks.add("What's the weather in Paris?", ResponsesAPI, [CALL, after_call, fork])
    talks.add(
        "Is it raining in Paris?",
        ThinkingAPI,
        [
            "anthropic_stream_thinking_tool.sse",
            anthropic_message("Yes, light rain at 14 C: take an umbrella."),
        ],
    )
    talks.add(
        "What colour are the grass and the sky?", ThinkingAPI, ["anthropic_stream_citations.sse"]
    )
    talks.add(
        "What is the latest Python release?", ThinkingAPI, ["anthropic_stream_server_tool.sse"]
    )
    server.routes.append(talks)


def _routes(server: FakeProvider, name: str) -> None:
    if name.startswith("16"):
        _reasoning_routes(server)
    elif name.startswith("12"):
        from tests.fakes.anthropic_cache import AnthropicCache

        AnthropicCache(server, answer=_cache_answer)
    else:
        server.routes.append(answer)


# -- recording -----------------------------------------------------------------------------------
def record(number: str = "10") -> int:
    import nbformat
    from nbclient import NotebookClient

    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_CLI_")}
    for name in list(env):
        if name.endswith(("_API_KEY", "_TOKEN")) or name in (
            "LION_CHAT_PROVIDER",
            "LION_CHAT_MODEL",
        ):
            env.pop(name)
    name = TUTORIALS[number]
    notebook_path = ROOT / "notebooks" / f"{name}.ipynb"
    cassette = ROOT / "notebooks" / "cassettes" / f"{name}.jsonl"
    with FakeProvider() as server:
        _routes(server, name)
        env.update(
            LION_NB_CASSETTE_MODE="all",
            LION_NB_RECORDING_URL=server.url,
            PATH=f"{FAKE_BIN}{os.pathsep}{env.get('PATH', '')}",
        )
        notebook = nbformat.read(notebook_path, as_version=4)
        notebook.cells.insert(0, nbformat.v4.new_code_cell(PREAMBLE))
        NotebookClient(
            notebook,
            timeout=300,
            kernel_name="python3",
            resources={"metadata": {"path": str(notebook_path.parent)}},
        ).execute(env=env)  # the kernel's environment, and the CLIs' it starts
        served = len(server.requests)
    exchanges = [json.loads(line) for line in cassette.read_text().splitlines()]
    runs = sum(e["kind"] == "run" for e in exchanges)
    print(f"{cassette.relative_to(ROOT)}: {len(exchanges)} exchanges ({served} HTTP, {runs} CLI)")
    return 0


if __name__ == "__main__":
    raise SystemExit(record(*sys.argv[1:2]))
