"""Endpoint registry: a provider name to its class, imported only when first used.

HTTP presets are OpenAI-compatible servers: a base URL and the environment variable that
holds their key. ``iModel(provider="ollama", model="llama3.2")`` is the ``openai`` endpoint
pointed at ``http://localhost:11434/v1``.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from ...errors import ConfigurationError
from ...shapes import Keywords
from .base import (
    APIEndpoint,
    ChatRequest,
    CLIEndpoint,
    CLIRequest,
    Endpoint,
    ModelResponse,
    ToolCall,
    emit_text_delta,
    streaming_to,
)

__all__ = [
    "ENDPOINTS",
    "PRESETS",
    "PRESET_SETTINGS",
    "APIEndpoint",
    "CLIEndpoint",
    "CLIRequest",
    "ChatRequest",
    "Endpoint",
    "ModelResponse",
    "ToolCall",
    "emit_text_delta",
    "endpoint_class",
    "resolve_provider",
    "streaming_to",
]

ENDPOINTS: dict[str, str] = {
    "offline": "lion_nb.models.endpoints.offline:OfflineEndpoint",
    "offline_cli": "lion_nb.models.endpoints.offline_cli:OfflineCLIEndpoint",
    "openai": "lion_nb.models.endpoints.openai:OpenAIEndpoint",
    "anthropic": "lion_nb.models.endpoints.anthropic:AnthropicEndpoint",
    "claude_code": "lion_nb.models.endpoints.claude_code:ClaudeCodeEndpoint",
    "codex": "lion_nb.models.endpoints.codex:CodexEndpoint",
    "gemini_cli": "lion_nb.models.endpoints.gemini_cli:GeminiCLIEndpoint",
}

# name -> (endpoint, base_url, key environment variable or None when no key is needed)
PRESETS: dict[str, tuple[str, str, str | None]] = {
    "ollama": ("openai", "http://localhost:11434/v1", None),
    "vllm": ("openai", "http://localhost:8000/v1", "VLLM_API_KEY"),
    "llamacpp": ("openai", "http://localhost:8080/v1", None),
    "lmstudio": ("openai", "http://localhost:1234/v1", None),
    "openrouter": ("openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "groq": ("openai", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "together": ("openai", "https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "deepseek": ("openai", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "mistral": ("openai", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
}


# settings a preset implies beyond its URL and key: how its server takes a JSON schema,
# whether its models read images
PRESET_SETTINGS: dict[str, dict[str, Any]] = {
    # its built-in chat templates read string content only: an image part empties the turn
    "llamacpp": {"structured_output": "json_object", "vision": False},
    "deepseek": {"vision": False},  # its chat models read text only
}


def resolve_provider(provider: str) -> tuple[str, Keywords]:
    """The endpoint name for ``provider`` and the settings its preset implies."""
    name = provider.strip().lower()
    if name in ENDPOINTS:
        return name, {}
    if name in PRESETS:
        endpoint, base_url, key_env = PRESETS[name]
        settings = {"base_url": base_url, "api_key_env": key_env, "preset": name}
        return endpoint, {**settings, **PRESET_SETTINGS.get(name, {})}
    known = ", ".join(sorted([*ENDPOINTS, *PRESETS]))
    raise ConfigurationError(
        f"Unknown provider `{provider}`. Use one of: {known} "
        "(or `openai` with `base_url=` for any OpenAI-compatible server)."
    )


def endpoint_class(name: str) -> type[Endpoint]:
    module_name, _, attr = ENDPOINTS[name].partition(":")
    module = sys.modules.get(module_name)  # every model built after the first one
    found: type[Endpoint]  # every ENDPOINTS entry names an Endpoint subclass
    if module is not None:
        found = getattr(module, attr)
        return found
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise ConfigurationError(f"Provider `{name}` is not available in this build.") from exc
        raise
    found = getattr(module, attr)
    return found
