"""Figures are drawn without a display."""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

from tests.fakes.provider_fixtures import _no_provider_keys, http_fake  # noqa: F401
