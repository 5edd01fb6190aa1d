"""`iModel`: one configured model access point, and `iModelManager`, a branch's pair of them.

An iModel wraps an endpoint (see `endpoints`) with what every call needs whatever the
provider: rate limits and a concurrency bound, timing, and a call record (`APICall`) whose
status tells success from failure without raising. Keys live in the endpoint as `Secret`s;
``to_dict`` and ``repr`` never include them.

The limits bound CLI runs too: a run holds one slot of the limiter from before its first
chunk until its stream ends or is closed, so ``concurrency_limit=1`` means one agent process
at a time. ``copy.deepcopy`` works (keys are shared, connection pools and limiters are new);
``copy()`` is the usual way to duplicate a model.

Every call goes through the cassette seam first (`lion_nb.models.cassettes`): with a cassette
in force (``cassette=``, ``with cassette(...)``, ``%lion cassette``) it is replayed or
recorded; `CassetteError` (no recording, or a live call forbidden) is raised, not recorded
on the call, because it is a setup problem that no retry fixes.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from ..errors import ConfigurationError
from ..shapes import JsonObject, Keywords
from .cassettes.recording import CassetteError
from .cassettes.scope import as_cassette, cassette_for
from .citations import check_citations
from .endpoints import (
    APIEndpoint,
    ChatRequest,
    CLIEndpoint,
    CLIRequest,
    Endpoint,
    ModelResponse,
    endpoint_class,
    resolve_provider,
)
from .mapped_options import join_tools, leave_out_unmapped
from .prices import Pricer, check_price, pricer_for
from .reasoning import check_reasoning
from .stream import StreamChunk
from .usage import ensure_usage

__all__ = ["APICall", "iModel", "iModelManager"]

#: endpoint classes `invoke` has seen to be API endpoints
_API_KINDS: set[type] = set()

_MAX_SETTING_DEPTH = 64  # a saved model's settings (a schema in its options) nest far less


@dataclass(slots=True)
class APICall:
    """The record of one API call: ``status`` is ``completed`` or ``failed``."""

    request: ChatRequest
    status: Literal["pending", "completed", "failed"] = "pending"
    response: ModelResponse | None = None
    error: BaseException | None = None
    duration: float = 0.0
    started_at: float = field(default_factory=time.time)


def _split_model(provider: str | None, model: str | None) -> tuple[str | None, str | None]:
    if provider is None and model and "/" in model:
        head, _, tail = model.partition("/")
        try:
            resolve_provider(head)
        except ConfigurationError as exc:
            raise ConfigurationError(
                f"{exc} If `{model}` is a model name, also pass `provider=`."
            ) from None
        return head, tail
    return provider, model


class iModel:
    """A model: ``iModel(provider="openai", model="gpt-4o-mini")`` or ``iModel("offline/auto")``.

    Keywords the endpoint does not take as settings become request options (temperature,
    max_tokens, timeout, ...). ``limit_requests`` / ``limit_tokens`` (per minute) and
    ``concurrency_limit`` bound how fast this model is called. ``cassette`` (a path to a
    ``.jsonl`` file, opened in mode ``once``, or a `Cassette`) records and replays this
    model's calls. ``price`` (dollars per million tokens, ``{"input", "output",
    "cache_read", "cache_write"}``, or ``0`` for free) overrides the price table
    (`lion_nb.models.prices`); ``cache=False`` turns prompt caching off. ``reasoning``
    (``"minimal"`` to ``"high"``, here or per call) sets how hard a reasoning model thinks
    (`lion_nb.models.reasoning`); ``citations=True`` (here or per call) asks Claude to cite
    the documents a request sends (`lion_nb.models.citations`); ``api`` picks an
    OpenAI-compatible server's wire form.
    """

    def __init__(
        self,
        provider: str | None = None,
        model: str | None = None,
        *,
        endpoint: Endpoint | None = None,
        limit_requests: int | None = None,
        limit_tokens: int | None = None,
        concurrency_limit: int | None = None,
        # Any: a `Cassette` or a path; a price row, dict or Pricer; `kwargs` are model options
        cassette: Any = None,
        price: Any = None,
        cache: bool = True,
        **kwargs: Any,
    ):
        self.cassette = cassette
        self._price = check_price(price)
        self._price_given = price  # as given, for `to_dict`
        self._pricer: Pricer | None = None
        if not isinstance(cache, bool):
            raise ConfigurationError(f"`cache={cache!r:.40}`: give True or False.")
        check_reasoning(kwargs.get("reasoning"))
        check_citations(kwargs.get("citations"))
        if endpoint is None:
            if provider is not None and model is None and "/" in provider:
                provider, model = None, provider
            provider, model = _split_model(provider, model)
            from_settings = provider is None and model is None
            if from_settings:
                from ..settings import default_chat_model

                provider, model = default_chat_model()
            if provider is None:
                raise ConfigurationError(
                    f"`iModel(model={model!r})` names no provider. Write "
                    '`iModel(provider="openai", model=...)` or `iModel(model="openai/...")`.'
                )
            try:
                name, preset = resolve_provider(provider)
                for key, value in preset.items():
                    kwargs.setdefault(key, value)
                endpoint = endpoint_class(name)(model or "", **kwargs)
            except ConfigurationError as exc:
                if not from_settings:
                    raise
                raise ConfigurationError(
                    f"The default model from `LION_CHAT_PROVIDER` / `LION_CHAT_MODEL` "
                    f"(`{provider}/{model}`) cannot be used: {exc}"
                ) from exc
            self.provider = provider.strip().lower()
        else:
            self.provider = endpoint.provider
        self.endpoint = endpoint
        endpoint.cache = cache  # prompt caching, read by the endpoints that support it
        self._limits = {
            "limit_requests": limit_requests,
            "limit_tokens": limit_tokens,
            "concurrency_limit": concurrency_limit,
        }
        self._limiter: Any = None
        if limit_requests is not None or limit_tokens is not None or concurrency_limit is not None:
            from .ratelimit import RateLimiter

            self._limiter = RateLimiter(
                requests_per_minute=limit_requests,
                tokens_per_minute=limit_tokens,
                max_concurrency=concurrency_limit,
            )

    # -- identity ----------------------------------------------------------------------------
    @property
    def model(self) -> str:
        return self.endpoint.model

    @property
    def is_cli(self) -> bool:
        return self.endpoint.is_cli

    @property
    def options(self) -> JsonObject:
        return self.endpoint.options

    @property
    def kwargs(self) -> Keywords:
        return self.endpoint.options

    @property
    def provider_session_id(self) -> str | None:
        return self.endpoint.session_id if isinstance(self.endpoint, CLIEndpoint) else None

    @provider_session_id.setter
    def provider_session_id(self, value: str | None) -> None:
        if not isinstance(self.endpoint, CLIEndpoint):
            raise AttributeError("Only CLI models have a provider session id.")
        self.endpoint.session_id = value

    # Any: a `Cassette` (cassettes import this module at type level)
    @property
    def cassette(self) -> Any:
        """This model's own `Cassette` (``None``: the one in force where it is called)."""
        return self._cassette

    # Any: a `Cassette`, a path or None, as `as_cassette` takes
    @cassette.setter
    def cassette(self, value: Any) -> None:
        self._cassette = as_cassette(value)

    @property
    def cache(self) -> bool:
        """Whether requests ask the provider to cache their prompt prefix."""
        return getattr(self.endpoint, "cache", True)

    @property
    def pricer(self) -> Pricer:
        """This model's price, resolved once (`lion_nb.models.prices`)."""
        pricer = self._pricer
        if pricer is None:
            pricer = self._pricer = pricer_for(self.provider, self.endpoint, self._price)
        return pricer

    def __repr__(self) -> str:
        return f"iModel(provider={self.provider!r}, model={self.model!r})"

    # -- calling -------------------------------------------------------------------------------
    async def invoke(self, request: ChatRequest) -> APICall:
        """Call an API model once. Failures are recorded on the call, not raised."""
        kind = self.endpoint.__class__
        if kind not in _API_KINDS:  # an ABC's isinstance is a Python call: once per class
            if not isinstance(self.endpoint, APIEndpoint):
                raise ConfigurationError(
                    f"`{self.provider}` is a CLI agent: use `Branch.run()` (or `operate`, "
                    "which collects a run) instead of an API call."
                )
            _API_KINDS.add(kind)
        merged = {**self.endpoint.options, **request.options}
        unused = self._unmapped_options(merged)
        request.options = merged
        join_tools(request)
        tape = cassette_for(self)
        call = APICall(request=request)
        start = time.perf_counter()
        try:
            if tape is not None:
                from .cassettes._seam import complete

                call.response = await complete(tape, self, request, self._complete)
            else:
                call.response = await self._complete(request)
            ensure_usage(request, call.response)
            call.response.notes.extend(unused)
            call.status = "completed"
        except CassetteError:
            raise
        except Exception as exc:
            call.error = exc
            call.status = "failed"
        finally:
            call.duration = time.perf_counter() - start
        return call

    def _unmapped_options(self, options: dict[str, Any]) -> list[str]:
        """Checks ``reasoning=`` and ``citations=`` (a `ConfigurationError` before any
        request) and leaves each out where unset or not mapped (`leave_out_unmapped`);
        a note for each left out that was asked for."""
        return [
            f"`{name}=` is not sent to `{self.provider}` models yet; it was left out."
            for name in leave_out_unmapped(self.endpoint, options)
        ]

    async def _complete(self, request: ChatRequest) -> ModelResponse:
        """One live call of the endpoint, inside the rate limits."""
        endpoint: APIEndpoint = self.endpoint  # type: ignore[assignment]  # `invoke` checked it
        if self._limiter is None:
            return await endpoint.complete(request)
        async with self._limiter.slot(_estimate_tokens(request)):
            return await endpoint.complete(request)

    def stream_cli(self, request: CLIRequest) -> AsyncGenerator[StreamChunk, None]:
        """The chunks of one CLI run; close the generator to stop the agent."""
        if not isinstance(self.endpoint, CLIEndpoint):
            raise ConfigurationError(f"`{self.provider}` is not a CLI agent.")
        tape = cassette_for(self)
        if tape is not None:
            from .cassettes._seam import stream

            return stream(tape, self, request, self._live_stream)
        return self._live_stream(request)

    def _live_stream(self, request: CLIRequest) -> AsyncGenerator[StreamChunk, None]:
        if self._limiter is None:
            # `stream_cli`, the only caller, checked it is a CLI agent
            return cast(CLIEndpoint, self.endpoint).stream(request)
        return self._limited_stream(request)

    async def _limited_stream(self, request: CLIRequest) -> AsyncGenerator[StreamChunk, None]:
        """The run inside one limiter slot, released once the agent's stream is closed."""
        from ..tokens import estimate_tokens

        estimate = estimate_tokens(request.prompt) + estimate_tokens(request.system)
        async with (
            self._limiter.slot(estimate),
            aclosing(cast(CLIEndpoint, self.endpoint).stream(request)) as chunks,
        ):
            async for chunk in chunks:
                yield chunk

    async def aclose(self) -> None:
        await self.endpoint.aclose()

    # -- copying and serializing -----------------------------------------------------------------
    def copy(self, *, share_session: bool = False) -> iModel:
        """A new iModel with the same settings. A CLI session id is kept only if asked."""
        clone = iModel.from_dict(self.to_dict(include_request_options=True, include_live=True))
        if share_session and self.is_cli:
            clone.provider_session_id = self.provider_session_id
        return clone

    def to_dict(
        self,
        include_request_options: bool = False,
        include_processor_config: bool = False,
        *,
        include_live: bool = False,
    ) -> JsonObject:
        """Provider, model and endpoint settings; never a key. ``include_live`` is for
        in-process copies: it keeps live objects (functions) that cannot be saved."""
        data: dict[str, Any] = {"provider": self.provider, "model": self.model}
        config = self.endpoint.config()
        if include_live and hasattr(self.endpoint, "live_config"):
            config = {**config, **self.endpoint.live_config()}
        if config:
            data["endpoint"] = config
        if include_request_options and self.endpoint.options:
            data["options"] = dict(self.endpoint.options)
        if include_processor_config or include_live:
            limits = {k: v for k, v in self._limits.items() if v is not None}
            if limits:
                data["processor"] = limits
        if include_live and self.cassette is not None:
            data["cassette"] = self.cassette
        if self._price_given is not None:
            data["price"] = (
                dict(self._price_given)
                if isinstance(self._price_given, dict)
                else self._price_given
            )
        if not self.cache:
            data["cache"] = False
        if self.is_cli and self.provider_session_id and not include_live:
            data["provider_session_id"] = self.provider_session_id
        return data

    @classmethod
    def from_dict(cls, data: JsonObject) -> iModel:
        """Rebuild from ``to_dict`` output. Any malformed field is a `ConfigurationError`
        naming it (see `lion_nb.untrusted`); ``data`` is left unchanged."""
        from ..untrusted import check_depth, loading, short_repr

        what = "A serialized iModel"
        if not isinstance(data, dict) or "provider" not in data:
            raise ConfigurationError(
                f"{what} is a dict with `provider` and `model` (got {type(data).__name__})."
            )
        for key in ("provider", "model", "provider_session_id"):
            value = data.get(key)
            if value is not None and not isinstance(value, str):
                raise ConfigurationError(
                    f"{what} has a malformed `{key}`: a string is needed, got "
                    f"{type(value).__name__} {short_repr(value)}."
                )
        kwargs: dict[str, Any] = {}
        for key in ("endpoint", "options", "processor"):
            section = data.get(key)
            if section is None:
                continue
            if not isinstance(section, dict) or not all(isinstance(k, str) for k in section):
                raise ConfigurationError(
                    f"{what} has a malformed `{key}`: a dict of settings by name is needed, "
                    f"got {type(section).__name__} {short_repr(section)}."
                )
            check_depth(section, key, _MAX_SETTING_DEPTH, what=what)
            kwargs.update(section)
        for key in ("price", "cache"):
            if data.get(key) is not None:
                kwargs[key] = data[key]
        with loading(what, "`provider`"):
            resolve_provider(data["provider"])
        with loading(what, "setting (`endpoint`, `options` or `processor`)"):
            model = cls(provider=data["provider"], model=data.get("model"), **kwargs)
        if data.get("provider_session_id") and model.is_cli:
            model.provider_session_id = data["provider_session_id"]
        if data.get("cassette") is not None:  # `to_dict(include_live=True)`: a copy shares it
            model.cassette = data["cassette"]
        return model


def _estimate_tokens(request: ChatRequest) -> int:
    from ..tokens import estimate_message_tokens

    return estimate_message_tokens(request.messages)


class iModelManager:
    """A branch's chat model and parse model. Without its own, parse aliases chat."""

    def __init__(self, chat: iModel, parse: iModel | None = None):
        self.chat = chat
        self.parse = parse if parse is not None else chat

    @property
    def parse_is_chat(self) -> bool:
        return self.parse is self.chat

    def __repr__(self) -> str:
        return f"iModelManager(chat={self.chat!r}, parse={'chat' if self.parse_is_chat else self.parse!r})"
