"""The batch wire (`lion_nb.models.endpoints.batches`) against the emulated services: what is
sent, how states and results are read, typed errors, retries, and where the key may go."""

from __future__ import annotations

import email.parser
import json

import anyio
import pytest

from lion_nb.errors import (
    AuthenticationError,
    ConfigurationError,
    OverloadedError,
    RateLimitError,
    ServerError,
)
from lion_nb.models.batch_service import batch_service
from lion_nb.models.endpoints.base import ChatRequest
from lion_nb.models.endpoints.batches import BatchOutcome, BatchStatus
from lion_nb.models.imodel import iModel
from tests.fakes.batch_api import BatchEmulator


def request(text: str, **options) -> ChatRequest:
    return ChatRequest(
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}],
        options=options,
    )


def openai(fake, **kw) -> iModel:
    return iModel(provider="openai", model="gpt-x", base_url=fake.openai_url, **kw)


def anthropic(fake, **kw) -> iModel:
    return iModel(provider="anthropic", model="claude-x", base_url=fake.anthropic_url, **kw)


def run(coro_fn, *args):
    return anyio.run(coro_fn, *args)


def collect(agen_fn, *args) -> list:
    """Everything an async generator yields (results stream as the file is read)."""

    async def main():
        return [item async for item in agen_fn(*args)]

    return anyio.run(main)


def test_openai_sends_a_jsonl_file_then_a_batch_with_live_bodies(http_fake):
    BatchEmulator(http_fake)
    service = batch_service(openai(http_fake, temperature=0.2, api_key="test-key-openai-0000"))
    status = run(service.submit, [("item-0", request("a")), ("item-1", request("b"))], {"k": "v"})
    assert status.state == "submitted" and status.total == 2

    upload, create = http_fake.requests[:2]
    assert (upload.method, upload.path, create.path) == ("POST", "/v1/files", "/v1/batches")
    assert upload.headers["authorization"] == "Bearer test-key-openai-0000"
    form = email.parser.BytesParser().parsebytes(
        f"Content-Type: {upload.headers['content-type']}\r\n\r\n".encode() + upload.raw
    )
    parts = {p.get_param("name", header="content-disposition"): p for p in form.walk()}
    assert parts["purpose"].get_payload(decode=True) == b"batch"
    lines = [json.loads(line) for line in parts["file"].get_payload(decode=True).splitlines()]
    assert [line["custom_id"] for line in lines] == ["item-0", "item-1"]
    assert {(line["method"], line["url"]) for line in lines} == {("POST", "/v1/chat/completions")}
    body = lines[1]["body"]
    assert body["model"] == "gpt-x" and body["temperature"] == 0.2
    assert body["messages"][-1] == {"role": "user", "content": "b"}
    assert "stream" not in body and "stream_options" not in body
    assert create.body == {
        "input_file_id": upload_id(http_fake),
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
        "metadata": {"k": "v"},
    }


def upload_id(fake) -> str:
    return next(r for r in fake.requests if r.path == "/v1/batches").body["input_file_id"]


def test_openai_states_counts_and_results(http_fake):
    BatchEmulator(http_fake, fail=lambda cid, _b: cid == "item-1", polls_to_finish=2)
    service = batch_service(openai(http_fake))
    submitted = run(service.submit, [(f"item-{i}", request(f"q{i}")) for i in range(3)], None)
    running = run(service.status, submitted.id)
    assert (running.state, running.ended) == ("running", False)
    ended = run(service.status, submitted.id)
    assert (ended.state, ended.succeeded, ended.failed, ended.processing) == ("ended", 2, 1, 0)
    outcomes = {o.custom_id: o for o in collect(service.results, ended)}
    assert sorted(outcomes) == ["item-0", "item-1", "item-2"]
    answer = service.decode(request("q0"), outcomes["item-0"])
    assert answer.text == "answer: q0" and answer.usage["total_tokens"] == 14
    assert answer.request_id.startswith("req_")
    with pytest.raises(Exception) as caught:
        service.decode(request("q1"), outcomes["item-1"])
    assert type(caught.value).__name__ == "BadRequestError" and caught.value.status == 400


def test_openai_error_lines_of_both_shapes_become_typed_errors(http_fake):
    service = batch_service(openai(http_fake))
    limited = service._outcome(
        {
            "custom_id": "a",
            "response": {
                "status_code": 429,
                "request_id": "req_1",
                "body": {"error": {"message": "slow down", "type": "rate_limit_error"}},
            },
            "error": None,
        }
    )
    assert isinstance(limited.error, RateLimitError) and limited.error.request_id == "req_1"
    expired = service._outcome(
        {"custom_id": "b", "response": None, "error": {"code": "batch_expired", "message": "late"}}
    )
    assert "late" in str(expired.error)


def test_anthropic_sends_one_request_with_live_params(http_fake):
    BatchEmulator(http_fake)
    service = batch_service(anthropic(http_fake, api_key="test-key-anthropic-0000"))
    status = run(service.submit, [("item-0", request("hello", stop="END"))], None)
    assert status.state == "running" and status.id.startswith("msgbatch_")
    sent = http_fake.requests[0]
    assert sent.path == "/v1/messages/batches"
    assert (
        sent.headers["anthropic-version"] and sent.headers["x-api-key"] == "test-key-anthropic-0000"
    )
    params = sent.body["requests"][0]["params"]
    cached = {"cache_control": {"type": "ephemeral"}}  # prompt caching is on by default
    assert params["system"] == [{"type": "text", "text": "Be brief.", **cached}]
    assert params["max_tokens"] == 4096
    assert params["stop_sequences"] == ["END"] and "stream" not in params
    assert params["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hello", **cached}]}
    ]


def test_anthropic_results_succeeded_errored_and_cancelled(http_fake):
    BatchEmulator(http_fake, fail=lambda cid, _b: cid == "b", polls_to_finish=1)
    service = batch_service(anthropic(http_fake))
    submitted = run(service.submit, [(c, request(c)) for c in ("a", "b")], None)
    ended = run(service.status, submitted.id)
    assert (ended.state, ended.succeeded, ended.failed) == ("ended", 1, 1)
    outcomes = {o.custom_id: o for o in collect(service.results, ended)}
    assert service.decode(request("a"), outcomes["a"]).text == "answer: a"
    assert type(outcomes["b"].error).__name__ == "BadRequestError"
    overloaded = service._outcome(
        {
            "custom_id": "c",
            "result": {
                "type": "errored",
                "error": {
                    "type": "error",
                    "error": {"type": "overloaded_error", "message": "busy"},
                },
            },
        }
    )
    assert isinstance(overloaded.error, OverloadedError)
    cancelled = service._outcome({"custom_id": "d", "result": {"type": "canceled"}})
    assert cancelled.cancelled and "cancelled" in str(cancelled.error)


def test_anthropic_cancel(http_fake):
    emulator = BatchEmulator(http_fake, polls_to_finish=10)
    service = batch_service(anthropic(http_fake))
    submitted = run(service.submit, [("a", request("a"))], None)
    assert run(service.cancel, submitted.id).state == "cancelling"
    assert run(service.status, submitted.id).state == "cancelled"
    assert emulator.batches[submitted.id].state == "cancelled"


def test_the_key_never_goes_to_a_results_url_on_another_host(http_fake):
    BatchEmulator(http_fake, polls_to_finish=1)
    service = batch_service(anthropic(http_fake))
    submitted = run(service.submit, [("a", request("a"))], None)
    ended = run(service.status, submitted.id)
    elsewhere = BatchStatus(
        ended.id, "ended", raw={**ended.raw, "results_url": "http://203.0.113.9/steal"}
    )
    outcomes = collect(service.results, elsewhere)
    assert [o.custom_id for o in outcomes] == ["a"]
    assert http_fake.requests[-1].path == f"/v1/messages/batches/{ended.id}/results"


def test_a_transient_error_is_retried_as_for_a_live_call(http_fake):
    BatchEmulator(http_fake)
    service = batch_service(openai(http_fake, max_retries=2))
    submitted = run(service.submit, [("a", request("a"))], None)
    http_fake.push_error(503, headers={"retry-after-ms": "10"})
    assert run(service.status, submitted.id).id == submitted.id  # the second attempt
    http_fake.push_error(503, headers={"retry-after-ms": "10"})
    http_fake.push_error(503, headers={"retry-after-ms": "10"})
    http_fake.push_error(503, headers={"retry-after-ms": "10"})
    with pytest.raises(ServerError, match=r"retries"):
        run(service.status, submitted.id)


def test_a_missing_key_is_reported_before_anything_is_sent():
    service = batch_service(iModel(provider="openai", model="gpt-x"))
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
        run(service.submit, [("a", request("a"))], None)


def test_models_without_a_batch_service_are_refused():
    with pytest.raises(ConfigurationError, match="batch service"):
        batch_service(iModel("offline/auto"))
    assert BatchOutcome("x").error is None
