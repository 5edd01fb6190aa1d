"""The offline stand-in for a CLI agent: the streaming contract with no process.

``iModel(provider="offline_cli", model="scripted", turns=[[chunk, ...], ...])`` plays one turn
per ``stream()``; ``model="auto"`` plays a small deterministic turn (session start, a thought,
an answer quoting the prompt, a result with usage). Like a real agent it reports a provider
session id in its first (``system``) chunk; a request that resumes a session gets that id
back, so resumption can be followed across turns.

Every request is recorded in ``.calls`` (so tests can see ``resume``). A turn starts when the
stream is first iterated, as a subprocess would; closing the stream early simply ends it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from typing import Any, ClassVar

import anyio
from pydantic import ValidationError

from ...errors import ConfigurationError, ScriptExhaustedError
from ...shapes import JsonObject
from ...tokens import estimate_tokens
from ..stream import StreamChunk
from .base import CLIEndpoint, CLIRequest

__all__ = ["OfflineCLIEndpoint"]

MODELS = ("auto", "scripted")


class OfflineCLIEndpoint(CLIEndpoint):
    """A scripted or automatic CLI agent that runs in-process."""

    __test__ = False
    provider: ClassVar[str] = "offline_cli"

    def __init__(
        self,
        model: str = "auto",
        *,
        # Any: scripted events of any kind a test gives
        turns: list[list[Any]] | None = None,
        delay: float = 0.0,
        **options: Any,
    ):
        model = (model or "auto").strip().lower()
        if model not in MODELS:
            raise ConfigurationError(
                f"Unknown offline_cli model `{model}`. Use one of: {', '.join(MODELS)}."
            )
        if turns is not None and model != "scripted":
            raise ConfigurationError(
                "`turns=` is for `offline_cli/scripted`: write "
                '`iModel(provider="offline_cli", model="scripted", turns=[[...], ...])`.'
            )
        if not isinstance(delay, (int, float)) or delay < 0:
            raise ConfigurationError(f"`delay=` is seconds between chunks (>= 0); got {delay!r}.")
        super().__init__(model, **options)
        self.turns: list[list[StreamChunk]] = _check_turns(turns)
        self.delay = float(delay)
        self.calls: list[CLIRequest] = []
        self._own_session = f"offline-{uuid.uuid4().hex[:16]}"
        self._played = 0

    def config(self) -> JsonObject:
        data: dict[str, Any] = {}
        if self.model == "scripted":
            data["turns"] = [
                [c.model_dump(mode="json", exclude_defaults=True) for c in turn]
                for turn in self.turns
            ]
        if self.delay:
            data["delay"] = self.delay
        return data

    @property
    def remaining(self) -> int:
        """Turns a scripted agent has not played yet."""
        return len(self.turns) - self._played

    def stream(self, request: CLIRequest) -> AsyncGenerator[StreamChunk, None]:
        return self._run(request)

    async def _run(self, request: CLIRequest) -> AsyncGenerator[StreamChunk, None]:
        self.calls.append(request)
        session = request.resume or self.session_id or self._own_session
        if self.model == "auto":
            turn = _auto_turn(request, session)
        else:
            if self._played >= len(self.turns):
                n = len(self.turns)
                raise ScriptExhaustedError(
                    f"`offline_cli/scripted` has played all {n} turn{'s' * (n != 1)}; "
                    "give more in `turns=`."
                )
            turn = [c.model_copy(deep=True) for c in self.turns[self._played]]
            self._played += 1
            if not any(c.type == "system" for c in turn):
                turn.insert(0, StreamChunk(type="system", metadata={"session_id": session}))
        for i, chunk in enumerate(turn):
            if i and self.delay:
                await anyio.sleep(self.delay)
            if chunk.type == "system" and chunk.metadata.get("session_id"):
                self.session_id = str(chunk.metadata["session_id"])
            yield chunk


def _check_turns(turns: list[list[Any]] | None) -> list[list[StreamChunk]]:
    if turns is None:
        return []
    if not isinstance(turns, (list, tuple)):
        raise ConfigurationError("`turns=` is a list of turns, each a list of chunks.")
    checked: list[list[StreamChunk]] = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, (list, tuple)):
            raise ConfigurationError(
                f"`turns[{i}]` is {type(turn).__name__}: each turn is a list of chunks "
                '(StreamChunk objects or dicts like `{"type": "text", "content": "Hi"}`).'
            )
        chunks = []
        for j, chunk in enumerate(turn):
            if isinstance(chunk, StreamChunk):
                chunks.append(chunk.model_copy(deep=True))
                continue
            try:
                chunks.append(StreamChunk.model_validate(chunk))
            except ValidationError as exc:
                problem = exc.errors()[0]
                where = ".".join(str(p) for p in problem["loc"]) or "chunk"
                raise ConfigurationError(
                    f"`turns[{i}][{j}]` is not a StreamChunk: `{where}`: {problem['msg']}."
                ) from None
        checked.append(chunks)
    return checked


def _auto_turn(request: CLIRequest, session: str) -> list[StreamChunk]:
    prompt = " ".join(request.prompt.split())
    short = prompt if len(prompt) <= 80 else prompt[:79].rstrip() + "…"
    said = f"you asked “{short}”." if short else "nothing was asked."
    answer = (
        f"Offline agent: {said} Pass a CLI model (claude_code, codex, gemini_cli) to use a "
        "real agent."
    )
    usage_in = estimate_tokens(request.prompt) + estimate_tokens(request.system)
    usage_out = estimate_tokens(answer)
    return [
        StreamChunk(type="system", metadata={"session_id": session, "model": "offline_cli/auto"}),
        StreamChunk(type="thinking", content="The prompt needs no tools; answering directly."),
        StreamChunk(type="text", content=answer),
        StreamChunk(
            type="result",
            metadata={
                "session_id": session,
                "usage": {
                    "input_tokens": usage_in,
                    "output_tokens": usage_out,
                    "total_tokens": usage_in + usage_out,
                },
                "cost_usd": 0.0,
            },
        ),
    ]
