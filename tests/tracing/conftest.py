"""A loopback OTLP/HTTP collector per test, and tracing turned off after every test."""

from __future__ import annotations

import pytest

from tests.notebook.conftest import _shell_of_the_module, ip  # noqa: F401  (the shell tests)


@pytest.fixture
def collector():
    from lion_nb.tracing.collector import LoopbackCollector

    with LoopbackCollector() as running:
        yield running


@pytest.fixture(autouse=True)
def _tracing_off_after():
    yield
    import lion_nb.tracing

    lion_nb.tracing.disable()
