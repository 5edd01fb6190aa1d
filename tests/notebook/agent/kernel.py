"""A real ipykernel driven through jupyter_client, one cell at a time (no front end)."""

from __future__ import annotations

import queue
import time
from typing import Any

from jupyter_client.manager import start_new_kernel


class Kernel:
    """``run(code)`` executes a cell and returns its printed text and error (``None``: none)."""

    def __init__(self, cwd: str) -> None:
        self.km, self.kc = start_new_kernel(kernel_name="python3", cwd=cwd)

    def send(self, code: str) -> str:
        return str(self.kc.execute(code, allow_stdin=False))

    def wait(self, msg_id: str, timeout: float = 120.0) -> tuple[str, str | None]:
        """The text a cell printed and its error's name, once the kernel is idle after it."""
        text, error = [], None
        end = time.monotonic() + timeout
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=max(0.1, end - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(
                    f"the cell did not finish in {timeout} s: {''.join(text)}"
                ) from None
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                text.append(content["text"])
            elif kind == "error":
                error = f"{content['ename']}: {content['evalue']}"
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(text), error

    def run(self, code: str, timeout: float = 120.0) -> str:
        text, error = self.wait(self.send(code), timeout)
        assert error is None, f"{error}\n{text}"
        return text

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def last_json(text: str) -> Any:
    import json

    lines = [line for line in text.splitlines() if line.startswith(("{", "["))]
    assert lines, text
    return json.loads(lines[-1])


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    """Wait until ``predicate()`` holds (polling; a guard against a hang, not a timing check)."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise TimeoutError(f"waited {timeout} s for {what}")
        time.sleep(0.02)
