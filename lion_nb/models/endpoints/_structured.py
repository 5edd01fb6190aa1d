"""How an OpenAI-compatible server is asked for JSON that follows a schema.

Servers disagree on the wire form of ``response_format``:

- ``json_schema`` (OpenAI, vLLM, Ollama, LM Studio, newer llama.cpp):
  ``{"type": "json_schema", "json_schema": {"name", "schema", "strict": false}}``;
- ``json_object`` with the schema beside it (llama-cpp-python, older llama.cpp, and the
  Anyscale-style servers): ``{"type": "json_object", "schema": {...}}``. llama-cpp-python
  0.3 answers the other form with HTTP 500.

The form is chosen per preset (``llamacpp`` uses ``json_object``; every other server
``json_schema``) and can be set per model: ``iModel(..., structured_output="json_object")``.
When a server refuses the form anyway -- a 400, 422 or 500 whose message names
``response_format``, ``json_schema`` or ``json_object`` -- the request is sent once more in
the other form, and the model keeps that form for its later calls. The refused attempt is
not retried by the retry policy (it would be refused again), and the switch is reported in
the answer's ``notes``, which the branch records in the answer's metadata and in its log.
A ``response_format`` given in wire form already (with a ``type``) is sent as is.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...errors import (
    BadRequestError,
    ConfigurationError,
    ContextWindowError,
    OverloadedError,
    ProviderError,
    ServerError,
)

__all__ = ["FORMS", "check_form", "other_form", "refuses_form", "wire_format"]

FORMS = ("json_schema", "json_object")
_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_MENTIONS = re.compile(r"response_format|json_schema|json_object", re.IGNORECASE)
_REFUSAL_STATUSES = frozenset({400, 422, 500})


def check_form(form: object) -> str:
    """``form`` if it is one of `FORMS`; a `ConfigurationError` naming them otherwise."""
    if not isinstance(form, str) or form not in FORMS:
        raise ConfigurationError(
            f"`structured_output={form!r:.60}`: use `json_schema` (OpenAI's form) or "
            '`json_object` (`{"type": "json_object", "schema": ...}`, llama.cpp\'s).'
        )
    return form


def other_form(form: str) -> str:
    return FORMS[1] if form == FORMS[0] else FORMS[0]


def wire_format(fmt: dict[str, Any], form: str) -> dict[str, Any]:
    """A request's ``{"name", "schema"}`` in the server's wire form."""
    if "type" in fmt:  # already in wire form (json_object, json_schema)
        return fmt
    schema = fmt.get("schema") or {}
    if form == "json_object":
        return {"type": "json_object", "schema": schema}
    name = _NAME.sub("_", str(fmt.get("name") or "response"))[:64] or "response"
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}


def refuses_form(exc: ProviderError) -> bool:
    """Whether ``exc`` is a server refusing the ``response_format`` form it was sent."""
    if not isinstance(exc, (BadRequestError, ServerError)):
        return False
    if isinstance(exc, (OverloadedError, ContextWindowError)):
        return False
    if exc.status not in _REFUSAL_STATUSES:
        return False
    try:
        body = json.dumps(exc.body, default=str)[:4000]
    except (TypeError, ValueError):
        body = ""
    return bool(_MENTIONS.search(f"{exc.provider_message} {body}"))
