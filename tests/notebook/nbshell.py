"""Helpers for driving a real in-process IPython shell like a notebook frontend does."""

from __future__ import annotations

from typing import Any

from IPython.utils.capture import capture_output


class Ran:
    """One executed cell: its result, stdout/stderr and display outputs."""

    def __init__(self, result: Any, captured: Any):
        self.result = result
        self.value = result.result
        self.error = result.error_in_exec or result.error_before_exec
        self.stdout = captured.stdout
        self.stderr = captured.stderr
        self.outputs = captured.outputs

    @property
    def last(self) -> dict[str, Any]:
        """The final state of the cell's display (the last publish or update)."""
        assert self.outputs, "the cell displayed nothing"
        return self.outputs[-1].data

    def __repr__(self) -> str:
        return f"Ran(value={self.value!r}, error={self.error!r}, stderr={self.stderr!r})"


def run(shell: Any, code: str, cell_id: str | None = None) -> Ran:
    """Execute ``code`` as a notebook cell would (history stored, optional cell id)."""
    with capture_output() as captured:
        result = shell.run_cell(code, store_history=True, cell_id=cell_id)
    return Ran(result, captured)


def usage_error(shell: Any, code: str) -> str:
    """Run ``code``, assert it failed with a UsageError and no traceback; return its text."""
    from IPython.core.error import UsageError

    ran = run(shell, code)
    assert isinstance(ran.error, UsageError), f"expected a UsageError, got {ran!r}"
    assert "Traceback" not in ran.stderr and "Traceback" not in ran.stdout
    return str(ran.error)
