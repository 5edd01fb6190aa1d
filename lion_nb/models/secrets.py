"""Keys are secrets: wrapped so that no repr, dump or error can show them.

`Secret` holds a value and prints as ``Secret('****')``. Every value ever wrapped is also
remembered (in this process only). Every key an `iModel` holds -- ``api_key=``, a key read
from its variable, a secret header -- is a `Secret`, so this one registry covers the keys of
every model in the process (a notebook's branches and its ``--model`` models included).

Two functions mask those values, and the values of the environment's keys (below):

- `scrub` masks exactly them and changes nothing else. It is for text meant for a model (a
  prompt quoting a cell's source, a traceback, ``In`` / ``Out``), where code must arrive
  intact; the notebook layer scrubs every prompt it builds, so a key typed into a cell
  reaches neither the provider, nor the branch, nor a saved session. It leaves values
  shorter than 8 characters (`MIN_SCRUB`) alone: those are the placeholders local servers
  take for a key (``api_key="ollama"``, ``"EMPTY"``), and masking them would garble every
  prompt that uses the word; no provider issues keys that short.
- `redact` is `scrub` plus a mask for auth headers and ``api_key=VALUE`` pairs whose value
  is not known, for text that is shown, logged or raised -- a provider echoing a key back in
  an error body included. A value starts with a letter or a digit, so a hint such as
  ``pass `api_key=` (... api_key=...)`` is left whole.

A masked value always reads `MASK` (``****``), which tells neither its length nor its prefix.

The environment's keys are the values of the well-known key variables
(`SECRET_ENV_VARS`, values of 4 characters or more) and of any variable whose name contains
KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL (values of 8 characters or more, so that short
harmless values such as ``1`` or ``true`` are left alone). That is what keeps a CLI agent
that prints its own credentials on stderr (``CODEX_API_KEY``, ``CLAUDE_CODE_OAUTH_TOKEN``,
...) from leaking them into an error. The scan is cached per state of ``os.environ``, so a
call costs a dict comparison unless the environment changed.

A `Secret` copies as itself (``copy.copy`` / ``copy.deepcopy``) and refuses to be pickled:
a key is never written to a file by accident.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any, NoReturn

__all__ = [
    "MASK",
    "SECRET_ENV_VARS",
    "RedactingFilter",
    "Secret",
    "redact",
    "scrub",
    "scrub_values",
]

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
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
MIN_KNOWN = 4  # a wrapped key or a well-known variable's value
MIN_NAMED = 8  # a value found only by the name of its variable
MIN_SCRUB = 8  # `scrub`: a shorter value is a placeholder (``ollama``, ``EMPTY``), not a key
MASK = "****"  # what every masked value becomes

_KNOWN: set[str] = set()
_VALUE = r"[A-Za-z0-9][^\s,'\"}`)]*"  # a credential: not ``...``, a backtick or a bracket
_BEARER = re.compile(r"(?i)(authorization\s*[:=]\s*)(bearer\s+)?" + _VALUE)
_KEY_HEADER = re.compile(r"(?i)((?:x-api-key|api[-_]key)['\"]?\s*[:=]\s*['\"]?)" + _VALUE)
_cache: tuple[Any, int, tuple[str, ...]] = (None, -1, ())


class Secret:
    """A value that must never be shown. ``reveal()`` is the only way to read it."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        if isinstance(value, Secret):
            value = value.reveal()
        self._value = str(value)
        if len(self._value) >= MIN_KNOWN:
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

    def __copy__(self) -> Secret:  # immutable: a copy is the same secret
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Secret:
        return self

    def __reduce__(self) -> NoReturn:  # refuse to pickle a key into a file by accident
        raise TypeError(
            "A Secret cannot be pickled: keys are never written to a file. To duplicate a "
            "model in this process use `iModel.copy()` (or `copy.deepcopy`); to save one use "
            "`iModel.to_dict()`, which leaves the key out."
        )


def _scan_environment() -> list[str]:
    values: list[str] = []
    for name, value in os.environ.items():
        value = value.strip()
        if name in SECRET_ENV_VARS:
            if len(value) >= MIN_KNOWN:
                values.append(value)
        elif len(value) >= MIN_NAMED and SECRET_NAME.search(name):
            values.append(value)
    return values


def _env_data() -> dict[Any, Any] | None:  # Any: bytes keys and values on POSIX, str on Windows
    """``os.environ``'s own dict (None where it has none: always rescan)."""
    data = getattr(os.environ, "_data", None)
    return data if isinstance(data, dict) else None


def _secret_values() -> tuple[str, ...]:
    """Every value to mask, longest first (so a key that contains another is masked whole).
    Cached against a copy of the environment: comparing two dicts costs far less than a
    fingerprint built on every call, and a message is checked each time one is made."""
    global _cache
    data, known = _env_data(), len(_KNOWN)
    cached_data, cached_known, values = _cache
    if data is not None and known == cached_known and data == cached_data:
        return values
    values = tuple(sorted({*_KNOWN, *_scan_environment()}, key=len, reverse=True))
    _cache = (dict(data) if data is not None else None, known, values)
    return values


def scrub_values() -> tuple[str, ...]:
    """The values `scrub` masks, longest first: fetch them once to mask many texts."""
    values = _secret_values()
    if values and len(values[-1]) < MIN_SCRUB:
        values = tuple(v for v in values if len(v) >= MIN_SCRUB)
    return values


def _mask(text: str, shortest: int) -> str:
    for value in _secret_values():  # longest first
        if len(value) < shortest:
            break
        if value in text:
            text = text.replace(value, MASK)
    return text


def scrub(text: str) -> str:
    """``text`` with the value of every known key and secret environment variable masked,
    and nothing else changed (for prompts: code and tracebacks stay readable). A text
    shorter than any value it masks is returned without a scan (ids, numbers, short items)."""
    return _mask(text, MIN_SCRUB) if len(text) >= MIN_SCRUB else text


def redact(text: str) -> str:
    """``text`` with every known key, secret environment value and auth header masked."""
    if not text:
        return text
    text = _BEARER.sub(lambda m: m.group(1) + MASK, _mask(text, 0))
    return _KEY_HEADER.sub(lambda m: m.group(1) + MASK, text)


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
