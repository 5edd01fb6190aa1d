"""`Session.map`'s choice of run by ``via``: items run live (`BatchRun`) or through the
provider's batch API (`ProviderRun`).

A module above both kinds of run, so that the live one does not import the provider one,
which is built on it.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from ..errors import ConfigurationError
from .batch import BatchRun

#: a `lion_nb.session.session.Session`, which imports this module: not imported back
#: (the two would import each other), so typed loosely here
Session: TypeAlias = Any

__all__ = ["start_map"]


def start_map(session: Session, data: Any, instruction: Any = None, **kwargs: Any) -> BatchRun:
    """`Session.map`: build the run for ``via`` and start it."""
    via = kwargs.pop("via", "live")
    if via == "batch":
        from .batch_api import ProviderRun  # the provider batch APIs load only when asked for

        return ProviderRun(session, data, instruction, **kwargs).start()
    if via != "live":
        raise ConfigurationError(f"`via={via!r}`: use 'live' or 'batch'.")
    for key in ("poll_interval", "poll_timeout"):
        if key in kwargs:
            raise ConfigurationError(f"`{key}=` only applies to `via='batch'`.")
    return BatchRun(session, data, instruction, **kwargs).start()
