"""Run a CLI agent as a subprocess and stream its JSON-lines output, cleaning up always.

Design decisions:

- The CLI runs in its own session (``start_new_session=True``), so it leads a process group
  of its own (see `_process`).
- Every exit path -- normal end, an exception, cancellation, a consumer that stops early and
  closes the generator, the deadline -- stops the group (SIGTERM, ``grace`` seconds, SIGKILL).
  The stop is shielded from cancellation so a cancelled run cannot leave a process behind.
  Once the deadline has passed the grace is cut to ``DEADLINE_GRACE`` (0.5 s), so a CLI that
  ignores SIGTERM cannot stretch ``timeout=2`` into four seconds.
- stdin is closed (the prompt travels in argv). stderr goes to a pipe drained by a thread
  that keeps only the last ``stderr_cap`` bytes.
- The deadline is absolute (``time.monotonic()``) and applied to each read, never as a cancel
  scope spanning a ``yield`` (which async generators must not do).
- A non-zero exit raises `CLIError` only when the CLI did not already report the failure as
  an event: the caller says so through ``error_reported``.
- An event the translator cannot read (a shape the CLI's output format never had) stops the
  run with a `CLIError` naming the executable and the event type, not a bare ``KeyError``.

`SubprocessCLIEndpoint` is the shared base of the ``claude_code``, ``codex`` and
``gemini_cli`` endpoints: executable lookup, settings, the timeout option and the stream
loop. Each subclass builds its argv and translates its CLI's events into `StreamChunk`s.
The endpoint remembers its open streams and the process groups they started, so that
closing it (`aclose`, which `Session.aclose` calls) stops every run still going.
"""

from __future__ import annotations

import copy
import logging
import os
import shutil
import signal
import subprocess
import time
import weakref
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Any, ClassVar

import anyio
from anyio.abc import ByteReceiveStream

from ...errors import CLIError, ConfigurationError, ProviderTimeoutError
from ..clean import loads
from ..secrets import redact
from ..stream import StreamChunk
from ._process import LIVE_GROUPS, StderrTail, kill_group, stop_group
from .base import CLIEndpoint, CLIRequest, emit_text_delta, emit_thinking_delta

__all__ = [
    "ChunkTranslator",
    "SubprocessCLIEndpoint",
    "as_dict",
    "as_list",
    "count",
    "deadline_from_timeout",
    "normalized_usage",
    "run_cli",
]

log = logging.getLogger("lion_nb.models.cli")

DEFAULT_GRACE = 2.0
DEADLINE_GRACE = 0.5  # the grace once the run's deadline has passed
DEFAULT_STDERR_CAP = 64 * 1024
MAX_LINE = 64 * 1024 * 1024  # a longer stdout line is dropped, not buffered without bound


# -- the stream ----------------------------------------------------------------------------------
def deadline_from_timeout(timeout: Any) -> float | None:
    """A positive number of seconds becomes an absolute monotonic deadline; anything else none."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        return None
    return time.monotonic() + float(timeout)


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


async def _receive(stream: ByteReceiveStream, deadline: float | None) -> bytes | None:
    """The next bytes of ``stream``; ``b""`` at its end; ``None`` when the deadline passed."""
    if deadline is None:
        try:
            return await stream.receive(65536)
        except anyio.EndOfStream:
            return b""
    with anyio.move_on_after(max(0.0, deadline - time.monotonic())):
        try:
            return await stream.receive(65536)
        except anyio.EndOfStream:
            return b""
    return None


def _decode(line: bytes, name: str) -> dict[str, Any] | None:
    text = line.strip()
    if not text:
        return None
    try:
        event = loads(text)
    except ValueError:
        log.debug(
            "`%s` printed a line that is not JSON: %.200s",
            name,
            redact(text.decode("utf-8", "replace")),
        )
        return None
    return event if isinstance(event, dict) else None


async def run_cli(
    argv: list[str],
    *,
    name: str,
    provider: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    deadline: float | None = None,
    grace: float = DEFAULT_GRACE,
    stderr_cap: int = DEFAULT_STDERR_CAP,
    error_reported: Callable[[], bool] = lambda: False,
    exit_message: Callable[[int], str | None] = lambda code: None,
    started: Callable[[int], None] | None = None,
) -> AsyncGenerator[dict[str, Any], None]:
    """Run ``argv`` and yield each JSON object it prints on stdout, one per line.

    ``name`` is the executable's name for messages. Raises `ProviderTimeoutError` when
    ``deadline`` passes and `CLIError` for a non-zero exit that ``error_reported()`` denies.
    ``started(pgid)`` is told the process group once the CLI runs (its endpoint keeps it, to
    stop it when the endpoint is closed).
    """
    start = time.monotonic()
    read_fd, write_fd = os.pipe()
    try:
        process = await anyio.open_process(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=write_fd,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        os.close(read_fd)
        raise ConfigurationError(f"`{name}` could not be started ({exc.strerror or exc}).") from exc
    finally:
        os.close(write_fd)
    LIVE_GROUPS.add(process.pid)
    if started is not None:
        started(process.pid)
    stderr = StderrTail(read_fd, stderr_cap)
    assert process.stdout is not None
    try:
        buf = bytearray()
        dropping = False
        while True:
            data = await _receive(process.stdout, deadline)
            if data is None:
                raise ProviderTimeoutError(
                    f"`{name}` did not finish before its deadline (stopped after "
                    f"{time.monotonic() - start:.1f} s). Give a larger `timeout=` or "
                    "`timeout=None` for no deadline.",
                    provider=provider,
                )
            if not data:
                break
            buf += data
            while (end := buf.find(b"\n")) >= 0:
                line = bytes(buf[:end])
                del buf[: end + 1]
                if dropping:
                    dropping = False
                    continue
                if (event := _decode(line, name)) is not None:
                    yield event
            if len(buf) > MAX_LINE:
                log.warning(
                    "`%s` printed a line longer than %d bytes; it was dropped", name, MAX_LINE
                )
                buf.clear()
                dropping = True
        if not dropping and (event := _decode(bytes(buf), name)) is not None:
            yield event
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        with anyio.move_on_after(remaining):
            await process.wait()
        if process.returncode is None:
            raise ProviderTimeoutError(
                f"`{name}` closed its output but did not exit before its deadline.",
                provider=provider,
            )
    finally:
        if deadline is not None and time.monotonic() >= deadline:
            grace = min(grace, DEADLINE_GRACE)  # the caller was promised an answer by now
        with anyio.CancelScope(shield=True):
            try:
                await stop_group(process, grace)
            finally:
                LIVE_GROUPS.discard(process.pid)
                await stderr.wait_closed(0.5)
    code = process.returncode
    if code and not error_reported():
        tail = stderr.text()
        detail = exit_message(code) or f"`{name}` {_exit_text(code)} without reporting an error."
        last = tail.strip()[-500:]
        message = (
            f"{detail} Last output on stderr: {last}"
            if last
            else f"{detail} It wrote nothing on stderr."
        )
        raise CLIError(message, exit_code=code, stderr=tail, provider=provider)


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, else an empty one (CLI events are read defensively)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` if it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def count(value: Any) -> int:
    """A token count from a CLI: a number (or numeric text) as an int from 0 to
    `MAX_TOKENS`, anything else (NaN, an infinity) 0. A run has happened by the time its
    counts arrive, so a bad one is clamped rather than refused."""
    from ..usage import MAX_TOKENS

    if isinstance(value, bool):
        return 0
    try:
        return min(max(0, int(value or 0)), MAX_TOKENS)
    except (TypeError, ValueError, OverflowError):
        return 0


def normalized_usage(
    input_tokens: Any,
    output_tokens: Any,
    raw: Any,
    total: Any = None,
    *,
    cache_read: Any = None,
    cache_write: Any = None,
    reasoning: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    """The normalized usage (`lion_nb.models.usage`) whatever the CLI; ``input_tokens`` is
    all input, cached parts included."""
    from ..usage import usage_dict

    inp = count(input_tokens)
    out = count(output_tokens)
    read, write = count(cache_read), count(cache_write)
    if read + write > inp:  # cached parts larger than the whole: priced below nothing
        log.warning(
            "a CLI reported %d cached input tokens of %d in all; counted as %d",
            read + write,
            inp,
            inp,
        )
        read = min(read, inp)
        write = inp - read if read + write > inp else write
    usage = usage_dict(
        inp,
        out,
        cache_read=read,
        cache_write=write,
        reasoning=count(reasoning),
        total=count(total) or inp + out,
        raw=raw,
    )
    usage.update({k: v for k, v in extra.items() if v is not None})
    usage["raw"] = usage.pop("raw")
    return usage


# -- the endpoint base -------------------------------------------------------------------------
class ChunkTranslator:
    """Turns one run's CLI events into chunks; one instance per run (it may keep state)."""

    def __init__(self) -> None:
        #: set once the run's failure was reported as an ``error`` chunk (or will be)
        self.error_reported = False

    def feed(self, event: dict[str, Any]) -> list[StreamChunk]:
        raise NotImplementedError

    def finish(self) -> list[StreamChunk]:
        """Chunks owed at the end of the output (a failure held back, for example)."""
        return []

    def exit_message(self, code: int) -> str | None:
        """A clearer message for a known exit code."""
        return None

    def error(self, message: str | None, **metadata: Any) -> StreamChunk:
        self.error_reported = True
        text = (message or "").strip() or "(empty error)"
        return StreamChunk(type="error", content=text, metadata=metadata)


class SubprocessCLIEndpoint(CLIEndpoint):
    """A CLI agent found on ``PATH`` (or at ``cli_path``) and run once per request.

    Settings shared by every CLI: ``cli_path`` (executable name or path), ``cwd`` (working
    directory of the agent), ``terminate_grace`` (seconds between SIGTERM and SIGKILL). The
    only request option is ``timeout`` (seconds; the run's absolute deadline).
    """

    executable: ClassVar[str] = ""
    install_hint: ClassVar[str] = ""
    request_options: ClassVar[frozenset[str]] = frozenset({"timeout"})

    def __init__(
        self,
        model: str = "",
        *,
        cli_path: str | os.PathLike[str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        terminate_grace: float = DEFAULT_GRACE,
        **options: Any,
    ):
        unknown = sorted(set(options) - self.request_options)
        if unknown:
            raise ConfigurationError(
                f"`{self.provider}` does not take {', '.join(f'`{k}`' for k in unknown)}. "
                f"Its settings are: {', '.join(f'`{k}`' for k in self.setting_names())}."
            )
        super().__init__(model or "", **options)
        self.cli_path = os.fspath(cli_path) if cli_path is not None else None
        self.cwd = os.fspath(cwd) if cwd is not None else None
        self.terminate_grace = float(terminate_grace)
        self._runs: weakref.WeakSet[Any] = weakref.WeakSet()  # this endpoint's open streams
        self._groups: set[int] = set()  # process groups its runs started

    def __deepcopy__(self, memo: dict[int, Any]) -> SubprocessCLIEndpoint:
        """The same settings, none of the runs (a copy starts its own processes)."""
        clone = copy.copy(self)
        clone.options = copy.deepcopy(self.options, memo)
        clone._runs, clone._groups = weakref.WeakSet(), set()
        return clone

    async def aclose(self) -> None:
        """Stop every run of this endpoint that is still going, and its processes.

        An open stream is closed (its process group gets SIGTERM, then SIGKILL after the
        grace); a stream busy in another task cannot be closed from here, so its group is
        killed at once and that task sees its CLI end.
        """
        for run in list(self._runs):
            try:
                await run.aclose()
            except RuntimeError:  # running in another task right now
                pass
            except Exception:
                log.warning("closing a `%s` run failed", self.executable, exc_info=True)
        for pgid in [g for g in self._groups if g in LIVE_GROUPS]:
            kill_group(pgid)
        self._groups.clear()

    @classmethod
    def setting_names(cls) -> list[str]:
        return ["cli_path", "cwd", "terminate_grace", "timeout"]

    # -- what a subclass provides ----------------------------------------------------------
    def build_args(self, request: CLIRequest) -> list[str]:
        """The arguments after the executable."""
        raise NotImplementedError

    def new_translator(self) -> ChunkTranslator:
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------------------------
    @property
    def model_flag(self) -> str | None:
        """The model to name on the command line; ``""`` and ``"default"`` leave it to the CLI."""
        return None if self.model in ("", "default") else self.model

    def config(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.cli_path is not None:
            data["cli_path"] = self.cli_path
        if self.cwd is not None:
            data["cwd"] = self.cwd
        if self.terminate_grace != DEFAULT_GRACE:
            data["terminate_grace"] = self.terminate_grace
        return data

    def resolve_executable(self) -> str:
        """The executable's full path, looked up now (so a later install is seen)."""
        target = self.cli_path or self.executable
        found = shutil.which(target)
        if found is not None:
            return found
        if self.cli_path:
            raise ConfigurationError(
                f"`{self.cli_path}` (the `cli_path=` of `{self.provider}`) is not an "
                f"executable. Point `cli_path=` at the `{self.executable}` executable."
            )
        raise ConfigurationError(
            f"`{self.executable}` was not found on PATH. {self.install_hint} Or pass "
            f'`cli_path="/path/to/{self.executable}"` to `iModel(provider="{self.provider}", ...)`.'
        )

    def _reject_images(self, request: CLIRequest) -> None:
        if request.images:
            raise ConfigurationError(
                f"`{self.provider}` cannot take images from `CLIRequest.images`; mention the "
                "file paths in the prompt instead so the agent reads them itself."
            )

    def stream(self, request: CLIRequest) -> AsyncGenerator[StreamChunk, None]:
        """Run the CLI once; closing this generator stops the CLI and its children (and so
        does closing the endpoint, see `aclose`)."""
        run = self._stream(request)
        self._runs.add(run)
        return run

    async def _stream(self, request: CLIRequest) -> AsyncGenerator[StreamChunk, None]:
        argv = [self.resolve_executable(), *self.build_args(request)]
        timeout = {**self.options, **request.options}.get("timeout")
        translator = self.new_translator()
        self._groups.intersection_update(LIVE_GROUPS)  # forget groups already stopped
        events = run_cli(
            argv,
            name=self.executable,
            provider=self.provider,
            cwd=self.cwd,
            deadline=deadline_from_timeout(timeout),
            grace=self.terminate_grace,
            error_reported=lambda: translator.error_reported,
            exit_message=translator.exit_message,
            started=self._groups.add,
        )
        async with aclosing(events):
            async for event in events:
                for chunk in self._translate(translator, event):
                    self._observe(chunk)
                    yield chunk
        for chunk in self._translate(translator, None):
            self._observe(chunk)
            yield chunk

    def _translate(
        self, translator: ChunkTranslator, event: dict[str, Any] | None
    ) -> list[StreamChunk]:
        """The event's chunks (``None``: the end's); a translator failure becomes a `CLIError`."""
        try:
            return translator.feed(event) if event is not None else translator.finish()
        except Exception as exc:
            what = f"a `{event.get('type')}` event" if event is not None else "its last events"
            detail = redact(f"{type(exc).__name__}: {exc}")[:300]
            raise CLIError(
                f"`{self.executable}` printed {what} in a shape that could not be read "
                f"({detail}); the run was stopped. Its output format may have changed: check "
                f"the `{self.executable}` version, or pass `cli_path=` to use another.",
                provider=self.provider,
            ) from exc

    def _observe(self, chunk: StreamChunk) -> None:
        session_id = chunk.metadata.get("session_id")
        if session_id:  # an ended or failed session can still be resumed
            self.session_id = session_id
        if chunk.type == "text" and chunk.content:
            emit_text_delta(chunk.content)
        elif chunk.type == "thinking" and chunk.content:
            emit_thinking_delta(chunk.content)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, cli_path={self.cli_path!r})"


def positional(prompt: str) -> list[str]:
    """The prompt as the last argument, after ``--`` when it could pass for a flag."""
    return ["--", prompt] if prompt.startswith("-") else [prompt]


def with_system(request: CLIRequest) -> str:
    """The prompt with the system text before it, for CLIs without a system-prompt flag."""
    if request.system:
        return f"{request.system.strip()}\n\n{request.prompt}"
    return request.prompt
