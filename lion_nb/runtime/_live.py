"""Live sessions by id, weakly held: where a branch's owner is looked up (a refusal names
the session that owns a branch; the ledger adds a branch's calls to its session's total).

A module of its own, below `lion_nb.session` and the ledger, so the ledger need not import the
session module that uses it.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any
from uuid import UUID

if TYPE_CHECKING:
    from .parts import Attached as Session

__all__ = ["SESSIONS"]

SESSIONS: weakref.WeakValueDictionary[UUID, Session] | Any = weakref.WeakValueDictionary()
