"""A branch's reasoning items survive ``%lion save``, a kernel restart and ``%lion load`` byte
for byte, in a real kernel (jupyter_client) talking to the loopback Responses API fake.

The first kernel makes one ``%%lion --op operate`` turn: a reasoning item and the function call
it led to, the tool's result, then a reasoned answer; and saves the session. The kernel is restarted, the session
loaded, and the next turn (to a fresh fake: the old one went with the old kernel) must send
those items exactly as the API first sent them, in their place.
"""

from __future__ import annotations

import json

import pytest

from tests.notebook import test_kernel_restart as kernels

pytestmark = pytest.mark.kernel

SETUP = """\
import json
from lion_nb import current_session, iModel
from tests.fakes.http_server import FakeProvider
from tests.fakes.responses_api import ResponsesAPI, compact
fake = FakeProvider().start()
api = ResponsesAPI(fake, [{replies}])
def get_weather(city: str) -> str:
    \"\"\"Get the current weather for a city.\"\"\"
    return json.dumps({{"temp_c": 14, "conditions": "light rain"}})
gpt = iModel(provider="openai", model="gpt-5.2", base_url=fake.openai_url, api="responses",
             stream=True)
"""
ITEMS = (
    "print(json.dumps([compact(i).decode() for m in current_session().default_branch.messages "
    "if m.kind == 'assistant_response' and 'reasoning_record' in m.metadata "
    "for i in m.metadata['reasoning_record']['items']]))"
)
SENT = (
    "print(json.dumps({'raw': fake.requests[-1].raw.decode(), 'refusals': api.refusals, "
    "'input': [i.get('type') for i in fake.requests[-1].body['input']]}))"
)
CALL = '"openai_responses_stream_function_call.sse"'
TEXT = '"openai_responses_stream_reasoning_text.sse"'


def last_json(kc, code: str):
    return json.loads(kernels.execute(kc, code)["stdout"].strip().splitlines()[-1])


def test_reasoning_items_are_sent_byte_for_byte_after_save_restart_and_load(workdir):
    km, kc = kernels.start(workdir)
    try:
        kernels.execute(kc, "%load_ext lion_nb")
        kernels.execute(kc, SETUP.format(replies=f"{CALL}, {TEXT}"))
        ask = "%%lion -q -m gpt --op operate -t get_weather\nWeather in Paris?"
        kernels.execute(kc, ask, cell_id="cell-ask")
        items = last_json(kc, ITEMS)
        kinds = [json.loads(i)["type"] for i in items]
        assert kinds == ["reasoning", "function_call", "reasoning", "message"]
        saved = kernels.execute(kc, "%lion save")
        assert "Saved 1 branch(es)" in saved["stdout"], saved
        kc.stop_channels()
        km.restart_kernel()
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)

        kernels.execute(kc, "%load_ext lion_nb")
        loaded = kernels.execute(kc, "%lion load")
        assert "Restored session" in loaded["stdout"], loaded
        kernels.execute(kc, SETUP.format(replies=TEXT))
        assert last_json(kc, ITEMS) == items  # the record as saved
        kernels.execute(kc, "%%lion -q -m gpt\nSo, umbrella?", cell_id="cell-next")
        sent = last_json(kc, SENT)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    kept = [i for i in items if json.loads(i)["type"] != "message"]  # a message is its text
    missing = [i[:80] for i in kept if i not in sent["raw"]]
    assert not missing, (missing, sent["input"])  # the bytes the API sent, unchanged
    # in their place: each reasoning item before the item it led to
    assert sent["input"][1:4] == ["reasoning", "function_call", "function_call_output"]
    assert sent["input"][-3:] == ["reasoning", "message", "message"]
    assert sent["refusals"] == []


@pytest.fixture
def workdir(tmp_path):
    return tmp_path
