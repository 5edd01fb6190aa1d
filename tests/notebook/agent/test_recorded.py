"""Each run is a tool call on the branch, shown as a step and kept by the store and exports:
its code (and the model's, when the user edited it), outputs, duration and name diff."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from lion_nb import Branch, Session, notebook_tools
from lion_nb.protocols.approval import Edited, asking


def _edited_run(ip: Any) -> Branch:
    ip.user_ns["total"] = 1
    branch = Branch(tools=notebook_tools(shell=ip))

    async def edit(ask: Any) -> Any:
        return Edited({"code": "total = total + 41\nprint('now', total)"})

    async def main() -> None:
        with asking(edit):
            await branch.act({"function": "run_python", "arguments": {"code": "total = 0"}})

    asyncio.run(main())
    return branch


def test_the_run_is_recorded_with_code_outputs_duration_and_names(ip):
    branch = _edited_run(ip)
    request, response = [m for m in branch.messages if m.kind.startswith("action")]
    assert request.arguments == {"code": "total = 0"}  # what the model asked
    assert response.arguments["code"].startswith("total = total + 41")  # what ran
    assert response.metadata["proposed_arguments"] == {"code": "total = 0"}
    assert response.metadata["names"] == {"created": [], "changed": ["total"], "deleted": []}
    assert response.metadata["run_seconds"] >= 0 and response.metadata["duration"] >= 0
    assert "[stdout]\nnow 42" in response.rendered and ip.user_ns["total"] == 42


def test_branch_view_shows_the_run_as_a_step_with_both_codes_highlighted(ip):
    from lion_nb.widgets.branch_view import BranchView

    view = BranchView(_edited_run(ip))
    [step] = [e for e in view.entries if e["kind"] == "action"]
    assert step["function"] == "run_python" and step["state"] == "ok"
    assert "the model proposed" in step["arguments"] and step["arguments"].count("<pre>") == 2
    assert 'class="lnb-n"' in step["arguments"]  # highlighted
    assert step["names"]["changed"] == ["total"]
    assert "now 42" in step["result"]


def test_the_store_and_the_json_export_keep_the_run(ip, tmp_path):
    from lion_nb.store import SessionStore
    from lion_nb.store.export import to_json

    branch = _edited_run(ip)
    session = Session()
    session.include_branches(branch)
    store = SessionStore(tmp_path / "s.db")
    store.save(session)
    loaded = store.load(str(session.id))
    [again] = [b for b in loaded.branches if b.id == branch.id]
    response = next(m for m in again.messages if m.kind == "action_response")
    assert response.metadata["proposed_arguments"] == {"code": "total = 0"}
    assert response.metadata["names"]["changed"] == ["total"]
    exported = json.loads(to_json(branch))
    assert "total = total + 41" in json.dumps(exported)
    assert ip.user_ns["total"] == 42  # loading ran nothing


def test_secret_values_are_masked_in_the_recorded_output(ip, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef")
    branch = Branch(tools=notebook_tools(approve=True, shell=ip))
    code = "import os\nprint(os.environ['ANTHROPIC_API_KEY'])"
    asyncio.run(branch.act({"function": "run_python", "arguments": {"code": code}}))
    [response] = [m for m in branch.messages if m.kind == "action_response"]
    assert "sk-ant-test-0123456789abcdef" not in response.rendered
    assert "****" in response.rendered
