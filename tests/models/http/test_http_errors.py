"""Error mapping: status and both OpenAI-compatible body shapes to typed errors."""

from __future__ import annotations

import pytest

from lion_nb.errors import (
    AuthenticationError,
    BadRequestError,
    ContextWindowError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderError,
    QuotaExceededError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
)
from lion_nb.models.endpoints.base import ChatRequest
from lion_nb.models.imodel import iModel


def model(fake, **kw) -> iModel:
    return iModel(provider="vllm", model="m", base_url=fake.openai_url, max_retries=0, **kw)


def wrapped(message, type_="invalid_request_error", code=None):
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def flat(message, code):
    return {
        "object": "error",
        "message": message,
        "type": "BadRequestError",
        "param": None,
        "code": code,
    }


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (401, wrapped("Incorrect API key provided."), AuthenticationError),
        (403, wrapped("Not allowed"), PermissionDeniedError),
        (404, wrapped("The model `x` does not exist", code="model_not_found"), NotFoundError),
        (400, wrapped("bad"), BadRequestError),
        (422, {"detail": [{"msg": "field required"}]}, BadRequestError),
        (413, wrapped("prompt is too long: 210000 tokens > 200000 maximum"), ContextWindowError),
        (429, wrapped("Slow down", "requests", "rate_limit_exceeded"), RateLimitError),
        (429, wrapped("You exceeded your current quota", "insufficient_quota"), QuotaExceededError),
        (500, "<html>Internal Server Error</html>", ServerError),
        (
            529,
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            OverloadedError,
        ),
        (409, wrapped("conflict"), ProviderError),
    ],
)
def test_status_and_body_map_to_typed_errors(http_fake, invoke, status, body, expected):
    http_fake.push_error(status, body)
    call = invoke(model(http_fake))
    assert type(call.error) is expected
    assert call.error.status == status
    assert call.error.provider == "vllm"
    assert call.error.request_id == "req_fake_1"


def test_quota_is_read_from_the_structured_code_not_the_message(http_fake, invoke):
    http_fake.push_error(429, wrapped("Upgrade your plan: see billing", "tokens", "rate_limit"))
    http_fake.push_error(429, wrapped("Out of credit", "requests", "insufficient_quota"))
    loose, structured = invoke(model(http_fake)), invoke(model(http_fake))
    assert type(loose.error) is RateLimitError
    assert type(structured.error) is QuotaExceededError


@pytest.mark.parametrize(
    ("status", "expected", "fix"),
    [
        (500, ServerError, "raise `max_retries=` or try again later"),
        (429, RateLimitError, "raise `max_retries=` or slow down with `limit_requests=`"),
        (529, OverloadedError, "raise `max_retries=` or slow down with `limit_requests=`"),
    ],
)
def test_error_after_the_last_retry_says_so_and_names_the_fix(
    http_fake, invoke, status, expected, fix
):
    key = "sk-retry-hint-12345678"
    for _ in range(3):
        http_fake.push_error(
            status, wrapped(f"busy (key {key})", "server_error"), headers={"retry-after-ms": "5"}
        )
    m = iModel(provider="openai", model="m", base_url=http_fake.openai_url, api_key=key)
    call = invoke(m)
    assert type(call.error) is expected
    assert len(http_fake.requests) == 3
    assert f"(after 2 retries; {fix})" in str(call.error)
    assert str(call.error).endswith("(request id req_fake_3)")
    assert key not in str(call.error)


def test_error_without_retries_names_max_retries(http_fake, invoke):
    http_fake.push_error(429)
    call = invoke(model(http_fake))  # max_retries=0
    assert "(not retried, as `max_retries=0`; raise `max_retries=`" in str(call.error)


def test_errors_that_are_never_retried_get_no_retry_note(http_fake, invoke):
    http_fake.push_error(400, wrapped("bad"))
    http_fake.push_error(503, headers={"x-should-retry": "false"})
    retrying = iModel(provider="vllm", model="m", base_url=http_fake.openai_url)
    bad, refused = invoke(retrying), invoke(retrying)
    assert type(refused.error) is ServerError
    assert "retr" not in str(bad.error) and "retr" not in str(refused.error)
    assert len(http_fake.requests) == 2


def test_flat_vllm_error_shape_is_understood(http_fake, invoke):
    message = (
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."
    )
    http_fake.push_error(400, flat(message, 400))
    call = invoke(model(http_fake))
    assert isinstance(call.error, ContextWindowError)
    assert message in str(call.error)
    assert call.error.body["object"] == "error"


def test_flat_vllm_404(http_fake, invoke):
    http_fake.push_error(404, flat("The model `llama` does not exist.", 404))
    call = invoke(model(http_fake))
    assert isinstance(call.error, NotFoundError)
    assert "The model `llama` does not exist." in str(call.error)
    assert "`model=`" in str(call.error)  # the fix is named


def test_flat_vllm_error_in_a_stream(http_fake, invoke):
    http_fake.push_sse(['data: {"object":"error","message":"engine died","code":500}'])
    call = invoke(
        model(http_fake), ChatRequest(messages=[{"role": "user", "content": "x"}], stream=True)
    )
    assert isinstance(call.error, StreamInterruptedError)
    assert "engine died" in str(call.error)


def test_error_body_in_a_200_is_still_an_error(http_fake, invoke):
    http_fake.push_json(wrapped("model is loading", "server_error"))
    call = invoke(model(http_fake))
    assert isinstance(call.error, ProviderError)
    assert "model is loading" in str(call.error)


def test_plain_string_error_shape(http_fake, invoke):
    http_fake.push_error(404, {"error": "model 'llama3' not found, try pulling it first"})
    call = invoke(model(http_fake))
    assert isinstance(call.error, NotFoundError)
    assert "try pulling it first" in str(call.error)


def test_request_id_is_carried_from_the_header(http_fake, invoke):
    http_fake.push_error(500, headers={"x-request-id": "req_abc_777"})
    call = invoke(model(http_fake))
    assert call.error.request_id == "req_abc_777"
    assert "(request id req_abc_777)" in str(call.error)


def test_anthropic_request_id_header(http_fake, invoke):
    http_fake.push_error(
        400,
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "max_tokens: too big"},
        },
        headers={"request-id": "req_011CS"},
    )
    m = iModel(
        provider="anthropic", model="c", base_url=http_fake.anthropic_url, api_key="sk-ant-x1234"
    )
    call = invoke(m)
    assert isinstance(call.error, BadRequestError)
    assert call.error.request_id == "req_011CS"
    assert str(call.error) == "anthropic: HTTP 400: max_tokens: too big (request id req_011CS)"


def test_401_says_where_the_key_came_from(http_fake, invoke, monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", "wrong-key-123")
    http_fake.push_error(401, wrapped("Invalid key"))
    call = invoke(model(http_fake))
    assert "`VLLM_API_KEY`" in str(call.error)


def test_408_is_a_timeout_and_a_permission_type_without_403_is_permission_denied(http_fake, invoke):
    from lion_nb.errors import ProviderTimeoutError

    http_fake.push_error(408, wrapped("request timed out", "timeout"))
    call = invoke(model(http_fake))
    assert isinstance(call.error, ProviderTimeoutError) and call.error.status == 408
    http_fake.push_error(400, wrapped("not allowed for this org", "permission_error"))
    call = invoke(model(http_fake))
    assert isinstance(call.error, PermissionDeniedError)
