"""``parse``: turn model text into a requested type, repairing what can be repaired.

Three layers, cheapest first:

1. `extract_json` finds JSON in the text -- the whole text, a fenced ```json block, or the
   first balanced object/array in prose -- and repairs the slips models make (trailing
   commas, single quotes, Python's ``True``/``False``/``None``, ``//`` and ``/* */``
   comments, unquoted keys, brackets left open at the end).
2. `fuzzy_validate_mapping` matches the keys found against the keys wanted: exactly, then
   ignoring case and ``_``/``-``/spaces, then by similarity (``difflib`` ratio, at least
   ``similarity_threshold``). Only wanted keys are kept; a wanted key with no match is
   `Undefined` (or removed).
3. When the result still does not validate, the parse model is asked to rewrite the text as
   JSON for the schema, with the validation error, up to ``max_retries`` times. These calls
   are unrecorded: parsing never adds a message to the branch. Empty text is never sent
   (there is nothing to rewrite, and a model would invent an answer).

``handle_validation`` decides what a final failure gives: ``"raise"`` a `ParseError` (a
``ValueError``), ``"return_value"`` the original text, ``"return_none"`` ``None``.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from .._sentinel import Undefined
from ..errors import ParseError
from ..shapes import JsonObject
from ..tracing import hooks as tracing
from .types import ParseParam

if TYPE_CHECKING:
    from ..session.branch import Branch

__all__ = ["extract_json", "fuzzy_validate_mapping", "parse", "parse_with_details"]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)```", re.DOTALL)
_LITERALS = {
    "True": "true",
    "False": "false",
    "None": "null",
    "true": "true",
    "false": "false",
    "null": "null",
    "NaN": "null",
    "Infinity": "null",
}
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_MAX_CANDIDATES = 8

_PARSE_SYSTEM = (
    "You convert text into one JSON value that matches a JSON schema. Keep the text's "
    "meaning and values; do not add facts. Answer with the JSON only, no prose."
)


# -- finding JSON -------------------------------------------------------------------------------
# Any: any JSON value
def extract_json(text: object) -> Any | None:
    """The first JSON value found in ``text`` (see the module docstring), or ``None``."""
    if isinstance(text, (dict, list)):
        return text
    if not isinstance(text, str) or not text.strip():
        return None
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    candidates: list[str] = []
    fences = _FENCE.findall(text)
    # ```json blocks first, then any other fenced block
    candidates += [body for lang, body in fences if lang.lower() in ("json", "json5", "jsonc")]
    candidates += [body for lang, body in fences if lang.lower() not in ("json", "json5", "jsonc")]
    if stripped[0] in "{[":
        candidates.append(stripped)
    candidates += _balanced_candidates(text)
    seen: set[str] = set()
    for candidate in candidates[: _MAX_CANDIDATES * 2]:
        candidate = candidate.strip()
        if not candidate or candidate in seen:
            continue
        seen.add(candidate)
        value = _loads_lenient(candidate)
        if value is not None:
            return value
    # an unclosed fence (a truncated answer): take what follows the opening
    opening = re.search(r"```[ \t]*(?:json)?[ \t]*\r?\n(.*)\Z", text, re.DOTALL | re.IGNORECASE)
    if opening and "```" not in opening.group(1):
        return _loads_lenient(opening.group(1).strip())
    return None


def _loads_lenient(candidate: str) -> Any | None:
    try:
        return json.loads(candidate)
    except ValueError:
        pass
    if candidate[:1] not in "{[":
        return None
    try:
        return json.loads(_repair(candidate))
    except ValueError:
        return None


def _balanced_candidates(text: str) -> list[str]:
    """Objects/arrays that start at a ``{`` or ``[`` in prose, each up to its matching
    bracket (or to the end of the text when it never closes)."""
    out: list[str] = []
    start = 0
    while len(out) < _MAX_CANDIDATES:
        positions = [p for p in (text.find("{", start), text.find("[", start)) if p >= 0]
        if not positions:
            break
        begin = min(positions)
        end = _matching_end(text, begin)
        out.append(text[begin : end + 1] if end is not None else text[begin:])
        start = begin + 1
    return out


def _matching_end(text: str, begin: int) -> int | None:
    depth = 0
    quote: str | None = None
    i = begin
    n = len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'" and (c == '"' or _opens_single_quote(text, i)):
            quote = c
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _opens_single_quote(text: str, i: int) -> bool:
    """A ``'`` that starts a string (after ``{ [ , :``), not an apostrophe in a word."""
    j = i - 1
    while j >= 0 and text[j] in " \t\r\n":
        j -= 1
    return j < 0 or text[j] in "{[,:"


def _repair(s: str) -> str:
    """Rewrite near-JSON as JSON. Works on tokens, so text inside strings is never touched."""
    out: list[str] = []
    stack: list[str] = []
    i, n = 0, len(s)

    def drop_trailing_comma() -> None:
        while out and out[-1].isspace():
            out.pop()
        if out and out[-1] == ",":
            out.pop()

    while i < n:
        c = s[i]
        if c in "\"'":
            i = _read_string(s, i, out)
            continue
        if (c == "/" and s.startswith("//", i)) or c == "#":
            end = s.find("\n", i)
            i = n if end < 0 else end
            continue
        if c == "/" and s.startswith("/*", i):
            end = s.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        if c in "{[":
            stack.append("}" if c == "{" else "]")
            out.append(c)
        elif c in "}]":
            drop_trailing_comma()
            if stack:
                stack.pop()
            out.append(c)
            if not stack:
                break  # one value only; ignore trailing prose
        elif c.isdigit() or (c in "-." and i + 1 < n and s[i + 1].isdigit()):
            number = _NUMBER.match(s, i)
            if number is not None and number.end() > i:
                text = number.group()
                exact = re.fullmatch(r"-?\d+", text)
                out.append(text if exact else json.dumps(float(text)))
                i = number.end()
                continue
            out.append(c)
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (s[j].isalnum() or s[j] in "_-."):
                j += 1
            word = s[i:j]
            out.append(_LITERALS.get(word) or json.dumps(word))
            i = j
            continue
        else:
            out.append(c)
        i += 1
    # close what the text left open
    while out and out[-1].isspace():
        out.pop()
    if out and out[-1] == ":":
        out.append("null")
    drop_trailing_comma()
    for closer in reversed(stack):
        drop_trailing_comma()
        out.append(closer)
    return "".join(out)


def _read_string(s: str, i: int, out: list[str]) -> int:
    quote = s[i]
    j = i + 1
    n = len(s)
    buf: list[str] = []
    while j < n:
        d = s[j]
        if d == "\\" and j + 1 < n:
            nxt = s[j + 1]
            buf.append("'" if nxt == "'" else d + nxt)
            j += 2
            continue
        if d == quote:
            j += 1
            break
        if d == '"':  # a double quote inside a single-quoted string
            buf.append('\\"')
        elif d == "\n":
            buf.append("\\n")
        elif d == "\t":
            buf.append("\\t")
        else:
            buf.append(d)
        j += 1
    out.append('"' + "".join(buf) + '"')
    return j


# -- matching keys ------------------------------------------------------------------------------
def _norm(key: str) -> str:
    return re.sub(r"[\s_\-]+", "", str(key)).lower()


def fuzzy_validate_mapping(
    data: JsonObject,
    keys: list[str],
    *,
    similarity_threshold: float = 0.85,
    fill_value: object = Undefined,
    drop_undefined: bool = False,
) -> JsonObject:
    """``data`` re-keyed to ``keys``: exact, then case/separator-insensitive, then similar
    keys match (each key of ``data`` is used once). Keys of ``data`` that match nothing are
    dropped; a wanted key with no match gets ``fill_value``, or is left out when
    ``drop_undefined``."""
    if not isinstance(data, dict):
        raise TypeError(f"`fuzzy_validate_mapping` takes a dict, got {type(data).__name__}.")
    wanted = [str(k) for k in keys]
    available = {str(k): k for k in data}
    matched: dict[str, Any] = {}
    for key in wanted:  # exact
        if key in available:
            matched[key] = available.pop(key)
    by_norm: dict[str, str] = {}
    for key in available:
        by_norm.setdefault(_norm(key), key)
    for key in wanted:  # case and separators
        if key not in matched and _norm(key) in by_norm:
            source = by_norm.pop(_norm(key))
            if source in available:
                matched[key] = available.pop(source)
    for key in wanted:  # similarity, best pair first
        if key in matched or not available:
            continue
        scored = [
            (difflib.SequenceMatcher(None, _norm(key), _norm(k)).ratio(), k) for k in available
        ]
        score, best = max(scored)
        if score >= similarity_threshold:
            matched[key] = available.pop(best)
    result: dict[str, Any] = {}
    for key in wanted:
        if key in matched:
            result[key] = data[matched[key]]
        elif not drop_undefined:
            result[key] = fill_value
    return result


# -- validation ---------------------------------------------------------------------------------
def _schema_dict(target: dict[str, Any]) -> dict[str, Any]:
    schema = target.get("schema", target)
    return schema if isinstance(schema, dict) else {}


def _target_name(target: Any) -> str:
    if isinstance(target, type):
        return target.__name__
    if isinstance(target, dict):
        return str(target.get("name") or _schema_dict(target).get("title") or "the JSON schema")
    return "the response format"


def _field_keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _validate(value: Any, target: Any, param: ParseParam) -> Any:
    """``value`` (text or data) as ``target``; ``ValueError`` saying why not."""
    if isinstance(target, type) and isinstance(value, target):
        return value
    if isinstance(value, BaseModel):
        value = value.model_dump(by_alias=True)
    data = extract_json(value) if isinstance(value, str) else value
    if data is None:
        raise ValueError("no JSON object was found in the text")
    if isinstance(target, type) and issubclass(target, BaseModel):
        if isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict):
            data = data[0]
        if isinstance(data, dict) and param.fuzzy_match:
            data = _fuzzy(
                data, _field_keys(target), param, target.model_config.get("extra") == "allow"
            )
        return target.model_validate(data)
    if isinstance(target, dict):
        schema = _schema_dict(target)
        if not isinstance(data, dict):
            if schema.get("type", "object") == "object":
                raise ValueError(f"expected a JSON object, got {type(data).__name__}")
            return data
        props = list((schema.get("properties") or {}).keys())
        if param.fuzzy_match and props:
            keep_extra = schema.get("additionalProperties", True) is not False
            data = _fuzzy(data, props, param, keep_extra)
        missing = [k for k in schema.get("required") or () if k not in data]
        if missing:
            raise ValueError("missing required key(s) " + ", ".join(f"`{k}`" for k in missing))
        return data
    if target is None:
        return data
    raise TypeError(
        f"`response_format` takes a pydantic model class or a JSON schema dict, got "
        f"{type(target).__name__}."
    )


def _fuzzy(
    data: dict[str, Any], keys: list[str], param: ParseParam, keep_extra: bool
) -> dict[str, Any]:
    mapped = fuzzy_validate_mapping(
        data, keys, similarity_threshold=param.similarity_threshold, drop_undefined=True
    )
    if keep_extra:
        used_norms = {_norm(k) for k in mapped}
        for k, v in data.items():
            if k not in mapped and _norm(k) not in used_norms and k not in keys:
                mapped.setdefault(k, v)
    return mapped


def _explain(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors(include_url=False)[:8]:
            where = ".".join(str(p) for p in err["loc"]) or "value"
            parts.append(f"`{where}`: {err['msg']}")
        return "; ".join(parts)
    return str(exc)


# -- the parse model ------------------------------------------------------------------------------
async def _ask_parse_model(
    branch: Branch, text: str, target: Any, problem: str, param: ParseParam
) -> tuple[str | None, Any]:
    from ..models.endpoints import ChatRequest
    from .chat_op import response_format_spec

    imodel = branch.parse_model if param.imodel is None else param.imodel
    spec = response_format_spec(target)
    if spec is None:  # parse asks the model only for a target it has a schema for
        raise TypeError(f"No JSON schema for {target!r}; parse needs a pydantic model or a schema.")
    user = (
        f"Rewrite the text below as JSON matching the schema `{spec['name']}`.\n\n"
        f"Schema:\n```json\n{json.dumps(spec['schema'], ensure_ascii=False)}\n```\n\n"
        f"Why the text did not validate: {problem[:1000]}\n\nText:\n{text}"
    )
    request = ChatRequest(
        messages=[{"role": "system", "content": _PARSE_SYSTEM}, {"role": "user", "content": user}],
        response_format=spec,
        options=dict(param.imodel_kw),
    )
    call = await tracing.invoke(branch, imodel, request, "parse")
    log = getattr(branch, "log_manager", None)
    if log is not None:
        entry: dict[str, Any] = {
            "event": "parse_call",
            "provider": imodel.provider,
            "model": imodel.model,
            "status": call.status,
            "duration": call.duration,
        }
        if call.error is not None:
            from ..models.secrets import redact

            entry["error"] = redact(f"{type(call.error).__name__}: {call.error}")
        log.log(entry)
    if call.status != "completed" or call.response is None:
        return None, call.error
    raw = call.response.raw if call.response.raw is not None else call.response.text
    return call.response.text, raw


# Any: the parsed value (a model, a dict, a list) and the raw response
async def parse_with_details(branch: Branch, text: object, param: ParseParam) -> tuple[Any, Any]:
    """`parse`, also returning the parse model's raw response when one was used (else
    ``None``)."""
    target = param.response_format
    if isinstance(target, BaseModel):
        target = type(target)
    try:
        return _validate(text, target, param), None
    except ValueError as exc:
        problem = _explain(exc)
    source = text if isinstance(text, str) else json.dumps(text, default=str, ensure_ascii=False)
    attempts = 0
    imodel = branch.parse_model if param.imodel is None else param.imodel
    cli_parser = bool(getattr(imodel, "is_cli", False))
    if cli_parser:  # a CLI agent cannot answer a one-shot rewrite request
        problem += (
            f"; the parse model `{imodel.provider}/{imodel.model}` is a CLI agent, which cannot "
            'rewrite text: pass an API model as `parse_model=` (e.g. "offline/auto") to repair '
            "answers"
        )
    if target is not None and source.strip() and not cli_parser:
        for _ in range(max(0, param.max_retries)):
            attempts += 1
            rewritten, raw = await _ask_parse_model(branch, source, target, problem, param)
            if rewritten is None:
                problem = f"the parse model failed: {raw}"
                continue
            try:
                return _validate(rewritten, target, param), raw
            except ValueError as exc:
                problem = _explain(exc)
    if param.handle_validation == "return_none":
        return None, None
    if param.handle_validation == "return_value":
        return text, None
    tried = f" after {attempts} parse-model attempt{'s' * (attempts != 1)}" if attempts else ""
    raise ParseError(
        f"Could not parse the text into `{_target_name(target)}`{tried}: {problem}. "
        "Ask for the format more explicitly, raise `max_retries`, or use "
        '`handle_validation="return_value"` to get the text back.',
        target=target,
        text=source,
    )


# Any: the parsed value: a model instance, a dict or a list
async def parse(branch: Branch, text: object, param: ParseParam) -> Any:
    """``text`` as ``param.response_format`` (see the module docstring). Without a format,
    the JSON found in the text."""
    value, _ = await parse_with_details(branch, text, param)
    return value
