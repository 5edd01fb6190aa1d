"""`CodexEndpoint`: OpenAI Codex (``codex exec --json``) as a stream.

A session continues with ``codex exec [flags] resume <id> <prompt>``: the flags belong to
``exec`` and go before ``resume``. Sandbox and approval flags are passed only when set:
``sandbox=`` gives ``--sandbox``, and only ``bypass_permissions=True`` gives
``--dangerously-bypass-approvals-and-sandbox``. Codex has no system-prompt flag, so
``CLIRequest.system`` is put before the prompt.

Codex reports problems as ``error`` events of two kinds: transient notices
("Reconnecting... 2/5") that it recovers from, surfaced as ``system`` chunks with
``metadata["notice"]``; and real failures, held until ``turn.failed`` turns them into one
``error`` chunk (a failure that never reaches ``turn.failed`` is reported at the end).

Events are read defensively: a field of an unexpected type is treated as absent (a tool
``result`` that is plain text is that text), so a reshaped field costs that field only.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from ...errors import ConfigurationError
from ...shapes import JsonObject
from ..reasoning import check_reasoning
from ..stream import StreamChunk
from ._subprocess import (
    ChunkTranslator,
    SubprocessCLIEndpoint,
    as_dict,
    as_list,
    normalized_usage,
    positional,
    with_system,
)
from .base import CLIRequest

__all__ = ["CodexEndpoint"]

SANDBOXES = ("read-only", "workspace-write", "danger-full-access")
_TRANSIENT = re.compile(r"\s*(Reconnecting|Retrying)\b", re.IGNORECASE)
_TOOL_ITEMS = ("command_execution", "mcp_tool_call", "file_change", "web_search")


def _tool_name(item: dict[str, Any]) -> str:
    if item.get("type") == "mcp_tool_call":
        server, tool = item.get("server"), item.get("tool")
        tool = tool if isinstance(tool, str) and tool else "mcp_tool_call"
        return f"{server}.{tool}" if isinstance(server, str) and server else tool
    return str(item.get("type"))


def _tool_input(item: dict[str, Any]) -> dict[str, Any]:
    kind = item.get("type")
    if kind == "command_execution":
        return {"command": item.get("command")}
    if kind == "mcp_tool_call":
        args = item.get("arguments")
        if args is None:
            return {}
        return args if isinstance(args, dict) else {"arguments": args}
    if kind == "file_change":
        return {"changes": as_list(item.get("changes"))}
    return {"query": item.get("query")}


def _tool_result(item: dict[str, Any]) -> tuple[Any, bool, dict[str, Any]]:
    """(output, is_error, metadata) of a completed tool item."""
    kind, status = item.get("type"), item.get("status")
    failed = status == "failed"
    if kind == "command_execution":
        code = item.get("exit_code")
        meta = {"exit_code": code, "status": status}
        return item.get("aggregated_output"), failed or code not in (0, None), meta
    if kind == "mcp_tool_call":
        error = item.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else error
            return message, True, {"status": status}
        result = item.get("result")
        if result is not None and not isinstance(result, dict):
            return result, failed, {"status": status}
        result = as_dict(result)
        if result.get("structured_content") is not None:
            return result["structured_content"], failed, {"status": status}
        blocks = as_list(result.get("content"))
        texts = [
            b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
        ]
        output = "\n".join(texts) if len(texts) == len(blocks) else blocks
        return output, failed, {"status": status}
    if kind == "file_change":
        return as_list(item.get("changes")), failed, {"status": status}
    return item.get("results"), failed, {"status": status}


class _CodexTranslator(ChunkTranslator):
    def __init__(self) -> None:
        super().__init__()
        self.session_id: str | None = None
        self.started: set[str | None] = set()
        self.pending: str | None = None  # a real error awaiting turn.failed

    def _meta(self, **extra: Any) -> dict[str, Any]:
        meta = {"session_id": self.session_id} if self.session_id else {}
        meta.update({k: v for k, v in extra.items() if v is not None})
        return meta

    def feed(self, event: dict[str, Any]) -> list[StreamChunk]:
        kind = event.get("type")
        if kind == "thread.started":
            thread_id = event.get("thread_id")
            self.session_id = thread_id if isinstance(thread_id, str) else None
            return [StreamChunk(type="system", metadata=self._meta(subtype="init"))]
        if kind in ("item.started", "item.completed"):
            return self._item(as_dict(event.get("item")), completed=kind == "item.completed")
        if kind == "turn.completed":
            chunks = self._release_pending()
            usage = as_dict(event.get("usage"))
            norm = normalized_usage(
                usage.get("input_tokens"),
                usage.get("output_tokens"),
                usage,
                cache_read=usage.get("cached_input_tokens"),
                reasoning=usage.get("reasoning_output_tokens"),
                cached_input_tokens=usage.get("cached_input_tokens"),
            )
            # the CLI reports no cost: recorded as unknown (None), never as zero
            meta = {**self._meta(usage=norm), "cost_usd": None}
            return [*chunks, StreamChunk(type="result", metadata=meta)]
        if kind == "turn.failed":
            error = event.get("error") or {}
            message = error.get("message") if isinstance(error, dict) else str(error)
            message = message if isinstance(message, str) else None
            fallback, self.pending = self.pending, None
            return [self.error(message or fallback, **self._meta())]
        if kind == "error":
            message = str(event.get("message") or "")
            if _TRANSIENT.match(message):
                return [
                    StreamChunk(type="system", metadata=self._meta(notice=message, transient=True))
                ]
            chunks = self._release_pending()
            self.pending = message
            self.error_reported = True  # reported by turn.failed or at the end
            return chunks
        return []

    def _release_pending(self) -> list[StreamChunk]:
        """A failure the turn recovered from is only a notice."""
        if self.pending is None:
            return []
        notice, self.pending = self.pending, None
        self.error_reported = False
        return [StreamChunk(type="system", metadata=self._meta(notice=notice, transient=False))]

    def _item(self, item: dict[str, Any], *, completed: bool) -> list[StreamChunk]:
        kind, item_id = item.get("type"), item.get("id")
        item_id = item_id if isinstance(item_id, str) else None
        if kind in _TOOL_ITEMS:
            chunks = []
            if item_id not in self.started:
                self.started.add(item_id)
                chunks.append(
                    StreamChunk(
                        type="tool_use",
                        tool_id=item_id,
                        tool_name=_tool_name(item),
                        tool_input=_tool_input(item),
                    )
                )
            if completed:
                output, is_error, meta = _tool_result(item)
                chunks.append(
                    StreamChunk(
                        type="tool_result",
                        tool_id=item_id,
                        tool_output=output,
                        is_error=is_error,
                        metadata={k: v for k, v in meta.items() if v is not None},
                    )
                )
            return chunks
        if not completed:
            return []
        text = item.get("text") if isinstance(item.get("text"), str) else None
        if kind == "reasoning" and text:
            return [StreamChunk(type="thinking", content=text)]
        if kind == "agent_message" and text:
            return [StreamChunk(type="text", content=text)]
        if kind == "error" and item.get("message"):
            return [
                StreamChunk(
                    type="system", metadata=self._meta(notice=item["message"], transient=False)
                )
            ]
        return []

    def finish(self) -> list[StreamChunk]:
        if self.pending is None:
            return []
        message, self.pending = self.pending, None
        return [self.error(message, **self._meta())]


class CodexEndpoint(SubprocessCLIEndpoint):
    """Codex non-interactive mode: ``iModel(provider="codex", model="gpt-5-codex")``.

    Settings: ``sandbox`` (``read-only``, ``workspace-write``, ``danger-full-access``),
    ``bypass_permissions`` (no approvals and no sandbox), ``skip_git_repo_check`` (run
    outside a Git repository), plus ``cli_path``, ``cwd``, ``terminate_grace``; the request
    option ``timeout`` bounds the run. ``CLIRequest.images`` are passed as ``--image``.
    ``reasoning=`` (the model's or the run's) becomes Codex's own setting,
    ``-c model_reasoning_effort="LEVEL"``.
    """

    provider: ClassVar[str] = "codex"
    executable: ClassVar[str] = "codex"
    takes_reasoning: ClassVar[bool] = True
    request_options: ClassVar[frozenset[str]] = frozenset({"timeout", "reasoning"})
    install_hint: ClassVar[str] = (
        "Install Codex (`npm install -g @openai/codex`) and log in with `codex login`."
    )

    def __init__(
        self,
        model: str = "",
        *,
        sandbox: str | None = None,
        bypass_permissions: bool = False,
        skip_git_repo_check: bool = False,
        # Any: the settings `CLIEndpoint.__init__` takes, passed on
        **kwargs: Any,
    ):
        if sandbox is not None and sandbox not in SANDBOXES:
            raise ConfigurationError(
                f"`sandbox={sandbox!r}` is not a Codex sandbox. Use one of: {', '.join(SANDBOXES)}."
            )
        super().__init__(model, **kwargs)
        self.sandbox = sandbox
        self.bypass_permissions = bypass_permissions is True
        self.skip_git_repo_check = bool(skip_git_repo_check)

    @classmethod
    def setting_names(cls) -> list[str]:
        return ["sandbox", "bypass_permissions", "skip_git_repo_check", *super().setting_names()]

    def config(self) -> JsonObject:
        data = super().config()
        if self.sandbox is not None:
            data["sandbox"] = self.sandbox
        if self.bypass_permissions:
            data["bypass_permissions"] = True
        if self.skip_git_repo_check:
            data["skip_git_repo_check"] = True
        return data

    def build_args(self, request: CLIRequest) -> list[str]:
        args = ["exec", "--json"]
        if self.model_flag:
            args += ["--model", self.model_flag]
        if self.sandbox is not None:
            args += ["--sandbox", self.sandbox]
        if self.bypass_permissions:
            args.append("--dangerously-bypass-approvals-and-sandbox")
        if self.skip_git_repo_check:
            args.append("--skip-git-repo-check")
        effort = check_reasoning({**self.options, **request.options}.get("reasoning"))
        if effort is not None:  # a TOML string: Codex reads `-c` values as TOML
            args += ["-c", f'model_reasoning_effort="{effort}"']
        for image in request.images or []:
            args += ["--image", str(image)]
        if request.resume:
            args += ["resume", request.resume]
        return [*args, *positional(with_system(request))]

    def new_translator(self) -> ChunkTranslator:
        return _CodexTranslator()
