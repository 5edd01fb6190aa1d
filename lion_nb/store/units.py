"""What the store's writer thread applies: one `Unit` (transaction) at a time, each from
the `Stream` of one writer.

Its own module because both the store (which applies units) and the autosaver (which makes
them) use these, and the store makes an autosaver on request.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field

from .errors import StoreError

__all__ = ["Stream", "Unit"]


@dataclass
class Stream:
    """The writes of one autosaver: its session, its owner token, its first failure."""

    session_id: str
    owner: str = field(default_factory=lambda: f"{os.getpid()}-{uuid.uuid4().hex[:12]}")
    failure: StoreError | None = None
    claimed: bool = False


@dataclass
class Unit:
    """One transaction: ops applied in order. ``claim`` (first unit of a stream) makes the
    stream the session's owner, creating the session row from ``session``."""

    stream: Stream
    ops: list[tuple] = field(default_factory=list)
    claim: tuple[str, str | None, str | None] | None = None  # (header, default, notebook)
    replace: bool = False  # delete what the store holds of the session first
