"""How a turn's failure reaches the cell: by fault, in one line where possible.

The user's mistakes (a bad name, a missing item) become `UsageError`s, which IPython shows as
one line without a traceback. A provider's failure is raised as itself -- ``%debug`` still
gets the traceback -- but renders as one line in the provider's own words, plus, for a
missing key, how to set it without showing it (``getpass``, never ``%env``).
"""

from __future__ import annotations

from IPython.core.error import UsageError

__all__ = ["as_usage_error", "presentable", "provider_error"]

_KEY_HINT = (
    "In a notebook, set it without showing it: "
    '`import os, getpass; os.environ["{var}"] = getpass.getpass()`.'
)


def as_usage_error(exc: BaseException) -> BaseException:
    from ...errors import ConfigurationError, ItemExistsError, ItemNotFoundError

    if isinstance(exc, (ConfigurationError, ItemNotFoundError, ItemExistsError)):
        return UsageError(str(exc))
    return exc


def provider_error(exc: BaseException) -> BaseException | None:
    """The provider's own error behind ``exc`` (itself, or in its cause chain), if any."""
    from ...errors import ProviderError

    chain: BaseException | None = exc
    seen: set[int] = set()
    while chain is not None and id(chain) not in seen:
        seen.add(id(chain))
        if isinstance(chain, ProviderError):
            return chain
        chain = chain.__cause__ or chain.__context__
    return None


def presentable(exc: BaseException) -> BaseException:
    """The error a cell shows: the user's mistakes as `UsageError`, a provider's failure as
    one line in the provider's own words (the traceback stays on ``exc`` for ``%debug``)."""
    import re

    from ...errors import LionError

    if isinstance(exc, UsageError):
        return exc
    converted = as_usage_error(exc)
    if converted is not exc:
        return converted
    shown = provider_error(exc) or (exc if isinstance(exc, LionError) else None)
    if shown is None:
        return exc
    text = f"{type(shown).__name__}: {shown}"
    match = re.search(r"`([A-Z][A-Z0-9_]*_API_KEY)`", text)
    if match and "no API key" in text:
        text += " " + _KEY_HINT.format(var=match.group(1))
    lines = [text]
    try:
        exc._render_traceback_ = lambda: lines  # type: ignore[attr-defined]
    except AttributeError:  # exceptions without a __dict__
        pass
    return exc
