"""Fixtures of the HTTP provider tests: a real loopback server and a way to call a model."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from lion_nb.models.endpoints.base import ChatRequest, streaming_to
from lion_nb.models.imodel import APICall, iModel
from tests.fakes.provider_fixtures import _no_provider_keys, http_fake

__all__ = ["_no_provider_keys", "http_fake"]


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
