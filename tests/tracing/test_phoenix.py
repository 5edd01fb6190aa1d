"""lion_nb's spans in a real trace backend: Arize Phoenix, started here on 127.0.0.1.

Opt-in, outside CI's time budget: Phoenix is a large install and takes tens of seconds to
start. Set ``LION_NB_PHOENIX_PYTHON`` to a Python that has ``arize-phoenix`` (its own
virtual environment: ``python -m venv phx && phx/bin/pip install arize-phoenix``)::

    LION_NB_PHOENIX_PYTHON=phx/bin/python python -m pytest tests/tracing/test_phoenix.py -s

One tool round on a named branch is traced to Phoenix's OTLP/HTTP endpoint; Phoenix's REST
API then shows the turn as an agent span, the model call as an LLM span with its tokens and
the tool as a tool span, one trace, the conversation as Phoenix's session. The times (start
to ready, flush to the spans listed) are printed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time

import anyio
import pytest

import lion_nb.tracing as tracing
from lion_nb import Session

PYTHON = os.environ.get("LION_NB_PHOENIX_PYTHON")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not PYTHON, reason="opt-in: set LION_NB_PHOENIX_PYTHON (see the module)"),
]


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def phoenix(tmp_path):
    """A Phoenix server on 127.0.0.1 in its own process group; its base URL."""
    import httpx

    port = _port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(tmp_path),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_port()),
    }
    log = (tmp_path / "phoenix.log").open("w")
    began = time.monotonic()
    server = subprocess.Popen(
        [str(PYTHON), "-m", "phoenix.server.main", "serve"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert server.poll() is None, (tmp_path / "phoenix.log").read_text()[-3000:]
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        else:
            raise TimeoutError("Phoenix did not answer /healthz in 300 s")
        print(f"\nPhoenix ready {time.monotonic() - began:.1f} s after its start")
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
        log.close()
        tracing.disable()


def test_a_tool_round_shows_in_phoenix_as_agent_llm_and_tool_spans(phoenix):
    import httpx

    tracing.enable(phoenix)
    session = Session()
    branch = session.new_branch(name="calc", chat_model="offline/auto", tools=[add])
    anyio.run(lambda: branch.operate(instruction="use add a=2 b=3", actions=True))
    flushed = time.monotonic()
    assert tracing.flush(10)

    spans: list[dict] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(spans) < 3:
        found = httpx.get(f"{phoenix}/v1/projects/default/spans", timeout=10)
        assert found.status_code == 200, found.text
        spans = found.json()["data"]
        time.sleep(0.2)
    print(f"spans listed by Phoenix {time.monotonic() - flushed:.2f} s after the flush")
    by_kind = {s["span_kind"]: s for s in spans}
    assert sorted(by_kind) == ["AGENT", "LLM", "TOOL"], [s["name"] for s in spans]
    turn, call, tool = by_kind["AGENT"], by_kind["LLM"], by_kind["TOOL"]
    assert turn["name"] == "operate" and call["name"] == "chat auto"
    assert tool["name"] == "execute_tool add"
    assert len({s["context"]["trace_id"] for s in spans}) == 1
    assert call["parent_id"] == tool["parent_id"] == turn["context"]["span_id"]

    conversation = str(branch.id)
    for span in spans:  # the conversation, and Phoenix's session for it
        assert span["attributes"]["gen_ai.conversation.id"] == conversation
        assert span["attributes"]["session.id"] == conversation
    usage = call["attributes"]
    assert usage["llm.token_count.prompt"] == usage["gen_ai.usage.input_tokens"] > 0
    assert usage["llm.token_count.completion"] == usage["gen_ai.usage.output_tokens"] > 0
    assert tool["attributes"]["tool.name"] == "add"
    assert not any(k.startswith(("input.", "gen_ai.input")) for k in usage)  # content off
