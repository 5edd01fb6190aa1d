"""Every error lion_nb raises, split by who is at fault.

::

    LionError
    ├── ConfigurationError (ValueError)   the caller's setup: unknown provider, bad option
    ├── ItemNotFoundError (KeyError)      an id or name that is not in a Pile / registry
    ├── ItemExistsError (ValueError)      a duplicate registration
    ├── ExecutionError                    a model call that failed (its cause is chained)
    ├── BudgetExceeded                    a call not started: it would cross a `Budget`
    ├── OperationError                    a graph node that cannot run its operation
    ├── ExtensionError                    an extension that could not be loaded (session unchanged)
    ├── ParseError (ValueError)           text that could not become the requested type
    ├── ScriptExhaustedError              an offline scripted model ran out of responses
    ├── MCPError                          an MCP server did not start, failed or answered badly
    └── ProviderError                     a provider failed; carries status, message, request id
        ├── AuthenticationError           401 / 403, or a missing key
        ├── PermissionDeniedError         403
        ├── NotFoundError                 404: unknown model or endpoint
        ├── BadRequestError               other 4xx
        │   └── ContextWindowError        the prompt does not fit the model
        ├── RateLimitError                429
        │   └── QuotaExceededError        429 that retrying will not fix (billing)
        ├── ServerError                   5xx
        │   └── OverloadedError           529 / ``overloaded_error``
        ├── StreamInterruptedError        an error that arrived in the middle of a stream
        ├── ProviderConnectionError       the server could not be reached
        ├── ProviderTimeoutError (TimeoutError)  a deadline passed
        └── CLIError                      a CLI agent failed (error event or non-zero exit)

A ``ProviderError`` never carries a key: its text is built from the status, the provider's
own message and the request id only, and ``redact`` scrubs known secret values from any
provider text before it is stored.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "BudgetExceeded",
    "CLIError",
    "ConfigurationError",
    "ContextWindowError",
    "ExecutionError",
    "ExtensionError",
    "ItemExistsError",
    "ItemNotFoundError",
    "LionError",
    "MCPError",
    "NotFoundError",
    "OperationError",
    "OverloadedError",
    "ParseError",
    "PermissionDeniedError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderTimeoutError",
    "QuotaExceededError",
    "RateLimitError",
    "ScriptExhaustedError",
    "ServerError",
    "StreamInterruptedError",
]


class LionError(Exception):
    """Base of every lion_nb error."""


class ConfigurationError(LionError, ValueError):
    """The caller asked for something that cannot be set up (the message says the fix)."""


class MCPError(LionError):
    """An MCP server did not start, failed or hung during a call, or answered something
    unusable. Inside a tool call it becomes the call's error result."""


class ItemNotFoundError(LionError, KeyError):
    """An id or name that is not present."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the sentence readable
        return str(self.args[0]) if self.args else ""


class ItemExistsError(LionError, ValueError):
    """A registration that would silently replace an existing entry."""


class ExecutionError(LionError):
    """A model call failed; the provider's error is the ``__cause__``."""


class BudgetExceeded(LionError):
    """A model call was not started because it would cross a `lion_nb.Budget`.

    ``budget`` is the budget, ``where`` names it (``session``, ``branch``, ``cell``, ``batch``),
    ``spent_usd`` / ``spent_tokens`` what was spent under it before this call, ``limit`` which
    of its limits the call would cross (``"usd"`` or ``"tokens"``) and ``needed`` what the call
    could take of it at most (dollars or tokens): enough to say what raising it must reach."""

    def __init__(
        self,
        message: str,
        *,
        budget: Any = None,
        where: str = "",
        spent_usd: float | None = None,
        spent_tokens: int = 0,
        limit: str = "usd",
        needed: float = 0.0,
    ):
        super().__init__(message)
        self.budget = budget
        self.where = where
        self.spent_usd = spent_usd
        self.spent_tokens = spent_tokens
        self.limit = limit
        self.needed = needed


class OperationError(LionError):
    """A graph node could not run its operation."""


class ExtensionError(LionError):
    """An extension could not be loaded: not found, failed to import, has the wrong shape, or
    raised in its ``extend(session)``. The session is left as it was (`lion_nb.extensions`).

    ``extension`` names it, ``stage`` is ``"find"``, ``"import"``, ``"shape"`` or
    ``"extend"``; the original exception, if any, is chained as ``__cause__``.
    """

    def __init__(self, message: str, *, extension: str = "", stage: str = ""):
        super().__init__(message)
        self.extension = extension
        self.stage = stage


class ParseError(LionError, ValueError):
    """Model text that could not be turned into the requested type."""

    def __init__(self, message: str, *, target: Any = None, text: str | None = None):
        super().__init__(message)
        self.target = target
        self.text = text


class ScriptExhaustedError(LionError):
    """An offline scripted model was asked for more responses than it was given."""


class ProviderError(LionError):
    """A provider failed. Carries what the provider said, never a credential.

    ``retryable`` says whether the retry policy may try again, ``retry_after`` the delay the
    provider asked for (seconds), ``partial_text`` what a stream delivered before it failed.
    """

    retryable: bool = False
    retry_after: float | None = None
    partial_text: str | None = None

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status: int | None = None,
        request_id: str | None = None,
        body: Any = None,
    ):
        self.provider = provider
        self.status = status
        self.request_id = request_id
        self.provider_message = message
        self.body = body
        super().__init__(self._compose())

    def _compose(self) -> str:
        head = f"{self.provider}: " if self.provider else ""
        status = f"HTTP {self.status}: " if self.status is not None else ""
        tail = f" (request id {self.request_id})" if self.request_id else ""
        return f"{head}{status}{self.provider_message}{tail}"


class AuthenticationError(ProviderError):
    """The key is missing, wrong or revoked."""


class PermissionDeniedError(ProviderError):
    """The key is valid but may not use this resource."""


class NotFoundError(ProviderError):
    """Unknown model, endpoint or resource."""


class BadRequestError(ProviderError):
    """The provider refused the request as malformed."""


class ContextWindowError(BadRequestError):
    """The conversation is longer than the model's context window."""


class RateLimitError(ProviderError):
    """Too many requests or tokens; retrying later may succeed."""


class QuotaExceededError(RateLimitError):
    """The account is out of quota; retrying will not help."""


class ServerError(ProviderError):
    """The provider failed on its side (5xx)."""


class OverloadedError(ServerError):
    """The provider is overloaded (Anthropic 529 / ``overloaded_error``)."""


class StreamInterruptedError(ProviderError):
    """An error arrived in the middle of a stream; what was received is kept."""


class ProviderConnectionError(ProviderError):
    """The provider could not be reached."""


class ProviderTimeoutError(ProviderError, TimeoutError):
    """A connect, total or run deadline passed."""


class CLIError(ProviderError):
    """A CLI agent reported an error or exited non-zero without one."""

    def __init__(self, message: str, *, exit_code: int | None = None, stderr: str = "", **kw):
        self.exit_code = exit_code
        self.stderr = stderr
        super().__init__(message, **kw)
