"""Notebook context: a context provider that tells the model what the notebook holds -- the
names, types and shapes of its variables and the source of its recent cells -- within a
token budget.

It reads the IPython shell at each request (``get_ipython()``, or the shell or namespace it
was given), so the model sees the notebook as it is *now*, and like every provider its text
is folded into that one request's system guidance and never recorded (ADR-0016 D3). The
branch needs a system prompt for providers to run.

What is shown, and what never is:

- variables -- those the instruction and then the latest cells mention first, then the
  others newest first -- skipping names that start with ``_``, modules and IPython's own
  names (at most ``max_variables``): ``name: type`` plus a shape when there is one --
  ``(rows, cols)`` and column names of a pandas DataFrame, shape and dtype of a
  numpy array (anything with ``shape`` and ``dtype``), ``len`` of builtin containers and
  strings, and the value of short scalars and strings. No other value is read: no
  ``repr`` of arbitrary objects (it may be slow or have side effects);
- a variable whose name looks like a key (``KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``,
  ``CREDENTIAL``) or that holds a `Secret` shows its type only, and its value is masked
  wherever it appears in a cell; cells pass through `lion_nb.models.secrets.redact` (known
  keys, ``api_key=...`` pairs, auth headers), variable lines through ``scrub``;
- the last ``cells`` cells before the running one, oldest first, from the raw input
  history, leaving out ``%%lion`` / ``%lion`` cells (their turns are already in the
  conversation).

Budget: the text never exceeds ``max_tokens`` by the project's estimator
(`lion_nb.tokens`). Variables get up to ``variable_share`` of it first, then the
cells, newest first, line by line; whatever does not fit is cut and marked ``…``.

    %lion extend ../extensions/notebook_context.py
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from typing import Any

__all__ = ["NotebookContext", "describe", "extend"]

_SCALARS = (bool, int, float, complex)
_CONTAINERS = (list, tuple, set, frozenset, dict, str, bytes, bytearray, range)
_IPYTHON_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RECENT_CELLS = 20  # cells scanned for the names they mention


class NotebookContext:
    """A context provider describing the notebook's variables and recent cells."""

    name = "notebook_context"

    def __init__(
        self,
        namespace: Mapping[str, Any] | None = None,
        *,
        shell: Any = None,
        cells: int = 3,
        max_tokens: int = 400,
        max_variables: int = 40,
        cell_chars: int = 1200,
        variable_share: float = 0.5,
        heading: str = "The user's Jupyter notebook, as it is now:",
    ):
        self.namespace = namespace
        self.shell = shell
        self.cells = cells
        self.max_tokens = max_tokens
        self.max_variables = max_variables
        self.cell_chars = cell_chars
        self.variable_share = variable_share
        self.heading = heading

    async def provide(self, branch: Any, instruction: Any) -> str | None:
        namespace, hidden, history = self._sources()
        if namespace is None:
            return None
        asked = getattr(instruction, "rendered", None) or (str(instruction) if instruction else "")
        return self.render(namespace, history, hidden=hidden, asked=asked)

    def _sources(self) -> tuple[Mapping[str, Any] | None, set[str], list[str]]:
        """The namespace, the names to hide, and the earlier cells' sources."""
        shell = self.shell
        if shell is None and self.namespace is None:
            from IPython import get_ipython

            shell = get_ipython()
        if self.namespace is not None:
            namespace = self.namespace
            history = list(namespace.get("In") or [])
            hidden: set[str] = set()
        elif shell is not None:
            namespace = shell.user_ns
            history = list(shell.history_manager.input_hist_raw)
            hidden = set(getattr(shell, "user_ns_hidden", {}))
            # while a cell runs it is the last entry, and not yet the last *finished* one:
            # leave it out (it holds the instruction). The counters cannot tell, as IPython 8
            # and 9 advance ``execution_count`` at different moments.
            last = getattr(getattr(shell, "last_execution_result", None), "info", None)
            finished = getattr(last, "raw_cell", None)
            if history and (finished is None or finished.strip() != history[-1].strip()):
                history = history[:-1]
        else:
            return None, set(), []
        return namespace, hidden, history

    # -- rendering (synchronous, so it can be tested and reused) ---------------------------------
    def render(
        self,
        namespace: Mapping[str, Any],
        history: list[str],
        *,
        hidden: set[str] = frozenset(),
        asked: str = "",
    ) -> str | None:
        """The provider's text for ``namespace``, the input ``history`` (``In``) and the
        instruction's text ``asked``."""
        from lion_nb.models.secrets import MASK, SECRET_NAME, Secret, redact, scrub
        from lion_nb.tokens import estimate_tokens

        secrets: list[str] = []
        variables: list[str] = []
        for name, value in _by_recency(namespace, [*history, asked]):
            if name.startswith("_") or name in hidden or name in _IPYTHON_NAMES:
                continue
            if isinstance(value, types.ModuleType):
                continue
            if SECRET_NAME.search(name) or isinstance(value, Secret):
                if isinstance(value, str) and len(value) >= 4:
                    secrets.append(value)
                variables.append(f"- {name}: {_type_name(value)} (value hidden)")
            else:
                variables.append(f"- {name}: {describe(value)}")
            if len(variables) >= self.max_variables:
                break

        def clean(text: str) -> str:
            for value in sorted(secrets, key=len, reverse=True):
                text = text.replace(value, MASK)
            return redact(text)

        sources = []
        for number, source in enumerate(history):
            text = (source or "").strip()
            if not text or text.startswith(("%%lion", "%lion")):
                continue
            sources.append((number, text))
        sources = sources[-self.cells :] if self.cells > 0 else []
        if not variables and not sources:
            return None

        budget = self.max_tokens
        lines = [self.heading]

        def fits(extra: list[str], limit: int) -> bool:
            return estimate_tokens("\n".join([*lines, *extra])) <= limit

        if variables:
            share = max(int(budget * self.variable_share), 1) if sources else budget
            block = ["Variables (most recently used first):"]
            if fits([*block, "- …"], share):
                lines += block
                for line in variables:
                    line = scrub(line)  # a type and a short value: only known keys to mask
                    if not fits([line, "- …"], share):  # room for the cut mark too
                        lines.append("- …")
                        break
                    lines.append(line)
        if sources:
            header = ["Recent cells (oldest first):"]
            blocks: list[list[str]] = []  # newest first: the newest cell gets the room

            def cells_fit(candidate: list[list[str]]) -> bool:
                shown = [line for block in reversed(candidate) for line in block]
                return fits([*header, *shown], budget)

            for number, text in reversed(sources):
                body = clean(text[: self.cell_chars]).splitlines()
                block = [f"In [{number}]:", "```python", *body, "```"]
                if cells_fit([*blocks, block]):
                    blocks.append(block)
                    continue
                while body:  # cut the cell to what fits, then stop
                    body.pop()
                    cut = [f"In [{number}]:", "```python", *body, "…", "```"]
                    if body and cells_fit([*blocks, cut]):
                        blocks.append(cut)
                        break
                break
            if blocks:
                lines += header
                for block in reversed(blocks):
                    lines += block
        text = "\n".join(lines)
        if len(lines) == 1 or estimate_tokens(text) > budget:
            return None
        return text


def _by_recency(namespace: Mapping[str, Any], history: list[str]) -> list[tuple[str, Any]]:
    """The namespace's items, those named in the latest cells first (the last mention
    first), then the rest newest first. Insertion order alone would put a variable that a
    cell re-assigned where it was first defined."""
    rank: dict[str, int] = {}
    for source in reversed(history[-_RECENT_CELLS:]):
        for word in reversed(_IDENTIFIER.findall(source or "")):
            rank.setdefault(word, len(rank))
    items = list(namespace.items())
    order = sorted(range(len(items)), key=lambda i: (rank.get(items[i][0], len(rank)), -i))
    return [items[i] for i in order]


def _type_name(value: Any) -> str:
    return type(value).__name__


def describe(value: Any) -> str:
    """``type`` plus the shape, length or short value of ``value`` (never a general repr)."""
    try:
        return _describe(value)
    except Exception:  # a property that raised: the type is still worth saying
        return _type_name(value)


def _describe(value: Any) -> str:
    kind = _type_name(value)
    if value is None:
        return "None"
    if isinstance(value, _SCALARS):
        text = repr(value)
        return f"{kind} = {text}" if len(text) <= 40 else kind
    if isinstance(value, str):
        if len(value) <= 60 and "\n" not in value:
            return f"str = {value!r}"
        return f"str, {len(value)} chars"
    if isinstance(value, type):
        return "class"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return "function"
    shape = getattr(value, "shape", None) if not isinstance(value, _CONTAINERS) else None
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        text = f"{kind} {shape}"
        columns = getattr(value, "columns", None)
        if columns is not None:
            names = [str(c) for c in list(columns)[:10]]
            more = ", …" if len(columns) > 10 else ""
            text += f"; columns: {', '.join(names)}{more}"
        else:
            dtype = getattr(value, "dtype", None)
            if dtype is not None:
                text += f" {dtype}"
        return text
    if isinstance(value, dict):
        keys = [_short(k) for k in list(value)[:8]]
        more = ", …" if len(value) > 8 else ""
        return f"dict, len {len(value)}" + (f"; keys: {', '.join(keys)}{more}" if keys else "")
    if isinstance(value, _CONTAINERS):
        return f"{kind}, len {len(value)}"
    return kind


def _short(key: Any) -> str:
    text = repr(key) if isinstance(key, (str, int, float, bool, tuple)) else _type_name(key)
    return text if len(text) <= 30 else text[:29] + "…"


def extend(session: Any, **options: Any) -> NotebookContext:
    """Give every branch of ``session`` (and each that joins later) a `NotebookContext`;
    ``options`` are its constructor's. Returns the provider."""
    from lion_nb.extensions import for_each_branch

    provider = NotebookContext(**options)

    def setup(branch: Any) -> None:
        if provider.name not in branch.providers.names:
            branch.providers.register(provider, max_tokens=provider.max_tokens)

    for_each_branch(session, setup)
    return provider
