"""``interpret``: rewrite a rough request into a clear, self-contained prompt.

One unrecorded call to ``param.imodel`` (the facade defaults it to the parse model): the
branch's messages are neither sent nor changed, so interpreting is safe to do before a turn
without shaping the conversation. ``domain``, ``style`` and ``sample_writing`` steer the
rewrite. A failed call raises `ExecutionError`; an empty rewrite gives the text back
unchanged rather than an empty prompt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ExecutionError
from ..tracing import hooks as tracing
from .types import InterpretParam

if TYPE_CHECKING:
    from ..session.branch import Branch

__all__ = ["interpret"]

_SYSTEM = (
    "You rewrite a user's rough request into a clear, specific, self-contained prompt for a "
    "language model. Keep the user's intent and every constraint they gave; make implicit "
    "requirements explicit; do not answer the request. Reply with the rewritten prompt only."
)


def _user_message(text: str, param: InterpretParam) -> str:
    parts = []
    if param.domain:
        parts.append(f"Domain: {param.domain}")
    if param.style:
        parts.append(f"Style of the prompt: {param.style}")
    if param.sample_writing:
        parts.append(f"Write in the manner of this sample:\n{param.sample_writing}")
    parts.append(f"Request to rewrite:\n{text}")
    return "\n\n".join(parts)


async def interpret(branch: Branch, text: str, param: InterpretParam) -> str:
    """``text`` rewritten as a clear prompt (see the module docstring)."""
    from ..models.endpoints import ChatRequest

    imodel = branch.parse_model if param.imodel is None else param.imodel
    request = ChatRequest(
        messages=[
            {"role": "system", "content": _SYSTEM},
            {"role": "user", "content": _user_message(text, param)},
        ],
        options=dict(param.imodel_kw),
    )
    call = await tracing.invoke(branch, imodel, request, "interpret")
    log = getattr(branch, "log_manager", None)
    if log is not None:
        log.log(
            {
                "event": "interpret_call",
                "provider": imodel.provider,
                "model": imodel.model,
                "status": call.status,
                "duration": call.duration,
            }
        )
    if call.status != "completed" or call.response is None:
        from ..models.secrets import redact

        raise ExecutionError(
            f"`interpret` with `{imodel.provider}/{imodel.model}` failed: {redact(str(call.error))}"
        ) from call.error
    rewritten = (call.response.text or "").strip()
    return rewritten or text
