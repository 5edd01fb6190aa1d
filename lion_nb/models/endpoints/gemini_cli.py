"""`GeminiCLIEndpoint`: Gemini CLI (``gemini -p --output-format stream-json``) as a stream.

The CLI echoes the user's prompt as a ``message`` event (dropped here) and streams the answer
as ``delta`` messages (``text`` chunks with ``is_delta``). Its ``error`` events are warnings
it carries on from (``system`` chunks with ``metadata["notice"]``); a failed run ends with a
``result`` of ``status: "error"`` (an ``error`` chunk) or a non-zero exit, whose known codes
get a clear message. ``--resume <session id>`` continues a session. Gemini CLI has no
system-prompt flag for one run, so ``CLIRequest.system`` is put before the prompt.
Events are read defensively: a field of an unexpected type is treated as absent.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ...errors import ConfigurationError
from ...shapes import JsonObject
from ..stream import StreamChunk
from ._subprocess import (
    ChunkTranslator,
    SubprocessCLIEndpoint,
    as_dict,
    normalized_usage,
    with_system,
)
from .base import CLIRequest

__all__ = ["GeminiCLIEndpoint"]

APPROVAL_MODES = ("default", "auto_edit", "yolo")
EXIT_CODES = {
    1: "`gemini` failed (exit code 1).",
    41: "`gemini` could not authenticate (exit code 41). Log in by running `gemini` once, or set `GEMINI_API_KEY`.",
    42: "`gemini` rejected its input (exit code 42): check the prompt and the flags.",
    44: "`gemini` could not start its sandbox (exit code 44).",
    52: "`gemini` found its configuration invalid (exit code 52): check `~/.gemini/settings.json`.",
    53: "`gemini` reached its turn limit (exit code 53). Raise `maxSessionTurns` in its settings or ask for less.",
    130: "`gemini` was cancelled (exit code 130).",
}


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class _GeminiTranslator(ChunkTranslator):
    def __init__(self) -> None:
        super().__init__()
        self.session_id: str | None = None
        self.last_notice: str | None = None

    def feed(self, event: dict[str, Any]) -> list[StreamChunk]:
        kind = event.get("type")
        if kind == "init":
            session_id = event.get("session_id")
            self.session_id = session_id if isinstance(session_id, str) else None
            meta = {"session_id": self.session_id, "subtype": "init", "model": event.get("model")}
            return [StreamChunk(type="system", metadata={k: v for k, v in meta.items() if v})]
        if kind == "message":
            content = event.get("content")
            if event.get("role") != "assistant" or not content or not isinstance(content, str):
                return []
            return [
                StreamChunk(
                    type="text", content=event["content"], is_delta=bool(event.get("delta"))
                )
            ]
        if kind == "tool_use":
            params = event.get("parameters")
            return [
                StreamChunk(
                    type="tool_use",
                    tool_id=_str_or_none(event.get("tool_id")),
                    tool_name=_str_or_none(event.get("tool_name")),
                    tool_input=params if isinstance(params, dict) else {"parameters": params},
                )
            ]
        if kind == "tool_result":
            error = event.get("error") or {}
            failed = event.get("status") == "error"
            output = event.get("output")
            if failed and output is None:
                output = error.get("message") if isinstance(error, dict) else error
            return [
                StreamChunk(
                    type="tool_result",
                    tool_id=_str_or_none(event.get("tool_id")),
                    tool_output=output,
                    is_error=failed,
                )
            ]
        if kind == "error":
            self.last_notice = str(event.get("message") or "")
            meta = {"notice": self.last_notice, "severity": event.get("severity") or "error"}
            if self.session_id:
                meta["session_id"] = self.session_id
            return [StreamChunk(type="system", metadata=meta)]
        if kind == "result":
            return [self._result(event)]
        return []

    def _result(self, event: dict[str, Any]) -> StreamChunk:
        stats = as_dict(event.get("stats"))
        meta: dict[str, Any] = {"session_id": self.session_id} if self.session_id else {}
        if stats:
            meta["usage"] = normalized_usage(
                stats.get("input_tokens"),
                stats.get("output_tokens"),
                stats,
                total=stats.get("total_tokens"),
                cache_read=stats.get("cached"),
                cached_input_tokens=stats.get("cached"),
            )
            for key in ("duration_ms", "tool_calls"):
                if stats.get(key) is not None:
                    meta[key] = stats[key]
        if event.get("status") == "error":
            error = event.get("error") or {}
            message = error.get("message") if isinstance(error, dict) else str(error)
            message = message if isinstance(message, str) else None
            if isinstance(error, dict) and error.get("type"):
                meta["error_type"] = error["type"]
            return self.error(
                message or self.last_notice or "`gemini` reported a failed run.", **meta
            )
        meta.setdefault("cost_usd", None)  # the CLI reports no cost: unknown, not zero
        return StreamChunk(type="result", metadata=meta)

    def exit_message(self, code: int) -> str | None:
        message = EXIT_CODES.get(code)
        if message and self.last_notice:
            message = f"{message} It said: {self.last_notice}"
        return message


class GeminiCLIEndpoint(SubprocessCLIEndpoint):
    """Gemini CLI headless mode: ``iModel(provider="gemini_cli", model="gemini-2.5-pro")``.

    Settings: ``approval_mode`` (``default``, ``auto_edit``, ``yolo``), ``bypass_permissions``
    (``--yolo``: approve every tool call), plus ``cli_path``, ``cwd``, ``terminate_grace``;
    the request option ``timeout`` bounds the run.
    """

    provider: ClassVar[str] = "gemini_cli"
    executable: ClassVar[str] = "gemini"
    install_hint: ClassVar[str] = (
        "Install Gemini CLI (`npm install -g @google/gemini-cli`) and log in with `gemini`."
    )

    def __init__(
        self,
        model: str = "",
        *,
        approval_mode: str | None = None,
        bypass_permissions: bool = False,
        # Any: the settings `CLIEndpoint.__init__` takes, passed on
        **kwargs: Any,
    ):
        if approval_mode is not None and approval_mode not in APPROVAL_MODES:
            raise ConfigurationError(
                f"`approval_mode={approval_mode!r}` is not a Gemini CLI approval mode. "
                f"Use one of: {', '.join(APPROVAL_MODES)}."
            )
        super().__init__(model, **kwargs)
        self.approval_mode = approval_mode
        self.bypass_permissions = bypass_permissions is True

    @classmethod
    def setting_names(cls) -> list[str]:
        return ["approval_mode", "bypass_permissions", *super().setting_names()]

    def config(self) -> JsonObject:
        data = super().config()
        if self.approval_mode is not None:
            data["approval_mode"] = self.approval_mode
        if self.bypass_permissions:
            data["bypass_permissions"] = True
        return data

    def build_args(self, request: CLIRequest) -> list[str]:
        self._reject_images(request)
        prompt = with_system(request)
        # ``--prompt=...`` keeps a prompt that starts with "-" from passing for a flag
        args = [f"--prompt={prompt}"] if prompt.startswith("-") else ["-p", prompt]
        args += ["--output-format", "stream-json"]
        if self.model_flag:
            args += ["--model", self.model_flag]
        if request.resume:
            args += ["--resume", request.resume]
        if self.approval_mode is not None:
            args += ["--approval-mode", self.approval_mode]
        if self.bypass_permissions:
            args.append("--yolo")
        return args

    def new_translator(self) -> ChunkTranslator:
        return _GeminiTranslator()
