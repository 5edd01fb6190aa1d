"""`Cassette`: a JSONL file of recorded model exchanges, and the rules for using it.

Modes (as VCR users know them):

- ``once``: when the file is missing or empty at activation, record every exchange; else
  replay only, like ``none``.
- ``new``: replay what matches, call the provider for what does not and append it.
- ``none``: replay only; a request with no recording raises `CassetteError`, naming the
  fields in which it differs from the nearest recorded request.
- ``all``: call the provider for every request; the first exchange recorded replaces the
  file's content except what this process re-recorded into it in mode ``all`` (so a second
  cassette on the same file in one re-recording -- a notebook's ``%lion cassette`` and a
  ``with cassette(...)`` further down -- keeps the first one's new lines); later exchanges
  are appended.

`ENV_MODE` (``LION_NB_CASSETTE_MODE``) overrides the mode of every cassette, so CI can force
``none`` without touching a notebook, or ``all`` to re-record everything.

Matching is exact on the normalized request (see `_format`) and order-aware: identical
requests are answered by their recordings in recorded order. When a replay-only cassette has
played every recording of a request, the last one answers again, so re-running one notebook
cell replays instead of failing; ``new`` records the extra call instead. A new recording is
consumed by the call that made it, so a request repeated while recording is recorded again.

Only complete exchanges are written: an API call that returned, a CLI turn that ran to its
end (or to a benign end of stream). A failure is never recorded -- replaying a connection
error or a rate limit forever would only hide it -- so a failed call is simply made again
next time. Each exchange is appended as one line when it completes, so an interrupted
recording keeps what it had.

An image or file in a request is written once, on a ``blob`` line of its own before the
first exchange that needs it, and referenced by its hash in every request (`_blobs`).

Every line is checked when the file is opened (`_format.check`); a CLI turn's chunks are
validated then, once, and every replay hands out those same (immutable) chunks -- copies of
the few that carry data (`_seam`) -- so replaying a long turn costs neither parsing nor
validating nor copying it again.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import AuthenticationError, LionError
from ...shapes import JsonObject
from ..secrets import redact
from ..stream import StreamChunk
from ._blobs import BLOB, blob_line, check_blob, pack
from ._diff import describe, nearest
from ._format import canonical, check, clean, encode_line
from ._modes import ENV_MODE, MODES

__all__ = ["Cassette", "CassetteError", "Recording"]

_WRITING = threading.Lock()  # one writer at a time, whichever cassette object writes
_RERECORDED: dict[Path, set[str]] = {}  # lines this process wrote in mode `all`, per file
_BLOB_END = '"kind": "blob"}'  # how a blob line ends (`encode_line` sorts the keys)


class CassetteError(LionError):
    """A cassette cannot answer: no recording matches, a live call is forbidden, or the file
    is malformed. The message names the differing fields and how to record."""


@dataclass(slots=True)
class Recording:
    """One recorded exchange. ``data()`` parses it afresh for each replay; ``chunks`` are a
    CLI turn's chunks, validated once; ``steps`` is how the replay seam hands them out,
    worked out on the first replay."""

    key: str
    kind: str
    request: dict[str, Any]
    line: str  # the exchange as written
    number: int  # line number in the file (1-based)
    chunks: list[StreamChunk] | None = None
    steps: list[Any] | None = None

    def data(self) -> JsonObject:
        exchange: dict[str, Any] = json.loads(self.line)  # every line holds a JSON object
        return exchange


def check_mode(mode: object, where: str = "mode") -> str:
    if not isinstance(mode, str) or mode not in MODES:
        raise CassetteError(f"`{where}={mode!r}`: a cassette mode is one of {', '.join(MODES)}.")
    return mode


def forced_mode() -> str | None:
    """The mode `ENV_MODE` forces on every cassette, or ``None``."""
    value = os.environ.get(ENV_MODE, "").strip().lower()
    return check_mode(value, ENV_MODE) if value else None


class Cassette:
    """``Cassette("calls.jsonl", mode="once")``: see the module docstring for the modes.

    ``replayed`` and ``recorded`` count this activation's exchanges; ``len()`` is how many
    recordings it holds.
    """

    def __init__(self, path: str | os.PathLike[str], mode: str = "once"):
        self.path = Path(os.fspath(path)).expanduser()
        self.mode = check_mode(mode)
        if self.path.is_dir():
            raise CassetteError(f"Cassette `{self.path}` is a folder; give a `.jsonl` file.")
        self._lock = threading.Lock()
        self._entries: list[Recording] = []
        self._by_key: dict[str, list[Recording]] = {}
        self._played: dict[str, int] = {}
        self._rewritten = False  # `all`: the old content was replaced already
        self._blobs: set[str] = set()  # hashes of the blob lines the file holds
        self.replayed = 0
        self.recorded = 0
        self.existed = self.path.is_file() and self.path.stat().st_size > 0
        if self.existed:
            self._load()

    # -- state ---------------------------------------------------------------------------------
    @property
    def effective_mode(self) -> str:
        """The mode in force: `ENV_MODE` when set, else this cassette's own."""
        return forced_mode() or self.mode

    @property
    def replay_only(self) -> bool:
        """Whether nothing may be recorded now (``none``, or ``once`` on an existing file)."""
        mode = self.effective_mode
        return mode == "none" or (mode == "once" and self.existed)

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:  # an empty cassette is still a cassette in force
        return True

    def __repr__(self) -> str:
        return f"Cassette({str(self.path)!r}, mode={self.mode!r})"

    def __copy__(self) -> Cassette:  # one file, one play order: copies of a model share it
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Cassette:
        return self

    def describe(self) -> str:
        """One sentence on what this cassette does now."""
        mode = self.effective_mode
        forced = f", forced by `{ENV_MODE}`" if mode != self.mode else ""
        held = f"{len(self)} recorded exchange{'s' * (len(self) != 1)}"
        if mode == "all" or (mode == "once" and not self.existed):
            doing = "recording every model call"
        elif mode == "new":
            doing = f"replaying {held} and recording new calls"
        else:
            doing = f"replaying {held}; a call with no recording is an error"
        return (
            f"Cassette `{self.path}` (mode `{mode}`{forced}): {doing} "
            f"({self.replayed} replayed, {self.recorded} recorded so far)."
        )

    # -- reading -------------------------------------------------------------------------------
    def _load(self) -> None:
        with self.path.open(encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    data = json.loads(line)
                    if isinstance(data, dict) and data.get("kind") == BLOB:
                        self._blobs.add(check_blob(data)[0])
                        continue
                    kind, request, chunks = check(data)
                    request = pack(request, {})  # an older line may hold its URLs inline
                    key = canonical(kind, request)
                except (ValueError, RecursionError) as exc:  # JSON syntax errors are ValueErrors
                    detail = (
                        "nested too deeply"
                        if isinstance(exc, RecursionError)
                        else str(exc)
                        if type(exc) is ValueError
                        else f"{type(exc).__name__}: {exc}"
                    )
                    raise CassetteError(
                        f"Cassette `{self.path}`, line {number}, is not a recorded exchange "
                        f"({detail}). Fix the line, or re-record the file with mode `all`."
                    ) from None
                self._add(Recording(key, kind, request, line, number, chunks))

    def _read_lines(self) -> list[str]:
        if not self.path.is_file():
            return []
        return [x for x in self.path.read_text(encoding="utf-8").splitlines() if x.strip()]

    def _add(self, entry: Recording) -> None:
        self._entries.append(entry)
        self._by_key.setdefault(entry.key, []).append(entry)

    # -- using ---------------------------------------------------------------------------------
    def take(
        # Any: an iModel or an endpoint (imodel imports the cassettes)
        self,
        kind: str,
        request: JsonObject,
        label: str,
        model: Any = None,
    ) -> Recording | None:
        """The recording that answers ``request``, or ``None`` when the provider is to be
        called and the exchange recorded. Raises `CassetteError` when the mode allows
        neither. ``label`` names the model in messages; ``model`` (the `iModel`) lets them
        say what a live call needs."""
        request = pack(request, {})  # matched as recorded: images and files by reference
        key = canonical(kind, request)
        mode = self.effective_mode
        if mode == "all" or (mode == "once" and not self.existed):
            return None
        with self._lock:
            found = self._by_key.get(key)
            played = self._played.get(key, 0)
            if found and played < len(found):
                entry = found[played]
                self._played[key] = played + 1
            elif found and mode != "new":
                entry = found[-1]  # every recording was played: the last answers again
            elif mode == "new":
                return None
            else:
                raise CassetteError(self._no_match(kind, request, label, mode, model))
            self.replayed += 1
        return entry

    # Any: a callable over a parsed exchange, any values in it
    def find(self, kind: str, match: Any) -> Recording | None:
        """The last recording of ``kind`` whose parsed exchange satisfies ``match`` (a
        batch looked up by its id when it is resumed rather than submitted), counted as
        replayed; ``None`` without one or while recording everything."""
        mode = self.effective_mode
        if mode == "all" or (mode == "once" and not self.existed):
            return None
        with self._lock:
            for entry in reversed(self._entries):
                if entry.kind == kind and match(entry.data()):
                    self.replayed += 1
                    return entry
        return None

    def record(self, kind: str, request: JsonObject, payload: JsonObject) -> None:
        """Append one complete exchange (its request already normalized); each image or file
        in it is written once, on a blob line of its own (see `_blobs`)."""
        blobs: dict[str, str] = {}
        request = pack(request, blobs)
        exchange = {**clean(payload), "kind": kind, "request": request}
        line = encode_line(exchange)
        chunks = check(exchange)[2]
        with self._lock, _WRITING:
            rerecording = self.effective_mode == "all"
            mine = _RERECORDED.setdefault(self.path.resolve(), set())
            if rerecording and not self._rewritten:
                self._rewritten = True
                self._entries, self._by_key, self._played = [], {}, {}
                kept = [x for x in self._read_lines() if x in mine]
                self._blobs = {json.loads(x)["hash"] for x in kept if x.endswith(_BLOB_END)}
                new = self._blob_lines(blobs)
                self.path.parent.mkdir(parents=True, exist_ok=True)
                text = "".join(x + "\n" for x in [*kept, *new, line])
                self.path.write_text(text, encoding="utf-8")
            else:
                new = self._blob_lines(blobs)
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write("".join(x + "\n" for x in [*new, line]))
            if rerecording:
                mine.add(line)
                mine.update(new)
            number = len(self._entries) + 1
            entry = Recording(canonical(kind, request), kind, request, line, number, chunks)
            self._add(entry)
            self._played[entry.key] = len(self._by_key[entry.key])  # consumed by this call
            self.recorded += 1

    def _blob_lines(self, blobs: dict[str, str]) -> list[str]:
        """The blob lines of ``blobs`` the file does not hold yet (counted as held)."""
        lines = []
        for digest, url in blobs.items():
            if digest not in self._blobs:
                self._blobs.add(digest)
                lines.append(encode_line(blob_line(digest, url)))
        return lines

    def _no_match(
        self, kind: str, request: dict[str, Any], label: str, mode: str, model: Any = None
    ) -> str:
        forced = f", forced by `{ENV_MODE}`" if mode != self.mode else ""
        asked = label if kind == "mcp" else f"this request to `{label}`"
        head = (
            f"No recording in cassette `{self.path}` answers {asked} "
            f"(mode `{mode}`{forced}: replay only)."
        )
        need = "make sure the server can start" if kind == "mcp" else live_call_needs(model)
        how = (
            f"To record it, {need + ' and ' if need else ''}use mode `new` (keep the other "
            f"recordings) or `all` (re-record the file): `%lion cassette {self.path} --mode new`"
            f', or `cassette("{self.path}", mode="new")` in code.'
        )
        if not self.existed:
            return f"{head} The file does not exist. {how}"
        close = nearest(request, [(e.number, e.request) for e in self._entries if e.kind == kind])
        if close is None:
            kinds = {"run": "CLI runs", "batch": "provider batches", "mcp": "MCP exchanges"}
            what = kinds.get(kind, "API calls")
            return f"{head} It holds no {what}. {how}"
        line, found = close
        return (
            f"{head} The nearest recorded request (line {line}) differs in:\n"
            f"{describe(found)}\n{how}"
        )


# Any: an iModel or an endpoint (imodel imports the cassettes)
def live_call_needs(model: Any) -> str:
    """What a live call to ``model`` needs, as a clause of the no-recording message: the key
    for a hosted API, a running server for a keyless (local) one, a working CLI for an
    agent; empty when it needs nothing more (a key is set, an offline model)."""
    endpoint = getattr(model, "endpoint", None)
    if endpoint is None:
        return "set the provider's key" if model is None else ""
    if endpoint.is_cli:
        return f"make sure the `{model.provider}` CLI is installed and signed in"
    resolve = getattr(endpoint, "resolve_key", None)
    if resolve is None:  # an offline model
        return ""
    try:
        key = resolve()
    except AuthenticationError:
        env = getattr(endpoint, "api_key_env", None)
        return f"set the provider's key (`{env}`)" if env else "set the provider's key"
    if key is None:  # a server that takes no key
        return f"make sure the server at `{redact(endpoint.base_url)}` is running"
    return ""
