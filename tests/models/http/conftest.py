"""Fixtures of the HTTP provider tests: a real loopback server and a way to call a model."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import anyio
import pytest

from lion_nb.models.endpoints.base import ChatRequest, streaming_to
from lion_nb.models.imodel import APICall, iModel
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


def hello(**kw) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": "Hi"}], **kw)


@pytest.fixture
def invoke() -> Callable[..., APICall]:
    """``invoke(model, request=None, sink=None)``: one call in a fresh event loop, then close."""

    def _invoke(
        model: iModel, request: ChatRequest | None = None, sink: Callable | None = None
    ) -> APICall:
        async def main() -> APICall:
            try:
                with streaming_to(sink):
                    return await model.invoke(request or hello())
            finally:
                await model.aclose()

        return anyio.run(main)

    return _invoke
