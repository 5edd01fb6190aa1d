"""`ClaudeCodeEndpoint`: Claude Code (``claude -p --output-format stream-json``) as a stream.

Permissions are the CLI's own business: with no settings, no permission flag is passed and
the CLI applies its safe default. ``permission_mode=`` passes ``--permission-mode``, and only
``bypass_permissions=True`` passes ``--dangerously-skip-permissions``.

With ``include_partial=True`` the CLI streams text and thinking as deltas and then repeats
the whole block in an ``assistant`` snapshot with the same message id; the snapshot's text
and thinking are dropped (its tool calls are kept, as they are never sent as chunks before).

A ``result`` with ``is_error`` (an API failure the CLI reports as ``subtype: "success"``, or
``error_max_turns`` with ``errors[]``) becomes an ``error`` chunk, not a ``result``.

Events are read defensively: a field of an unexpected type is treated as absent (a string
``content`` as one text block), so a CLI update that reshapes one field costs that field,
not the run.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar, Literal

from ...errors import ConfigurationError
from ...shapes import JsonObject
from ..stream import StreamChunk
from ..usage import finite_usd
from ._subprocess import (
    ChunkTranslator,
    SubprocessCLIEndpoint,
    as_dict,
    as_list,
    count,
    normalized_usage,
    positional,
)
from .base import CLIRequest

__all__ = ["ClaudeCodeEndpoint"]

PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions")


def _usage(raw: Any) -> dict[str, Any]:
    """Input tokens include cache writes and reads (all prompt tokens), as other providers count."""
    raw = as_dict(raw)
    cached = count(raw.get("cache_read_input_tokens"))
    written = count(raw.get("cache_creation_input_tokens"))
    prompt = count(raw.get("input_tokens")) + written + cached
    return normalized_usage(
        prompt,
        raw.get("output_tokens"),
        raw,
        cache_read=cached,
        cache_write=written,
        cached_input_tokens=cached,
    )


def _reported_cost(value: Any) -> float | None:
    """The run's ``total_cost_usd`` when it is a finite number of dollars >= 0; else a
    warning and ``None``, so that the ledger prices the run from its usage."""
    usd = finite_usd(value)
    if usd is None and value is not None:
        warnings.warn(
            f"`claude` reported `total_cost_usd` {value!r:.40}, not a finite number of dollars "
            ">= 0: the run is priced from its usage instead.",
            UserWarning,
            stacklevel=2,
        )
    return usd


def _content_blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content as blocks: a string is one text block, non-dict entries are skipped."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in as_list(content) if isinstance(b, dict)]


def _tool_output(content: Any) -> Any:
    """Text blocks joined into one string; other content as the CLI gave it."""
    if isinstance(content, list) and all(
        isinstance(b, dict) and b.get("type") == "text" for b in content
    ):
        return "\n".join(b.get("text", "") for b in content)
    return content


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class _ClaudeTranslator(ChunkTranslator):
    def __init__(self) -> None:
        super().__init__()
        self.current: dict[Any, str] = {}  # parent_tool_use_id -> message id being streamed
        self.streamed: dict[str, set[str]] = {}  # message id -> block types sent as deltas

    def feed(self, event: dict[str, Any]) -> list[StreamChunk]:
        kind = event.get("type")
        if kind == "system":
            if event.get("subtype") != "init":
                return []
            meta = {
                "session_id": event.get("session_id"),
                "subtype": "init",
                "model": event.get("model"),
                "cwd": event.get("cwd"),
                "tools": event.get("tools"),
                "permission_mode": event.get("permissionMode"),
            }
            return [
                StreamChunk(
                    type="system", metadata={k: v for k, v in meta.items() if v is not None}
                )
            ]
        if kind == "stream_event":
            return self._delta(event)
        if kind == "assistant":
            return self._assistant(event)
        if kind == "user":
            return self._user(event)
        if kind == "result":
            return [self._result(event)]
        return []

    def _delta(self, event: dict[str, Any]) -> list[StreamChunk]:
        inner = as_dict(event.get("event"))
        parent = event.get("parent_tool_use_id")
        if inner.get("type") == "message_start":
            message_id = as_dict(inner.get("message")).get("id")
            if isinstance(message_id, str) and message_id:
                self.current[parent] = message_id
            return []
        if inner.get("type") != "content_block_delta":
            return []
        delta = as_dict(inner.get("delta"))
        kinds: dict[Any, tuple[Literal["text", "thinking"] | None, Any]] = {
            "text_delta": ("text", delta.get("text")),
            "thinking_delta": ("thinking", delta.get("thinking")),
        }
        kind, text = kinds.get(delta.get("type"), (None, None))
        if kind is None or not text or not isinstance(text, str):
            return []
        message_id = self.current.get(parent)
        if message_id:
            self.streamed.setdefault(message_id, set()).add(kind)
        meta = {"parent_tool_use_id": parent} if parent else {}
        return [StreamChunk(type=kind, content=text, is_delta=True, metadata=meta)]

    def _assistant(self, event: dict[str, Any]) -> list[StreamChunk]:
        message = as_dict(event.get("message"))
        message_id = message.get("id")
        skip = self.streamed.get(message_id, set()) if isinstance(message_id, str) else set()
        parent = event.get("parent_tool_use_id")
        meta = {"parent_tool_use_id": parent} if parent else {}
        chunks: list[StreamChunk] = []
        for block in _content_blocks(message.get("content")):
            btype = block.get("type")
            if btype in skip:
                continue
            if btype == "thinking" and isinstance(block.get("thinking"), str) and block["thinking"]:
                chunks.append(
                    StreamChunk(type="thinking", content=block["thinking"], metadata=meta)
                )
            elif btype == "text" and isinstance(block.get("text"), str) and block["text"]:
                chunks.append(StreamChunk(type="text", content=block["text"], metadata=meta))
            elif btype == "tool_use":
                tool_input = block.get("input")
                chunks.append(
                    StreamChunk(
                        type="tool_use",
                        tool_id=_str_or_none(block.get("id")),
                        tool_name=_str_or_none(block.get("name")),
                        tool_input=tool_input if isinstance(tool_input, dict) else {},
                        metadata=dict(meta),
                    )
                )
        return chunks

    def _user(self, event: dict[str, Any]) -> list[StreamChunk]:
        content = as_dict(event.get("message")).get("content")
        if not isinstance(content, list):
            return []
        return [
            StreamChunk(
                type="tool_result",
                tool_id=_str_or_none(block.get("tool_use_id")),
                tool_output=_tool_output(block.get("content")),
                is_error=bool(block.get("is_error")),
            )
            for block in content
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]

    def _result(self, event: dict[str, Any]) -> StreamChunk:
        meta: dict[str, Any] = {
            "session_id": event.get("session_id"),
            "subtype": event.get("subtype"),
            "usage": _usage(event.get("usage")),
            "cost_usd": _reported_cost(event.get("total_cost_usd")),
            "num_turns": event.get("num_turns"),
            "duration_ms": event.get("duration_ms"),
            "duration_api_ms": event.get("duration_api_ms"),
            "stop_reason": event.get("stop_reason"),
        }
        if event.get("permission_denials"):
            meta["permission_denials"] = event["permission_denials"]
        meta = {k: v for k, v in meta.items() if v is not None}
        if not event.get("is_error"):
            if isinstance(event.get("result"), str):
                meta["result"] = event["result"]
            return StreamChunk(type="result", metadata=meta)
        if event.get("api_error_status") is not None:
            meta["api_error_status"] = meta["status"] = event["api_error_status"]
        if event.get("terminal_reason"):
            meta["terminal_reason"] = event["terminal_reason"]
        errors = [str(e) for e in as_list(event.get("errors")) if e]
        result = event.get("result")
        message = (
            "; ".join(errors)
            or (result if isinstance(result, str) else None)
            or (f"`claude` ended with `{event.get('subtype') or 'an error'}`.")
        )
        return self.error(message, **meta)


class ClaudeCodeEndpoint(SubprocessCLIEndpoint):
    """Claude Code in print mode: ``iModel(provider="claude_code", model="sonnet")``.

    Settings: ``permission_mode`` (one of ``default``, ``acceptEdits``, ``plan``,
    ``bypassPermissions``), ``bypass_permissions`` (skip every permission check),
    ``include_partial`` (stream text as deltas), ``max_turns``, ``mcp_config`` (a path given
    as ``--mcp-config``: e.g. the file ``%lion serve`` writes, so the agent works in the
    notebook), plus ``cli_path``, ``cwd``, ``terminate_grace``; the request option
    ``timeout`` bounds the run.
    """

    provider: ClassVar[str] = "claude_code"
    executable: ClassVar[str] = "claude"
    install_hint: ClassVar[str] = (
        "Install Claude Code (`npm install -g @anthropic-ai/claude-code`) and log in with `claude`."
    )

    def __init__(
        self,
        model: str = "",
        *,
        permission_mode: str | None = None,
        bypass_permissions: bool = False,
        include_partial: bool = False,
        max_turns: int | None = None,
        mcp_config: str | None = None,
        # Any: the settings `CLIEndpoint.__init__` takes, passed on
        **kwargs: Any,
    ):
        if permission_mode is not None and permission_mode not in PERMISSION_MODES:
            raise ConfigurationError(
                f"`permission_mode={permission_mode!r}` is not a Claude Code permission mode. "
                f"Use one of: {', '.join(PERMISSION_MODES)}."
            )
        if max_turns is not None and (isinstance(max_turns, bool) or int(max_turns) < 1):
            raise ConfigurationError(f"`max_turns={max_turns!r}`: give a positive whole number.")
        super().__init__(model, **kwargs)
        self.permission_mode = permission_mode
        self.bypass_permissions = bypass_permissions is True
        self.include_partial = bool(include_partial)
        self.max_turns = int(max_turns) if max_turns is not None else None
        self.mcp_config = str(mcp_config) if mcp_config is not None else None

    @classmethod
    def setting_names(cls) -> list[str]:
        names = ["permission_mode", "bypass_permissions", "include_partial", "max_turns"]
        names.append("mcp_config")
        return [*names, *super().setting_names()]

    def config(self) -> JsonObject:
        data = super().config()
        if self.permission_mode is not None:
            data["permission_mode"] = self.permission_mode
        if self.bypass_permissions:
            data["bypass_permissions"] = True
        if self.include_partial:
            data["include_partial"] = True
        if self.max_turns is not None:
            data["max_turns"] = self.max_turns
        if self.mcp_config is not None:
            data["mcp_config"] = self.mcp_config
        return data

    def build_args(self, request: CLIRequest) -> list[str]:
        self._reject_images(request)
        args = ["-p", "--output-format", "stream-json", "--verbose"]
        if self.include_partial:
            args.append("--include-partial-messages")
        if self.model_flag:
            args += ["--model", self.model_flag]
        if request.resume:
            args += ["--resume", request.resume]
        if request.system:
            args += ["--append-system-prompt", request.system]
        if self.permission_mode is not None:
            args += ["--permission-mode", self.permission_mode]
        if self.bypass_permissions:
            args.append("--dangerously-skip-permissions")
        if self.max_turns is not None:
            args += ["--max-turns", str(self.max_turns)]
        if self.mcp_config is not None:
            args += ["--mcp-config", self.mcp_config]
        return [*args, *positional(request.prompt)]

    def new_translator(self) -> ChunkTranslator:
        return _ClaudeTranslator()
