"""``%lion trace on|off|status`` and ``%config LionMagics.trace_endpoint`` in a real
in-process IPython shell, against a loopback OTLP/HTTP collector."""

from __future__ import annotations

import pytest

import lion_nb.tracing as tracing
from lion_nb.tracing.collector import LoopbackCollector
from tests.notebook.nbshell import run, usage_error

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def collector():
    with LoopbackCollector() as running:
        yield running
    tracing.disable()


def test_on_status_off(ip, collector):
    assert "tracing: off" in run(ip, "%lion trace").stdout
    on = run(ip, f"%lion trace on {collector.endpoint} --content")
    assert on.error is None and "content on" in on.stdout
    assert tracing.status().capture_content
    assert run(ip, "%%lion\nhello").error is None
    status = run(ip, "%lion trace status").stdout
    assert "2 spans exported" in status, status
    assert "tracing: off" in run(ip, "%lion trace off").stdout
    assert not tracing.status().enabled


def test_the_config_endpoint_turns_tracing_on_and_off(ip, collector):
    assert run(ip, f"%config LionMagics.trace_endpoint = '{collector.endpoint}'").error is None
    assert tracing.status().endpoint == collector.endpoint + "/v1/traces"
    assert run(ip, "%%lion\nhello").error is None
    assert len(collector.spans) == 2
    assert run(ip, "%lion trace on").error is None  # the configured endpoint again
    assert tracing.status().endpoint == collector.endpoint + "/v1/traces"
    assert run(ip, "%config LionMagics.trace_endpoint = ''").error is None
    assert not tracing.status().enabled


def test_bad_input_is_a_usage_error(ip):
    assert "takes no ENDPOINT" in usage_error(ip, "%lion trace off http://127.0.0.1:1")
    assert "http(s) URL" in usage_error(ip, "%lion trace on 127.0.0.1:4318")
    assert not tracing.status().enabled


def test_an_endpoint_configured_before_the_extension_loads_turns_tracing_on(ip, collector):
    ip.run_line_magic("unload_ext", "lion_nb")
    ip.config.LionMagics.trace_endpoint = collector.endpoint  # a profile's config
    ip.run_line_magic("load_ext", "lion_nb")
    assert tracing.status().endpoint == collector.endpoint + "/v1/traces"
    assert run(ip, "%%lion\nhello").error is None
    assert len(collector.spans) == 2
