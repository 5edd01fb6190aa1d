"""The providers' batch services, played on a `FakeProvider` from their documented shapes.

``BatchEmulator(fake)`` adds routes for

- the OpenAI Batch API: ``POST /v1/files`` (multipart, ``purpose=batch``, a JSONL file of
  ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``, or every line
  to ``/v1/responses`` with a Responses API body, answered with a Responses object that has
  a reasoning item; a batch's ``endpoint`` must be its lines' ``url``),
  ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel`` and
  ``GET /v1/files/{id}/content`` (output and error files, one
  ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}`` a line);
- Anthropic Message Batches: ``POST /v1/messages/batches`` (``{"requests": [{"custom_id",
  "params"}]}``), ``GET /v1/messages/batches/{id}``, ``POST .../{id}/cancel`` and
  ``GET .../{id}/results`` (``{"custom_id", "result": {"type": "succeeded" | "errored" |
  "canceled", ...}}`` a line).

Requests are checked as the services check them (required fields, unique custom ids, the
Anthropic id pattern and version header, no streaming), and a violation is a 400 with the
provider's error shape. A batch moves from ``validating`` / ``in_progress`` to done after
``polls_to_finish`` status reads, with counts that grow on the way. Each request is answered
with ``answer(<its last user text>)`` (``answer: <text>`` by default); ``fail(custom_id,
body)`` picks requests that fail (each only the first time its prompt is seen, so a retry
succeeds). A batch over the provider's limits (OpenAI: 50,000 requests or 200 MB in a file;
Anthropic: 100,000 requests or 256 MB; ``limits=`` changes them) is refused with a 400, as
the providers refuse it.
"""

from __future__ import annotations

import email.parser
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .http_server import FakeProvider, Recorded, Script

__all__ = ["BatchEmulator"]

_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ids = itertools.count(1)


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(seconds))


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
    return ""


@dataclass
class _Batch:
    id: str
    provider: str  # "openai" | "anthropic"
    requests: list[tuple[str, dict[str, Any]]]  # (custom_id, body)
    created: float = field(default_factory=time.time)
    polls: int = 0
    state: str = "running"  # running | cancelling | cancelled | ended
    metadata: dict[str, Any] = field(default_factory=dict)
    input_file_id: str | None = None
    outcomes: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # None: errored
    output_file_id: str | None = None
    error_file_id: str | None = None
    endpoint: str = "/v1/chat/completions"


_OPENAI_ENDPOINTS = ("/v1/chat/completions", "/v1/responses")
#: requests and bytes per batch, as each provider documents them
LIMITS = {"openai": (50_000, 200 * 1024 * 1024), "anthropic": (100_000, 256 * 1024 * 1024)}


class BatchEmulator:
    """Both batch services on one fake server (see the module docstring)."""

    def __init__(
        self,
        fake: FakeProvider,
        *,
        fail: Callable[[str, dict[str, Any]], bool] | None = None,
        answer: Callable[[str], str] | None = None,
        polls_to_finish: int = 2,
        limits: dict[str, tuple[int, int]] | None = None,
    ):
        self.fake = fake
        self.limits = {**LIMITS, **(limits or {})}
        self.created = 0  # batches made so far
        self.refuse_from: int | None = None  # answer 503 to the batches made after this many
        #: hold the requests to make a batch after this many (counted as they arrive) until
        #: `release` is set: a kernel can be killed while its submission waits
        self.hold_from: int | None = None
        self.release = threading.Event()
        self._arrived = 0
        self.fail = fail or (lambda _cid, _body: False)
        self.answer = answer or (lambda text: f"answer: {text}")
        self.polls_to_finish = polls_to_finish
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, _Batch] = {}
        self.failed_once: set[str] = set()
        self._lock = threading.Lock()
        fake.routes.append(self.route)

    # -- routing ---------------------------------------------------------------------------------
    def route(self, rec: Recorded) -> Script | None:
        path, method = rec.path.split("?")[0], rec.method
        creating = method == "POST" and path in ("/v1/batches", "/v1/messages/batches")
        if creating and self.hold_from is not None:
            with self._lock:
                self._arrived += 1
                held = self._arrived > self.hold_from
            if held:
                self.release.wait(timeout=600)
        with self._lock:
            if path == "/v1/files" and method == "POST":
                return self._upload(rec)
            if creating and self.refuse_from is not None and self.created >= self.refuse_from:
                return Script(status=503, body={"error": {"message": "overloaded"}})
            if path == "/v1/batches" and method == "POST":
                return self._create_openai(rec.body)
            if m := re.fullmatch(r"/v1/files/([\w-]+)/content", path):
                return self._content(m.group(1))
            if m := re.fullmatch(r"/v1/batches/([\w-]+)(/cancel)?", path):
                return self._openai_batch(m.group(1), cancel=bool(m.group(2)))
            if path == "/v1/messages/batches" and method == "POST":
                return self._create_anthropic(rec)
            if m := re.fullmatch(r"/v1/messages/batches/([\w-]+)/results", path):
                return self._anthropic_results(m.group(1))
            if m := re.fullmatch(r"/v1/messages/batches/([\w-]+)(/cancel)?", path):
                return self._anthropic_batch(m.group(1), cancel=bool(m.group(2)))
        return None

    @staticmethod
    def _bad(message: str, provider: str = "openai", status: int = 400) -> Script:
        if provider == "anthropic":
            body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        else:
            body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
        return Script(status=status, body=body)

    # -- answering one request -------------------------------------------------------------------
    def _answer(self, batch: _Batch, cid: str, body: dict[str, Any]) -> dict[str, Any] | None:
        text = _last_user_text(body.get("messages") or body.get("input") or [])
        if text not in self.failed_once and self.fail(cid, body):
            self.failed_once.add(text)
            return None
        answer = self.answer(text)
        if batch.provider == "anthropic":
            return {
                "id": f"msg_{batch.id}_{cid}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model"),
                "content": [{"type": "text", "text": answer}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 4},
            }
        if batch.endpoint == "/v1/responses":
            return _responses_answer(f"{batch.id}_{cid}", body.get("model"), text, answer)
        return {
            "id": f"chatcmpl-{batch.id}-{cid}",
            "object": "chat.completion",
            "created": int(batch.created),
            "model": body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14},
        }

    def _advance(self, batch: _Batch) -> None:
        """One status read: the batch moves on; at the end every request has its outcome."""
        batch.polls += 1
        if batch.state == "cancelling":
            batch.state = "cancelled"
        elif batch.state == "running" and batch.polls >= self.polls_to_finish:
            batch.state = "ended"
        if batch.state in ("ended", "cancelled") and not batch.outcomes:
            done = self._progressed(batch)
            for i, (cid, body) in enumerate(batch.requests):
                if i < done:
                    batch.outcomes[cid] = self._answer(batch, cid, body)
            if batch.provider == "openai":
                self._write_openai_files(batch)

    def _progressed(self, batch: _Batch) -> int:
        if batch.state == "ended":
            return len(batch.requests)
        share = min(batch.polls, self.polls_to_finish) / max(self.polls_to_finish, 1)
        return int(len(batch.requests) * share / 2)

    def _counts(self, batch: _Batch) -> tuple[int, int, int]:
        """(succeeded, errored, processing) as the service would report them now."""
        if batch.outcomes or batch.state in ("ended", "cancelled"):
            ok = sum(1 for o in batch.outcomes.values() if o is not None)
            bad = sum(1 for o in batch.outcomes.values() if o is None)
            return ok, bad, 0
        done = self._progressed(batch)
        return done, 0, len(batch.requests) - done

    # -- OpenAI ----------------------------------------------------------------------------------
    def _upload(self, rec: Recorded) -> Script:
        ctype = rec.headers.get("content-type", "")
        message = email.parser.BytesParser().parsebytes(
            f"Content-Type: {ctype}\r\n\r\n".encode() + rec.raw
        )
        parts = {p.get_param("name", header="content-disposition"): p for p in message.walk()}
        purpose = parts.get("purpose")
        upload = parts.get("file")
        if purpose is None or purpose.get_payload(decode=True) != b"batch" or upload is None:
            return self._bad("a batch file needs `purpose=batch` and a `file` part")
        data = upload.get_payload(decode=True)
        most, most_bytes = self.limits["openai"]
        if len(data) > most_bytes or data.count(b"\n") > most:
            return self._bad(f"a batch file holds at most {most} requests and {most_bytes} bytes")
        seen: set[str] = set()
        for number, line in enumerate(data.decode().splitlines(), 1):
            try:
                row = json.loads(line)
            except ValueError:
                return self._bad(f"line {number} is not JSON")
            cid = row.get("custom_id")
            if not isinstance(cid, str) or cid in seen:
                return self._bad(f"line {number}: a missing or repeated `custom_id`")
            seen.add(cid)
            body = row.get("body") or {}
            url = row.get("url")
            if row.get("method") != "POST" or url not in _OPENAI_ENDPOINTS:
                return self._bad(
                    f"line {number}: `method` POST and `url` one of {_OPENAI_ENDPOINTS}"
                )
            field = "input" if url == "/v1/responses" else "messages"
            if "model" not in body or field not in body or body.get("stream"):
                return self._bad(f"line {number}: `body` needs `model` and `{field}`, no stream")
        file_id = f"file-{next(_ids)}"
        self.files[file_id] = data
        return Script(
            body={
                "id": file_id,
                "object": "file",
                "bytes": len(data),
                "created_at": int(time.time()),
                "filename": upload.get_filename(),
                "purpose": "batch",
            }
        )

    def _create_openai(self, body: Any) -> Script:
        if not isinstance(body, dict) or body.get("input_file_id") not in self.files:
            return self._bad("`input_file_id` must name an uploaded file")
        endpoint = body.get("endpoint")
        if endpoint not in _OPENAI_ENDPOINTS or body.get("completion_window") != "24h":
            return self._bad(f"`endpoint` one of {_OPENAI_ENDPOINTS} and `completion_window` 24h")
        lines = self.files[body["input_file_id"]].decode().splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
        if any(r.get("url") != endpoint for r in rows):
            return self._bad(f"The batch's lines must all have `url` {endpoint}.")
        batch = _Batch(
            id=f"batch_{next(_ids)}",
            provider="openai",
            requests=[(r["custom_id"], r["body"]) for r in rows],
            metadata=body.get("metadata") or {},
            input_file_id=body["input_file_id"],
            endpoint=endpoint,
        )
        self.batches[batch.id] = batch
        self.created += 1
        return Script(body=self._openai_object(batch, status="validating"))

    def _openai_batch(self, batch_id: str, *, cancel: bool) -> Script:
        batch = self.batches.get(batch_id)
        if batch is None or batch.provider != "openai":
            return self._bad(f"No batch found with id '{batch_id}'.", status=404)
        if cancel:
            if batch.state == "running":
                batch.state = "cancelling"
        else:
            self._advance(batch)
        return Script(body=self._openai_object(batch))

    def _openai_object(self, batch: _Batch, status: str | None = None) -> dict[str, Any]:
        ok, bad, _processing = self._counts(batch)
        state = (
            status
            or {
                "running": "in_progress",
                "cancelling": "cancelling",
                "cancelled": "cancelled",
                "ended": "completed",
            }[batch.state]
        )
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "errors": None,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": state,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "created_at": int(batch.created),
            "in_progress_at": None,
            "expires_at": int(batch.created) + 86400,
            "finalizing_at": None,
            "completed_at": None,
            "failed_at": None,
            "expired_at": None,
            "cancelling_at": None,
            "cancelled_at": None,
            "request_counts": {"total": len(batch.requests), "completed": ok, "failed": bad},
            "metadata": batch.metadata,
        }

    def _write_openai_files(self, batch: _Batch) -> None:
        out, err = [], []
        for n, (cid, answer) in enumerate(batch.outcomes.items()):
            rid = f"req_{batch.id}_{n}"
            if answer is not None:
                line = {"status_code": 200, "request_id": rid, "body": answer}
                out.append(
                    {"id": f"batch_req_{n}", "custom_id": cid, "response": line, "error": None}
                )
            else:
                body = {"error": {"message": "injected failure", "type": "invalid_request_error"}}
                line = {"status_code": 400, "request_id": rid, "body": body}
                err.append(
                    {"id": f"batch_req_{n}", "custom_id": cid, "response": line, "error": None}
                )
        for rows, attr in ((out, "output_file_id"), (err, "error_file_id")):
            if rows:
                file_id = f"file-{next(_ids)}"
                rows.reverse()  # results come in no particular order
                self.files[file_id] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                setattr(batch, attr, file_id)

    def _content(self, file_id: str) -> Script:
        if file_id not in self.files:
            return self._bad(f"No such File object: {file_id}", status=404)
        return Script(body=self.files[file_id], content_type="application/octet-stream")

    # -- Anthropic -------------------------------------------------------------------------------
    def _create_anthropic(self, rec: Recorded) -> Script:
        if not rec.headers.get("anthropic-version"):
            return self._bad("anthropic-version: header is required", "anthropic")
        requests = (rec.body or {}).get("requests") if isinstance(rec.body, dict) else None
        if not isinstance(requests, list) or not requests:
            return self._bad("requests: Field required", "anthropic")
        most, most_bytes = self.limits["anthropic"]
        if len(requests) > most or len(rec.raw) > most_bytes:
            return self._bad(
                f"a batch holds at most {most} requests and {most_bytes} bytes", "anthropic"
            )
        seen: set[str] = set()
        for i, entry in enumerate(requests):
            cid, params = entry.get("custom_id"), entry.get("params") or {}
            if not isinstance(cid, str) or not _CUSTOM_ID.match(cid) or cid in seen:
                return self._bad(f"requests.{i}.custom_id: invalid or repeated", "anthropic")
            seen.add(cid)
            missing = [k for k in ("model", "max_tokens", "messages") if k not in params]
            if missing or params.get("stream"):
                return self._bad(f"requests.{i}.params: {missing or 'stream'}", "anthropic")
        batch = _Batch(
            id=f"msgbatch_{next(_ids):06d}",
            provider="anthropic",
            requests=[(e["custom_id"], e["params"]) for e in requests],
        )
        self.batches[batch.id] = batch
        self.created += 1
        return Script(body=self._anthropic_object(batch))

    def _anthropic_batch(self, batch_id: str, *, cancel: bool) -> Script:
        batch = self.batches.get(batch_id)
        if batch is None or batch.provider != "anthropic":
            return self._bad(f"Batch {batch_id} not found", "anthropic", status=404)
        if cancel:
            if batch.state == "running":
                batch.state = "cancelling"
        else:
            self._advance(batch)
        return Script(body=self._anthropic_object(batch))

    def _anthropic_object(self, batch: _Batch) -> dict[str, Any]:
        ok, bad, processing = self._counts(batch)
        ended = batch.state in ("ended", "cancelled")
        canceled = len(batch.requests) - ok - bad if batch.state == "cancelled" else 0
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": {"running": "in_progress", "cancelling": "canceling"}.get(
                batch.state, "ended"
            ),
            "request_counts": {
                "processing": processing,
                "succeeded": ok,
                "errored": bad,
                "canceled": canceled,
                "expired": 0,
            },
            "ended_at": _iso(time.time()) if ended else None,
            "created_at": _iso(batch.created),
            "expires_at": _iso(batch.created + 86400),
            "cancel_initiated_at": _iso(time.time())
            if batch.state in ("cancelling", "cancelled")
            else None,
            "results_url": f"{self.fake.url}/v1/messages/batches/{batch.id}/results"
            if ended
            else None,
            "archived_at": None,
        }

    def _anthropic_results(self, batch_id: str) -> Script:
        batch = self.batches.get(batch_id)
        if batch is None or batch.state not in ("ended", "cancelled"):
            return self._bad(f"Batch {batch_id} has not ended", "anthropic", status=404)
        rows = []
        for cid, _body in reversed(batch.requests):  # results come in no particular order
            if cid not in batch.outcomes:
                rows.append({"custom_id": cid, "result": {"type": "canceled"}})
            elif batch.outcomes[cid] is None:
                error = {"type": "invalid_request_error", "message": "injected failure"}
                rows.append(
                    {
                        "custom_id": cid,
                        "result": {"type": "errored", "error": {"type": "error", "error": error}},
                    }
                )
            else:
                rows.append(
                    {
                        "custom_id": cid,
                        "result": {"type": "succeeded", "message": batch.outcomes[cid]},
                    }
                )
        data = "".join(json.dumps(r) + "\n" for r in rows).encode()
        return Script(body=data, content_type="application/binary")


def _responses_answer(tag: str, model: Any, prompt: str, text: str) -> dict[str, Any]:
    """A Responses API object answering ``prompt`` with ``text``, after an encrypted
    reasoning item."""
    return {
        "id": f"resp_{tag}",
        "object": "response",
        "created_at": 1760000000,
        "status": "completed",
        "model": model,
        "output": [
            {
                "id": f"rs_{tag}",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": f"Thinking about {prompt[:20]}"}],
                "encrypted_content": f"gAAAAAB{tag}",
            },
            {
                "id": f"msg_{tag}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "annotations": [], "text": text}],
            },
        ],
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 16},
            "total_tokens": 30,
        },
    }
