"""A real kernel (jupyter_client) is restarted and the notebook's session comes back.

The kernel runs in a fresh notebook folder with no store configured, so the default
``.lion_nb/sessions.db`` beside the notebook is what is exercised. It runs ``%%lion`` turns
on two branches (cells sent with their ``cellId``, as JupyterLab does), is restarted with
``KernelManager.restart_kernel()``, and ``%lion load`` brings back the branches, the active
branch and the message texts; re-running a cell id from before the restart forks the branch
instead of appending. Two kernels on one folder, turning at the same time, lose nothing.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
from pathlib import Path
from typing import Any

import pytest

from lion_nb.store import SessionStore

pytestmark = pytest.mark.kernel

ROOT = Path(__file__).resolve().parents[2]

SNAPSHOT = (
    "import json\nfrom lion_nb import current_session\n"
    "from lion_nb.notebook.state.session import notebook_state\n"
    "print(json.dumps({'session': current_session().to_dict(mode='json'), "
    "'active': notebook_state().active}))"
)


@pytest.fixture
def workdir(tmp_path):
    if shutil.which("python") is None:  # pragma: no cover - the kernel needs an interpreter
        pytest.skip("no python on PATH")
    return tmp_path


def kernel_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LION_NB_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def start(workdir: Path) -> tuple[Any, Any]:
    from jupyter_client import KernelManager

    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(workdir), env=kernel_env())
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc


def send(kc: Any, code: str, cell_id: str | None = None) -> str:
    content = {
        "code": code,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": False,
        "stop_on_error": True,
    }
    msg = kc.session.msg("execute_request", content, metadata={"cellId": cell_id or "scratch"})
    kc.shell_channel.send(msg)
    return msg["header"]["msg_id"]


def collect(kc: Any, msg_id: str, timeout: float = 60) -> dict[str, Any]:
    """The cell's stdout, stderr and error, once the kernel is idle after it."""
    out: dict[str, Any] = {"stdout": "", "stderr": "", "error": None}
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer from the kernel: {out}") from None
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            out[content["name"]] += content["text"]
        elif kind == "error":
            out["error"] = f"{content['ename']}: {content['evalue']}"
        elif kind == "status" and content["execution_state"] == "idle":
            return out


def execute(kc: Any, code: str, cell_id: str | None = None) -> dict[str, Any]:
    result = collect(kc, send(kc, code, cell_id))
    assert result["error"] is None, result
    return result


def snapshot(kc: Any) -> dict[str, Any]:
    return json.loads(execute(kc, SNAPSHOT)["stdout"].strip().splitlines()[-1])


def test_a_restarted_kernel_gets_its_session_back(workdir):
    km, kc = start(workdir)
    try:
        execute(kc, "%load_ext lion_nb")
        execute(kc, "%%lion -q\nWhat is a kernel?", cell_id="cell-a")
        execute(kc, "%lion new critic")
        execute(kc, "%%lion -q\nCriticize the answer.", cell_id="cell-b")
        execute(kc, "%lion switch main")
        before = snapshot(kc)
        kc.stop_channels()
        km.restart_kernel()
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)

        execute(kc, "%load_ext lion_nb")
        assert snapshot(kc)["session"]["id"] != before["session"]["id"]  # a fresh kernel
        loaded = execute(kc, "%lion load")
        assert "Restored session" in loaded["stdout"], loaded
        after = snapshot(kc)
        assert after == before  # branches, active branch, every message and its cell tag
        names = [b["name"] for b in after["session"]["branches"]]
        assert names == ["main", "critic"] and after["active"] == "main"
        texts = [
            m["instruction"]
            for m in after["session"]["branches"][1]["messages"]["collections"][::2]
        ]
        assert texts == ["Criticize the answer."]

        execute(kc, "%%lion -q\nWhat is a kernel, again?", cell_id="cell-a")  # a re-run
        rerun = snapshot(kc)
        branches = {b["name"]: b for b in rerun["session"]["branches"]}
        assert sorted(branches) == ["critic", "main", "main~1"]  # forked, not appended
        assert len(branches["main"]["messages"]["collections"]) == 2
        assert (
            branches["main~1"]["messages"]["collections"][0]["instruction"] == "What is a kernel?"
        )
        assert rerun["active"] == "main"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    assert (workdir / ".lion_nb" / "sessions.db").exists()
    assert (workdir / ".lion_nb" / ".gitignore").exists()


def test_two_kernels_on_one_folder_lose_nothing(workdir):
    kernels = [start(workdir), start(workdir)]
    turns = 6
    try:
        for _, kc in kernels:
            execute(kc, "%load_ext lion_nb")
            execute(kc, "%lion new second")
        for i in range(turns):  # both kernels turn at the same time
            pending = []
            for n, (_, kc) in enumerate(kernels):
                branch = "main" if i % 2 == 0 else "second"
                code = f"%%lion -q -b {branch}\nkernel {n} turn {i}"
                pending.append((kc, send(kc, code, cell_id=f"k{n}-t{i}")))
            for kc, msg_id in pending:
                got = collect(kc, msg_id)
                assert got["error"] is None and not got["stderr"], got
        dumps = [snapshot(kc)["session"] for _, kc in kernels]
    finally:
        for km, kc in kernels:
            kc.stop_channels()
            km.shutdown_kernel(now=False)  # the store is flushed as the kernel exits
    store = SessionStore(workdir / ".lion_nb" / "sessions.db")
    assert {info.id for info in store.sessions()} == {d["id"] for d in dumps}
    for dump in dumps:
        assert store.load(dump["id"]).to_dict(mode="json") == dump
        assert sum(len(b["messages"]["collections"]) for b in dump["branches"]) == 2 * turns
    store.close()
