"""Turning tracing on and off: `enable`, `disable`, `status`, `flush`.

`enable` builds a ``TracerProvider`` with an OTLP/HTTP exporter and lion_nb's
`CellSpanProcessor`, or takes the application's own provider (``tracer_provider=``, the
convention of pydantic-ai and logfire), and sets `hooks.ACTIVE`. The exporter honours the
standard ``OTEL_EXPORTER_OTLP_*`` variables (endpoint, headers, timeout, certificates) for
what the call does not give. ``endpoint`` is the collector's base URL or its full traces
URL: ``/v1/traces`` is added to a URL whose path does not end with it.

Headers are secrets (an API key for Langfuse, Logfire, Phoenix Cloud): each value is
registered as a `Secret`, so `redact` masks it wherever it could show, and it is kept
only inside the exporter -- never in `status`, a repr, an error, a log or saved state.
A password in the endpoint URL is masked the same way.

In IPython, `enable` hooks the shell: before a cell runs, its number and id are noted for
the cell's spans; after it runs -- before the kernel answers the cell's request -- the spans
are flushed, waiting at most ``flush_timeout`` seconds. A collector that is down or slow
gets one warning, then flushes stop waiting until an export succeeds again, so no cell is
held twice. At exit the provider lion_nb built is flushed and shut down (bounded too).
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..errors import ConfigurationError
from ..models.secrets import MASK, Secret, redact
from . import hooks

__all__ = ["TraceStatus", "TracingWarning", "disable", "enable", "flush", "status"]

_EXPORTER_LOGGER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"


class TracingWarning(UserWarning):
    """Spans could not be delivered (the collector is down, slow or refused them)."""


@dataclass(frozen=True)
class TraceStatus:
    """What `status` reports. Never a header, never a password."""

    enabled: bool
    endpoint: str | None = None  # None: an application's own TracerProvider
    capture_content: bool = False
    exported: int = 0
    failed: int = 0
    pending: int = 0
    headers: int = 0  # how many headers are sent (their names and values are not shown)
    delivering: bool = True  # the last flush or export went through

    def __str__(self) -> str:
        if not self.enabled:
            return "tracing: off"
        where = self.endpoint or "the application's TracerProvider"
        content = "on" if self.capture_content else "off"
        line = f"tracing: on · {where} · content {content}"
        if self.endpoint is not None:
            line += (
                f" · {self.exported} spans exported, {self.failed} failed, {self.pending} queued"
            )
        if self.headers:
            line += f" · {self.headers} header{'s' * (self.headers != 1)} (hidden)"
        if not self.delivering:
            line += " · the collector is not answering"
        return line


class _State:
    """The running set-up (one per process)."""

    def __init__(self) -> None:
        self.tracer: Any = None
        self.processor: Any = None  # ours (None with an application's provider)
        self.endpoint: str | None = None
        self.headers = 0
        self.flush_timeout = 2.0
        self.owned = False  # the provider is ours to shut down
        self.warned = False  # a warning was given for the current outage
        self.shell: Any = None


_STATE = _State()
_LOCK = threading.Lock()


def _masked_url(url: str) -> str:
    """``url`` with a password masked (for `status` and messages)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    if parts.password:
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        parts = parts._replace(netloc=f"{parts.username}:{MASK}@{host}")
    return redact(urlunsplit(parts))


def _traces_url(endpoint: str) -> str:
    url = endpoint.strip()
    if not url.startswith(("http://", "https://")):
        raise ConfigurationError(
            f"`endpoint` is an http(s) URL of an OTLP/HTTP collector, got {_masked_url(url)!r}."
        )
    base = url.rstrip("/")
    return base if base.endswith("/v1/traces") else base + "/v1/traces"


def _headers(headers: Mapping[str, Any] | str | None) -> dict[str, str] | None:
    """Header values as plain text for the exporter, each registered as a `Secret`."""
    if headers is None:
        return None
    if isinstance(headers, str):  # the OTEL_EXPORTER_OTLP_HEADERS form: k=v,k2=v2
        pairs = [p.split("=", 1) for p in headers.split(",") if p.strip()]
        if any(len(p) != 2 for p in pairs):
            raise ConfigurationError("`headers` as text is `name=value,name2=value2`.")
        headers = {k.strip(): v.strip() for k, v in pairs}
    if not isinstance(headers, Mapping):
        raise ConfigurationError(
            f"`headers` is a dict of names to values, not {type(headers).__name__}."
        )
    out = {}
    for name, value in headers.items():
        text = value.reveal() if isinstance(value, Secret) else str(value)
        Secret(text)  # remembered: `redact` masks it from now on
        out[str(name)] = text
    return out


def _import_sdk() -> Any:
    try:
        from opentelemetry.sdk import trace as sdk_trace
    except ImportError:
        raise ConfigurationError(
            "Tracing needs OpenTelemetry: `pip install 'lion-nb[otel]'`."
        ) from None
    return sdk_trace


def enable(
    endpoint: str | None = None,
    headers: Mapping[str, Any] | str | None = None,
    *,
    tracer_provider: Any = None,
    capture_content: bool = False,
    flush_timeout: float = 2.0,
    service_name: str = "lion_nb",
    max_content_chars: int = 4000,
) -> TraceStatus:
    """Send lion_nb's spans to an OTLP/HTTP collector (or to ``tracer_provider``)."""
    if flush_timeout < 0 or max_content_chars < 1:
        raise ConfigurationError("`flush_timeout` is >= 0 seconds; `max_content_chars` >= 1.")
    if tracer_provider is not None and (endpoint is not None or headers is not None):
        raise ConfigurationError(
            "Give `endpoint=`/`headers=` or `tracer_provider=`, not both: an application's "
            "provider already knows where its spans go."
        )
    sdk_trace = _import_sdk()
    from .spans import Tracer

    with _LOCK:
        _stop_locked()
        state = _STATE
        if tracer_provider is None:
            from opentelemetry.sdk.resources import Resource

            from .processor import CellSpanProcessor

            url = _traces_url(endpoint) if endpoint else None
            sent = _headers(headers)
            exporter, resolved = _exporter(url, sent)
            provider = sdk_trace.TracerProvider(
                resource=Resource.create({"service.name": service_name}), shutdown_on_exit=False
            )
            state.processor = CellSpanProcessor(exporter)
            provider.add_span_processor(state.processor)
            state.endpoint = _masked_url(resolved)
            state.headers = len(sent or {}) or _env_headers()
            state.owned = True
            _quiet_exporter_logs()
        else:
            if not hasattr(tracer_provider, "get_tracer"):
                raise ConfigurationError(
                    f"`tracer_provider` is an OpenTelemetry TracerProvider, not "
                    f"{type(tracer_provider).__name__}."
                )
            provider = tracer_provider
            state.processor, state.endpoint, state.headers, state.owned = None, None, 0, False
        state.flush_timeout = float(flush_timeout)
        state.warned = False
        state.tracer = Tracer(
            provider,
            capture_content=capture_content,
            max_chars=max_content_chars,
            processor=state.processor,  # ours alone on a provider we built
        )
        hooks.ACTIVE = state.tracer
        _hook_shell(state)
    return status()


def _env_headers() -> int:
    text = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or os.environ.get(
        "OTEL_EXPORTER_OTLP_HEADERS", ""
    )
    for pair in text.split(","):
        if "=" in pair:
            Secret(pair.split("=", 1)[1].strip())
    return sum(1 for p in text.split(",") if "=" in p)


def disable() -> TraceStatus:
    """Stop tracing: flush what is queued (bounded), shut down lion_nb's own provider."""
    with _LOCK:
        _stop_locked()
    return status()


def _stop_locked() -> None:
    state = _STATE
    if state.tracer is None:
        return
    hooks.ACTIVE = None
    _unhook_shell(state)
    if state.owned:
        _bounded(lambda: state.tracer.provider.shutdown(), max(state.flush_timeout, 1.0))
    state.tracer = state.processor = state.endpoint = None
    state.owned = False


def status() -> TraceStatus:
    """Whether tracing is on, where spans go, and how many went."""
    state = _STATE
    if state.tracer is None:
        return TraceStatus(enabled=False)
    processor = state.processor
    return TraceStatus(
        enabled=True,
        endpoint=state.endpoint,
        capture_content=state.tracer.capture_content,
        exported=processor.exported if processor else 0,
        failed=processor.failed if processor else 0,
        pending=processor.pending if processor else 0,
        headers=state.headers,
        delivering=not state.warned,
    )


def _bounded(work: Any, timeout: float) -> bool:
    """Run ``work()`` in a daemon thread; wait at most ``timeout``. True: it returned True
    (or None) in time."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(work())
        except Exception:
            box.append(False)

    thread = threading.Thread(target=run, name="lion-nb-trace-flush", daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(box) and box[0] is not False


def flush(timeout: float | None = None) -> bool:
    """Export every span ended so far, waiting at most ``timeout`` seconds (the
    ``flush_timeout`` given to `enable` by default). True: all were accepted. A failure
    warns once (`TracingWarning`) until spans get through again; it never raises."""
    state = _STATE
    tracer = state.tracer
    if tracer is None:
        return True
    wait = state.flush_timeout if timeout is None else timeout
    if state.warned:  # the collector did not answer last time: do not hold another cell
        wait = min(wait, 0.05)
    processor = state.processor
    if processor is not None:
        ok = processor.force_flush(int(wait * 1000))
    else:
        provider = tracer.provider
        flush_of = getattr(provider, "force_flush", None)
        ok = True if flush_of is None else _bounded(lambda: flush_of(int(wait * 1000)), wait)
    if ok:
        state.warned = False
    elif not state.warned:
        state.warned = True
        pending = processor.pending if processor is not None else 0
        warnings.warn(
            TracingWarning(
                f"lion_nb tracing: spans were not delivered to {state.endpoint or 'the provider'} "
                f"within {wait:g} s (the collector is down, slow or refused them; "
                f"{pending} queued). Cells no longer wait for it; they are sent when it answers."
            ),
            stacklevel=2,
        )
    return ok


# -- the exporter's own log lines -----------------------------------------------------------------
class _Quiet(logging.Filter):
    """Drop the exporter's retry and failure lines: `flush` gives one warning instead, and a
    request error may name the endpoint with its credentials."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not threading.current_thread().name.startswith("lion-nb-trace")


_QUIET = _Quiet()


def _exporter(url: str | None, headers: dict[str, str] | None) -> tuple[Any, str]:
    """The OTLP/HTTP exporter and the endpoint it resolved (``url``, else the standard
    variables'). A collector on this machine is reached directly, never through a proxy
    the environment names, as lion_nb's model clients reach a local server: a proxy set for
    the internet would otherwise take the spans of a local Phoenix and lose them. A
    credential provider named in the environment brings its own session and keeps it."""
    import requests  # the exporter's own HTTP client

    from ..models.endpoints._http import is_loopback
    from .encoder import LionSpanExporter

    provided = any(os.environ.get(name) for name in _CREDENTIAL_VARIABLES)
    session = None if provided else requests.Session()  # the session it would make itself
    exporter = LionSpanExporter(endpoint=url, headers=headers, session=session)
    resolved = str(getattr(exporter, "_endpoint", url or ""))
    if session is not None:
        session.trust_env = not is_loopback(resolved)
    return exporter, resolved


#: the variables that name a credential provider, whose session the exporter then uses
_CREDENTIAL_VARIABLES = (
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER",
)


def _quiet_exporter_logs() -> None:
    for name in (_EXPORTER_LOGGER, "opentelemetry.exporter.otlp.common.http"):
        logger = logging.getLogger(name)
        if _QUIET not in logger.filters:
            logger.addFilter(_QUIET)


# -- IPython: the cell's number and id, and a flush before the cell goes idle -------------------------
def _pre_run_cell(info: Any) -> None:
    tracer = _STATE.tracer
    shell = _STATE.shell
    if tracer is None or shell is None:
        return
    hook = getattr(shell, "displayhook", None)
    count = getattr(hook, "prompt_count", None)
    if not isinstance(count, int):
        count = getattr(shell, "execution_count", None)
    tracer.cell = (count, getattr(info, "cell_id", None))


def _post_run_cell(result: Any) -> None:
    flush()


def _hook_shell(state: _State) -> None:
    if "IPython" not in sys.modules:
        return
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    state.shell = shell
    events = shell.events
    for name, callback in (("pre_run_cell", _pre_run_cell), ("post_run_cell", _post_run_cell)):
        if callback not in events.callbacks.get(name, []):
            events.register(name, callback)


def _unhook_shell(state: _State) -> None:
    shell, state.shell = state.shell, None
    if shell is None:
        return
    for name, callback in (("pre_run_cell", _pre_run_cell), ("post_run_cell", _post_run_cell)):
        try:
            shell.events.unregister(name, callback)
        except ValueError:
            pass


@atexit.register
def _at_exit() -> None:  # kernel shutdown: send what is left, bounded
    state = _STATE
    if state.tracer is not None and state.owned:
        flush()
        _bounded(lambda: state.tracer.provider.shutdown(), 2.0)
