"""The endpoint seam: what every provider implements, whatever its transport.

An API endpoint answers one `ChatRequest` with one `ModelResponse` (``complete``). A CLI
endpoint streams `StreamChunk`s for one `CLIRequest` (``stream``), an async generator that
must clean up its process when closed early. Requests are OpenAI-style message lists; each
wire adapter translates from that one shape.

Streaming text reaches the caller through `emit_text_delta`: an endpoint that streams calls
it for every fragment, and whoever set a sink with `streaming_to` (a notebook cell, a
widget) sees the text as it arrives -- no callback threaded through every signature.
"""

from __future__ import annotations

import contextvars
import json
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...shapes import JsonObject
from ..clean import loads
from ..stream import StreamChunk

__all__ = [
    "APIEndpoint",
    "CLIEndpoint",
    "CLIRequest",
    "ChatRequest",
    "Endpoint",
    "ModelResponse",
    "ToolCall",
    "current_sink",
    "decode_arguments",
    "emit_text_delta",
    "emit_thinking_delta",
    "streaming_to",
    "thinking_to",
    "wants_stream",
]

_delta_sink: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "lion_nb_delta_sink", default=None
)


_thinking_sink: contextvars.ContextVar[Callable[[StreamChunk], None] | None] = (
    contextvars.ContextVar("lion_nb_thinking_sink", default=None)
)


@contextmanager
def thinking_to(sink: Callable[[StreamChunk], None] | None) -> Iterator[None]:
    """Send streamed reasoning fragments produced in this context to ``sink``, each as a
    ``thinking`` `StreamChunk` (``is_delta``), the type a CLI agent's reasoning has."""
    token = _thinking_sink.set(sink)
    try:
        yield
    finally:
        _thinking_sink.reset(token)


def emit_thinking_delta(text: str) -> None:
    """Hand one reasoning fragment to the `thinking_to` sink; a failing sink never breaks a
    call."""
    sink = _thinking_sink.get()
    if sink is not None and text:
        try:
            sink(StreamChunk(type="thinking", content=text, is_delta=True))
        except Exception:
            import logging

            logging.getLogger("lion_nb.models").warning("thinking sink failed", exc_info=True)


@contextmanager
def streaming_to(sink: Callable[[str], None] | None) -> Iterator[None]:
    """Send streamed text fragments produced in this context (and its tasks) to ``sink``."""
    token = _delta_sink.set(sink)
    try:
        yield
    finally:
        _delta_sink.reset(token)


def current_sink() -> Callable[[str], None] | None:
    """The sink of the innermost `streaming_to` (a recorder tees into it), or ``None``."""
    return _delta_sink.get()


def wants_stream() -> bool:
    """Whether someone in this context listens to text or reasoning fragments."""
    return _delta_sink.get() is not None or _thinking_sink.get() is not None


def emit_text_delta(text: str) -> None:
    """Hand one text fragment to the current sink; a failing sink never breaks a call."""
    sink = _delta_sink.get()
    if sink is not None and text:
        try:
            sink(text)
        except Exception:  # a display problem must not fail the model call
            import logging

            logging.getLogger("lion_nb.models").warning("stream sink failed", exc_info=True)


@dataclass(slots=True)
class ChatRequest:
    """One API request in OpenAI chat shape.

    ``tools`` are OpenAI function tools (``{"type": "function", "function": {...}}``);
    ``response_format`` is ``{"name": str, "schema": dict}`` when JSON output is required;
    ``options`` carries model options (temperature, max_tokens, ...).
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    response_format: dict[str, Any] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    stream: bool = False
    #: a stable key for the provider's prompt cache (the branch's id); not part of what a
    #: cassette matches, since it names the conversation rather than what is asked
    cache_key: str | None = None


def decode_arguments(args: Any) -> JsonObject:  # Any: a provider's, kept raw unless JSON
    """Tool arguments as a dict; text that is not a JSON object is kept under ``_raw_arguments``."""
    if isinstance(args, dict):
        return args
    if args is None or (isinstance(args, str) and not args.strip()):
        return {}
    try:
        value = loads(args)
    except (TypeError, ValueError):
        return {"_raw_arguments": args}
    return value if isinstance(value, dict) else {"_raw_arguments": args}


def plain_text(content: object) -> str:
    """A message's content as one text: its text parts joined, anything else as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p if isinstance(p, str) else str(p.get("text") or "")
            for p in content
            if isinstance(p, (str, dict))
        )
    return json.dumps(content, ensure_ascii=False, default=str)


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class ModelResponse:
    """One answer. ``usage`` has ``input_tokens``, ``output_tokens``, ``total_tokens``."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    raw: Any = None
    model: str | None = None
    finish_reason: str | None = None
    request_id: str | None = None
    #: what the endpoint had to do differently to get this answer (a format it fell back
    #: to, for example); recorded with the answer and in the branch's log
    notes: list[str] = field(default_factory=list)
    #: what the answer's message keeps in its ``metadata`` besides text and calls: the
    #: readable ``thinking`` and the provider's reasoning items (`lion_nb.models.reasoning`)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class CLIRequest:
    """One turn for a CLI agent: the prompt, an optional system prompt and a session to resume."""

    prompt: str
    system: str | None = None
    resume: str | None = None
    images: list[str] | None = None
    options: dict[str, Any] = field(default_factory=dict)


class Endpoint(ABC):
    """Base of all endpoints. ``config()`` is what serializes: never a secret."""

    provider: ClassVar[str] = ""
    is_cli: ClassVar[bool] = False
    #: whether requests carry ``reasoning=`` (`lion_nb.models.reasoning`); else it is left out
    takes_reasoning: ClassVar[bool] = False
    #: whether requests carry ``citations=`` (`lion_nb.models.citations`); else it is left out
    takes_citations: ClassVar[bool] = False
    #: how the ledger treats this endpoint's calls: ``live`` (budgets checked before, cost
    #: recorded after), ``paid`` (recorded only: the answer was paid for elsewhere, a
    #: provider batch), ``none`` (not a model call at all)
    billing: ClassVar[str] = "live"
    #: whether prompts ask the provider to cache their prefix (set by `iModel`; unset, True)
    cache: bool

    # Any: an endpoint's model options (temperature, max_tokens...), each its own type
    def __init__(self, model: str, **options: Any):
        self.model = model
        #: request options (temperature, max_tokens, timeout, ...) sent with every call;
        #: a subclass pops its own settings from the keywords before calling this.
        self.options: dict[str, Any] = options

    def config(self) -> JsonObject:
        """Serializable settings needed to rebuild this endpoint (no key, ever)."""
        return {}

    async def aclose(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release connections or processes."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"


class APIEndpoint(Endpoint):
    """A request/response endpoint (HTTP APIs, the offline model)."""

    @abstractmethod
    async def complete(self, request: ChatRequest) -> ModelResponse: ...


class CLIEndpoint(Endpoint):
    """A streaming agent run as a subprocess (or its offline stand-in)."""

    is_cli: ClassVar[bool] = True

    # Any: an agent's options, each its own type, kept for its command line
    def __init__(self, model: str, **options: Any):
        super().__init__(model, **options)
        self.session_id: str | None = None

    @abstractmethod
    def stream(self, request: CLIRequest) -> AsyncGenerator[StreamChunk, None]:
        """Yield the run's chunks; closing the generator ends the run and its process."""
