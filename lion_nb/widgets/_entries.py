"""Messages as display entries: one plain dict per shown item, its HTML made safe in the kernel.

An entry is what the front end draws for one item of the conversation:

``{"id", "index", "kind", "role", "html", "meta", ...}``

- ``system``, ``instruction`` and ``assistant_response`` messages are one entry each, their
  text rendered as Markdown through the shared sanitizer (raw HTML off, allowlist) with code
  blocks highlighted; an instruction's images and files are its ``attachments`` (images by
  content hash, their ``data:`` URLs in the view's one ``media`` map; files as chips);
- an ``action_request`` and its ``action_response`` are one ``action`` entry: the function
  (and ``server``, the MCP server that ran it; ``approval``, when a decision was recorded),
  its arguments and its result (escaped, never rendered as HTML), with ``pending`` while no
  response exists and ``is_error`` when the tool failed; ``state`` says which, in one word
  (``pending``, ``ok``, ``error``, or ``denied``: a denied call is a decision, not a
  failure, though its response is marked as an error for the model). A response whose
  request is not on the branch is shown alone.

Rendering is cached per message identity and revision (a message edited in place renders
again), so a live view pays for each message once. ``meta`` holds the details shown on
demand: model, tokens, cost, duration, thinking time and the cell the message came from,
where known. An answer's citations are in its ``html`` (markers and the list of sources,
`lion_nb.rendering.answer_parts`); its thinking is ``thinking``: ``{"html", "seconds"}``.
"""

from __future__ import annotations

from collections import OrderedDict
from html import escape
from typing import Any

from ..rendering.transcript import json_text
from ..rendering.transcript import usage_tokens as _tokens

__all__ = ["EntryCache", "attachments", "json_text", "message_entry", "plain_text", "take_media"]

_ROLES = {
    "system": "system",
    "instruction": "user",
    "assistant_response": "assistant",
    "action_request": "tool",
    "action_response": "tool",
}
_RESULT_LIMIT = 20_000  # characters of a tool result kept in the view; the branch has it all
_THINKING_LIMIT = 50_000  # characters of an answer's thinking kept in the view


def _markdown(text: str) -> str:
    from ..rendering import markdown_html

    return markdown_html(text, highlight=True)


def _pre(text: str, limit: int = _RESULT_LIMIT) -> str:
    if len(text) > limit:
        text = text[:limit] + f"\n… ({len(text) - limit:,} more characters)"
    return f"<pre>{escape(text, quote=False)}</pre>"


def message_meta(message: Any) -> dict[str, Any]:
    """The details of one message: model, tokens, cost, duration, cell (only what is known)."""
    metadata = message.metadata or {}
    meta: dict[str, Any] = {"kind": message.kind, "created": _time(message.created_at)}
    for key in ("model", "duration"):
        if metadata.get(key) is not None:
            meta[key] = metadata[key]
    tokens = _tokens(metadata.get("usage"))
    if tokens is not None:
        meta["tokens"] = tokens
    cost = metadata.get("cost_usd")
    if isinstance(cost, (int, float)):
        meta["cost_usd"] = cost
    thinking = metadata.get("thinking")
    if isinstance(thinking, str) and thinking.strip():
        from ..rendering.answer_parts import thinking_words

        meta["thinking"] = thinking_words(metadata.get("thinking_seconds"))
    usage = metadata.get("usage")
    reasoning = usage.get("reasoning_tokens") if isinstance(usage, dict) else None
    if isinstance(reasoning, int) and reasoning > 0:
        meta["reasoning_tokens"] = reasoning
    cell = metadata.get("lion")
    if isinstance(cell, dict) and cell.get("execution_count") is not None:
        meta["cell"] = f"[{cell['execution_count']}]"
    return meta


def _time(value: Any) -> str:
    try:
        import datetime as _dt

        if isinstance(value, (int, float)):
            value = _dt.datetime.fromtimestamp(value)
        return value.strftime("%H:%M:%S")
    except Exception:
        return ""


def message_entry(message: Any, index: int, response: Any = None) -> dict[str, Any]:
    """The entry for ``message`` at position ``index`` (``response``: an action's answer)."""
    kind = message.kind
    entry: dict[str, Any] = {
        "id": str(message.id),
        "index": index,
        "kind": kind,
        "role": _ROLES.get(kind, "user"),
        "meta": message_meta(message),
    }
    if kind == "action_request":
        entry["kind"] = "action"
        entry["function"] = message.function
        entry["arguments"] = _pre(json_text(message.arguments))
        entry["pending"] = response is None
        entry["is_error"] = bool(getattr(response, "is_error", False))
        entry["result"] = _pre(response.rendered) if response is not None else ""
        if response is not None:
            entry["response_id"] = str(response.id)
        entry["html"] = ""
        _tool_origin(entry, message, response)
    elif kind == "action_response":
        entry["kind"] = "action"
        entry["function"] = message.function
        entry["arguments"] = _pre(json_text(message.arguments))
        entry["pending"] = False
        entry["is_error"] = bool(message.is_error)
        entry["result"] = _pre(message.rendered)
        entry["html"] = ""
        _tool_origin(entry, message, None)
    elif kind == "assistant_response":
        _answer(entry, message)
    else:
        text = message.rendered or ""
        entry["html"] = _markdown(text) if text else ""
        shown, media = attachments(message)
        if shown:
            entry["attachments"], entry["media"] = shown, media
    return entry


def _answer(entry: dict[str, Any], message: Any) -> None:
    """An answer's text with its citation markers and sources; its thinking, if any, as
    ``thinking``: ``{"html", "seconds"}`` (shown folded away)."""
    from ..rendering.answer_parts import answer_html, thinking_html

    metadata = message.metadata or {}
    text = message.rendered or ""
    entry["html"] = answer_html(text, metadata, highlight=True) if text else ""
    thinking = metadata.get("thinking")
    if isinstance(thinking, str) and thinking.strip():
        seconds = metadata.get("thinking_seconds")
        entry["thinking"] = {
            "html": thinking_html(_cut(thinking, _THINKING_LIMIT)),
            "seconds": seconds if isinstance(seconds, (int, float)) else None,
        }
    calls = metadata.get("tool_calls")
    if not text and calls:
        names = ", ".join(escape(str(c.get("name", "?"))) for c in calls)
        entry["html"] = f"<p><em>asked for tools: {names}</em></p>"
    shown, media = attachments(message)
    if shown:
        entry["attachments"], entry["media"] = shown, media


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n\n… ({len(text) - limit:,} more characters on the branch)"


def attachments(message: Any) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """``(shown, media)`` for a message's images and files. ``shown`` is one item each, in
    order: an image as ``{"type": "image", "ref", "alt"}``, a file (or an image on the web,
    never fetched) as a chip ``{"type": "file", "name", "label"}``. ``media`` maps each
    ``ref`` (the content hash) to its ``data:`` URL: a view sends it once however many
    messages show the same image."""
    images = getattr(message, "images", None) or ()
    files = getattr(message, "files", None) or ()
    if not images and not files:
        return [], {}
    from ..models.media import blob_ref, describe_image, read_data_url

    shown: list[dict[str, Any]] = []
    media: dict[str, str] = {}
    for url in images:
        alt = describe_image(url)
        decoded = read_data_url(url)
        if decoded is None or not decoded[0].startswith("image/"):
            shown.append({"type": "file", "name": "image", "label": alt})
            continue
        digest = blob_ref(url)[1]
        media[digest] = url
        shown.append({"type": "image", "ref": digest, "alt": alt})
    for part in files:
        shown.append(file_chip(part))
    return shown, media


def file_chip(part: Any) -> dict[str, Any]:
    """A file part as a chip: its name, and its kind with its pages or size in words."""
    from ..models.media import pdf_pages, read_data_url

    info = part.get("file") if isinstance(part, dict) else None
    info = info if isinstance(info, dict) else {}
    name = str(info.get("filename") or "file")
    decoded = read_data_url(info.get("file_data"))
    if decoded is None:
        return {"type": "file", "name": name, "label": "file"}
    kind, data = decoded
    words = [_KINDS.get(kind, kind.split("/")[-1].upper())]
    if kind == "application/pdf" and (pages := pdf_pages(data)):
        words.append(f"{pages} page{'s' if pages != 1 else ''}")
    words.append(_size(len(data)))
    return {"type": "file", "name": name, "label": " · ".join(words)}


_KINDS = {"application/pdf": "PDF", "text/plain": "text"}


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n / 2**20:.1f} MB"


def attachments_text(entry: dict[str, Any]) -> str:
    """An entry's attachments in words (the plain-text and static renderings)."""
    parts = []
    for item in entry.get("attachments") or ():
        if item["type"] == "image":
            parts.append(f"[{item['alt']}]")
        else:
            parts.append(f"[{item['name']}: {item['label']}]")
    return " ".join(parts)


def _tool_origin(entry: dict[str, Any], message: Any, response: Any) -> None:
    """``server``: the MCP server that ran the call (empty for a notebook function);
    ``approval``: how its approval went, when one was asked for."""
    meta = {**(message.metadata or {}), **(getattr(response, "metadata", None) or {})}
    entry["server"] = str(meta.get("mcp_server") or "")
    entry["approval"] = str(meta.get("approval") or "")
    entry["state"] = tool_state(entry)
    if isinstance(meta.get("code"), str) or isinstance(meta.get("proposed_arguments"), dict):
        _code_step(entry, message, response, meta)


def _code_step(entry: dict[str, Any], message: Any, response: Any, meta: dict[str, Any]) -> None:
    """A run of code (the notebook's ``run_python``): the code highlighted instead of its
    JSON -- the code that ran, and the model's own when the user edited it -- and the names
    it created, changed or deleted; a proposed cell (``propose_cell``) as ``insert``, its
    source."""
    from html import escape

    from ..rendering.highlight import highlight_code_blocks

    def code_html(code: Any) -> str:
        block = f'<pre><code class="language-python">{escape(str(code))}</code></pre>'
        return highlight_code_blocks(block)

    ran = (getattr(response, "arguments", None) or message.arguments or {}).get("code")
    if message.kind == "action_response":
        ran = message.arguments.get("code", ran)
    if not isinstance(ran, str):
        return
    html = code_html(ran)
    proposed = meta.get("proposed_arguments")
    if isinstance(proposed, dict) and proposed.get("code") != ran:
        html = (
            '<div class="lnb-tool-label">edited by the user; the model proposed</div>'
            + code_html(proposed.get("code", ""))
            + '<div class="lnb-tool-label">ran</div>'
            + html
        )
    entry["arguments"] = html
    if meta.get("proposed_cell") is True:  # a cell for the notebook: "Insert below" offers it
        entry["insert"] = ran
    names = meta.get("names")
    if isinstance(names, dict):
        entry["names"] = {k: [str(n) for n in v] for k, v in names.items() if isinstance(v, list)}


def tool_state(entry: dict[str, Any]) -> str:
    """An action entry's state: ``pending``, ``denied``, ``error`` or ``ok``."""
    if entry.get("pending"):
        return "pending"
    if entry.get("approval", "").startswith("denied"):
        return "denied"
    return "error" if entry.get("is_error") else "ok"


def tool_label(entry: dict[str, Any]) -> str:
    """``server/function`` for an MCP tool, the function's name otherwise."""
    server = entry.get("server")
    return f"{server}/{entry['function']}" if server else entry["function"]


def plain_text(entry: dict[str, Any], message: Any, response: Any = None) -> str:
    """One entry as readable text (for ``text/plain`` and the search box)."""
    if entry["kind"] == "action":
        answer = message if message.kind == "action_response" else response
        result = "(running)" if answer is None else _short(answer.rendered, 200)
        if entry.get("state") == "denied":
            result = f"denied ({entry['approval'].removeprefix('denied').strip()})"
        args = _short(json_text(message.arguments), 120)
        return f"tool {tool_label(entry)}({args}) → {result}"
    extra = attachments_text(entry)
    line = f"{entry['role']}: {message.rendered or ''}" + (f" {extra}" if extra else "")
    if message.kind != "assistant_response":
        return line
    from ..rendering.answer_parts import citations_text

    if entry.get("thinking"):  # no duration: static renderings compare equal across runs
        line = f"{entry['role']}: (thought) {message.rendered or ''}" + (
            f" {extra}" if extra else ""
        )
    sources = citations_text(message.metadata)
    return f"{line}\n{sources}" if sources else line


def _short(text: str, limit: int) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def take_media(entries: list[dict[str, Any]]) -> dict[str, str]:
    """The ``media`` of ``entries`` (copies from `EntryCache.entry`), taken out of each entry:
    a view keeps them in one ``media`` map, each image once."""
    media: dict[str, str] = {}
    for entry in entries:
        found = entry.pop("media", None)
        if found:
            media.update(found)
    return media


class EntryCache:
    """Entries keyed by message id and revision, bounded so a long session cannot grow it
    without limit (least recently used first out)."""

    def __init__(self, size: int = 2_000):
        self._size = size
        self._items: OrderedDict[tuple[str, int, str], dict[str, Any]] = OrderedDict()
        self.rendered = 0  # how many entries were rendered (not served from the cache)

    def entry(self, message: Any, index: int, response: Any = None) -> dict[str, Any]:
        """The entry for ``message``; only its HTML is cached (details are read fresh, since
        a turn tags its messages with their cell after they were shown)."""
        answer = f"{response.id}:{response.revision}" if response is not None else ""
        key = (str(message.id), message.revision, answer)
        found = self._items.get(key)
        if found is None:
            found = message_entry(message, index, response)
            self.rendered += 1
            self._items[key] = found
            if len(self._items) > self._size:
                self._items.popitem(last=False)
        else:
            self._items.move_to_end(key)
        return {**found, "index": index, "meta": message_meta(message)}
