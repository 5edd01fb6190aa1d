"""Shared test settings: no test may reach a real network or a real key."""

from __future__ import annotations

import os

import pytest

_PROVIDER_VARS = ("LION_CHAT_PROVIDER", "LION_CHAT_MODEL")


@pytest.fixture(autouse=True)
def _offline_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path_factory) -> None:
    """Every test starts on the offline default model with no provider keys set."""
    for name in _PROVIDER_VARS:
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.endswith("_API_KEY"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LION_HOME", str(tmp_path_factory.getbasetemp() / "lion_home"))
