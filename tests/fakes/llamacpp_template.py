"""The prompt a llama.cpp server's built-in chat template makes of a request.

llama-cpp-python's chat formats (``chatml``, ``llama-3``, ``mistral-instruct``, ...) map each
message to ``(role, content)`` keeping the content only when it is a string: a list of parts
-- an image, or text parts alone -- becomes ``None``, so the user turn is empty, and the
server still answers 200. `LlamaCppTemplate` renders the ``chatml`` prompt that way for every
chat completion the loopback fake receives (a route, so scripted replies still come first)
and answers with a short completion; ``prompts`` holds what the model would have read.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.http_server import FakeProvider, Recorded, Script, openai_completion

__all__ = ["LlamaCppTemplate", "render_chatml"]

_ROLES = {"user": "<|im_start|>user", "assistant": "<|im_start|>assistant"}
_SEP = "<|im_end|>"


def render_chatml(messages: list[dict[str, Any]]) -> str:
    """llama-cpp-python's ``format_chatml``: the first system message, then each user and
    assistant turn with its content if that is a string (else an empty turn)."""
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    turns = [
        (_ROLES[m["role"]], m["content"] if isinstance(m.get("content"), str) else None)
        for m in messages
        if m.get("role") in _ROLES
    ]
    turns.append((_ROLES["assistant"], None))
    out = f"<|im_start|>system\n{system}{_SEP}\n"
    for role, text in turns:
        out += f"{role}\n{text}{_SEP}\n" if text else f"{role}\n"
    return out


class LlamaCppTemplate:
    """Install on a `FakeProvider`: every chat completion's prompt, rendered, in ``prompts``."""

    def __init__(self, fake: FakeProvider, answer: str = "ok") -> None:
        self.prompts: list[str] = []
        self.answer = answer
        fake.routes.append(self._route)

    def _route(self, recorded: Recorded) -> Script | None:
        if not recorded.path.endswith("/chat/completions") or not isinstance(recorded.body, dict):
            return None
        self.prompts.append(render_chatml(recorded.body.get("messages") or []))
        return Script(body=openai_completion(self.answer))
