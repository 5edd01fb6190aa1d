"""Turning tracing on and off: endpoints, the standard variables, an application's own
TracerProvider, headers kept secret, and a collector that is down or slow."""

from __future__ import annotations

import socket
import warnings

import anyio
import pytest

import lion_nb.tracing as tracing
from lion_nb import Branch
from lion_nb.errors import ConfigurationError
from lion_nb.tracing.collector import LoopbackCollector
from lion_nb.tracing.setup import TracingWarning

pytestmark = pytest.mark.timeout(60)

HEADER = "lf-secret-header-0123456789"


def test_status_says_where_spans_go_and_never_shows_a_header(collector):
    assert str(tracing.status()) == "tracing: off"
    state = tracing.enable(collector.endpoint, headers={"Authorization": f"Basic {HEADER}"})
    assert state.enabled and state.endpoint == collector.endpoint + "/v1/traces"
    assert state.headers == 1
    anyio.run(lambda: Branch(chat_model="offline/auto").communicate("hi"))
    assert tracing.flush(5)
    state = tracing.status()
    assert state.exported == 2 and state.failed == 0
    for text in (str(state), repr(state)):
        assert HEADER not in text and "Authorization" not in text
    assert collector.requests[-1]["authorization"] == f"Basic {HEADER}"  # it was sent
    assert not tracing.disable().enabled


def test_a_password_in_the_endpoint_is_masked_everywhere(collector):
    url = f"http://user:pw-{HEADER}@127.0.0.1:{collector.port}"
    state = tracing.enable(url)
    assert HEADER not in str(state) and HEADER not in repr(state)
    assert "****" in state.endpoint


def test_the_standard_variables_give_the_endpoint_and_headers(collector, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"x-api-key={HEADER}")
    state = tracing.enable()
    assert state.endpoint == collector.endpoint + "/v1/traces" and state.headers == 1
    assert HEADER not in str(state)
    anyio.run(lambda: Branch(chat_model="offline/auto").communicate("hi"))
    assert tracing.flush(5)
    assert collector.requests[-1]["x-api-key"] == HEADER
    assert len(collector.spans) == 2


def test_a_collector_on_this_machine_is_reached_past_a_proxy_set_in_the_environment(
    collector, monkeypatch
):
    # a proxy that answers nobody: spans routed through it would never arrive
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        proxy = f"http://127.0.0.1:{closed.getsockname()[1]}"
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, proxy)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    tracing.enable(collector.endpoint)
    anyio.run(lambda: Branch(chat_model="offline/auto").communicate("hi"))
    assert tracing.flush(5)
    assert tracing.status().failed == 0
    assert len(collector.spans) == 2


def test_bad_input_is_refused_clearly():
    with pytest.raises(ConfigurationError, match="http"):
        tracing.enable("127.0.0.1:4318")
    with pytest.raises(ConfigurationError, match="not both"):
        tracing.enable("http://127.0.0.1:4318", tracer_provider=object())
    with pytest.raises(ConfigurationError, match="TracerProvider"):
        tracing.enable(tracer_provider=object())
    with pytest.raises(ConfigurationError, match="name=value"):
        tracing.enable("http://127.0.0.1:4318", headers="no-equals-sign")
    assert not tracing.status().enabled


def test_an_applications_tracer_provider_is_joined():
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    state = tracing.enable(tracer_provider=provider)
    assert state.enabled and state.endpoint is None
    app = provider.get_tracer("app")
    with app.start_as_current_span("request handler") as outer:
        anyio.run(lambda: Branch(chat_model="offline/auto").communicate("hi"))
    spans = {s.name: s for s in memory.get_finished_spans()}
    assert set(spans) == {"request handler", "communicate", "chat auto"}
    assert spans["communicate"].parent.span_id == outer.get_span_context().span_id
    assert spans["chat auto"].parent.span_id == spans["communicate"].context.span_id
    assert tracing.flush(1)


def _down_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_collector_that_is_down_gives_one_warning_within_the_bound_and_never_raises():
    tracing.enable(f"http://127.0.0.1:{_down_port()}", flush_timeout=0.5)
    branch = Branch(chat_model="offline/auto")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):  # three cells' worth
            anyio.run(lambda: branch.communicate("hi"))
            ok = tracing.flush()
    assert ok is False
    ours = [w for w in caught if issubclass(w.category, TracingWarning)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    assert "not delivered" in str(ours[0].message)
    assert len(branch.messages) == 6  # every turn ran and was recorded
    assert not tracing.status().delivering


def test_a_slow_collector_gets_the_spans_later_and_the_warning_is_not_repeated():
    with LoopbackCollector(delay=3) as slow:
        tracing.enable(slow.endpoint, flush_timeout=0.2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            anyio.run(lambda: Branch(chat_model="offline/auto").communicate("hi"))
            assert tracing.flush() is False
            assert slow.spans == []  # the flush gave up before the collector answered
            assert tracing.flush() is False  # and does not wait again
        assert sum(issubclass(w.category, TracingWarning) for w in caught) == 1
        assert len(slow.wait_for(2)) == 2  # nothing lost: they arrive when it answers
        assert tracing.flush(5) is True and tracing.status().delivering


def test_spans_still_queued_at_exit_are_sent(collector, tmp_path):
    """A process that ends right after a turn (a kernel shut down) still sends its spans:
    the export would have waited 0.2 s more, and its thread dies with the process."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = (
        "import anyio, lion_nb.tracing as t\n"
        "from lion_nb import Branch\n"
        f"t.enable({collector.endpoint!r})\n"
        "anyio.run(lambda: Branch(chat_model='offline/auto').communicate('hi'))\n"
        "print(t.status().exported)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ["PYTHONPATH"]])}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"  # nothing had left when the program ended
    assert sorted(s.name for s in collector.spans) == ["chat auto", "communicate"]
