"""Capability grants: which structured keys an assistant may emit, and reading them back.

A grant is a set of named, typed keys. ``grant_capabilities`` installs it on a branch and (by
default) writes a marked block into the system prompt telling the model to emit fenced
```json blocks using only those keys. ``extract_capability_signals`` reads an assistant
message and turns each fenced JSON object into a typed signal (ADR-0016 D3):

- a block with no granted key is ordinary JSON and is ignored (so is non-JSON);
- a block mixing granted and ungranted keys is a ``CapabilityViolation``;
- a wholly granted block is validated: a ``StructuredOutput`` when valid, an
  ``EmissionRejected`` carrying the validation error otherwise.

These are observations, not actions: nothing is executed or authorised here.

Prompt editing is conservative. The block sits between `CAP_BEGIN` and `CAP_END`; a re-grant
removes one balanced block and appends a fresh one, so blocks never stack. When the markers
are unbalanced (a begin without an end, an end first, more than one of either) the prompt is
left exactly as it is, since guessing where a block ends could delete the user's own text;
the runtime grant is still installed (or cleared, for a revoke) and a warning is logged.

A block may carry any subset of the granted keys. It is validated against a model with just
those fields (types and constraints copied from the grant); when it carries every key, the
grant's own model is used, so a user model's validators run too.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from pydantic import BaseModel, create_model

from ..errors import ConfigurationError
from ..shapes import JsonMapping, JsonObject
from .messages import AssistantResponse, MessageRole, System
from .signals import CapabilityViolation, EmissionRejected, Signal, StructuredOutput

if TYPE_CHECKING:
    from .message_manager import MessageManager


class GrantHolder(Protocol):
    """A branch as the capability helpers see it (a `lion_nb.session.branch.Branch`): the
    grant it holds, its system prompt and its messages."""

    capability_grant: CapabilityGrant | None

    @property
    def system(self) -> System | None: ...
    @property
    def msgs(self) -> MessageManager: ...


__all__ = [
    "CAP_BEGIN",
    "CAP_END",
    "CapabilityGrant",
    "extract_capability_signals",
    "grant_capabilities",
    "render_capability_block",
    "revoke_capabilities",
]

logger = logging.getLogger("lion_nb.capabilities")

CAP_BEGIN = "<!-- lion_nb:capabilities -->"
CAP_END = "<!-- /lion_nb:capabilities -->"

# A fence, an optional language tag, then the body up to the closing fence.
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)```", re.DOTALL)
_JSON_TAGS = {"", "json", "jsonc", "json5"}


@dataclass(frozen=True)
class CapabilityGrant:
    """The granted keys and the pydantic model that types them."""

    model: type[BaseModel]
    allowed: frozenset[str]
    _subsets: dict[frozenset[str], type[BaseModel]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @classmethod
    def from_operable(cls, operable: type[BaseModel] | JsonMapping) -> CapabilityGrant:
        """A grant from a pydantic model class (its fields) or a mapping of key → type.

        A mapping value is a type, or a ``(type, default_or_Field)`` pair as in
        ``pydantic.create_model``.
        """
        if isinstance(operable, type) and issubclass(operable, BaseModel):
            model = operable
        elif isinstance(operable, Mapping):
            fields: dict[str, Any] = {}
            for key, spec in operable.items():
                if not isinstance(key, str) or not key or key.startswith("_"):
                    raise ConfigurationError(
                        f"`grant_capabilities`: key {key!r} is not usable; keys are non-empty "
                        "strings that do not start with `_`."
                    )
                fields[key] = spec if isinstance(spec, tuple) else (spec, ...)
            try:
                model = create_model("Capabilities", **fields)
            except Exception as exc:
                raise ConfigurationError(
                    f"`grant_capabilities`: cannot build a model from the mapping ({exc}). "
                    "Give each key a type, or a `(type, default)` pair."
                ) from exc
        elif isinstance(operable, BaseModel):
            raise ConfigurationError(
                f"`grant_capabilities` takes a model class, got an instance of "
                f"`{type(operable).__name__}`. Pass `{type(operable).__name__}` itself."
            )
        else:
            raise ConfigurationError(
                f"`grant_capabilities` takes a pydantic model class or a mapping of key → type, "
                f"got `{type(operable).__name__}`."
            )
        if not model.model_fields:
            raise ConfigurationError(
                f"`grant_capabilities`: `{model.__name__}` has no fields; grant at least one key."
            )
        return cls(model=model, allowed=frozenset(model.model_fields))

    def model_for(self, keys: frozenset[str]) -> type[BaseModel]:
        """The model that validates a block carrying exactly ``keys`` (a subset of the grant)."""
        if keys == self.allowed:
            return self.model
        cached = self._subsets.get(keys)
        if cached is None:
            # Any: create_model's keywords include its own options (`__config__`, `__base__`)
            fields: dict[str, Any] = {
                k: (self.model.model_fields[k].annotation, self.model.model_fields[k])
                for k in sorted(keys)
            }
            cached = create_model(self.model.__name__, **fields)
            self._subsets[keys] = cached
        return cached

    def schema(self) -> JsonObject:
        """The JSON schema of each granted key (no key is required in a block)."""
        full = self.model.model_json_schema()
        contract: dict[str, Any] = {"properties": full.get("properties", {})}
        if "$defs" in full:
            contract["$defs"] = full["$defs"]
        return contract


def render_capability_block(grant: CapabilityGrant) -> str:
    """The marked system-prompt block that tells the model how to emit granted keys."""
    names = ", ".join(sorted(grant.allowed))
    schema = json.dumps(grant.schema(), indent=2, ensure_ascii=False)
    return (
        f"{CAP_BEGIN}\n"
        "## Structured capabilities\n\n"
        "You may emit structured data by including a fenced ```json code block in your reply. "
        "Each top-level key is a capability; include only the ones relevant now (several, one "
        "or none). Keep writing your normal reply; the block is in addition to it.\n\n"
        f"Allowed keys (any other key is rejected): {names}.\n\n"
        "Each key's value must conform to this schema:\n\n"
        f"```json\n{schema}\n```\n"
        f"{CAP_END}"
    )


# -- prompt editing ---------------------------------------------------------------------------


def _without_block(text: str) -> str | None:
    """``text`` with its one balanced block removed; ``None`` when markers are unbalanced."""
    begins, ends = text.count(CAP_BEGIN), text.count(CAP_END)
    if begins == 0 and ends == 0:
        return text
    if begins == 1 and ends == 1:
        start, end = text.index(CAP_BEGIN), text.index(CAP_END)
        if start < end:
            head, tail = text[:start].rstrip(), text[end + len(CAP_END) :].lstrip()
            return f"{head}\n\n{tail}" if head and tail else head or tail
    return None


def _replace_system(branch: GrantHolder, text: str) -> None:
    current = branch.system
    if current is None:
        new = System(system_message=text, sender=MessageRole.SYSTEM, recipient=_id(branch))
    elif not text.strip() and not current.system_datetime:
        branch.msgs.set_system(None)  # the prompt held nothing but the block
        return
    else:
        data = current.model_dump(exclude={"id", "created_at"})
        data["system_message"] = text
        new = System.model_validate(data)
    branch.msgs.set_system(new)


class _BranchIds(TypedDict):
    """The branch fields every signal from one parse carries."""

    branch_id: str | None
    branch_name: str | None


def _id(branch: Any) -> str | None:
    bid = getattr(branch, "id", None)
    return None if bid is None else str(bid)


def _warn_unbalanced(action: str) -> None:
    logger.warning(
        "%s: the system prompt has unbalanced `%s` / `%s` markers, so it was left unchanged. "
        "Remove the stray marker(s) from the system message and grant again.",
        action,
        CAP_BEGIN,
        CAP_END,
    )


def grant_capabilities(
    branch: GrantHolder, operable: type[BaseModel] | JsonMapping, prompt: bool = True
) -> CapabilityGrant:
    """Install a grant on ``branch``; with ``prompt``, replace the prompt's capability block."""
    grant = CapabilityGrant.from_operable(operable)
    branch.capability_grant = grant
    if prompt:
        current = branch.system
        text = current.system_message if current is not None else ""
        base = _without_block(text)
        if base is None:
            _warn_unbalanced("`grant_capabilities`")
        else:
            block = render_capability_block(grant)
            _replace_system(branch, f"{base.rstrip()}\n\n{block}" if base.strip() else block)
    return grant


def revoke_capabilities(branch: GrantHolder) -> None:
    """Clear the grant and remove a balanced capability block from the system prompt."""
    branch.capability_grant = None
    current = branch.system
    if current is None:
        return
    base = _without_block(current.system_message)
    if base is None:
        _warn_unbalanced("`revoke_capabilities`")
    elif base != current.system_message:
        _replace_system(branch, base)


# -- extraction -------------------------------------------------------------------------------


def _json_objects(text: str) -> list[dict[str, Any]]:
    objects = []
    for tag, body in _FENCE.findall(text):
        if tag.lower() not in _JSON_TAGS:
            continue
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):  # model output: malformed or absurdly nested
            continue
        if isinstance(value, dict):
            objects.append(value)
    return objects


def extract_capability_signals(branch: GrantHolder, message: object) -> list[Signal]:
    """Signals for the fenced JSON objects in an assistant message, in block order.

    ``[]`` when the branch has no grant or ``message`` is neither an `AssistantResponse` nor
    a string.
    """
    grant: CapabilityGrant | None = getattr(branch, "capability_grant", None)
    if grant is None:
        return []
    if isinstance(message, AssistantResponse):
        text = message.response
    elif isinstance(message, str):
        text = message
    else:
        return []
    name = getattr(branch, "name", None) or ""
    ids: _BranchIds = {"branch_id": _id(branch), "branch_name": getattr(branch, "name", None)}
    allowed = sorted(grant.allowed)
    signals: list[Signal] = []
    for block in _json_objects(text or ""):
        keys = frozenset(block)
        if keys.isdisjoint(grant.allowed):
            continue
        if not keys <= grant.allowed:
            violation = CapabilityViolation(
                offending=sorted(keys - grant.allowed), allowed=allowed, block=block
            )
            signals.append(Signal(payload=violation, **ids))
            continue
        try:
            data = grant.model_for(keys).model_validate(block)
        except Exception as exc:
            rejected = EmissionRejected(branch_name=name, error=str(exc), block=block)
            signals.append(Signal(payload=rejected, **ids))
            continue
        signals.append(StructuredOutput(data=data, block=block, **ids))
    return signals
