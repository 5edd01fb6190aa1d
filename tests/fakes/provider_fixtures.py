"""Fixtures shared by the test folders that call providers over HTTP: a real loopback server
per test, and no key from the machine the tests run on. A folder's ``conftest.py`` imports
them by name."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lion_nb.models.secrets import SECRET_ENV_VARS
from tests.fakes.http_server import FakeProvider


@pytest.fixture
def http_fake() -> Iterator[FakeProvider]:
    """A fresh provider server on 127.0.0.1 (its queue and records are per test)."""
    with FakeProvider() as fake:
        yield fake


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see no key from the machine they run on."""
    for name in SECRET_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
