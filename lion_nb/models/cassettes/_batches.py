"""Provider batches (``map(..., via="batch")``) through a cassette: one exchange per batch.

A batch leaves the process as one upload and comes back as one file of results, so the
whole batch is one exchange. Its request is every item's normalized chat request in order,
with its ``custom_id`` (`_format.batch_request`), so a changed prompt is named as
``items[1].messages[1].content``; its response is the batch's final status and the
provider's result lines as they were read. `CassetteBatches` stands in front of a
`BatchService` with the same calls:

- **recording**: submit, poll and read the results live; the exchange is written when the
  results have been read (a batch detached or failed before that is not written -- as with
  any call, only complete exchanges are);
- **replaying**: ``submit`` takes the recording before anything is sent and hands back the
  recorded batch id; ``status`` and ``cancel`` report the batch ended as recorded;
  ``results`` parses the recorded lines with the service's own parser. Each item's answer is
  then decoded by the endpoint, and its branch recorded, exactly as in the recorded run. A
  batch resumed by id (``resume_batch``) is looked up by its recorded id;
- a batch with no recording raises `CassetteError` in ``submit``, naming the differing
  fields, before any byte goes out; a batch id that a replay-only cassette does not hold is
  refused the same way instead of being polled.

The cassette is chosen when the service is made (`batch_service`, when ``session.map`` or
``resume_batch`` builds its run) by the rule every model call follows (`scope.cassette_for`),
so ``LION_NB_CASSETTE_MODE=none`` with no cassette refuses the batch there, at once. A
batch resumed while recording is polled and read live but not written: the requests it was
made of are not known to this process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio.lowlevel

from ._format import batch_request, status_from_json, status_to_json
from ._modes import ENV_MODE
from .recording import Cassette, CassetteError

__all__ = ["CassetteBatches"]


class CassetteBatches:
    """A `BatchService` whose batches are recorded in, or replayed from, ``tape``; every
    other attribute (``endpoint``, ``decode``, ...) is the service's own."""

    def __init__(self, service: Any, imodel: Any, tape: Cassette):
        self.service = service
        self.imodel = imodel
        self.tape = tape
        self._replays: dict[str, dict[str, Any]] = {}  # batch id -> the recorded exchange
        self._recording: dict[str, dict[str, Any]] = {}  # batch id -> its normalized request

    def __getattr__(self, name: str) -> Any:
        service = self.__dict__.get("service")  # absent while an object is being built
        if service is None:
            raise AttributeError(name)
        return getattr(service, name)

    def __repr__(self) -> str:
        return f"CassetteBatches({self.service.__class__.__name__}, {self.tape!r})"

    async def submit(
        self, requests: list[tuple[str, Any]], metadata: dict[str, str] | None = None
    ) -> Any:
        from ..endpoints.batches import BatchStatus

        normalized = batch_request(self.imodel, requests)
        label = f"{self.imodel.provider}/{self.imodel.model}"
        entry = self.tape.take("batch", normalized, label, self.imodel)
        if entry is not None:
            recorded = entry.data()
            await anyio.lowlevel.checkpoint()  # a replay is a call: it yields
            final = status_from_json(recorded["batch"])
            self._replays[final.id] = recorded
            return BatchStatus(id=final.id, state="submitted", total=final.total)
        status = await self.service.submit(requests, metadata)
        self._recording[status.id] = normalized
        return status

    async def status(self, batch_id: str) -> Any:
        recorded = self._replayed(batch_id)
        if recorded is None:
            return await self.service.status(batch_id)
        await anyio.lowlevel.checkpoint()
        return status_from_json(recorded["batch"])

    async def cancel(self, batch_id: str) -> Any:
        """A replayed batch has ended already, as recorded: there is nothing to cancel."""
        recorded = self._replayed(batch_id)
        if recorded is None:
            return await self.service.cancel(batch_id)
        await anyio.lowlevel.checkpoint()
        return status_from_json(recorded["batch"])

    async def results(self, status: Any) -> AsyncIterator[Any]:
        """The outcomes, as the service yields them; a live batch's lines are kept (the
        exchange is their list) and written once the last one has been read."""
        recorded = self._replayed(status.id)
        if recorded is not None:
            await anyio.lowlevel.checkpoint()
            for line in recorded["results"]:
                yield self.service.outcome(line)
            return
        lines: list[dict[str, Any]] = []
        async for line in self.service.result_lines(status):
            lines.append(line)
            yield self.service.outcome(line)
        normalized = self._recording.pop(status.id, None)
        if normalized is not None:
            payload = {"batch": status_to_json(status), "results": lines}
            self.tape.record("batch", normalized, payload)

    def _replayed(self, batch_id: str) -> dict[str, Any] | None:
        """The recorded exchange of ``batch_id``; ``None`` when it runs live."""
        if batch_id in self._replays:
            return self._replays[batch_id]
        if batch_id in self._recording:
            return None
        entry = self.tape.find("batch", lambda data: data["batch"]["id"] == batch_id)
        if entry is not None:  # resumed, not submitted here
            self._replays[batch_id] = recorded = entry.data()
            return recorded
        if self.tape.replay_only:
            mode = self.tape.effective_mode
            forced = f", forced by `{ENV_MODE}`" if mode != self.tape.mode else ""
            raise CassetteError(
                f"Cassette `{self.tape.path}` (mode `{mode}`{forced}: replay only) holds no "
                f"recording of batch `{batch_id}`, so it is not polled. Record the run that "
                f"submits it (mode `new` or `all`), or unset `{ENV_MODE}` to poll the provider."
            )
        return None
