"""`StreamChunk`: one typed event of a CLI agent's stream, whatever the CLI.

Every CLI endpoint maps its own wire events onto these seven types, so `Branch.run()` has
one stream contract to record (ADR-0021 D3).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ChunkType", "StreamChunk"]

ChunkType = Literal["system", "thinking", "text", "tool_use", "tool_result", "result", "error"]


class StreamChunk(BaseModel):
    """One event of a CLI stream.

    - ``system``: session start; ``metadata["session_id"]`` carries the provider session id.
    - ``thinking`` / ``text``: reasoning or answer text (``is_delta`` for a fragment).
    - ``tool_use``: ``tool_id``, ``tool_name``, ``tool_input``.
    - ``tool_result``: ``tool_id``, ``tool_output``, ``is_error``.
    - ``result``: the end of a turn; ``metadata`` has ``usage``, ``cost_usd``, ``session_id``.
    - ``error``: ``content`` is the message; ``metadata["benign_eos"]`` marks a harmless end.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    type: ChunkType
    content: str | None = None
    tool_name: str | None = None
    tool_id: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_output: Any = None
    is_error: bool = False
    is_delta: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
