"""The fault matrix: every provider failure, and what the branch holds and says afterwards.

For each HTTP provider (OpenAI-compatible, Anthropic) against the real loopback server:
every status of the providers' fixtures README (400, 401, 403, 404, 408, 409, 413, 422,
429, 5xx, 529), timeouts (a slow first byte, a stream that stalls), broken streams (a socket
closed mid-stream, an error event in a 200 stream) and an unreachable server; for each CLI
agent (real subprocesses of the fake executables): a crash, the documented exit codes, an
error the CLI reports, a run past its deadline. Every case asserts:

- the typed error the caller gets (through `ExecutionError` for API turns), and whether the
  retry policy retried it (408, 409, 429 and 5xx are retried; no other status is);
- what the branch holds: a failed API turn records nothing and leaves the earlier exchange
  intact -- unless answer text had arrived before the failure (a broken stream): then the
  instruction and that text are kept, marked incomplete, and the provider's typed error is
  raised itself (ADR-0106); a failed CLI turn keeps its instruction and whatever the agent
  said before failing;
- which signals fired: one ``RunStart`` and one ``RunFailed`` carrying the error, and a
  ``MessageAdded`` for exactly the messages recorded;
- the branch's log: a failed call entry naming the error.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from lion_nb import Session, iModel
from lion_nb.errors import (
    AuthenticationError,
    BadRequestError,
    CLIError,
    ContextWindowError,
    ExecutionError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
)
from lion_nb.protocols.messages import AssistantResponse, Instruction
from lion_nb.protocols.signals import MessageAdded, RunEnd, RunFailed, RunStart, Signal
from tests.fakes.cli import alive, fake_cli_on_path

KEY = "sk-test-matrix-0123456789"
FAST_RETRY = {"retry-after-ms": "1", "x-request-id": "req_matrix"}

# status -> (typed error, retried by the policy)
STATUSES: dict[int, tuple[type[ProviderError], bool]] = {
    400: (BadRequestError, False),
    401: (AuthenticationError, False),
    403: (PermissionDeniedError, False),
    404: (NotFoundError, False),
    408: (ProviderTimeoutError, True),
    409: (ProviderError, True),
    413: (BadRequestError, False),
    422: (BadRequestError, False),
    429: (RateLimitError, True),
    500: (ServerError, True),
    502: (ServerError, True),
    503: (ServerError, True),
    504: (ServerError, True),
    529: (OverloadedError, True),
}


def error_body(provider: str, status: int) -> dict:
    message = f"scripted failure {status}"
    if provider == "anthropic":
        return {"type": "error", "error": {"type": "api_error", "message": message}}
    return {"error": {"message": message, "type": "server_error", "code": None}}


def ok_body(provider: str, text: str) -> dict:
    if provider == "anthropic":
        return {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 1},
        }  # fmt: skip
    message = {"role": "assistant", "content": text}
    return {"id": "c", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


class Watched:
    """A session branch on ``model`` with an earlier exchange, and every signal it sends."""

    def __init__(self, model: iModel):
        self.session = Session()
        self.branch = self.session.new_branch(chat_model=model)
        self.signals: list[Signal] = []
        self.session.observe(Signal, self.signals.append)

    def since(self, mark: int) -> list[str]:
        return [type(s).__name__ for s in self.signals[mark:]]

    def turn(self, prompt: str = "second", **kw: Any) -> tuple[BaseException, int, list[Any]]:
        """One turn expected to fail: the error, the signal mark and the earlier message ids."""
        mark = len(self.signals)
        before = [m.id for m in self.branch.messages]

        async def main():
            try:
                await self.branch.communicate(prompt, **kw)
            finally:
                await self.session.aclose()

        with pytest.raises((ExecutionError, ProviderError)) as caught:
            anyio.run(main)
        return caught.value, mark, before

    def failed_turn(self, prompt: str = "second", **kw: Any) -> tuple[BaseException, list[str]]:
        error, mark, before = self.turn(prompt, **kw)
        return self.nothing_kept(error, mark, before)

    def nothing_kept(self, error: BaseException, mark: int, before: list[Any]):
        assert isinstance(error, ExecutionError), repr(error)
        # a failed API turn records nothing: the earlier exchange is all the branch holds
        assert [m.id for m in self.branch.messages] == before
        fired = self.since(mark)
        assert fired == ["RunStart", "RunFailed"], fired
        assert self.signals[-1].error is error
        entry = self.branch.logs[-1].content
        assert entry["status"] == "failed"
        cause = error.__cause__
        assert entry["error"].startswith(type(cause).__name__)
        return cause, fired

    def ended_turn(self, prompt: str = "second", **kw: Any) -> ProviderError:
        """A turn whose stream broke after some answer text: that text is kept, marked."""
        error, mark, before = self.turn(prompt, **kw)
        return self.partial_kept(error, mark, before)

    def partial_kept(self, error: BaseException, mark: int, before: list[Any]) -> ProviderError:
        assert isinstance(error, ProviderError), repr(error)
        kept = self.branch.messages[len(before) :]
        assert [m.id for m in self.branch.messages][: len(before)] == before
        assert [type(m) for m in kept] == [Instruction, AssistantResponse]
        assert kept[1].response == error.partial_text != ""
        assert kept[1].metadata["incomplete"] is True
        fired = self.since(mark)
        assert fired == ["RunStart", "MessageAdded", "MessageAdded", "RunFailed"], fired
        assert self.signals[-1].error is error
        assert self.branch.logs[-1].content["error"].startswith(type(error).__name__)
        return error


#: whether answer text arrives before each provider's stream fixture breaks
TEXT_FIRST = {"openai": True, "anthropic": False}


def broken_turn(watched: Watched, provider: str) -> BaseException:
    if TEXT_FIRST[provider]:
        return watched.ended_turn(stream=True)
    return watched.failed_turn(stream=True)[0]


def http_model(fake, provider: str, **kw: Any) -> iModel:
    url = fake.openai_url if provider == "openai" else fake.anthropic_url
    return iModel(provider=provider, model="m", base_url=url, api_key=KEY, **kw)


def with_first_exchange(fake, provider: str, **kw: Any) -> Watched:
    fake.push_json(ok_body(provider, "first answer"))
    watched = Watched(http_model(fake, provider, **kw))
    anyio.run(watched.branch.communicate, "first")
    assert [type(m) for m in watched.branch.messages] == [Instruction, AssistantResponse]
    assert watched.since(0) == ["RunStart", "MessageAdded", "MessageAdded", "RunEnd"]
    return watched


# -- every status --------------------------------------------------------------------------
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("status", sorted(STATUSES))
def test_every_status(http_fake, provider, status):
    expected, retried = STATUSES[status]
    watched = with_first_exchange(http_fake, provider, max_retries=1)
    for _ in range(2):
        http_fake.push_error(status, error_body(provider, status), headers=FAST_RETRY)
    cause, _ = watched.failed_turn()
    assert type(cause) is expected, repr(cause)
    assert cause.status == status
    assert cause.request_id == "req_matrix"
    assert f"scripted failure {status}" in str(cause)
    assert len(http_fake.requests) == 1 + (2 if retried else 1)
    if retried and status != 409:
        assert "after 1 retry" in str(cause) or isinstance(cause, ProviderTimeoutError)


def test_a_context_length_400_is_its_own_type(http_fake):
    watched = with_first_exchange(http_fake, "openai")
    body = {"error": {"message": "This model's maximum context length is 8192 tokens."}}
    http_fake.push_error(400, body)
    cause, _ = watched.failed_turn()
    assert isinstance(cause, ContextWindowError)


def test_x_should_retry_overrides_the_status(http_fake):
    watched = with_first_exchange(http_fake, "openai", max_retries=2)
    http_fake.push_error(500, error_body("openai", 500), headers={"x-should-retry": "false"})
    cause, _ = watched.failed_turn()
    assert isinstance(cause, ServerError)
    assert len(http_fake.requests) == 2  # the first exchange, and the one refused attempt


# -- timeouts, broken streams, an unreachable server ---------------------------------------
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_slow_first_byte_times_out(http_fake, provider):
    # the first exchange needs the deadline's time on a loaded machine; the answer never comes
    watched = with_first_exchange(http_fake, provider, timeout=1.0, max_retries=0)
    http_fake.push_json(ok_body(provider, "too late"), first_byte_delay=60)
    cause, _ = watched.failed_turn()
    assert isinstance(cause, ProviderTimeoutError) and "`timeout=`" in str(cause)


STREAMS = {
    "openai": "openai_stream_text.sse",
    "anthropic": "anthropic_stream_tool.sse",
}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_stream_that_stalls_times_out_keeping_what_arrived(http_fake, provider):
    # events a second apart, the deadline 2.5 s: text has arrived, the stream has not ended
    watched = with_first_exchange(http_fake, provider, timeout=2.5, max_retries=2)
    http_fake.push_fixture(STREAMS[provider], event_delay=1.0)
    error, mark, before = watched.turn(stream=True)
    # how much arrived before the deadline depends on the machine's speed: both outcomes
    # follow the one rule, checked in full either way
    if isinstance(error, ExecutionError):
        cause, _ = watched.nothing_kept(error, mark, before)
    else:
        cause = watched.partial_kept(error, mark, before)
    assert isinstance(cause, ProviderTimeoutError)
    assert cause.partial_text is not None
    assert len(http_fake.requests) == 2  # a started stream is never retried


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_stream_cut_in_the_middle(http_fake, provider):
    watched = with_first_exchange(http_fake, provider, max_retries=2)
    http_fake.push_fixture(STREAMS[provider], cut_after=3)
    cause = broken_turn(watched, provider)
    assert isinstance(cause, StreamInterruptedError)
    assert len(http_fake.requests) == 2


@pytest.mark.parametrize(
    ("provider", "fixture", "expected"),
    [
        ("openai", "openai_stream_midstream_error.sse", StreamInterruptedError),
        ("anthropic", "anthropic_stream_overloaded.sse", OverloadedError),
    ],
)
def test_an_error_event_in_a_200_stream(http_fake, provider, fixture, expected):
    watched = with_first_exchange(http_fake, provider, max_retries=2)
    http_fake.push_fixture(fixture)
    cause = broken_turn(watched, provider)
    assert isinstance(cause, expected)
    assert len(http_fake.requests) == 2  # never retried


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_unreachable_server(http_fake, provider):
    watched = with_first_exchange(http_fake, provider, max_retries=0)
    http_fake.stop()  # nothing listens on that port any more
    cause, _ = watched.failed_turn()
    assert isinstance(cause, ProviderConnectionError)
    assert "could not reach" in str(cause)


# -- CLI agents ------------------------------------------------------------------------------
def cli_turn(provider: str, **options: Any) -> tuple[Watched, BaseException, list[str]]:
    watched = Watched(iModel(provider=provider, **options))
    recorded: list[Any] = []

    async def main():
        try:
            async for message in watched.branch.run("How many .py files are here?"):
                recorded.append(message)
        finally:
            await watched.session.aclose()

    with pytest.raises(ProviderError) as caught:
        anyio.run(main)
    fired = watched.since(0)
    assert fired[0] == "RunStart" and fired[-1] == "RunFailed", fired
    assert watched.signals[-1].error is caught.value
    assert fired.count("MessageAdded") == len(watched.branch.messages)
    assert isinstance(watched.branch.messages[0], Instruction)
    # everything the run yielded is on the branch (a failure may record a partial answer)
    assert {m.id for m in recorded} <= {m.id for m in watched.branch.messages}
    entry = watched.branch.logs[-1].content
    assert entry["event"] == "cli_run" and entry["status"] == "failed"
    return watched, caught.value, fired


@pytest.fixture
def fakes(monkeypatch, tmp_path):
    return fake_cli_on_path(monkeypatch, tmp_path)


@pytest.mark.parametrize("provider", ["claude_code", "codex", "gemini_cli"])
def test_a_crashing_cli(fakes, provider):
    fakes.set(mode="crash")
    _, error, _ = cli_turn(provider)
    assert isinstance(error, CLIError) and "SIGKILL" in str(error)
    (record,) = fakes.records()
    assert not alive(record["pid"])


@pytest.mark.parametrize(
    ("code", "words"), [(1, "exit code 1"), (42, "rejected its input"), (53, "turn limit")]
)
def test_gemini_exit_codes(fakes, code, words):
    fakes.set(exit=code)
    fakes.replay(['{"type": "init", "session_id": "s1", "model": "gemini-2.5-pro"}'])
    _, error, _ = cli_turn("gemini_cli")
    assert isinstance(error, CLIError) and words in str(error)
    assert error.exit_code == code


def test_a_failed_codex_turn(fakes):
    fakes.set(exit=1)
    fakes.replay("codex_fail.jsonl")
    watched, error, _ = cli_turn("codex")
    assert isinstance(error, ProviderError) and "usage limit" in str(error)
    # the transient "Reconnecting..." notice is not an answer: only the instruction is kept
    assert [m.kind for m in watched.branch.messages] == ["instruction"]


def test_claude_reporting_an_api_error(fakes):
    fakes.set(exit=1)
    fakes.replay("claude_errors.jsonl")
    _, error, _ = cli_turn("claude_code")
    assert isinstance(error, RateLimitError) and error.status == 429


def test_a_cli_past_its_deadline_is_stopped(fakes):
    fakes.set(mode="child")
    watched, error, _ = cli_turn("claude_code", timeout=1.0)
    assert isinstance(error, ProviderTimeoutError)
    (record,) = fakes.records()
    assert not alive(record["pid"]) and not alive(record["child_pid"])
    assert watched.branch.messages[-1].kind in ("instruction", "assistant_response")


def test_the_run_after_a_fault_succeeds(http_fake):
    # the matrix leaves nothing behind that breaks the next turn
    watched = with_first_exchange(http_fake, "openai", max_retries=0)
    http_fake.push_error(503, error_body("openai", 503))
    watched.failed_turn()
    http_fake.push_json(ok_body("openai", "third answer"))
    mark = len(watched.signals)
    assert anyio.run(watched.branch.communicate, "third") == "third answer"
    assert watched.since(mark) == ["RunStart", "MessageAdded", "MessageAdded", "RunEnd"]
    assert isinstance(watched.signals[-1], RunEnd)
    assert len(watched.branch.messages) == 4
    assert not any(isinstance(s, RunFailed) for s in watched.signals[mark:])
    assert all(isinstance(s, (RunStart, RunEnd, MessageAdded)) for s in watched.signals[mark:])
