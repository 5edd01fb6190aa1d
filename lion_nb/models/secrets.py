"""Keys are secrets: wrapped so that no repr, dump or error can show them.

`Secret` holds a value and prints as ``Secret('****')``. Every value ever wrapped is also
remembered (in this process only) so `redact` can scrub it from any text that is about to be
shown, logged or raised -- a provider echoing a key back in an error body included.
"""

from __future__ import annotations

import logging
import os
import re

__all__ = ["SECRET_ENV_VARS", "RedactingFilter", "Secret", "redact"]

SECRET_ENV_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "TOGETHER_API_KEY",
    "DEEPSEEK_API_KEY",
    "MISTRAL_API_KEY",
    "VLLM_API_KEY",
)
_KNOWN: set[str] = set()
_BEARER = re.compile(r"(?i)(authorization\s*[:=]\s*)(bearer\s+)?[^\s,'\"}]+")
_KEY_HEADER = re.compile(r"(?i)((?:x-api-key|api[-_]key)['\"]?\s*[:=]\s*['\"]?)[^\s,'\"}]+")


class Secret:
    """A value that must never be shown. ``reveal()`` is the only way to read it."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        if isinstance(value, Secret):
            value = value.reveal()
        self._value = str(value)
        if len(self._value) >= 4:
            _KNOWN.add(self._value)

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('****')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self):  # refuse to pickle a key into a file by accident
        raise TypeError("A Secret cannot be pickled.")


def _env_secrets() -> list[str]:
    return [v for name in SECRET_ENV_VARS if len(v := os.environ.get(name, "")) >= 4]


def redact(text: str) -> str:
    """``text`` with every known key, secret environment value and auth header masked."""
    if not text:
        return text
    for value in (*_KNOWN, *_env_secrets()):
        if value in text:
            text = text.replace(value, "****")
    text = _BEARER.sub(lambda m: m.group(1) + "****", text)
    return _KEY_HEADER.sub(lambda m: m.group(1) + "****", text)


class RedactingFilter(logging.Filter):
    """A logging filter that redacts secrets from every record it passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True
