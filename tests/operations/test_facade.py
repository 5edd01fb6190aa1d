"""ADR-0021 D1 and D5: the facade's shape and the parameter objects.

ADR-0021 D1 clause -> test
- implementation imports stay method-local: importing Branch loads no operation algorithm -> test_importing_branch_loads_no_operation_implementation
- a facade method receives an already constructed Branch; implementations create or attach none -> test_implementations_work_on_the_given_branch_and_attach_nothing
- chat_model / parse_model default through the iModelManager and may be overridden per call -> test_models_default_through_the_manager_and_can_be_overridden
ADR-0021 D5 clause -> test
- the params passed through the seam are frozen, slotted dataclasses -> test_params_are_frozen_and_slotted
- RunParam.persist_dir defaults to runs/ in the session store's folder; callers can override it -> test_run_param_persist_dir_default_and_override
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from lion_nb import ChatParam, ParseParam, RunParam, Session, iModel
from lion_nb.operations import communicate


def test_importing_branch_loads_no_operation_implementation():
    code = (
        "import json, sys\nfrom lion_nb import Branch\nBranch()\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('lion_nb.operations'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert loaded <= {"lion_nb.operations", "lion_nb.operations.manager"}, loaded


def test_implementations_work_on_the_given_branch_and_attach_nothing():
    session = Session()
    branch = session.default_branch
    before = (len(session.branches), branch._owning_session_id, branch._observer)
    param = ChatParam(imodel=branch.chat_model)
    anyio.run(communicate, branch, "hello", param)
    assert [m.kind for m in branch.messages][-2:] == ["instruction", "assistant_response"]
    assert (len(session.branches), branch._owning_session_id, branch._observer) == before


def test_models_default_through_the_manager_and_can_be_overridden():
    sent = {"default": 0, "other": 0}

    def make(name):
        def reply(messages, **request):
            sent[name] += 1
            return name

        return iModel(provider="offline", model="function", function=reply)

    from lion_nb import Branch

    branch = Branch(chat_model=make("default"))
    other = make("other")
    assert anyio.run(branch.communicate, "a") == "default"

    async def override():
        return await branch.communicate("b", chat_model=other)

    assert anyio.run(override) == "other"
    assert branch.chat_model is not other and sent == {"default": 1, "other": 1}


@pytest.mark.parametrize("cls", [ChatParam, RunParam, ParseParam])
def test_params_are_frozen_and_slotted(cls):
    param = cls()
    assert not hasattr(param, "__dict__") and "__slots__" in vars(cls)
    with pytest.raises(dataclasses.FrozenInstanceError):
        param.imodel = None
    changed = param.with_(imodel_kw={"temperature": 0})
    assert changed.imodel_kw == {"temperature": 0} and param.imodel_kw == {}


def test_run_param_persist_dir_default_and_override(monkeypatch, tmp_path):
    monkeypatch.setenv("LION_NB_STORE", str(tmp_path / "store"))
    assert Path(RunParam().persist_dir) == tmp_path / "store" / "runs"  # the store's folder
    monkeypatch.delenv("LION_NB_STORE")
    monkeypatch.chdir(tmp_path)
    assert Path(RunParam().persist_dir) == tmp_path / ".lion_nb" / "runs"
    assert RunParam(persist_dir="/elsewhere").persist_dir == "/elsewhere"
    assert RunParam().snapshot_dir is None
