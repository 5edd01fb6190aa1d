"""Figures are drawn without a display."""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")
