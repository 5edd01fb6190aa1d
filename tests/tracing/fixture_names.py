"""The attribute names of the conventions' example export (tests/fixtures/otel_genai_chat_span.json)."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "providers" / "otel_genai_chat_span.json"
)


def fixture_spans() -> dict[str, dict]:
    """Span name prefix (``chat``, ``execute_tool``) -> its attributes' names and values."""
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    out = {}
    for span in data["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        values = {a["key"]: a["value"] for a in span["attributes"]}
        out[span["name"].split()[0]] = {"kind": span["kind"], "attributes": values}
    return out


def schema_url() -> str:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))["resourceSpans"][0]["schemaUrl"]
