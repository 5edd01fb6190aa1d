"""From an HTTP answer to a typed, redacted `ProviderError`, tagged with how to retry it.

Status decides first (401 authentication, 403 permission, 404 not found, 429 rate limit,
400/413/422 bad request, 5xx server, 529 overloaded); the body refines it: a context-length
message makes a `ContextWindowError`, ``overloaded_error`` an `OverloadedError`, and a
structured ``type`` or ``code`` of ``insufficient_quota`` a `QuotaExceededError`. The quota
is judged from those fields only, never from the message text: rate-limit messages mention
"billing" and "upgrade" too (Groq's do), and such a 429 must stay an ordinary, retried
`RateLimitError`. Every text taken from a provider goes through `redact`, and so does every
string of the body kept on the error.

Each error gets two attributes the retry policy reads: ``retryable`` (408, 409, 429 and
5xx, as the official SDKs; ``x-should-retry`` overrides) and ``retry_after`` (seconds, from
``retry-after-ms`` / ``retry-after`` when 0 < x <= 60); errors met once a stream started
also get ``partial_text``. When the retries run out, `exhausted` adds to the message how
many were made and which setting to change.

A 200 answer of a shape the API never has (a list where an object belongs, a count that is
not a number) is `malformed_answer`: a plain `ProviderError` with status 200 and the request
id, not retried, instead of the ``TypeError`` met while reading it.
"""

from __future__ import annotations

import json
import re
import time
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from ...errors import (
    AuthenticationError,
    BadRequestError,
    ContextWindowError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderError,
    ProviderTimeoutError,
    QuotaExceededError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
)
from ..clean import loads
from ..secrets import redact

__all__ = [
    "MAX_RETRY_AFTER",
    "SHAPE_ERRORS",
    "StreamReader",
    "error_fields",
    "error_from_payload",
    "error_from_response",
    "exhausted",
    "malformed_answer",
    "missing_key_error",
    "parse_retry_after",
    "request_id_of",
    "stream_error",
    "tag",
]

MAX_RETRY_AFTER = 60.0
_RETRY_STATUSES = frozenset({408, 409, 429})
_CONTEXT = re.compile(
    r"context[_ ](length|window|size)|prompt is too long|reduce the length|exceed_context",
    re.IGNORECASE,
)
_QUOTA = "insufficient_quota"
_SNIPPET = 500


_REQUEST_ID_HEADERS = (b"x-request-id", b"request-id")


def request_id_of(headers: httpx.Headers) -> str | None:
    """The provider's id for the request (``x-request-id``, else ``request-id``; a header
    sent twice reads as its values joined by ", ", as `httpx.Headers` reads it): one pass
    over the raw headers, not a look-up through `httpx.Headers` per name."""
    found: dict[bytes, list[bytes]] = {}
    for key, value in headers.raw:
        name = key.lower()
        if name in _REQUEST_ID_HEADERS:
            found.setdefault(name, []).append(value)
    for name in _REQUEST_ID_HEADERS:
        rid = b", ".join(found.get(name, ())).decode(headers.encoding)
        if rid:
            return rid
    return None


def parse_retry_after(headers: httpx.Headers | dict[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after``, if 0 < x <= 60."""
    headers = httpx.Headers(headers)
    seconds: float | None = None
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            seconds = float(ms) / 1000.0
        except ValueError:
            seconds = None
    if seconds is None and (value := headers.get("retry-after")) is not None:
        try:
            seconds = float(value)
        except ValueError:
            try:
                seconds = parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError, IndexError):
                seconds = None
    if seconds is not None and 0 < seconds <= MAX_RETRY_AFTER:
        return seconds
    return None


def _scrub(value: Any) -> Any:
    """``value`` with `redact` applied to every string in it (error bodies are kept)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def tag(
    exc: ProviderError,
    *,
    retryable: bool = False,
    retry_after: float | None = None,
    partial_text: str | None = None,
) -> ProviderError:
    """Mark ``exc`` with what the retry policy reads (and the text a stream had delivered)."""
    exc.retryable = retryable
    exc.retry_after = retry_after
    if partial_text is not None:
        exc.partial_text = partial_text
    return exc


# -- error mapping -----------------------------------------------------------------------------
def error_fields(body: Any) -> tuple[str | None, str | None, Any]:
    """``(message, type, code)`` from any known error shape.

    Wrapped (OpenAI, Anthropic, llama.cpp): ``{"error": {"message", "type", "code"}}``;
    flat (vLLM): ``{"object": "error", "message", "type", "code": 400}``; plain
    (Ollama): ``{"error": "text"}``; FastAPI: ``{"detail": ...}``.
    """
    if not isinstance(body, dict):
        return None, None, None
    err = body.get("error")
    if isinstance(err, dict):
        message = err.get("message")
        return _text(message), err.get("type"), err.get("code")
    if isinstance(err, str):
        return err, body.get("type"), body.get("code")
    if "message" in body:
        return _text(body["message"]), body.get("type"), body.get("code")
    if "detail" in body:
        return _text(body["detail"]), None, None
    return None, None, None


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _error_class(status: int | None, etype: Any, code: Any, message: str) -> type[ProviderError]:
    text = f"{etype or ''} {code or ''} {message}"
    quota = _QUOTA in (etype, code)
    if status == 529 or etype == "overloaded_error":
        return OverloadedError
    if status == 401 or etype == "authentication_error":
        return AuthenticationError
    if status == 403 or etype == "permission_error":
        return PermissionDeniedError
    if status == 404 or etype == "not_found_error":
        return NotFoundError
    if status == 429 or etype == "rate_limit_error" or quota:
        return QuotaExceededError if quota else RateLimitError
    if status == 408:
        return ProviderTimeoutError
    if status == 409:
        return ProviderError
    if (status is not None and 400 <= status < 500) or etype == "invalid_request_error":
        return ContextWindowError if _CONTEXT.search(text) else BadRequestError
    if (status is not None and status >= 500) or etype == "api_error":
        return ServerError
    return ProviderError


_HINTS: dict[type[ProviderError], str] = {
    NotFoundError: "Check `model=` and `base_url=`.",
    ContextWindowError: "Shorten the conversation or pick a model with a larger context.",
    QuotaExceededError: "The account is out of quota: check its plan and billing.",
}
_SLOW_DOWN = "raise `max_retries=` or slow down with `limit_requests=`"
_LATER = "raise `max_retries=` or try again later"


def error_from_payload(
    provider: str,
    status: int | None,
    body: Any,
    *,
    request_id: str | None = None,
    reason: str = "",
    key_hint: str | None = None,
) -> ProviderError:
    """A typed, redacted error from a status and a (parsed) error body."""
    message, etype, code = error_fields(body)
    if status is None and isinstance(code, int) and 400 <= code < 600:
        status = code  # a flat vLLM error in a stream names its status only as ``code``
    if message is None:
        message = body if isinstance(body, str) and body else (reason or "no error message")
    message = redact(message.strip()[:2000])
    cls = _error_class(status, etype, code, message)
    hint = key_hint if cls is AuthenticationError else _HINTS.get(cls)
    if hint:
        message = f"{message} {hint}"
    if request_id is None and isinstance(body, dict) and isinstance(body.get("request_id"), str):
        request_id = body["request_id"]
    return cls(message, provider=provider, status=status, request_id=request_id, body=_scrub(body))


def error_from_response(
    provider: str, response: httpx.Response, *, key_hint: str | None = None
) -> ProviderError:
    """The error for a non-2xx response, tagged with whether and when to retry it."""
    status = response.status_code
    try:
        body: Any = loads(response.content)
    except ValueError:
        body = response.text.strip()[:_SNIPPET]
    exc = error_from_payload(
        provider,
        status,
        body,
        request_id=request_id_of(response.headers),
        reason=response.reason_phrase,
        key_hint=key_hint,
    )
    should = response.headers.get("x-should-retry", "").strip().lower()
    if should in ("true", "false"):
        retryable = should == "true"
    else:
        retryable = status in _RETRY_STATUSES or status >= 500
    return tag(exc, retryable=retryable, retry_after=parse_retry_after(response.headers))


def exhausted(exc: ProviderError, retries: int) -> ProviderError:
    """``exc`` with a note on the retries it outlived and the setting that would help.

    Only for errors the policy would have retried again: rate limits, overloads and server
    errors. A quota error keeps its billing hint alone (waiting longer will not help).
    """
    if isinstance(exc, QuotaExceededError) or not isinstance(exc, (RateLimitError, ServerError)):
        return exc
    fix = _LATER if type(exc) is ServerError else _SLOW_DOWN
    if retries:
        note = f"(after {retries} retr{'ies' if retries != 1 else 'y'}; {fix})"
    else:
        note = f"(not retried, as `max_retries=0`; {fix})"
    exc.provider_message = f"{exc.provider_message} {note}"
    exc.args = (exc._compose(), *exc.args[1:])
    return exc


def stream_error(
    provider: str,
    message: str,
    *,
    request_id: str | None,
    partial_text: str,
    body: Any = None,
    cls: type[ProviderError] = StreamInterruptedError,
    status: int | None = None,
) -> ProviderError:
    """An error met after a stream started: never retried, keeps the text received so far."""
    note = f" ({len(partial_text)} characters had arrived)" if partial_text else ""
    exc = cls(
        redact(message) + note,
        provider=provider,
        status=status,
        request_id=request_id,
        body=_scrub(body),
    )
    return tag(exc, partial_text=partial_text)


class StreamReader:
    """What every provider's stream reader shares: the answer text received so far, and the
    typed error that ends the stream keeping it (`stream_error`)."""

    def __init__(self, provider: str, request_id: str | None):
        self.provider = provider
        self.request_id = request_id
        self.text: list[str] = []

    @property
    def partial_text(self) -> str:
        return "".join(self.text)

    def _interrupted(self, message: str, body: Any = None) -> ProviderError:
        return stream_error(
            self.provider,
            message,
            request_id=self.request_id,
            partial_text=self.partial_text,
            body=body,
        )

    def _decode(self, data: str) -> Any:
        """An event's JSON; text that is not JSON ends the stream."""
        try:
            return loads(data)
        except ValueError:
            raise self._interrupted(
                f"the stream sent an event that is not JSON: {data[:200]!r}"
            ) from None


SHAPE_ERRORS = (TypeError, AttributeError, ValueError, KeyError, IndexError, OverflowError)


def malformed_answer(provider: str, exc: BaseException, request_id: str | None) -> ProviderError:
    """The error for a 200 answer whose shape the API never has (a list where an object
    belongs, a count that is not a number): a `ProviderError` with status 200 and the
    request id, never the bare ``TypeError`` met while reading it. Not retried."""
    detail = redact(str(exc) or type(exc).__name__)[:300]
    return tag(
        ProviderError(
            f"the answer does not have the shape this API's answers have ({detail}); check "
            "that `base_url` points at a server that speaks this API.",
            provider=provider,
            status=200,
            request_id=request_id,
        )
    )


def missing_key_error(provider: str, env_var: str) -> AuthenticationError:
    """The missing-key error: names the variable, never a value."""
    exc = AuthenticationError(
        f"no API key. Set the `{env_var}` environment variable, or pass `api_key=` "
        f'(`iModel(provider="{provider}", model=..., api_key=...)`).',
        provider=provider,
    )
    tag(exc)
    return exc
