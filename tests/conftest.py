"""Shared test settings: no test may reach a real network or a real key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fakes import loopback_only

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


@pytest.fixture(scope="session", autouse=True)
def _loopback_only():
    """No test reaches past this machine: connections and look-ups outside the loopback
    range fail at once with the address named (`tests.fakes.loopback_only`). The Python
    processes the tests start (kernels, fake CLIs, servers) get the same guard through a
    ``sitecustomize`` put first on their PYTHONPATH."""
    installed = loopback_only.install()
    site = str(Path(__file__).parent / "fakes" / "loopback_site")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(
            "PYTHONPATH", os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")]))
        )
        yield
    if installed:
        loopback_only.uninstall()


@pytest.fixture(scope="session", autouse=True)
def _close_shared_event_loops():
    """Close the event loops the test session made that nothing else ever closes.

    The in-process IPython shell runs cells on IPython's one shared asyncio loop, and
    jupyter_client's synchronous API (`start_new_kernel`, `KernelManager`) runs on
    jupyter_core's loop for the main thread; both live for the rest of the process and were
    left open at its end (``ResourceWarning: unclosed event loop``). The session closes them,
    as a program that started them would before exiting.
    """
    yield
    import sys

    helpers = sys.modules.get("IPython.core.async_helpers")
    _close_loop(getattr(helpers, "_asyncio_event_loop", None))
    utils = sys.modules.get("jupyter_core.utils")
    holder = getattr(utils, "_loop", None)  # a ContextVar of this (the main) context
    _close_loop(holder.get() if holder is not None else None)


def _close_loop(loop) -> None:
    """Cancel what is left on ``loop``, finish its async generators, and close it."""
    import asyncio

    if loop is None or loop.is_closed() or loop.is_running():
        return
    try:
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()
