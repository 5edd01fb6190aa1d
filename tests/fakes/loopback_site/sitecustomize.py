"""Loaded by every Python process the tests start (this folder is put first on their
PYTHONPATH): the same loopback-only guard as the test process, for kernels and CLIs."""

import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "_lion_loopback_only", Path(__file__).resolve().parent.parent / "loopback_only.py"
)
if _spec is not None and _spec.loader is not None:
    _guard = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = _guard
    _spec.loader.exec_module(_guard)
    _guard.install()
