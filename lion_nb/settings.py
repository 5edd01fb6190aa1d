"""Settings read from the environment when asked for, never at import time."""

from __future__ import annotations

import os

__all__ = ["default_chat_model"]

DEFAULT_PROVIDER = "offline"
DEFAULT_MODEL = "auto"


def default_chat_model() -> tuple[str, str]:
    """``(provider, model)`` from ``LION_CHAT_PROVIDER`` / ``LION_CHAT_MODEL``; offline/auto."""
    provider = os.environ.get("LION_CHAT_PROVIDER") or DEFAULT_PROVIDER
    model = os.environ.get("LION_CHAT_MODEL") or ""
    if not model:
        if provider != DEFAULT_PROVIDER:
            from .errors import ConfigurationError

            raise ConfigurationError(
                f"`LION_CHAT_PROVIDER={provider}` is set but `LION_CHAT_MODEL` is not: set it "
                "to the model's name too (or unset both for the offline model)."
            )
        model = DEFAULT_MODEL
    return provider, model
