"""Settings read from the environment when asked for, never at import time."""

from __future__ import annotations

import os

__all__ = ["default_chat_model"]

DEFAULT_PROVIDER = "offline"
DEFAULT_MODEL = "auto"


def default_chat_model() -> tuple[str, str]:
    """``(provider, model)`` from ``LION_CHAT_PROVIDER`` / ``LION_CHAT_MODEL``; offline/auto."""
    provider = os.environ.get("LION_CHAT_PROVIDER") or DEFAULT_PROVIDER
    model = os.environ.get("LION_CHAT_MODEL") or (
        DEFAULT_MODEL if provider == DEFAULT_PROVIDER else ""
    )
    return provider, model
