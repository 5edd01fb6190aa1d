"""Shared test settings: no test may reach a real network or a real key."""

from __future__ import annotations

import os

import pytest

_PROVIDER_VARS = ("LION_CHAT_PROVIDER", "LION_CHAT_MODEL")


@pytest.fixture(autouse=True)
def _offline_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path_factory) -> None:
    """Every test starts on the offline default model with no provider keys set, and with a
    session store of its own."""
    for name in _PROVIDER_VARS:
        monkeypatch.delenv(name, raising=False)
    # CI forces cassettes to replay only (for the notebooks); each test sets its own mode
    monkeypatch.delenv("LION_NB_CASSETTE_MODE", raising=False)
    for name in list(os.environ):
        if name.endswith("_API_KEY"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LION_HOME", str(tmp_path_factory.getbasetemp() / "lion_home"))
    # the session store (autosave, run buffers, log dumps) never lands in the repository
    monkeypatch.setenv("LION_NB_STORE", str(tmp_path_factory.mktemp("store") / ".lion_nb"))
