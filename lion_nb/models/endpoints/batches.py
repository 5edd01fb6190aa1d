"""The providers' batch services: the OpenAI Batch API and Anthropic Message Batches.

A `BatchService` wraps one HTTP endpoint (its key, base URL, client and retry policy) and
speaks its provider's batch wire:

- **OpenAI** (and compatible servers that implement it): the requests are one JSONL file
  (``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`` per line),
  uploaded to ``{base_url}/files`` with ``purpose=batch``; ``POST {base_url}/batches``
  (``completion_window: 24h``) starts the batch; ``GET {base_url}/batches/{id}`` polls it;
  its ``output_file_id`` and ``error_file_id`` are read from ``/files/{id}/content``, one
  ``{"custom_id", "response": {"status_code", "request_id", "body"}, "error"}`` per line.
- **Anthropic**: ``POST {base_url}/v1/messages/batches`` with ``{"requests": [{"custom_id",
  "params"}]}``; ``GET .../batches/{id}`` polls until ``processing_status`` is ``ended``;
  the results are JSONL at ``results_url``: ``{"custom_id", "result": {"type":
  "succeeded"|"errored"|"canceled"|"expired", ...}}``. The key is sent only to the
  endpoint's own host: a ``results_url`` elsewhere is ignored for the documented path.

Each request body is exactly what the endpoint would send for a live call (its own request
builder, streaming off), and each answer is decoded by the endpoint's own response reader,
so a batched answer becomes the same `ModelResponse` a live call gives. A failed request
becomes the same typed `ProviderError` a live call would raise. States are normalized to
``submitted``, ``running``, ``ended``, ``cancelling``, ``cancelled``, ``failed``,
``expired``; results are read for any end state (a cancelled or expired batch keeps what
it finished).

Results are streamed: `result_lines` reads the provider's file line by line and `results`
yields one outcome per line, so a result file of any size is never held whole. A line that
cannot be read (a torn line) is skipped, and its request reported as missing; a line of the
wrong shape (``"status_code": "abc"``) fails its own request, never the batch. Malformed
``request_counts`` count as zero: they only feed progress.

A batch goes through the cassette seam like any model call:
`lion_nb.models.batch_service.batch_service` hands back the service behind a
`CassetteBatches` when a cassette is in force for the model (recorded or replayed as one
exchange, `lion_nb.models.cassettes._batches`), and refuses at once when
``LION_NB_CASSETTE_MODE=none`` forbids live calls. The services themselves know nothing of
cassettes, which record them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
import httpx

from ...errors import (
    ConfigurationError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
)
from ...shapes import JsonObject
from ..clean import loads
from ..mapped_options import join_tools, leave_out_unmapped
from ..secrets import redact
from ._http import backoff
from ._http_errors import error_from_payload, error_from_response, exhausted, request_id_of, tag
from .base import ChatRequest, ModelResponse

if TYPE_CHECKING:
    from .anthropic import AnthropicEndpoint
    from .openai import OpenAIEndpoint

__all__ = ["BatchOutcome", "BatchService", "BatchStatus", "provider_batch_service"]

ENDED = frozenset({"ended", "cancelled", "failed", "expired"})
_OPENAI_STATES = {
    "validating": "submitted",
    "in_progress": "running",
    "finalizing": "running",
    "completed": "ended",
    "cancelling": "cancelling",
    "cancelled": "cancelled",
    "failed": "failed",
    "expired": "expired",
}
_ANTHROPIC_STATES = {"in_progress": "running", "canceling": "cancelling", "ended": "ended"}


@dataclass(slots=True)
class BatchStatus:
    """A provider batch as last seen: normalized state and request counts."""

    id: str
    state: str
    total: int = 0
    succeeded: int = 0
    failed: int = 0
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    @property
    def processing(self) -> int:
        return max(0, self.total - self.succeeded - self.failed)


@dataclass(slots=True)
class BatchOutcome:
    """One request's result: the provider's answer body, or the error it got instead.
    ``cancelled``: the request never ran because the batch was cancelled."""

    custom_id: str
    body: Any = None
    error: ProviderError | None = None
    request_id: str | None = None
    cancelled: bool = False


class BatchService:
    """Submit, poll, cancel and read one provider's batches (see the module docstring)."""

    #: the most requests, and bytes of requests, the provider takes in one batch
    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024

    def __init__(self, endpoint: OpenAIEndpoint | AnthropicEndpoint):
        self.endpoint = endpoint

    def request_size(self, custom_id: str, request: ChatRequest) -> int:
        """The bytes ``request`` adds to a batch (its line of the file, or its entry)."""
        return len(json.dumps(self._entry(custom_id, request), ensure_ascii=False).encode()) + 1

    def _entry(self, custom_id: str, request: ChatRequest) -> dict[str, Any]:
        return {"custom_id": custom_id, "params": self.body(request)}

    # -- the wire: every request goes through the endpoint's client and retry policy ----------
    def _headers(self) -> dict[str, str]:
        return dict(self.endpoint.headers)

    async def _send(
        self, method: str, url: str, *, stream: bool = False, **kwargs: Any
    ) -> httpx.Response:
        """One request with the endpoint's key, client, deadline and retry policy (the
        attempts, backoff and ``retry-after`` of a live call). With ``stream``, the body is
        left unread: the caller reads it and closes the response."""
        http = self.endpoint._http
        auth = self.endpoint.request_auth()
        headers = self._headers()
        for attempt in range(http.max_retries + 1):
            try:
                return await self._once(method, url, headers, auth, kwargs, stream)
            except ProviderError as exc:
                if not getattr(exc, "retryable", False):
                    raise
                if attempt == http.max_retries:
                    raise exhausted(exc, http.max_retries) from exc.__cause__
                wait = getattr(exc, "retry_after", None)
                await anyio.sleep(backoff(attempt) if wait is None else wait)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _once(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        auth: Any,
        kwargs: dict[str, Any],
        stream: bool = False,
    ) -> httpx.Response:
        http = self.endpoint._http
        name = self.endpoint.name
        try:
            with anyio.fail_after(http.timeout):
                request = http.client.build_request(method, url, headers=headers, **kwargs)
                response = await http.client.send(request, auth=auth, stream=stream)
        except (httpx.TimeoutException, TimeoutError) as exc:
            error: ProviderError = ProviderTimeoutError(
                f"no answer from the batch service within {http.timeout:g} s (`timeout=`)",
                provider=name,
            )
            raise tag(error, retryable=True) from exc
        except httpx.RequestError as exc:
            error = ProviderConnectionError(
                f"could not reach `{redact(self.endpoint.base_url)}` ({redact(str(exc))})",
                provider=name,
            )
            raise tag(error, retryable=True) from exc
        if response.status_code >= 400:
            if stream:
                await response.aread()
                await response.aclose()
            raise error_from_response(name, response, key_hint=self.endpoint.key_hint)
        return response

    async def _json(self, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        response = await self._send(method, url, **kwargs)
        try:
            data = loads(response.content)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise ProviderError(
                f"the batch service answered `{method} {urlsplit(url).path}` with something "
                "that is not a JSON object",
                provider=self.endpoint.name,
                status=response.status_code,
                request_id=request_id_of(response.headers),
            )
        return data

    def _url(self, path: str) -> str:
        return self.endpoint.request_url + path

    def body(self, request: ChatRequest) -> JsonObject:
        """The body a live, non-streamed call would send for ``request``."""
        request.options = {**self.endpoint.options, **request.options}
        leave_out_unmapped(self.endpoint, request.options)  # as a live call does
        join_tools(request)
        request.stream = False
        built = self._build(request)
        body = dict(built[0])
        body.pop("stream", None)
        body.pop("stream_options", None)
        return body

    def _build(self, request: ChatRequest) -> Any:
        """The endpoint's own request builder's result (body first)."""
        endpoint: Any = self.endpoint  # each provider's endpoint has its own `_body`
        return endpoint._body(request)

    # -- the provider-specific parts -----------------------------------------------------------
    async def submit(
        self, requests: list[tuple[str, ChatRequest]], metadata: dict[str, str] | None = None
    ) -> BatchStatus:
        raise NotImplementedError

    async def status(self, batch_id: str) -> BatchStatus:
        raise NotImplementedError

    async def cancel(self, batch_id: str) -> BatchStatus:
        raise NotImplementedError

    def result_lines(self, status: BatchStatus) -> AsyncIterator[JsonObject]:
        """The provider's result lines for an ended batch, as it sent them, one at a time."""
        raise NotImplementedError

    def _outcome(self, line: dict[str, Any]) -> BatchOutcome:
        raise NotImplementedError

    def outcome(self, line: JsonObject) -> BatchOutcome:
        """The outcome of one result line; a line of the wrong shape fails its request only."""
        try:
            return self._outcome(line)
        except Exception as exc:
            cid = line.get("custom_id")
            error = ProviderError(
                f"the batch's result line for this request is not of the documented shape "
                f"({type(exc).__name__}: {redact(str(exc))[:200]})",
                provider=self.endpoint.name,
            )
            return BatchOutcome(cid if isinstance(cid, str) else "", error=error)

    async def results(self, status: BatchStatus) -> AsyncIterator[BatchOutcome]:
        """One outcome per result line of an ended batch, as the lines arrive."""
        async for line in self.result_lines(status):
            yield self.outcome(line)

    async def _stream_lines(self, url: str) -> AsyncIterator[dict[str, Any]]:
        """The JSON object lines of the file at ``url``, read as they arrive."""
        response = await self._send("GET", url, stream=True)
        try:
            async for text in response.aiter_lines():
                value = _line(text)
                if value is not None:
                    yield value
        finally:
            await response.aclose()

    def decode(self, request: ChatRequest, outcome: BatchOutcome) -> ModelResponse:
        """The `ModelResponse` a live call would have given (or its error, raised)."""
        raise NotImplementedError


class OpenAIBatches(BatchService):
    """``/files`` + ``/batches`` of an OpenAI-compatible server: each line to
    ``/v1/chat/completions``, or to ``/v1/responses`` with the Responses API's body when the
    model speaks that wire form (``api="responses"``), its result lines read by that form."""

    @property
    def _responses(self) -> bool:
        return getattr(self.endpoint, "api", "chat") == "responses"

    @property
    def _path(self) -> str:
        return "/v1/responses" if self._responses else "/v1/chat/completions"

    def _build(self, request: ChatRequest) -> Any:
        endpoint: Any = self.endpoint
        return endpoint._responses_body(request) if self._responses else endpoint._body(request)

    endpoint: OpenAIEndpoint

    def _entry(self, custom_id: str, request: ChatRequest) -> dict[str, Any]:
        return {
            "custom_id": custom_id,
            "method": "POST",
            "url": self._path,
            "body": self.body(request),
        }

    async def submit(
        self, requests: list[tuple[str, ChatRequest]], metadata: dict[str, str] | None = None
    ) -> BatchStatus:
        lines = [
            json.dumps(self._entry(cid, request), ensure_ascii=False) for cid, request in requests
        ]
        payload = ("\n".join(lines) + "\n").encode()
        uploaded = await self._json(
            "POST",
            self._url("/files"),
            data={"purpose": "batch"},
            files={"file": ("batch.jsonl", payload, "application/jsonl")},
        )
        batch = await self._json(
            "POST",
            self._url("/batches"),
            json={
                "input_file_id": uploaded.get("id"),
                "endpoint": self._path,
                "completion_window": "24h",
                **({"metadata": metadata} if metadata else {}),
            },
        )
        return self._status(batch)

    async def status(self, batch_id: str) -> BatchStatus:
        return self._status(await self._json("GET", self._url(f"/batches/{batch_id}")))

    async def cancel(self, batch_id: str) -> BatchStatus:
        return self._status(await self._json("POST", self._url(f"/batches/{batch_id}/cancel")))

    def _status(self, data: dict[str, Any]) -> BatchStatus:
        counts = _counts(data)
        return BatchStatus(
            id=str(data.get("id") or ""),
            state=_OPENAI_STATES.get(str(data.get("status")), "running"),
            total=counts.get("total", 0),
            succeeded=counts.get("completed", 0),
            failed=counts.get("failed", 0),
            raw=data,
        )

    async def result_lines(self, status: BatchStatus) -> AsyncIterator[JsonObject]:
        for key in ("output_file_id", "error_file_id"):
            file_id = status.raw.get(key)
            if not file_id or not isinstance(file_id, str):
                continue
            async for line in self._stream_lines(self._url(f"/files/{file_id}/content")):
                yield line

    def _outcome(self, line: dict[str, Any]) -> BatchOutcome:
        cid = str(line.get("custom_id") or "")
        response = line.get("response") or {}
        rid = response.get("request_id") if isinstance(response, dict) else None
        error = line.get("error")
        name = self.endpoint.name
        code = response.get("status_code") if isinstance(response, dict) else None
        if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
            raise ValueError(f"`response.status_code` is {code!r:.40}, not an HTTP status")
        if code == 200 and not error:
            return BatchOutcome(cid, body=response.get("body"), request_id=rid)
        if code:
            exc = error_from_payload(name, code, response.get("body"), request_id=rid)
        else:
            exc = error_from_payload(name, None, {"error": error or {}}, request_id=rid)
        return BatchOutcome(cid, error=exc, request_id=rid)

    def decode(self, request: ChatRequest, outcome: BatchOutcome) -> ModelResponse:
        if outcome.error is not None:
            raise outcome.error
        if self._responses:
            endpoint: Any = self.endpoint
            read: ModelResponse = endpoint._read_responses(outcome.body, outcome.request_id)
            return read
        return self.endpoint._response(outcome.body, outcome.request_id)


class AnthropicBatches(BatchService):
    """``/v1/messages/batches`` of the Anthropic API."""

    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024
    endpoint: AnthropicEndpoint

    def _headers(self) -> dict[str, str]:
        from .anthropic import ANTHROPIC_VERSION

        return {"anthropic-version": ANTHROPIC_VERSION, **self.endpoint.headers}

    async def submit(
        self, requests: list[tuple[str, ChatRequest]], metadata: dict[str, str] | None = None
    ) -> BatchStatus:
        body = {"requests": [self._entry(c, r) for c, r in requests]}
        return self._status(await self._json("POST", self._url("/v1/messages/batches"), json=body))

    async def status(self, batch_id: str) -> BatchStatus:
        return self._status(await self._json("GET", self._url(f"/v1/messages/batches/{batch_id}")))

    async def cancel(self, batch_id: str) -> BatchStatus:
        url = self._url(f"/v1/messages/batches/{batch_id}/cancel")
        return self._status(await self._json("POST", url))

    def _status(self, data: dict[str, Any]) -> BatchStatus:
        numbers = _counts(data)
        state = _ANTHROPIC_STATES.get(str(data.get("processing_status")), "running")
        if state == "ended" and data.get("cancel_initiated_at"):
            state = "cancelled"
        return BatchStatus(
            id=str(data.get("id") or ""),
            state=state,
            total=sum(numbers.values()),
            succeeded=numbers.get("succeeded", 0),
            failed=sum(numbers.get(k, 0) for k in ("errored", "canceled", "expired")),
            raw=data,
        )

    async def result_lines(self, status: BatchStatus) -> AsyncIterator[JsonObject]:
        url = self._url(f"/v1/messages/batches/{status.id}/results")
        given = status.raw.get("results_url")
        if isinstance(given, str) and _same_origin(given, self.endpoint.request_url):
            url = given
        async for line in self._stream_lines(url):
            yield line

    def _outcome(self, line: dict[str, Any]) -> BatchOutcome:
        cid = str(line.get("custom_id") or "")
        result = line.get("result") or {}
        kind = result.get("type") if isinstance(result, dict) else None
        name = self.endpoint.name
        if kind == "succeeded":
            return BatchOutcome(cid, body=result.get("message"))
        if kind == "errored":
            payload = result.get("error") or {}
            return BatchOutcome(cid, error=error_from_payload(name, None, payload))
        reason = {
            "canceled": "the batch was cancelled before this request ran",
            "expired": "the batch expired before this request ran",
        }.get(str(kind), f"the batch gave no result for this request ({kind})")
        error = ProviderError(reason, provider=name)
        return BatchOutcome(cid, error=error, cancelled=kind == "canceled")

    def decode(self, request: ChatRequest, outcome: BatchOutcome) -> ModelResponse:
        if outcome.error is not None:
            raise outcome.error
        answer = self.endpoint._body(request)[2]
        return self.endpoint._response(outcome.body, outcome.request_id, answer)


def _line(text: str) -> dict[str, Any] | None:
    """One result line as an object; ``None`` for a blank or torn line (its request is then
    reported as missing) or one nested too deeply to read."""
    if not text.strip():
        return None
    try:
        value = loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _counts(data: dict[str, Any]) -> dict[str, int]:
    """``request_counts`` as whole numbers; a malformed count (or object) counts as 0."""
    counts = data.get("request_counts")
    if not isinstance(counts, dict):
        return {}
    return {
        str(k): v
        for k, v in counts.items()
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0
    }


def _same_origin(url: str, base: str) -> bool:
    a, b = urlsplit(url), urlsplit(base)
    return (a.scheme, a.hostname, a.port) == (b.scheme, b.hostname, b.port)


# Any: an iModel or an endpoint (imodel imports the batch services)
def provider_batch_service(model: Any) -> BatchService:
    """The batch service of an iModel's (or an endpoint's) provider; a clear error for one
    without any. `lion_nb.models.batch_service` puts it behind the cassette in force."""
    endpoint = getattr(model, "endpoint", model)
    from .anthropic import AnthropicEndpoint
    from .openai import OpenAIEndpoint

    if isinstance(endpoint, AnthropicEndpoint):
        return AnthropicBatches(endpoint)
    if isinstance(endpoint, OpenAIEndpoint):
        return OpenAIBatches(endpoint)
    provider = getattr(model, "provider", None) or getattr(endpoint, "provider", "?")
    raise ConfigurationError(
        f"`via='batch'` needs a model with a batch service (OpenAI or Anthropic over "
        f"HTTP); `{provider}` has none. Use `via='live'`."
    )
