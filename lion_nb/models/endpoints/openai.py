"""`OpenAIEndpoint`: any OpenAI-compatible server over HTTP, in one of two wire forms.

OpenAI itself, and through ``base_url`` (or a preset) Ollama, vLLM, llama.cpp, LM Studio,
OpenRouter, Groq and the like: requests go to ``{base_url}/chat/completions``, or with
``api="responses"`` to ``{base_url}/responses`` (the Responses API, `_responses`). OpenAI's
own host defaults to ``responses``, every other server to ``chat``, the form they all speak.
``reasoning=`` (`lion_nb.models.reasoning`) is sent as ``reasoning_effort`` on Chat
Completions and as ``reasoning: {"effort", "summary": "auto"}`` on the Responses API. OpenAI's
reasoning models refuse ``max_tokens`` on Chat Completions: theirs goes as
``max_completion_tokens``.

- A call streams when the request asks for it or someone listens (`streaming_to`); text
  fragments go to `emit_text_delta` as they arrive, and the usage comes from
  ``stream_options.include_usage``. A stream is assembled into the same dict a non-streamed
  call returns, and both are read by one function, so the two paths cannot drift apart.
- Streamed tool calls arrive as fragments keyed by ``index`` (id and name only in the
  first); they are merged here, then each call's arguments are decoded. Arguments that are
  not a JSON object are kept as ``{"_raw_arguments": text}`` rather than dropped, so the
  tool layer can report the problem back to the model.
- ``response_format`` ``{"name", "schema"}`` becomes ``json_schema`` with ``strict: false``
  (strict mode rejects many ordinary schemas, and the caller validates the answer anyway),
  or ``json_object`` with the schema for servers that take that form; the form is chosen
  per preset and per model, with one fallback when a server refuses it (`_structured`).
- An answer of a shape the API never has (``choices`` that is not a list, a usage count that
  is not a number, a chunk whose content is not text) is a `ProviderError` with status 200
  and the request id; a stream that ends with ``[DONE]`` before any answer or
  ``finish_reason`` (llama.cpp's preempted request) is a `StreamInterruptedError`, never an
  empty answer.
- A turn that offers no tools after turns with tool calls sends the history as it is:
  OpenAI takes ``tool_calls`` and ``tool`` messages without ``tools`` (unlike the Messages
  API), and so do vLLM, Ollama and llama.cpp with ``--jinja``. llama.cpp without ``--jinja``
  refuses ``tools`` and ``tool_choice`` outright, so the Anthropic remedy (offer the tools
  with ``tool_choice: none``) would break it, and its built-in templates read only role and
  content: the calls vanish from the prompt and the results arrive under a ``tool`` role the
  template may not know. Its tool-calling templates drop them too (``chatml-function-calling``
  leaves an empty tool line, plain ``chatml`` loses the call and the result), so a request
  that offers tools again (a second `operate`, every ReAct round) would lose them as well.
  So with ``tool_history="text"`` (the ``llamacpp`` preset's default, settable per model)
  every request carries the earlier calls and their results as text in the assistant's
  turn, user and assistant still alternating, whether it offers tools or not. A
  ``tool_choice`` of ``none`` with no tools is dropped: it is the default then, and servers
  refuse ``tool_choice`` without ``tools``.
- Reasoning text that a server sends beside the answer (``reasoning_content`` or
  ``reasoning``: DeepSeek, vLLM, Ollama, OpenRouter) is the answer's ``thinking``, and its
  streamed fragments go to `emit_thinking_delta`.
- ``prompt_cache_key`` (the branch's id, stable across its turns) routes a conversation's
  requests to the same prompt cache; sent to OpenAI itself (no preset), unless
  ``iModel(cache=False)``.

- Images and files go as ``image_url`` parts (``data:`` URLs) and ``file`` parts (a name
  and a ``data:`` URL). A model that reads neither -- ``vision=False``, set by a preset
  that knows (``deepseek``, ``llamacpp``) or by the user -- gets each as a sentence describing it
  (`lion_nb.models.media.text_only`), and the answer's ``notes`` say so; a server that
  refuses them (a 400 or 422 naming images, vision, ``image_url`` or files) gets the
  request once more that way, and the model sends text only from then on.
- llama.cpp's built-in chat templates (the ``llamacpp`` preset) read only string content:
  a list of parts -- an image, or even text parts alone -- becomes an empty user turn, the
  question is lost and the server answers 200 all the same. So the preset implies
  ``vision=False`` (images and files go as descriptions, with the note; ``vision=True``
  for a server with a multimodal chat handler) and sends content made only of text as one
  string (`string_content`).
- Servers with no key (Ollama, llama.cpp, LM Studio, or any loopback URL without a key set)
  get no ``Authorization`` header.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar
from urllib.parse import urlsplit

from httpx_sse import ServerSentEvent

from ...errors import ConfigurationError, ProviderError
from ...shapes import JsonObject
from ..citations import CITATIONS, chat_citations
from ..media import text_only
from ..reasoning import RECORD, check_openai_effort, openai_reasoning_model
from ..usage import openai_usage
from . import PRESET_SETTINGS
from . import _responses as responses_api
from ._http import HTTPEndpoint
from ._http_errors import StreamReader, error_fields, error_from_payload
from ._structured import check_form, other_form, refuses_form, wire_format
from .base import (
    ChatRequest,
    ModelResponse,
    ToolCall,
    decode_arguments,
    emit_text_delta,
    emit_thinking_delta,
    plain_text,
    wants_stream,
)

__all__ = [
    "API_FORMS",
    "TOOL_HISTORY_FORMS",
    "OpenAIEndpoint",
    "has_media",
    "refuses_media",
    "string_content",
    "text_tool_history",
]

#: how a request without tools carries earlier tool calls: ``native`` or ``text``
TOOL_HISTORY_FORMS = ("native", "text")
#: the wire forms: Chat Completions or the Responses API
API_FORMS = ("chat", "responses")
_TEXT_HISTORY_PRESETS = frozenset({"llamacpp"})
# servers whose chat templates read only string content: a list of parts is dropped whole
_STRING_CONTENT_PRESETS = frozenset({"llamacpp"})
_NO_VISION = "this model does not read images or files, so it was described instead"
_MEDIA_WORDS = re.compile(r"image|vision|multimodal|file part|\bfile\b|pdf", re.IGNORECASE)


def has_media(messages: list[JsonObject]) -> bool:
    """Whether any message carries an image or a file part."""
    return any(
        isinstance(m.get("content"), list)
        and any(
            isinstance(p, dict) and p.get("type") in ("image_url", "file") for p in m["content"]
        )
        for m in messages
    )


def refuses_media(exc: ProviderError) -> bool:
    """Whether ``exc`` is a server refusing the images or files it was sent."""
    if exc.status not in (400, 415, 422):
        return False
    try:
        body = json.dumps(exc.body, default=str)[:4000]
    except (TypeError, ValueError):
        body = ""
    return bool(_MEDIA_WORDS.search(f"{exc} {body}"))


def _replace(request: ChatRequest, messages: list[dict[str, Any]]) -> ChatRequest:
    import dataclasses

    return dataclasses.replace(request, messages=messages)


class OpenAIEndpoint(HTTPEndpoint):
    """``iModel(provider="openai", model="gpt-4o-mini")`` or any compatible ``base_url``."""

    provider: ClassVar[str] = "openai"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    #: OpenAI's own host, where ``api`` defaults to ``responses``; fixed here, so that a
    #: ``default_base_url`` pointed at another server (a recording) makes that one ``chat``
    own_host: ClassVar[str | None] = urlsplit(default_base_url).hostname
    default_key_env: ClassVar[str | None] = "OPENAI_API_KEY"
    takes_reasoning: ClassVar[bool] = True

    # Any: the settings `Endpoint.__init__` takes, passed on
    def __init__(self, model: str, **kwargs: Any):
        form = check_form(kwargs.pop("structured_output", None) or "json_schema")
        history = kwargs.pop("tool_history", None)
        vision = kwargs.pop("vision", None)
        api = kwargs.pop("api", None)
        if api is not None and api not in API_FORMS:
            raise ConfigurationError(
                f"`api={api!r:.40}`: use `chat` (Chat Completions, every compatible server) "
                "or `responses` (the Responses API)."
            )
        super().__init__(model, **kwargs)
        #: the wire form: ``chat`` (``/chat/completions``) or ``responses`` (``/responses``)
        self.api: str = api or self._implied_api()
        #: whether the model reads images and files (else they go as descriptions)
        self.vision = bool(self._implied_vision() if vision is None else vision)
        #: the configured ``response_format`` form (see `_structured`)
        self.structured_output = form
        #: how a request without tools carries earlier tool calls (see the module docstring)
        self.tool_history = _check_tool_history(history or self._implied_tool_history())
        self._working_form: str | None = None  # the form a refusal made this model switch to

    def config(self) -> JsonObject:
        data = super().config()
        implied = PRESET_SETTINGS.get(self.preset or "", {}).get("structured_output")
        if self.structured_output != (implied or "json_schema"):
            data["structured_output"] = self.structured_output
        if self.tool_history != self._implied_tool_history():
            data["tool_history"] = self.tool_history
        if self.vision != self._implied_vision():
            data["vision"] = self.vision
        if self.api != self._implied_api():
            data["api"] = self.api
        return data

    def _implied_api(self) -> str:
        """``responses`` on OpenAI's own host (no preset), ``chat`` everywhere else."""
        own = self.preset is None and urlsplit(self.base_url).hostname == self.own_host
        return "responses" if own else "chat"

    def _implied_vision(self) -> bool:
        vision: bool = PRESET_SETTINGS.get(self.preset or "", {}).get("vision", True)
        return vision

    def _implied_tool_history(self) -> str:
        return "text" if self.preset in _TEXT_HISTORY_PRESETS else "native"

    async def complete(self, request: ChatRequest) -> ModelResponse:
        if self.api == "responses":
            return await self._complete_responses(request)
        auth = self.request_auth()  # the key is read from its `Secret` only when sent
        form = self._working_form or self.structured_output
        may_refuse = bool(request.response_format and "type" not in request.response_format)
        notes: list[str] = []
        request = self._media_for_model(request, notes)
        try:
            reply = await self._send(request, form, auth, may_refuse)
        except ProviderError as exc:
            if refuses_media(exc) and has_media(request.messages):
                return await self._without_media(request, exc)
            if not (may_refuse and refuses_form(exc)):
                raise
            fallback = other_form(form)
            reply = await self._send(request, fallback, auth, False)
            self._working_form = fallback
            notes.append(
                f"The server refused `response_format` in the `{form}` form (HTTP "
                f"{exc.status}); it was sent again as `{fallback}`, which this model now "
                f'uses. Set `structured_output="{fallback}"` on the model to skip the refusal.'
            )
        response = self.read_answer(self._response, reply.data, reply.request_id)
        response.notes.extend(notes)
        return response

    async def _complete_responses(self, request: ChatRequest) -> ModelResponse:
        """One call on the Responses API (`_responses`)."""
        auth = self.request_auth()
        notes: list[str] = []
        request = self._media_for_model(request, notes)
        body, stream = self._responses_body(request)
        if stream:
            reply = await self._http.post_stream(
                "/responses",
                body,
                self.headers,
                lambda rid: responses_api.ResponsesStream(self.name, rid),
                auth=auth,
                key_hint=self.key_hint,
            )
        else:
            reply = await self._http.post_json(
                "/responses", body, self.headers, auth=auth, key_hint=self.key_hint
            )
        response = self._read_responses(reply.data, reply.request_id)
        response.notes.extend(notes)
        return response

    def _responses_body(self, request: ChatRequest) -> tuple[dict[str, Any], bool]:
        """The Responses API body for ``request``, and whether it streams (a provider batch
        sends the same body, `lion_nb.models.endpoints.batches`)."""
        options = {k: v for k, v in request.options.items() if v is not None}
        stream = bool(options.pop("stream", False)) or request.stream or wants_stream()
        effort = options.pop("reasoning", None)
        check_openai_effort(self.model, effort)
        cache_key = (
            request.cache_key if self.preset is None and getattr(self, "cache", True) else None
        )
        body = responses_api.responses_body(
            self.model, request, options, stream=stream, effort=effort, cache_key=cache_key
        )
        return body, stream

    def _read_responses(self, data: Any, request_id: str | None) -> ModelResponse:
        """A Responses API answer (live or a batch's result line) as a `ModelResponse`."""
        if error_fields(data)[0] is not None and not (data or {}).get("output"):
            raise error_from_payload(self.name, None, data, request_id=request_id)
        return self.read_answer(responses_api.read_response, data, request_id, self.model)

    def _media_for_model(self, request: ChatRequest, notes: list[str]) -> ChatRequest:
        """``request`` with its images and files as descriptions when the model reads none."""
        if self.vision or not has_media(request.messages):
            return request
        why = "`vision=False`"
        if not self._implied_vision():
            why += f", the `{self.preset}` preset's default; `vision=True` if it reads them"
        notes.append(
            f"`{self.model}` does not read images or files ({why}): each was sent as a "
            "sentence describing it."
        )
        return _replace(request, text_only(request.messages, _NO_VISION))

    async def _without_media(self, request: ChatRequest, exc: ProviderError) -> ModelResponse:
        """The request again with images and files described; the model keeps it so."""
        self.vision = False
        response = await self.complete(request)
        response.notes.insert(
            0,
            f"The server refused images or files (HTTP {exc.status}); they were sent as "
            "descriptions, as they will be for this model from now on. Set `vision=False` "
            "on the model to skip the refusal, or pick a model that reads images.",
        )
        return response

    async def _send(self, request: ChatRequest, form: str, auth: Any, may_refuse: bool) -> Any:
        body, stream = self._body(request, form)
        final = refuses_form if may_refuse else None
        if stream:
            return await self._http.post_stream(
                "/chat/completions",
                body,
                self.headers,
                lambda rid: _ChatStream(self.name, rid),
                auth=auth,
                key_hint=self.key_hint,
                final=final,
            )
        return await self._http.post_json(
            "/chat/completions",
            body,
            self.headers,
            auth=auth,
            key_hint=self.key_hint,
            final=final,
        )

    # -- request -------------------------------------------------------------------------------
    def _body(self, request: ChatRequest, form: str = "json_schema") -> tuple[dict[str, Any], bool]:
        options = {k: v for k, v in request.options.items() if v is not None}
        stream = bool(options.pop("stream", False)) or request.stream or wants_stream()
        effort = options.pop("reasoning", None)
        check_openai_effort(self.model, effort)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": _wire_messages(request.messages),
            **options,
        }
        if effort is not None:
            body["reasoning_effort"] = effort
        if "max_tokens" in body and openai_reasoning_model(self.model):  # refused there
            limit = body.pop("max_tokens")
            body.setdefault("max_completion_tokens", limit)
        if self.tool_history == "text":  # every request, with or without tools offered
            body["messages"] = text_tool_history(body["messages"])
        if self.preset in _STRING_CONTENT_PRESETS:
            body["messages"] = string_content(body["messages"])
        if not request.tools and body.get("tool_choice") == "none":  # the default then
            del body["tool_choice"]
        if request.tools:
            body["tools"] = request.tools
        if request.response_format:
            body["response_format"] = wire_format(request.response_format, form)
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if request.cache_key and self.preset is None and getattr(self, "cache", True):
            body.setdefault("prompt_cache_key", request.cache_key)
        return body, stream

    # -- response ------------------------------------------------------------------------------
    def _response(self, data: Any, request_id: str | None) -> ModelResponse:
        if not isinstance(data, dict) or not data.get("choices"):
            if error_fields(data)[0] is not None:  # a 200 that carries an error
                raise error_from_payload(self.name, None, data, request_id=request_id)
            raise ProviderError(
                "the answer has no `choices`; check that `base_url` is an OpenAI-compatible "
                "API (it usually ends with `/v1`).",
                provider=self.name,
                status=200,
                request_id=request_id,
            )
        choice = _field(_field(data, "choices", list)[0], "choices[0]", dict, whole=True)
        message = _field(choice, "message", dict) or {}
        usage = _field(data, "usage", dict) or {}
        thinking = message.get("reasoning_content") or message.get("reasoning")
        metadata: dict[str, Any] = {}
        if isinstance(thinking, str) and thinking:
            metadata["thinking"] = thinking
        if citations := chat_citations(message):
            metadata[CITATIONS] = citations
        return ModelResponse(
            text=_content_text(message.get("content")),
            tool_calls=[_tool_call(tc) for tc in _field(message, "tool_calls", list) or []],
            usage=openai_usage(usage),
            raw=data,
            model=data.get("model") or self.model,
            finish_reason=choice.get("finish_reason"),
            request_id=request_id,
            metadata=metadata,
        )


# -- wire helpers ------------------------------------------------------------------------------
def _wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as the wire wants them: tool arguments and tool results as strings.

    Chat Completions takes images from user messages only: a tool result's images (a
    notebook run's figure) go in one user message after that batch of tool results.
    Returns the input list itself when nothing needs changing (the common case).
    """
    out: list[dict[str, Any]] | None = None
    held: list[dict[str, Any]] = []  # images of the tool results just seen
    for i, msg in enumerate(messages):
        fixed = _wire_message(msg)
        if msg.get("role") == "tool" and isinstance(msg.get("content"), list):
            fixed, images = _tool_images(msg)
            held += images
        if (fixed is not msg or held) and out is None:
            out = list(messages[:i])
        if out is None:
            continue
        if held and msg.get("role") != "tool":
            out.append(_images_message(held))
            held = []
        out.append(fixed)
    if held and out is not None:
        out.append(_images_message(held))
    return out if out is not None else messages


def _tool_images(msg: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A tool message with list content: its text as a string, and its image parts."""
    parts = msg.get("content") or []
    images = [p for p in parts if isinstance(p, dict) and p.get("type") == "image_url"]
    text = "".join(
        p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text"
    )
    return {**msg, "content": text}, images


def _images_message(images: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(images)
    label = f"The image{'s' * (n != 1)} from the tool result{'s' * (n != 1)} above."
    return {"role": "user", "content": [{"type": "text", "text": label}, *images]}


def _wire_message(msg: dict[str, Any]) -> dict[str, Any]:
    if RECORD in msg:  # the Responses API's reasoning items: nothing Chat Completions takes
        msg = {k: v for k, v in msg.items() if k != RECORD}
    if msg.get("role") == "tool" and not isinstance(msg.get("content"), (str, list)):
        return {**msg, "content": json.dumps(msg.get("content"), default=str)}
    calls = msg.get("tool_calls")
    if not calls or all(isinstance((c.get("function") or {}).get("arguments"), str) for c in calls):
        return msg
    wire = []
    for call in calls:
        fn = call.get("function") or {"name": call.get("name"), "arguments": call.get("arguments")}
        args = fn.get("arguments")
        if not isinstance(args, str):
            args = json.dumps(args if args is not None else {}, default=str)
        wire.append(
            {
                "id": call.get("id"),
                "type": "function",
                "function": {"name": fn.get("name"), "arguments": args},
            }
        )
    return {**msg, "tool_calls": wire}


def string_content(messages: list[JsonObject]) -> list[JsonObject]:
    """``messages`` with each content made only of text parts as one string.

    llama-cpp-python's built-in chat formats keep a message's content only when it is a
    string: a list of parts, even of text alone, becomes an empty turn, and the server still
    answers 200. Parts that are not text (an image for a multimodal chat handler) are kept as
    they are. Returns the list itself when nothing needed joining.
    """
    out: list[dict[str, Any]] | None = None
    for i, msg in enumerate(messages):
        content: Any = msg.get("content")  # text, a list of parts, or None
        joinable = isinstance(content, list) and all(
            isinstance(p, dict) and p.get("type") == "text" for p in content
        )
        if joinable and out is None:
            out = list(messages[:i])
        if out is not None:
            text = "\n\n".join(str(p.get("text") or "") for p in content) if joinable else None
            out.append({**msg, "content": text} if joinable else msg)
    return out if out is not None else messages


def _check_tool_history(form: object) -> str:
    if not isinstance(form, str) or form not in TOOL_HISTORY_FORMS:
        raise ConfigurationError(
            f"`tool_history={form!r:.60}`: use `native` (tool calls and results as the API "
            "has them) or `text` (written into the assistant's turn, for servers whose "
            "templates drop them)."
        )
    return form


def text_tool_history(messages: list[JsonObject]) -> list[JsonObject]:
    """The history with tool calls and their results written as text in the assistant's turn.

    Consecutive assistant turns are merged, so user and assistant alternate as strict
    templates require. Returns the input list itself when it holds no tool call or result;
    the input messages are never changed.
    """
    if not any(m.get("role") == "tool" or m.get("tool_calls") for m in messages):
        return messages
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # call id -> tool name
    for msg in messages:
        role = msg.get("role")
        if role == "tool":
            name = names.get(msg.get("tool_call_id") or "", "the tool")
            text = f"[{name} returned: {plain_text(msg.get('content'))}]"
        elif role == "assistant":
            lines = [plain_text(msg.get("content"))]
            for call in msg.get("tool_calls") or ():
                fn = call.get("function") or call
                name = str(fn.get("name") or "tool")
                names[call.get("id") or ""] = name
                args = json.dumps(decode_arguments(fn.get("arguments")), ensure_ascii=False)
                lines.append(f"[called {name}({args})]")
            text = "\n".join(line for line in lines if line)
        else:
            out.append(msg)
            continue
        last = out[-1] if out else None
        if last is not None and last.get("role") == "assistant":
            joined = (plain_text(last.get("content")), text)
            out[-1] = {"role": "assistant", "content": "\n\n".join(t for t in joined if t)}
        elif role == "assistant" and not msg.get("tool_calls"):
            out.append(msg)
        else:
            out.append({"role": "assistant", "content": text})
    return out


def _field(data: Any, name: str, kind: type, *, whole: bool = False) -> Any:
    """``data[name]`` (``data`` itself when ``whole``), checked to be a ``kind`` when present:
    a ``ValueError`` naming the field otherwise (reported as an answer of the wrong shape)."""
    value = data if whole else data.get(name)
    if value is not None and not isinstance(value, kind):
        raise ValueError(f"`{name}` is a {type(value).__name__}, not a {kind.__name__}")
    return value


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some servers answer with content parts
        return "".join(
            p if isinstance(p, str) else p.get("text") or ""
            for p in content
            if isinstance(p, (str, dict))
        )
    if isinstance(content, (int, float)):
        return str(content)
    raise ValueError(f"`content` is a {type(content).__name__}, not text")


def _tool_call(call: dict[str, Any]) -> ToolCall:
    _field(call, "tool_calls[]", dict, whole=True)
    fn = _field(call, "function", dict) or {}
    return ToolCall(
        id=call.get("id") or "",
        name=fn.get("name") or "",
        arguments=decode_arguments(fn.get("arguments")),
    )


class _ChatStream(StreamReader):
    """Merges chat completion chunks into one ``chat.completion`` dict (choice 0)."""

    def __init__(self, provider: str, request_id: str | None):
        super().__init__(provider, request_id)
        self.head: dict[str, Any] = {}
        self.reasoning: list[str] = []
        self.annotations: list[Any] = []  # URL citations, where a server streams them
        self.tools: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.done = False

    @property
    def partial_usage(self) -> dict[str, Any]:
        """The usage the stream reported before it ended (its last chunk has it: usually
        none for a stream cut short)."""
        try:
            return openai_usage(self.usage)
        except ValueError:
            return {}

    def feed(self, event: ServerSentEvent) -> bool:
        data = event.data.strip()
        if data == "[DONE]":
            self.done = True
            return True
        if not data:
            return False
        chunk = self._decode(data)
        if not isinstance(chunk, dict):
            raise self._interrupted(f"the stream sent an unexpected event: {data[:200]!r}")
        if "error" in chunk or chunk.get("object") == "error" or event.event == "error":
            message = error_fields(chunk)[0] or "the server reported an error"
            raise self._interrupted(f"error in the middle of the stream: {message}", chunk)
        for key in ("id", "object", "created", "model", "system_fingerprint", "service_tier"):
            if key in chunk and key not in self.head:
                self.head[key] = chunk[key]
        if chunk.get("usage"):
            self.usage = _field(chunk, "usage", dict)
        for choice in _field(chunk, "choices", list) or []:
            _field(choice, "choices[]", dict, whole=True)
            if choice.get("index", 0) == 0:
                self._choice(choice)
        return False

    def _choice(self, choice: dict[str, Any]) -> None:
        delta = _field(choice, "delta", dict) or {}
        if content := _field(delta, "content", str):
            self.text.append(content)
            emit_text_delta(content)
        if reasoning := delta.get("reasoning_content") or delta.get("reasoning"):
            self.reasoning.append(str(reasoning))
            emit_thinking_delta(str(reasoning))
        self.annotations.extend(_field(delta, "annotations", list) or ())
        for fragment in _field(delta, "tool_calls", list) or []:
            self._tool_fragment(_field(fragment, "tool_calls[]", dict, whole=True))
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]

    def _tool_fragment(self, fragment: dict[str, Any]) -> None:
        index = fragment.get("index")
        if index is None:  # servers that omit it: a new id opens a call, else continue
            is_new = fragment.get("id") and all(
                t["id"] != fragment["id"] for t in self.tools.values()
            )
            index = len(self.tools) if is_new or not self.tools else max(self.tools)
        slot = self.tools.setdefault(
            index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if fragment.get("id"):
            slot["id"] = fragment["id"]
        fn = fragment.get("function") or {}
        if fn.get("name"):
            slot["function"]["name"] = fn["name"]
        args = fn.get("arguments")
        if isinstance(args, str):
            slot["function"]["arguments"] += args
        elif args is not None:  # a server that sends the arguments whole, as an object
            slot["function"]["arguments"] = json.dumps(args)

    def finish(self) -> dict[str, Any]:
        if not self.done and self.finish_reason is None:
            raise self._interrupted("the stream ended before the answer was complete")
        if self.finish_reason is None and not self.text and not self.tools:
            # ``[DONE]`` with nothing before it: the server dropped the request (llama.cpp
            # does this to a request it preempted). Not an empty answer: no answer at all.
            raise self._interrupted(
                "the stream ended with `[DONE]` but sent no answer and no `finish_reason`: "
                "the server stopped this request before answering it (llama.cpp does this to a "
                "request it preempted). Nothing was recorded; try again."
            )
        if self.finish_reason is None:
            # ``[DONE]`` after some text but no finish reason: llama.cpp ends a request this
            # way when another one preempts it. The text is a part of an answer, not one.
            raise self._interrupted(
                "the stream ended without a finish reason: the server stopped this answer "
                "part way (llama.cpp does this to a request another one preempts). What "
                "arrived is kept, marked incomplete; ask again for the whole answer."
            )
        message: dict[str, Any] = {"role": "assistant", "content": self.partial_text or None}
        if self.tools:
            message["tool_calls"] = [self.tools[i] for i in sorted(self.tools)]
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.annotations:
            message["annotations"] = self.annotations
        return {
            **self.head,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
            "usage": self.usage,
        }
