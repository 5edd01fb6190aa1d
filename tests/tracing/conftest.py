"""A loopback OTLP/HTTP collector per test, and tracing turned off after every test.

`test_phoenix.py` is collected only when ``LION_NB_PHOENIX_PYTHON`` names a Python with
``arize-phoenix`` (an opt-in check outside CI's time budget, not a skip in every run).
"""

from __future__ import annotations

import os

import pytest

from tests.notebook.conftest import _shell_of_the_module, ip  # noqa: F401  (the shell tests)

collect_ignore = [] if os.environ.get("LION_NB_PHOENIX_PYTHON") else ["test_phoenix.py"]


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
