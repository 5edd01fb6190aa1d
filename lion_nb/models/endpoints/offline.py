"""The embedded default model: deterministic, no key, no network.

Three models, all through the ordinary `APIEndpoint` seam so that everything above it (the
iModel, the operations, the notebook) runs exactly as with a real provider:

- ``auto`` answers from the request: JSON that validates against the requested schema, a
  call of a tool only when the instruction names it (``use get_time``, ``call add_note
  "buy milk"``) with arguments taken from the instruction -- never every tool offered, never
  one that deletes or resets things, and none whose required arguments the instruction does
  not give (the answer says what is missing; see `_offline_tools`) -- a fenced
  Python block when the instruction asks for code (``Answer with Python code``, what
  ``%%lion -f code`` adds), a friendly sentence otherwise. It reads the conversation the way a
  provider would: tool calls and tool results after the last user message count as this
  turn's work, and a follow-up ("now answer") right after tool results speaks of them. Older
  results are history: they are not quoted again in later answers. Images and files in the
  request are read from their bytes and named in the answer ("an image of 640×480 pixels",
  "a PDF of 3 pages"), so notebooks that attach them run offline too.
- ``scripted`` plays ``responses=[...]`` in order and records each request in ``.calls``. A
  response may be text, a tool call, or a provider error (``{"error": ..., "status": 429}``)
  so that retry and failure paths can be exercised without a server.
- ``function`` hands the request to ``function=f`` (sync or async) and records it too. A
  sync ``f`` runs in a worker thread, so a cancellation ends the turn while ``f`` still blocks.

Text is streamed in word-sized fragments through `emit_text_delta` when someone listens.
``delay=`` (seconds per fragment) slows a run down, streaming or not, so that cancellation
and live display can be shown and tested.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import inspect
import json
import re
import time
from collections.abc import Callable
from typing import Any, ClassVar

import anyio
import anyio.to_thread

from ..._callables import is_async_callable
from ...errors import (
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ScriptExhaustedError,
    ServerError,
)
from ...shapes import JsonObject
from ...tokens import estimate_message_tokens, estimate_tokens
from ..usage import usage_dict
from ._fake_json import example_for
from ._offline_tools import plan_tool_calls
from .base import APIEndpoint, ChatRequest, ModelResponse, ToolCall, emit_text_delta, wants_stream

__all__ = ["OfflineEndpoint"]

MODELS = ("auto", "scripted", "function")
_RESPONSE_KEYS = {"content", "tool_calls", "error", "status"}
_HINT = "Set LION_CHAT_PROVIDER / LION_CHAT_MODEL or pass a model to use a real one."
# an instruction that asks for code ("Answer with Python code only", `%%lion -f code`)
_ASKED_CODE = re.compile(r"\banswer with (?:\w+ )?code\b", re.IGNORECASE)
# what an Instruction renders when it asks for JSON (the request may not carry the schema)
_ASKED_JSON = re.compile(
    r"JSON object (that matches this JSON schema|with these fields):\s*```json\s*(.*?)```",
    re.DOTALL,
)


# the sections an Instruction renders after the instruction itself
_RENDERED_PARTS = re.compile(r"\n\n(?:Guidance:\n|Context:\n|Respond with one JSON object)")


class OfflineEndpoint(APIEndpoint):
    """``iModel("offline/auto")``, ``iModel(provider="offline", model="scripted", responses=[...])``
    or ``iModel(provider="offline", model="function", function=f)``."""

    __test__ = False
    provider: ClassVar[str] = "offline"

    def __init__(
        self,
        model: str = "auto",
        *,
        # Any: scripted answers of any kind a test gives; a function's own signature
        responses: list[Any] | None = None,
        function: Callable[..., Any] | None = None,
        delay: float = 0.0,
        **options: Any,
    ):
        model = (model or "auto").strip().lower()
        if model not in MODELS:
            raise ConfigurationError(
                f"Unknown offline model `{model}`. Use one of: {', '.join(MODELS)}."
            )
        if responses is not None and model != "scripted":
            raise ConfigurationError(
                f"`responses=` is for `offline/scripted`, not `offline/{model}`: write "
                '`iModel(provider="offline", model="scripted", responses=[...])`.'
            )
        if function is not None and model != "function":
            raise ConfigurationError(
                f"`function=` is for `offline/function`, not `offline/{model}`: write "
                '`iModel(provider="offline", model="function", function=f)`.'
            )
        if function is not None and not callable(function):
            raise ConfigurationError(
                f"`function=` must be callable as `f(messages, **request)`; got "
                f"{type(function).__name__}."
            )
        if not isinstance(delay, (int, float)) or delay < 0:
            raise ConfigurationError(f"`delay=` is seconds per fragment (>= 0); got {delay!r}.")
        super().__init__(model, **options)
        self.responses: list[Any] = _check_responses(responses) if model == "scripted" else []
        self.function = function
        self.delay = float(delay)
        self.calls: list[ChatRequest] = []
        self._played = 0
        # ``function`` and the request keywords it takes (the signature is read once)
        self._signature: tuple[Callable[..., Any], frozenset[str] | None] | None = None

    # -- configuration ------------------------------------------------------------------------
    def config(self) -> JsonObject:
        data: dict[str, Any] = {}
        if self.model == "scripted":
            data["responses"] = copy.deepcopy(self.responses)
        if self.delay:
            data["delay"] = self.delay
        return data

    def live_config(self) -> JsonObject:
        """Settings that only make sense in this process (the function of ``function``)."""
        return {"function": self.function} if self.function is not None else {}

    @property
    def remaining(self) -> int:
        """Responses a scripted model has not played yet."""
        return len(self.responses) - self._played

    # -- answering ----------------------------------------------------------------------------
    async def complete(self, request: ChatRequest) -> ModelResponse:
        if self.model == "auto":
            text, calls = _auto_answer(request)
            response = _build(text, calls, request, self.model)
        elif self.model == "scripted":
            self.calls.append(request)
            if self._played >= len(self.responses):
                n = len(self.responses)
                raise ScriptExhaustedError(
                    f"`offline/scripted` has played all {n} response{'s' * (n != 1)}; "
                    "give more in `responses=`."
                )
            item = self.responses[self._played]
            self._played += 1
            response = _from_item(item, request, self.model, "`offline/scripted`")
        else:
            self.calls.append(request)
            response = await self._call_function(request)
        await self._play(response.text, request)
        return response

    async def _call_function(self, request: ChatRequest) -> ModelResponse:
        f = self.function
        if f is None:
            raise ConfigurationError(
                "`offline/function` has no function (a function is never saved with a model): "
                'pass `function=` again, e.g. `iModel(provider="offline", model="function", '
                "function=f)`."
            )
        extra = {
            "tools": request.tools,
            "response_format": request.response_format,
            "options": request.options,
        }
        if self._signature is None or self._signature[0] is not f:  # read once per function
            self._signature = (f, _accepted_names(f))
        names = self._signature[1]
        if names is not None:
            extra = {k: v for k, v in extra.items() if k in names}
        result = await _run_function(f, request.messages, extra)
        if isinstance(result, ModelResponse):
            result.model = result.model or f"offline/{self.model}"
            if result.finish_reason is None:
                result.finish_reason = "tool_calls" if result.tool_calls else "stop"
            if not result.usage:
                result.usage = _usage(request, result.text, result.tool_calls)
            return result
        if isinstance(result, (str, dict)):
            return _from_item(result, request, self.model, "The function of `offline/function`")
        raise TypeError(
            f"The function of `offline/function` returned {type(result).__name__}; return a "
            "str, a dict (`content`, `tool_calls`) or a ModelResponse."
        )

    async def _play(self, text: str, request: ChatRequest) -> None:
        """Stream ``text`` in word-sized fragments, pausing ``delay`` seconds before each."""
        streaming = request.stream or wants_stream()
        if not streaming and not self.delay:
            return
        for piece in re.findall(r"\s*\S+\s*", text) or [""]:
            if self.delay:
                await anyio.sleep(self.delay)
            if streaming:
                emit_text_delta(piece)


async def _run_function(f: Callable[..., Any], messages: Any, extra: dict[str, Any]) -> Any:
    """``f(messages, **extra)``, awaited when async. A sync function runs in a worker thread
    that a cancellation abandons: Stop and the interrupt end the turn at once, however long
    ``f`` blocks (it may finish in its thread; its answer is dropped)."""
    if is_async_callable(f):
        return await f(messages, **extra)
    result = await anyio.to_thread.run_sync(
        functools.partial(f, messages, **extra), abandon_on_cancel=True
    )
    if inspect.isawaitable(result):  # a sync callable that returned a coroutine
        result = await result
    return result


# -- auto ---------------------------------------------------------------------------------------
def _auto_answer(request: ChatRequest) -> tuple[str, list[ToolCall]]:
    messages = request.messages
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    called, results = _tool_traffic(messages[last_user + 1 :])

    question = _text(messages[last_user]) if last_user >= 0 else ""
    offered, forced = _offered(request)
    plan = plan_tool_calls(_asked(question), offered, forced)
    pending = [(t, args) for t, args in plan.calls if t["name"] not in called.values()]
    if pending:
        salt = f"{len(messages)}:{question}"
        calls = [
            ToolCall(
                id="call_" + hashlib.sha256(f"{salt}:{i}:{t['name']}".encode()).hexdigest()[:24],
                name=t["name"],
                arguments=args,
            )
            for i, (t, args) in enumerate(pending)
        ]
        return "", calls

    schema = _wanted_schema(request, question)
    if schema is not None:
        return json.dumps(example_for(schema, hint="answer"), ensure_ascii=False), []
    said = f"you asked “{_shorten(question, 80)}”." if question.strip() else "nothing was asked."
    if not results:  # a follow-up ("now answer") right after tool results speaks of them
        results = _tool_traffic(_calls_just_before(messages, last_user))[1][-3:]
    shown = "; ".join(f"{name} → {_shorten(_text_of(out), 60)}" for name, out in results)
    if _ASKED_CODE.search(question):
        return _code_answer(said, shown), []
    notes = "".join(f"{note} " for note in plan.notes)
    if shown:
        return (
            f"Offline model: the tools returned {shown}. {said[0].upper()}{said[1:]} {notes}".rstrip(),
            [],
        )
    if offered and not plan.notes:
        names = ", ".join(f"`{t['name']}`" for t in offered)
        notes = (
            f"Tools offered: {names}; the offline model calls one only when the instruction "
            f"names it (“use {offered[0]['name']} …”). "
        )
    seen = _attachments(messages[last_user]) if last_user >= 0 else ""
    return f"Offline model: {said} {seen}{notes}{_HINT}", []


def _asked(question: str) -> str:
    """The instruction itself, without the guidance, context and JSON schema an Instruction
    renders after it (a quoted key of the context is no argument)."""
    return _RENDERED_PARTS.split(question, maxsplit=1)[0]


def _attachments(message: dict[str, Any]) -> str:
    """``"It comes with an image of 640×480 pixels (PNG, 23 KB). "`` for the images and
    files of ``message`` (``""`` without any)."""
    from ..media import describe_file, describe_image

    content = message.get("content")
    if not isinstance(content, list):
        return ""
    found = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "image_url":
            ref = part.get("image_url")
            found.append(describe_image(ref.get("url") if isinstance(ref, dict) else ref))
        elif kind == "file":
            found.append(describe_file(part))
    if not found:
        return ""
    listed = found[0] if len(found) == 1 else ", ".join(found[:-1]) + " and " + found[-1]
    return f"It comes with {listed}. "


def _calls_just_before(messages: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    """The tool calls and results that end right before ``messages[index]`` (nothing when
    another message -- an answer, an instruction -- stands between them)."""
    start = index
    while start > 0 and (
        messages[start - 1].get("role") == "tool" or messages[start - 1].get("tool_calls")
    ):
        start -= 1
    return messages[start:index] if index > 0 else []


def _code_answer(said: str, shown: str) -> str:
    """An answer in code: one fenced Python block that parses (every line of prose in it is
    a comment)."""
    lines = [f"# Offline model: {said}"]
    if shown:
        lines.append(f"# The tools returned {shown}.")
    lines += [f"# {_HINT}", 'print("Hello from the offline model.")']
    # a comment ends at a line break, a backtick fence would end the block, and a control
    # character (NUL) would not even parse
    body = "\n".join(
        "".join(c if c.isprintable() and c != "`" else " " for c in line) for line in lines
    )
    return f"```python\n{body}\n```"


def _tool_traffic(
    messages: list[dict[str, Any]],
) -> tuple[dict[str, str], list[tuple[str, Any]]]:
    """The tool calls in ``messages`` (call id -> tool name) and the results, in order, each
    with the name of the tool that produced it."""
    called: dict[str, str] = {}
    results: list[tuple[str, Any]] = []
    for msg in messages:
        for call in msg.get("tool_calls") or ():
            fn = call.get("function") or {}
            called[call.get("id", "")] = fn.get("name", call.get("name", ""))
        if msg.get("role") == "tool":
            name = called.get(msg.get("tool_call_id", ""), msg.get("name") or "tool")
            results.append((name, msg.get("content")))
    return called, results


def _offered(request: ChatRequest) -> tuple[list[dict[str, Any]], str | None]:
    """The tools the model may call, and the one the request forces (a named choice)."""
    tools = []
    for tool in request.tools or ():
        fn = tool.get("function", tool) if isinstance(tool, dict) else {}
        if isinstance(fn, dict) and fn.get("name"):
            tools.append(fn)
    choice = request.options.get("tool_choice")
    if choice == "none":
        return [], None
    if isinstance(choice, dict):
        wanted = (choice.get("function") or {}).get("name") or choice.get("name")
        return [t for t in tools if t["name"] == wanted], wanted
    return tools, None


def _wanted_schema(request: ChatRequest, question: str) -> dict[str, Any] | None:
    fmt = request.response_format
    if isinstance(fmt, dict) and fmt:
        schema = fmt.get("schema", fmt.get("json_schema", fmt))
        if isinstance(schema, dict) and "schema" in schema:  # OpenAI's json_schema wrapper
            schema = schema["schema"]
        return schema if isinstance(schema, dict) else {}
    match = _ASKED_JSON.search(question)
    if match is None:
        return None
    try:
        asked = json.loads(match.group(2))
    except ValueError:
        return None
    if not isinstance(asked, dict):
        return None
    if match.group(1).startswith("that"):
        return asked
    return {"type": "object", "properties": {k: _field_schema(v) for k, v in asked.items()}}


def _field_schema(spec: Any) -> dict[str, Any]:
    """A schema for one requested field described loosely (a type name or a description)."""
    word = str(spec).lower()
    for names, kind in (
        (("bool",), "boolean"),
        (("int",), "integer"),
        (("float", "number", "decimal"), "number"),
        (("list", "array", "sequence"), "array"),
        (("dict", "object", "mapping"), "object"),
    ):
        if any(re.search(rf"\b{n}\b", word) for n in names):
            return {"type": kind}
    return {"type": "string"}


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # multimodal parts
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return _text_of(content)


def _text_of(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# -- scripted and function answers --------------------------------------------------------------
def _check_responses(responses: list[Any] | None) -> list[Any]:
    if responses is None:
        return []
    if isinstance(responses, (str, dict)) or not isinstance(responses, (list, tuple)):
        raise ConfigurationError(
            '`responses=` is a list (one item per answer), e.g. `responses=["Hi"]`.'
        )
    for i, item in enumerate(responses):
        if isinstance(item, str):
            continue
        if not isinstance(item, dict):
            raise ConfigurationError(
                f"`responses[{i}]` is {type(item).__name__}: give a str or a dict with "
                "`content`, `tool_calls`, or `error` (and `status`)."
            )
        unknown = sorted(set(item) - _RESPONSE_KEYS)
        if unknown:
            raise ConfigurationError(
                f"`responses[{i}]` has unknown key(s) {', '.join(map(repr, unknown))}; "
                f"use {', '.join(sorted(_RESPONSE_KEYS))}."
            )
        for j, call in enumerate(item.get("tool_calls") or ()):
            if not isinstance(call, dict) or not call.get("name"):
                raise ConfigurationError(
                    f"`responses[{i}]['tool_calls'][{j}]` needs a `name` (and `arguments`)."
                )
    return list(responses)


def _from_item(item: Any, request: ChatRequest, name: str, where: str) -> ModelResponse:
    if isinstance(item, str):
        return _build(item, [], request, name)
    if "error" in item:
        raise _provider_error(str(item["error"]), item.get("status"))
    calls = []
    for i, call in enumerate(item.get("tool_calls") or ()):
        args = call.get("arguments") or {}
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError as exc:
                raise ConfigurationError(
                    f"{where}: tool call `{call.get('name')}` has arguments that are not JSON."
                ) from exc
        call_id = call.get("id") or f"call_offline_{len(request.messages)}_{i}"
        calls.append(ToolCall(id=call_id, name=call["name"], arguments=dict(args)))
    content = item.get("content") or ""
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False, default=str)
    return _build(content, calls, request, name)


def _provider_error(message: str, status: int | None) -> ProviderError:
    kind: type[ProviderError] = ProviderError
    if status is not None:
        kind = {
            401: AuthenticationError,
            403: PermissionDeniedError,
            404: NotFoundError,
            408: ProviderTimeoutError,
            429: RateLimitError,
            529: OverloadedError,
        }.get(status) or (
            ServerError if status >= 500 else BadRequestError if status >= 400 else ProviderError
        )
    return kind(message, provider="offline", status=status)


def _accepted_names(f: Callable[..., Any]) -> frozenset[str] | None:
    """The keywords ``f`` takes by name; ``None`` when it takes any (``**kwargs``) or its
    signature cannot be read."""
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


# -- the response -------------------------------------------------------------------------------
def _usage(request: ChatRequest, text: str, calls: list[ToolCall]) -> dict[str, Any]:
    prompt = estimate_message_tokens(request.messages)
    if request.tools:
        prompt += estimate_tokens(request.tools)
    completion = estimate_tokens(text) + sum(estimate_tokens(c.arguments) + 3 for c in calls)
    return usage_dict(prompt, completion)


def _build(text: str, calls: list[ToolCall], request: ChatRequest, name: str) -> ModelResponse:
    usage = _usage(request, text, calls)
    finish = "tool_calls" if calls else "stop"
    last = request.messages[-1].get("content") if request.messages else ""
    seed = repr((len(request.messages), last, text))  # cheap: never the whole history
    digest = hashlib.sha256(seed.encode()).hexdigest()[:24]
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in calls
        ]
    rid = f"chatcmpl-offline-{digest}"
    raw = {
        "id": rid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": f"offline/{name}",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": usage["input_tokens"],
            "completion_tokens": usage["output_tokens"],
            "total_tokens": usage["total_tokens"],
        },
    }
    return ModelResponse(
        text=text,
        tool_calls=calls,
        usage=usage,
        raw=raw,
        model=f"offline/{name}",
        finish_reason=finish,
        request_id=rid,
    )
