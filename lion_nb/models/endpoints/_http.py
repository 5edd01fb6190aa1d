"""What every HTTP provider shares: one lazily made client, its deadlines and retry policy.

Retry policy -- the official SDKs', so a notebook behaves like the vendor's own client:

- at most ``max_retries`` (2) retries, driven by tenacity's ``AsyncRetrying`` on anyio sleep;
- retried: connection errors, timeouts before a response, HTTP 408, 409, every 429 (one
  that says the quota is spent included, as the SDKs do) and every 5xx (529 included);
  never any other 4xx;
- an ``x-should-retry: true|false`` response header overrides that choice;
- the wait is ``min(0.5 * 2**n, 8)`` seconds minus up to 25 % jitter, unless the server
  sends ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date) between 0 and 60 s;
- nothing is retried once a 200 stream has started: what arrived was already shown, so a
  second answer would contradict it. The error carries ``partial_text`` instead;
- a rate limit or server error that outlived its retries says so, and names the fix
  (``max_retries=``, ``limit_requests=``);
- an error the caller will handle itself (``final=``: a server refusing a request's form,
  which the endpoint sends again in another form) is not retried as it was.

Deadlines: ``connect_timeout`` (5 s) to open a connection; ``timeout`` (600 s) both for each
read and for one whole attempt, a complete stream included.

Every error is a typed `ProviderError` with the status, the provider's own message (run
through `redact`, so a key echoed back by a server never surfaces) and the request id; see
`_http_errors` for the mapping. An answer or stream event of a shape the API never has is
one too (status 200), never a bare ``TypeError`` from reading it (`HTTPEndpoint.read_answer`).
Headers are never logged.

A password in ``base_url`` (``http://user:pass@host/v1``, a server behind basic auth) is
taken out of the URL: ``base_url`` -- what reprs, errors, ``to_dict()`` and the store show --
reads ``http://user:****@host/v1``, requests go to ``request_url`` (no credentials in it),
and the credentials travel as an ``Authorization: Basic`` `Secret`, unless a key or a header
already uses ``Authorization``. A URL saved that way (its password ``****``) sends no
password: give ``base_url`` with it again, or pass the model again (``resume_batch(model=)``).

Keys travel in an `httpx.Auth` (`SecretAuth`) that reads each `Secret` only as the request
is sent: no variable of ours ever holds a revealed key, so a verbose traceback that prints
every frame's locals (IPython's ``%xmode verbose``) cannot show one. Headers whose names
look secret (``api-key``, ``Authorization``, ...) given through ``headers=`` travel the
same way.
"""

from __future__ import annotations

import base64
import logging
import os
import random
import re
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

import anyio
import httpx
from httpx_sse import ServerSentEvent, aconnect_sse
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from ...errors import (
    ConfigurationError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    StreamInterruptedError,
)
from .._loops import current_loop_token, deadline
from ..clean import loads
from ..secrets import MASK, Secret, redact
from ..usage import token_count, usage_dict
from ._http_errors import (
    SHAPE_ERRORS,
    error_fields,
    error_from_payload,
    error_from_response,
    exhausted,
    malformed_answer,
    missing_key_error,
    parse_retry_after,
    request_id_of,
    stream_error,
    tag,
)
from .base import APIEndpoint

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "HTTPClient",
    "HTTPEndpoint",
    "Reply",
    "SecretAuth",
    "StreamReader",
    "backoff",
    "error_from_payload",
    "error_from_response",
    "is_loopback",
    "missing_key_error",
    "normalize_usage",
    "parse_retry_after",
    "stream_error",
    "token_count",
]

DEFAULT_TIMEOUT = 600.0
DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_MAX_RETRIES = 2
_LOOPBACK = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}

logger = logging.getLogger("lion_nb.models.http")
_R = TypeVar("_R")  # what a `read_answer` parser returns


# -- small pure helpers ------------------------------------------------------------------------
def is_loopback(url: str) -> bool:
    """Whether ``url`` points at this machine (no key needed, no proxy used)."""
    host = (urlsplit(url).hostname or "").lower()
    return host in _LOOPBACK or host.startswith("127.") or host.endswith(".localhost")


def split_credentials(url: str) -> tuple[str, str, Secret | None]:
    """``url`` as shown and saved (its password masked), as requests use it (no credentials),
    and the credentials as a `Secret` of the ``Basic`` value (None without any)."""
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if not at:
        return url, url, None
    bare = urlunsplit(parts._replace(netloc=hostport))
    user, colon, password = userinfo.partition(":")
    if colon and password != MASK:
        shown = urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{hostport}"))
        Secret(unquote(password))  # known from now on: masked wherever it is echoed
    else:  # no password, or one masked when the URL was saved: none to send
        shown = urlunsplit(parts._replace(netloc=f"{userinfo}@{hostport}"))
        if colon or not user:
            return shown, bare, None
    pair = f"{unquote(user)}:{unquote(password) if colon else ''}".encode()
    return shown, bare, Secret(base64.b64encode(pair).decode("ascii"))


def backoff(retries_done: int) -> float:
    """The SDK backoff: ``min(0.5 * 2**n, 8)`` seconds minus up to 25 % jitter."""
    return min(0.5 * 2.0**retries_done, 8.0) * (1.0 - 0.25 * random.random())


def normalize_usage(raw: Any, input_tokens: Any, output_tokens: Any) -> dict[str, Any]:
    """``{"input_tokens", "output_tokens", "total_tokens", "raw"}`` plus zero cache and
    reasoning counts (empty without usage); see `lion_nb.models.usage` for the providers'
    own readers. A count that is not a whole number raises ``ValueError`` naming it."""
    if not raw:
        return {}
    if not isinstance(raw, dict):
        raise ValueError(f"`usage` is a {type(raw).__name__}, not an object")
    total = raw.get("total_tokens")
    return usage_dict(
        token_count("input tokens", input_tokens),
        token_count("output tokens", output_tokens),
        total=token_count("total_tokens", total) if total is not None else None,
        raw=raw,
    )


# -- the client --------------------------------------------------------------------------------
class SecretAuth(httpx.Auth):
    """Secret headers set on the request as it is sent, read from their `Secret`s only then.

    ``SecretAuth({"Authorization": ("Bearer ", key)})``. Nothing outside httpx's own request
    object ever holds the revealed value.
    """

    def __init__(self, headers: dict[str, tuple[str, Secret]]):
        self._headers = dict(headers)

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        for name, (prefix, secret) in self._headers.items():
            request.headers[name] = prefix + secret.reveal()
        yield request

    def __repr__(self) -> str:
        return f"SecretAuth(headers={sorted(self._headers)!r})"


@dataclass(slots=True)
class Reply:
    """A successful exchange: the decoded data and the provider's request id."""

    data: Any
    request_id: str | None


def _note_usage(exc: ProviderError, reader: Any) -> ProviderError:
    """Keep on ``exc`` the usage a cut stream reported before it ended (``partial_usage``:
    Anthropic's ``message_start`` has the real input count), for the ledger."""
    usage = getattr(reader, "partial_usage", None)
    if usage:
        exc.partial_usage = usage  # type: ignore[attr-defined]
    return exc


class StreamReader(Protocol):
    """Turns one stream's events into a result; made once the 200 headers are in."""

    @property
    def partial_text(self) -> str:
        """The answer text received so far (kept on the error that ends the stream)."""

    def feed(self, event: ServerSentEvent) -> bool:
        """Take one event; True when the stream is complete."""

    def finish(self) -> Any:
        """The assembled result (raises if the stream ended too early)."""


def _positive(name: str, value: Any, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigurationError(f"`{name}={value!r}`: give a number of seconds above 0.")
    return float(value)


class HTTPClient:
    """One endpoint's connection pool, deadlines and retry policy.

    The ``httpx.AsyncClient`` is made on first use, and again if the event loop changed (a
    pooled connection cannot outlive its loop). Loopback servers are reached directly,
    ignoring proxy settings in the environment.
    """

    def __init__(
        self,
        provider: str,
        base_url: str,
        *,
        timeout: float | None = None,
        connect_timeout: float | None = None,
        max_retries: int | None = None,
    ):
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.timeout = _positive("timeout", timeout, DEFAULT_TIMEOUT)
        self.connect_timeout = _positive(
            "connect_timeout", connect_timeout, DEFAULT_CONNECT_TIMEOUT
        )
        if max_retries is None:
            max_retries = DEFAULT_MAX_RETRIES
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigurationError(f"`max_retries={max_retries!r}`: give a whole number >= 0.")
        self.max_retries = max_retries
        self._client: httpx.AsyncClient | None = None
        self._loop: object = None

    def __deepcopy__(self, memo: dict[int, Any]) -> HTTPClient:
        """The same settings and a pool of its own (a live pool cannot be copied)."""
        return HTTPClient(
            self.provider,
            self.base_url,
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            max_retries=self.max_retries,
        )

    @property
    def client(self) -> httpx.AsyncClient:
        loop = current_loop_token()
        if self._client is None or self._client.is_closed or self._loop is not loop:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout),
                trust_env=not is_loopback(self.base_url),
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and not client.is_closed and self._loop is current_loop_token():
            await client.aclose()

    # -- sending -------------------------------------------------------------------------------
    async def post_json(
        self,
        path: str,
        body: dict[str, Any],
        headers: dict[str, str],
        *,
        auth: SecretAuth | None = None,
        key_hint: str | None = None,
        final: Callable[[ProviderError], bool] | None = None,
    ) -> Reply:
        """POST ``body`` and decode the JSON answer, retrying per the policy (an error for
        which ``final`` is true is never retried: the caller handles it)."""
        return await self._with_retries(final, self._json_once, path, body, headers, auth, key_hint)

    async def post_stream(
        self,
        path: str,
        body: dict[str, Any],
        headers: dict[str, str],
        make_reader: Callable[[str | None], StreamReader],
        *,
        auth: SecretAuth | None = None,
        key_hint: str | None = None,
        final: Callable[[ProviderError], bool] | None = None,
    ) -> Reply:
        """POST ``body`` and feed the SSE events to a reader; retried only before the start."""
        return await self._with_retries(
            final, self._stream_once, path, body, headers, auth, key_hint, make_reader
        )

    async def _with_retries(
        self,
        final: Callable[[ProviderError], bool] | None,
        attempt_once: Callable[..., Awaitable[Reply]],
        *args: Any,
    ) -> Reply:
        def again(exc: BaseException) -> bool:
            if not getattr(exc, "retryable", False):
                return False
            return final is None or not isinstance(exc, ProviderError) or not final(exc)

        try:  # most calls succeed at once: no retry machinery (and its cyclic garbage) then
            return await attempt_once(*args)
        except BaseException as exc:
            if not again(exc):
                raise
            if not self.max_retries:
                if isinstance(exc, ProviderError):
                    exhausted(exc, 0)
                raise
            failed = [exc]

        async def retried(*args: Any) -> Reply:  # tenacity sees the first failure as attempt 1
            if failed:
                raise failed.pop()
            return await attempt_once(*args)

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            retry=retry_if_exception(again),
            wait=_wait,
            sleep=anyio.sleep,
            before_sleep=self._log_retry,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await retried(*args)
        except ProviderError as exc:
            if again(exc):  # the policy would have gone on
                exhausted(exc, self.max_retries)
            raise
        raise AssertionError("unreachable: tenacity re-raises the last error")

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        logger.info("retrying %s in %.2f s after: %s", self.provider, wait, redact(str(exc)))

    async def _json_once(
        self,
        path: str,
        body: dict[str, Any],
        headers: dict[str, str],
        auth: SecretAuth | None,
        key_hint: str | None,
    ) -> Reply:
        url = self.base_url + path
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("POST %s", redact(url))
        try:
            async with deadline(self.timeout):
                # httpx takes None (no auth) as its own client does; its annotation leaves it out
                response = await self.client.post(
                    url,
                    json=body,
                    headers=headers,
                    auth=auth,  # type: ignore[arg-type]
                )
        except ProviderError:
            raise
        except (httpx.RequestError, TimeoutError) as exc:
            raise self._transport_error(exc) from exc
        if response.status_code >= 400:
            raise error_from_response(self.provider, response, key_hint=key_hint)
        rid = request_id_of(response.headers)
        try:
            return Reply(loads(response.content), rid)
        except ValueError:
            raise self._not_json(response.text, response.status_code, rid) from None

    async def _stream_once(
        self,
        path: str,
        body: dict[str, Any],
        headers: dict[str, str],
        auth: SecretAuth | None,
        key_hint: str | None,
        make_reader: Callable[[str | None], StreamReader],
    ) -> Reply:
        url = self.base_url + path
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("POST %s (stream)", redact(url))
        reader: StreamReader | None = None
        rid: str | None = None
        try:
            async with (
                deadline(self.timeout),
                aconnect_sse(
                    self.client, "POST", url, json=body, headers=dict(headers), auth=auth
                ) as source,
            ):
                response = source.response
                rid = request_id_of(response.headers)
                if response.status_code >= 400:
                    await response.aread()
                    raise error_from_response(self.provider, response, key_hint=key_hint)
                ctype = response.headers.get("content-type", "")
                if "text/event-stream" not in ctype:
                    raise await self._not_a_stream(response, rid)
                reader = make_reader(rid)
                try:
                    events = source.aiter_sse()
                    async for event in events:
                        if reader.feed(event):
                            break
                    await _drain(events)
                    return Reply(reader.finish(), rid)
                except SHAPE_ERRORS as exc:  # an event of a shape the API never sends
                    raise stream_error(
                        self.provider,
                        "the stream sent an event of a shape this API never sends "
                        f"({type(exc).__name__}: {exc})",
                        request_id=rid,
                        partial_text=reader.partial_text,
                        status=response.status_code,
                    ) from exc
        except ProviderError as exc:
            if reader is not None:  # the stream had started: never retry
                tag(exc, partial_text=getattr(exc, "partial_text", reader.partial_text))
                _note_usage(exc, reader)
            raise
        except (httpx.RequestError, TimeoutError) as exc:
            if reader is None:
                raise self._transport_error(exc) from exc
            cls = ProviderTimeoutError if _is_timeout(exc) else StreamInterruptedError
            message = f"the stream from `{self.base_url}` broke off: {_describe(exc, self)}"
            error = stream_error(
                self.provider, message, request_id=rid, partial_text=reader.partial_text, cls=cls
            )
            raise _note_usage(error, reader) from exc

    # -- error construction --------------------------------------------------------------------
    def _transport_error(self, exc: BaseException) -> ProviderError:
        if _is_timeout(exc):
            err: ProviderError = ProviderTimeoutError(_describe(exc, self), provider=self.provider)
        else:
            err = ProviderConnectionError(
                f"could not reach `{redact(self.base_url)}` ({_describe(exc, self)}). "
                "Check that the server is running and that `base_url` is right.",
                provider=self.provider,
            )
        return tag(err, retryable=True)

    def _not_json(self, text: str, status: int, rid: str | None) -> ProviderError:
        snippet = redact(text.strip()[:200])
        return tag(
            ProviderError(
                f"the answer is not JSON: {snippet!r}",
                provider=self.provider,
                status=status,
                request_id=rid,
            )
        )

    async def _not_a_stream(self, response: httpx.Response, rid: str | None) -> ProviderError:
        await response.aread()
        try:
            body = loads(response.content)
        except ValueError:
            return self._not_json(response.text, response.status_code, rid)
        if error_fields(body)[0] is not None:
            return tag(error_from_payload(self.provider, None, body, request_id=rid))
        return tag(
            ProviderError(
                "asked for a stream but the server answered with plain JSON; "
                "check that `base_url` points at an OpenAI- or Anthropic-compatible API.",
                provider=self.provider,
                status=response.status_code,
                request_id=rid,
            )
        )


DRAIN_SECONDS = 2.0  # how long the end of a finished stream is awaited


async def _drain(events: Any) -> None:
    """Read what follows a stream's last event (normally nothing: the server ends the body)
    so that the async generators under ``events`` (httpx's byte, text and line readers)
    finish here, on the running loop. Left suspended, each would be closed when collected:
    in an in-process shell that is at interpreter exit, with no loop running, and Python
    reports "Task was destroyed but it is pending!". A server that keeps the stream open is
    given up on after `DRAIN_SECONDS`; the answer is complete either way."""
    with anyio.move_on_after(DRAIN_SECONDS):
        async for _event in events:
            pass


def _is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, (httpx.TimeoutException, TimeoutError))


def _describe(exc: BaseException, client: HTTPClient) -> str:
    if isinstance(exc, httpx.ConnectTimeout):
        return f"no connection within {client.connect_timeout:g} s (`connect_timeout=`)"
    if isinstance(exc, httpx.TimeoutException):
        return f"no data for {client.timeout:g} s (`timeout=`)"
    if isinstance(exc, TimeoutError):
        return f"the request took longer than {client.timeout:g} s (`timeout=`)"
    detail = str(exc) or type(exc).__name__
    return redact(detail)


def _wait(state: RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome else None
    after = getattr(exc, "retry_after", None)
    if after is not None:
        return float(after)
    return backoff(state.attempt_number - 1)


# -- the endpoint base -------------------------------------------------------------------------
_SECRET_HEADER = re.compile(r"auth|key|token|secret|cookie|password", re.IGNORECASE)
_UNSET: Any = object()


class HTTPEndpoint(APIEndpoint):
    """Settings, key and client shared by the HTTP providers.

    Settings taken from the keywords (the rest are request options): ``api_key`` (else the
    environment variable named by ``api_key_env``), ``api_key_env`` (``None``: the server
    needs no key), ``base_url``, ``preset``, ``timeout``, ``connect_timeout``,
    ``max_retries``, ``headers``. The key is read when a call is made, so setting the
    variable after creating the model works; a loopback server is called without a key
    when none is set. The key is sent as ``{key_header}: {key_prefix}<key>``.
    """

    default_base_url: ClassVar[str] = ""
    default_key_env: ClassVar[str | None] = None
    key_header: ClassVar[str] = "Authorization"
    key_prefix: ClassVar[str] = "Bearer "

    def __init__(self, model: str, **kwargs: Any):
        api_key = kwargs.pop("api_key", None)
        key_env = kwargs.pop("api_key_env", _UNSET)
        base_url = kwargs.pop("base_url", None) or self.default_base_url
        if isinstance(base_url, Secret):  # an in-process copy's (`live_config`)
            base_url = base_url.reveal()
        self.preset: str | None = kwargs.pop("preset", None)
        headers = kwargs.pop("headers", None) or {}
        http = {k: kwargs.pop(k, None) for k in ("timeout", "connect_timeout", "max_retries")}
        super().__init__(model, **kwargs)
        if not isinstance(base_url, str) or urlsplit(base_url).scheme not in ("http", "https"):
            shown = split_credentials(base_url)[0] if isinstance(base_url, str) else base_url
            raise ConfigurationError(
                f"`base_url={shown!r}`: give an http(s) URL, e.g. `{self.default_base_url}`."
            )
        if not isinstance(headers, dict) or not all(
            isinstance(k, str) and isinstance(v, (str, Secret)) for k, v in headers.items()
        ):
            raise ConfigurationError("`headers=`: give a dict of header names to string values.")
        self.api_key_env: str | None = self.default_key_env if key_env is _UNSET else key_env
        #: ``base_url`` as shown and saved (a password in it masked); ``request_url`` as used
        self.base_url, self.request_url, self._url_auth = split_credentials(base_url.rstrip("/"))
        self._live_url = Secret(base_url) if self._url_auth is not None else None
        #: headers sent as given; those whose names look secret are kept as `Secret`s apart
        self.headers: dict[str, str] = {}
        self._secret_headers: dict[str, Secret] = {}
        for name, value in headers.items():
            if _SECRET_HEADER.search(name) or isinstance(value, Secret):
                self._secret_headers[name] = Secret(value)  # `redact` scrubs it if echoed
            else:
                self.headers[name] = value
        self._api_key = Secret(api_key) if api_key else None
        self._env_key: Secret | None = None
        self._http = HTTPClient(self.name, self.request_url, **http)

    @property
    def name(self) -> str:
        """The name errors are reported under: the preset if any, else the provider."""
        return self.preset or self.provider

    def read_answer(
        self, parse: Callable[..., _R], data: Any, request_id: str | None, *args: Any
    ) -> _R:
        """``parse(data, request_id, *args)``; an answer of a shape the API never has is a
        `ProviderError` with status 200 and the request id, not a bare ``TypeError``."""
        try:
            return parse(data, request_id, *args)
        except ProviderError:
            raise
        except SHAPE_ERRORS as exc:
            raise malformed_answer(self.name, exc, request_id) from exc

    def resolve_key(self) -> Secret | None:
        """The key for the next call; raises `AuthenticationError` if one is needed and unset."""
        if self._api_key is not None:
            return self._api_key
        if self.api_key_env:
            value = os.environ.get(self.api_key_env, "").strip()
            if value:
                if self._env_key is None or self._env_key.reveal() != value:
                    self._env_key = Secret(value)
                return self._env_key
            if not is_loopback(self.base_url):
                raise missing_key_error(self.name, self.api_key_env)
        return None

    def request_auth(self) -> SecretAuth | None:
        """The secret headers of the next call (the key among them), or None without any."""
        secrets = {name: ("", value) for name, value in self._secret_headers.items()}
        key = self.resolve_key()
        if key is not None:
            secrets = {n: v for n, v in secrets.items() if n.lower() != self.key_header.lower()}
            secrets[self.key_header] = (self.key_prefix, key)
        if self._url_auth is not None and "authorization" not in {n.lower() for n in secrets}:
            secrets["Authorization"] = ("Basic ", self._url_auth)  # from ``base_url``
        return SecretAuth(secrets) if secrets else None

    @property
    def key_hint(self) -> str:
        if self._api_key is not None:
            return "Check the `api_key=` given to this model."
        return f"Check the key in the `{self.api_key_env}` environment variable."

    def config(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "base_url": self.base_url,
            "preset": self.preset,
            "api_key_env": self.api_key_env,
            "timeout": self._http.timeout,
            "connect_timeout": self._http.connect_timeout,
            "max_retries": self._http.max_retries,
        }
        if self.headers:
            data["headers"] = dict(self.headers)
        return data

    def live_config(self) -> dict[str, Any]:
        """For in-process copies only: the explicit key, secret headers and a ``base_url``
        with its password (still `Secret`s)."""
        headers = {**self.headers, **self._secret_headers}
        data: dict[str, Any] = {"headers": headers} if headers else {}
        if self._api_key is not None:
            data["api_key"] = self._api_key
        if self._live_url is not None:
            data["base_url"] = self._live_url
        return data

    async def aclose(self) -> None:
        await self._http.aclose()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(provider={self.name!r}, model={self.model!r}, "
            f"base_url={redact(self.base_url)!r})"
        )
