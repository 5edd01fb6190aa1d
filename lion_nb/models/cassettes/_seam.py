"""Record and replay at the model seam: `iModel.invoke` and `iModel.stream_cli` call these.

Replay drives exactly what a live call drives, so everything above the seam -- operations,
signals, the recorded messages, the live view -- cannot tell the difference:

- an API answer comes back as the recorded `ModelResponse`; a recorded stream's text deltas
  go, in order, to whoever listens (`streaming_to`) before it returns. A non-streamed
  recording replayed to a listener is one delta holding the whole text, as a one-chunk stream;
- a CLI turn yields the recorded `StreamChunk`s in order, and, as the subprocess endpoints
  do, sets the model's provider session id from them (so the next turn resumes the recorded
  session) and sends each text chunk to the listener. Usage and cost travel in the recorded
  ``result`` chunk. The chunks were validated when the cassette was opened, and no chunk is
  parsed or validated again. Chunks are immutable, so a replay hands out the recorded ones
  themselves -- all but those carrying data in a container (a session id, usage, a tool's
  input or output), which are yielded as copies (`copy_chunk`). What is shared is then a
  chunk's fields and its empty ``metadata`` dict; a write into that dict is undone before
  the next replay hands the chunk out. So what a consumer does to one replay's chunks never
  reaches the next, and a 1,000-chunk turn costs copying two of them, not 1,000.

While recording, deltas are captured by teeing the listener that is already there (or, for
a call that streams with no listener, a tap in its place): a recorder never turns a
non-streamed call into a streamed one.

The lookup happens before anything is sent, so a missing recording fails at once, before
any process starts or any byte goes out.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import Any

import anyio.lowlevel

from ..endpoints.base import current_sink, emit_text_delta, streaming_to, wants_stream
from ..stream import StreamChunk, carries_data, copy_chunk
from ._format import api_request, chunk_to_json, cli_request, response_from_json, response_to_json
from .recording import Cassette, Recording

__all__ = ["complete", "stream"]


def _label(imodel: Any) -> str:
    return f"{imodel.provider}/{imodel.model}"


async def complete(
    tape: Cassette, imodel: Any, request: Any, live: Callable[[Any], Awaitable[Any]]
) -> Any:
    """The `ModelResponse` for ``request``: replayed, or from ``live`` and recorded."""
    normalized = api_request(imodel, request)
    entry = tape.take("chat", normalized, _label(imodel), imodel)
    if entry is not None:
        recorded = entry.data()
        await anyio.lowlevel.checkpoint()  # a replay is a call: it yields, and can be cancelled
        if wants_stream():
            played: list[str] = recorded.get("deltas") or []
            if not recorded.get("stream"):  # recorded without a listener: one whole delta
                played = [recorded["response"].get("text") or ""]
            for delta in played:
                emit_text_delta(delta)
        return response_from_json(recorded["response"])
    streamed = bool(wants_stream() or request.stream or request.options.get("stream"))
    deltas: list[str] = []
    if streamed:
        outer = current_sink()

        def tee(text: str) -> None:
            deltas.append(text)
            if outer is not None:
                outer(text)

        with streaming_to(tee):
            response = await live(request)
    else:
        response = await live(request)
    payload = {"response": response_to_json(response), "stream": streamed, "deltas": deltas}
    tape.record("chat", normalized, payload)
    return response


def stream(
    tape: Cassette,
    imodel: Any,
    request: Any,
    live: Callable[[Any], AsyncGenerator[Any, None]],
) -> AsyncGenerator[Any, None]:
    """The chunks of one CLI turn: replayed, or from ``live`` and recorded at its end."""
    normalized = cli_request(imodel, request)
    entry = tape.take("run", normalized, _label(imodel), imodel)
    if entry is not None:
        return _replay(imodel, _steps(entry))
    return _record(tape, normalized, live(request))


# (chunk, its metadata if the chunk is shared -- None: yield a copy --, session id, text)
_Step = tuple[StreamChunk, "dict[str, Any] | None", "str | None", "str | None"]


def _steps(entry: Recording) -> list[_Step]:
    """What replaying ``entry`` does chunk by chunk, worked out once, on its first replay."""
    steps = entry.steps
    if steps is None:
        steps = entry.steps = [_step(chunk) for chunk in entry.chunks or []]
    return steps


def _step(chunk: StreamChunk) -> _Step:
    shared = None if carries_data(chunk) else chunk.metadata
    text = chunk.content if chunk.type == "text" else None
    return chunk, shared, chunk.metadata.get("session_id") or None, text or None


async def _replay(imodel: Any, steps: list[_Step]) -> AsyncGenerator[Any, None]:
    await anyio.lowlevel.checkpoint()
    endpoint = imodel.endpoint
    for chunk, shared, session_id, text in steps:
        if session_id:
            endpoint.session_id = session_id
        if text:
            emit_text_delta(text)
        if shared is None:
            yield copy_chunk(chunk)
        else:
            if shared:  # written into by a consumer of an earlier replay: as recorded again
                shared.clear()
            yield chunk


async def _record(
    tape: Cassette, normalized: dict[str, Any], chunks: AsyncGenerator[Any, None]
) -> AsyncGenerator[Any, None]:
    events: list[dict[str, Any]] = []
    complete = False
    try:
        async with aclosing(chunks):
            async for chunk in chunks:
                events.append(chunk_to_json(chunk))
                yield chunk
        complete = True
    except GeneratorExit:
        # the consumer stops at an error chunk; only a benign end of stream is a complete turn
        last = events[-1] if events else {}
        complete = last.get("type") == "error" and bool(
            (last.get("metadata") or {}).get("benign_eos")
        )
        raise
    finally:
        if complete:
            tape.record("run", normalized, {"events": events})
