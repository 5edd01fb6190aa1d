"""Record the cassette of ``notebooks/15-evaluating-prompts.ipynb`` against the test doubles.

Run from the repository root, then regenerate the notebook from the new recording::

    python tests/fakes/record_eval_cassette.py
    python notebooks/regenerate.py 15

The notebook's answering models are offline function models (never recorded); its grader,
``openai/gpt-4o-mini`` behind the ``judge`` check, is the one model the cassette holds. The
notebook runs in a fresh kernel with ``LION_NB_CASSETTE_MODE=all`` and, before its own
cells, the cell of `record_tutorial_cassettes` that points the OpenAI default URL at the
loopback server of `tests.fakes.http_server`. The server grades as a careful grader would:
an answer passes when it names the case's capital in eight words or fewer. A request that is
not a grading request is an HTTP 500, which fails the recording. No key is used.

To record against the real service instead: set ``OPENAI_API_KEY`` and run
``LION_NB_CASSETTE_MODE=all python notebooks/regenerate.py 15``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.fakes.http_server import FakeProvider, Recorded, Script  # noqa: E402
from tests.fakes.record_tutorial_cassettes import PREAMBLE  # noqa: E402

NOTEBOOK = ROOT / "notebooks" / "15-evaluating-prompts.ipynb"
CASSETTE = ROOT / "notebooks" / "cassettes" / "15-evaluating-prompts.jsonl"
_GRADING = re.compile(  # the fences are as long as the answer needs (`lion_nb.evals.judge`)
    r"Case:\n(?P<case>\{.*?\})\n\nAnswer to grade:\n(?P<fence><{3,})\n(?P<answer>.*)\n>{3,}\Z",
    re.S,
)


def grade(request: Recorded) -> Script:
    """A grader's verdict on one answer, as an OpenAI chat completion."""
    if not request.path.endswith("/chat/completions"):
        return Script(status=404, body={"error": {"message": f"no route {request.path}"}})
    found = _GRADING.search(request.body["messages"][-1]["content"])
    if found is None:
        return Script(status=500, body={"error": {"message": "not a grading request"}})
    case, answer = json.loads(found.group("case")), found.group("answer")
    named = case["capital"].lower() in answer.lower()
    short = len(answer.split()) <= 8
    if named and short:
        verdict = {"pass": True, "reason": f"Names {case['capital']}, briefly."}
    elif named:
        verdict = {"pass": False, "reason": "Names the capital, but at length."}
    else:
        verdict = {"pass": False, "reason": f"Does not name {case['capital']}."}
    message = {"role": "assistant", "content": json.dumps(verdict)}
    return Script(
        body={
            "id": "chatcmpl-grade",
            "object": "chat.completion",
            "created": 1767225600,
            "model": request.body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 90, "completion_tokens": 14, "total_tokens": 104},
        }
    )


def record() -> int:
    import nbformat
    from nbclient import NotebookClient

    env = dict(os.environ)
    for name in list(env):
        if name.endswith(("_API_KEY", "_TOKEN")) or name in (
            "LION_CHAT_PROVIDER",
            "LION_CHAT_MODEL",
        ):
            env.pop(name)
    with FakeProvider() as server:
        server.routes.append(grade)
        env.update(LION_NB_CASSETTE_MODE="all", LION_NB_RECORDING_URL=server.url)
        notebook = nbformat.read(NOTEBOOK, as_version=4)
        notebook.cells.insert(0, nbformat.v4.new_code_cell(PREAMBLE))
        NotebookClient(
            notebook,
            timeout=300,
            kernel_name="python3",
            resources={"metadata": {"path": str(NOTEBOOK.parent)}},
        ).execute(env=env)
        served = len(server.requests)
    exchanges = CASSETTE.read_text().splitlines()
    print(f"{CASSETTE.relative_to(ROOT)}: {len(exchanges)} exchanges ({served} HTTP)")
    return 0


if __name__ == "__main__":
    raise SystemExit(record())
