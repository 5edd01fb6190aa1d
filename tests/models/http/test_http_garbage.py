"""A call leaves no more cyclic garbage than a raw httpx post of the same request.

Objects in reference cycles wait for the cycle collector, whose passes cost CPU on every
later call; what a raw ``httpx.AsyncClient.post`` leaves is the floor. The calls run with
``gc`` disabled after a warm-up, then ``gc.collect()`` counts what they left: a count, not a
time, so it holds on a busy machine. The loopback server shares the process and leaves the
same garbage on every path.
"""

from __future__ import annotations

import gc
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx

from lion_nb import Branch
from lion_nb.models.endpoints.base import ChatRequest
from lion_nb.models.imodel import iModel

CALLS = 20
MESSAGES = [{"role": "user", "content": "Hi"}]
KEY = "sk-test-0"
# The server thread may still be tidying the last request when the count is taken.
SLACK = 10


def cyclic_garbage(make: Callable[[], Awaitable[tuple[Callable, Callable]]]) -> int:
    """Objects that ``CALLS`` calls of one path leave to the cycle collector."""

    async def main() -> int:
        once, close = await make()
        try:
            for _ in range(5):
                await once()
            gc.collect()
            gc.disable()
            try:
                for _ in range(CALLS):
                    await once()
                return gc.collect()
            finally:
                gc.enable()
        finally:
            await close()

    return anyio.run(main)


def raw_post(fake) -> Callable:
    async def make() -> tuple[Callable, Callable]:
        client = httpx.AsyncClient(trust_env=False)
        url = fake.openai_url + "/chat/completions"
        body = {"model": "m", "messages": MESSAGES}
        headers = {"Authorization": f"Bearer {KEY}"}

        async def once() -> Any:
            # the same request the model sends: headers are part of httpx's cycles
            response = await client.post(url, json=body, headers=headers)
            response.raise_for_status()
            return response.json()

        return once, client.aclose

    return make


def model(fake) -> iModel:
    return iModel(provider="openai", model="m", base_url=fake.openai_url, api_key=KEY)


def test_invoke_leaves_no_more_cyclic_garbage_than_a_raw_post(http_fake):
    async def make() -> tuple[Callable, Callable]:
        m = model(http_fake)

        async def once() -> Any:
            call = await m.invoke(ChatRequest(messages=list(MESSAGES)))
            assert call.status == "completed", call.error
            return call.response

        return once, m.aclose

    raw = cyclic_garbage(raw_post(http_fake))
    ours = cyclic_garbage(make)
    assert raw > 0  # the count sees httpx's own cycles, so it would see ours
    assert ours <= raw + SLACK, f"iModel.invoke left {ours} cyclic objects, a raw post {raw}"


def test_branch_chat_leaves_no_more_cyclic_garbage_than_a_raw_post(http_fake):
    async def make() -> tuple[Callable, Callable]:
        m = model(http_fake)
        branch = Branch(chat_model=m)

        async def once() -> Any:
            return await branch.chat("Hi")

        return once, m.aclose

    raw = cyclic_garbage(raw_post(http_fake))
    ours = cyclic_garbage(make)
    assert ours <= raw + SLACK, f"Branch.chat left {ours} cyclic objects, a raw post {raw}"
