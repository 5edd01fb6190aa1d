"""``session.resume_batch(id)``: take up a provider batch, or a whole job, after a restart.

``id`` is one provider batch's id (its items alone are resumed, as they were submitted) or
a job's id (``run.job_id``: every batch of the job, and the items not sent yet, which are
sent now). The run is rebuilt from the saved records (`batch_records`): the model from its
settings (the key from the environment, or ``model=``), the source branch from its
snapshot, each item under its saved branch id and name. Every batch is collected again from
the provider's result file: an item's row is written again whole, so nothing is recorded
twice however often a job is resumed.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigurationError
from ._batch_items import Price
from .batch import _check_operation, _resolve_model
from .batch_api import Part, ProviderRun
from .batch_records import book_for, loaded_kwargs

__all__ = ["resume_batch"]


def resume_batch(
    session: Any,
    batch_id: str,
    *,
    model: Any = None,
    poll_interval: float | None = None,
    poll_timeout: float | None = None,
    **kwargs: Any,
) -> ProviderRun:
    """Rebuild the run of a saved provider batch or job in ``session`` and start it."""
    from ..models.imodel import iModel
    from .branch import Branch

    book = book_for(session)
    record = book.load(batch_id)
    job = record if record.get("kind") == "job" else None
    parts = [book.load(b) for b in job["parts"]] if job else [record]
    if not parts:
        raise ConfigurationError(
            f"The job `{batch_id}` sent no provider batch before it stopped; run it again."
        )
    first = parts[0]
    chosen = _resolve_model(model) if model is not None else iModel.from_dict(first["model"])
    source = Branch.from_dict(first["source"])
    saved = loaded_kwargs(first.get("kwargs") or {}, kwargs)
    if job:  # indexed as in the job: every item, sent or not
        total = int(job["total"])
        entries = {e["index"]: e for p in parts for e in p.get("items") or []}
        items: list[Any] = [None] * total
        for line in getattr(book, "read_lines", lambda _id: ())(job["batch_id"]):
            items[line["index"]] = line.get("item")
        for index, entry in entries.items():
            items[index] = entry.get("item")
    else:  # the batch's own items, in the order they were sent
        entries = dict(enumerate(first.get("items") or []))
        items = [e.get("item") for e in entries.values()]
    run = ProviderRun.__new__(ProviderRun)
    run._init_state(
        session,
        source,
        items,
        name=first.get("run") or f"batch-{batch_id}",
        instruction=job.get("instruction") if job else None,
        operation=first.get("operation", "communicate"),
        kwargs=saved,
        model=chosen,
        concurrency=1,
        column=first.get("column") or "result",
        price=Price.of(first.get("price")),
        data=items,
        kind="list",
    )
    _check_operation(run.operation)
    run._setup(poll_interval, poll_timeout)
    if job:
        run.job_id = job["batch_id"]
    for saved_part in parts:
        indices = []
        for position, entry in enumerate(saved_part.get("items") or []):
            index = entry["index"] if job else position
            result = run.items[index]
            result.custom_id = entry["custom_id"]
            result.attempts = 1
            run._prompts[index] = entry["prompt"]
            run._branch_ids[index] = entry["branch_id"]
            if entry.get("name"):
                run._names[index] = entry["name"]
            run._set_status(result, "running")
            indices.append(index)
        run.parts.append(Part(indices, batch_id=saved_part["batch_id"], saved=True))
    if job and job.get("streamed"):
        why = (
            "not sent before the kernel stopped, and the input was streamed (its rows are "
            "not kept until they are sent): map the rows from this one on again"
        )
    elif job and job.get("instruction") is None:
        why = (
            "not sent before the kernel stopped, and its prompt came from a function: "
            "`run.retry()` after `run.instruction = <the function>` sends it"
        )
    else:
        why = None
    if why is not None:
        for result in run.items:  # not sent, and nothing to make their prompts again from
            if result.status == "pending":
                result.error = ConfigurationError(why)
                run._set_status(result, "failed")
    return run.start()  # type: ignore[return-value]
