"""Cassettes: record model exchanges once, replay them anywhere (CI, Binder, a reader's laptop).

A cassette is a JSONL file next to the notebook or the test, one exchange a line with sorted
keys: the normalized request, and the response exactly as the branch received it (for a
stream its text deltas, for a CLI agent its chunks, in order). Keys, tokens and
authorization headers are never written. Recording and replay happen at lion_nb's own model
seam (`iModel.invoke`, `iModel.stream_cli`), which every provider goes through -- HTTP and
CLI, streamed or not -- so a replay drives the same deltas, signals, tool calls, recorded
messages, provider sessions, usage and cost as the original run. A provider batch
(``map(..., via="batch")``) is one exchange, recorded and replayed by its batch service
(`_batches`). An MCP server connected under a cassette is recorded and replayed at its own
seam (`lion_nb.mcp.recorded`): a replay connects it without starting it.

One mechanism, three switches (see `scope`): ``iModel(..., cassette=PATH)``;
``with cassette(PATH, mode=...):`` around code; ``%lion cassette PATH [--mode ...]`` for
every model of a notebook; and ``LION_NB_CASSETTE_MODE`` to force a mode everywhere
(``none`` in CI). Modes and matching are described in `recording`, the file format in
`_format`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports
from ._modes import ENV_MODE, MODE_HELP, MODES

__all__ = [
    "ENV_MODE",
    "MODES",
    "MODE_HELP",
    "Cassette",
    "CassetteError",
    "cassette",
    "cassette_for",
    "current_cassette",
    "use_cassette",
]

_EXPORTS = {
    "Cassette": "lion_nb.models.cassettes.recording",
    "CassetteError": "lion_nb.models.cassettes.recording",
    "cassette": "lion_nb.models.cassettes.scope",
    "cassette_for": "lion_nb.models.cassettes.scope",
    "current_cassette": "lion_nb.models.cassettes.scope",
    "use_cassette": "lion_nb.models.cassettes.scope",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .recording import Cassette, CassetteError
    from .scope import cassette, cassette_for, current_cassette, use_cassette
