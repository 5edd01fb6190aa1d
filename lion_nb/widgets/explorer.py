"""`SessionExplorer`: a session's branches as a tree, one branch shown, search, fork, export.

Two widgets side by side: `ExplorerTree`, one anywidget that draws the search box and its
results, the branch tree and the export buttons (front end ``_static/explorer.js``), and one
`BranchView` that shows the selected branch; selecting another branch sets the view's
``branch`` instead of building a new view. The statistics, the tree, search and transcripts
are plain functions in `_tree`.

- The tree follows the session live: `MessageAdded` and `RunEnd` from any member branch poke
  a `Throttle` (``max_rate`` tree updates a second). Branches included without a message
  (a fresh `split`) appear on the next signal or `refresh`. Rebuilding the tree rescans only
  branches whose messages changed (`_tree.StatsCache`).
- **fork from here** is offered on every message of the view. A fork is a clone truncated
  after that message, its ``metadata["clone_from"]`` naming the source branch, the message
  (``message_id``, ``index``) and the copied ``progression``; it is named
  ``<source>/fork-<n>``, included in the session and selected.
- **Runs** (`session.runs`, a `map`'s items are not members) are listed under the tree, one
  row each with its counts. A run's items are paged from its compact results (`run_items`,
  one page in the state however many items), an item opens its branch, made from its row, in
  the view; search also finds items whose row (item, answer, error) holds the query.
- Export writes the selected branch next to the notebook (the working directory;
  ``<branch>.json`` or ``<branch>.md``, replacing an earlier export of that name) and, from a
  button, also hands the same bytes to the browser as a download. JSON is
  ``branch.to_dict(mode="json")``, which never holds an API key.
"""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets
import traitlets

from ..rendering.transcript import branch_label, markdown_transcript
from ._base import StaticFallback, call_safely, esm, release
from ._throttle import Throttle
from ._tree import StatsCache, build_tree, search, search_runs
from .branch_view import BranchView

__all__ = ["ExplorerTree", "SessionExplorer"]

_FORMATS = {
    "json": ("json", "application/json"),
    "markdown": ("md", "text/markdown"),
}


class ExplorerTree(anywidget.AnyWidget):
    """The explorer's left pane: search, branch tree, export buttons (state only; the
    `SessionExplorer` answers its messages)."""

    _esm = esm("explorer.js")

    title = traitlets.Unicode("").tag(sync=True)
    nodes = traitlets.List(traitlets.Dict()).tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    query = traitlets.Unicode("").tag(sync=True)
    results = traitlets.List(traitlets.Dict()).tag(sync=True)
    found = traitlets.Int(0).tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    height = traitlets.Unicode("").tag(sync=True)
    #: the session's map runs, one summary each (their items: `SessionExplorer.run_page`)
    runs = traitlets.List(traitlets.Dict()).tag(sync=True)
    #: the page of one run's items shown (``run``, ``start``, ``size``, ``total``, ``rows``)
    run_items = traitlets.Dict().tag(sync=True)
    #: the search stopped at its limit: ``found`` counts what was read, not every match
    more = traitlets.Bool(False).tag(sync=True)


class SessionExplorer(StaticFallback, ipywidgets.HBox):
    """Explore ``session``: its branches as a tree, the selected one in a `BranchView`."""

    def __init__(
        self,
        session: Any,
        *,
        page_size: int = 50,
        height: str = "36em",
        max_rate: float = 5.0,
        search_limit: int = 100,
        run_page_size: int = 50,
        **kwargs: Any,
    ):
        from ..protocols.signals import MessageAdded, RunEnd

        tree = ExplorerTree(height=height)
        first = session.default_branch or next(iter(session.branches), None)
        shown = first if first is not None else _placeholder()
        view = BranchView(shown, page_size=page_size, height=height)
        view.layout.flex = "1 1 0%"
        view.layout.min_width = "0"
        super().__init__(children=[tree, view], **kwargs)
        self.add_class("lnb-explorer")
        self._session = session
        self._cache = StatsCache()
        self._search_limit = search_limit
        self._run_page_size = max(1, int(run_page_size))
        self._item: Any = None  # a run item's branch shown in the view (not a member)
        self.tree = tree
        self.view = view
        self._throttle = Throttle(self._update, max_rate)
        tree.on_msg(self._on_front_end)
        view.on_action("fork", self._fork_in_view)
        poke = self._on_signal
        self._subscriptions = [session.observe(MessageAdded, poke), session.observe(RunEnd, poke)]
        self._throttle.flush()

    # -- state -------------------------------------------------------------------------------------
    @property
    def session(self) -> Any:
        return self._session

    @property
    def selected(self) -> Any:
        """The branch shown (``None`` while the session has no branches)."""
        branch = self.view.branch
        return branch if branch.id in self._session else None

    @property
    def nodes(self) -> list[dict[str, Any]]:
        """The tree as the front end gets it: pre-order nodes with ``depth`` and ``parent``."""
        return self.tree.nodes

    @property
    def scans(self) -> int:
        """How many times a branch's messages were scanned for statistics (unchanged branches
        are served from the cache)."""
        return self._cache.scans

    def stats(self, branch: Any) -> Any:
        """The statistics of a member branch (`lion_nb.rendering.transcript.BranchStats`)."""
        return self._cache.get(self._session.get_branch(branch))

    def _on_signal(self, _signal: Any) -> None:
        self._throttle.poke()

    def refresh(self) -> None:
        """Rebuild the tree and the view from the session as it is now (at once)."""
        self._throttle.flush()
        self.view.refresh()

    def _update(self) -> None:
        session = self._session
        branches = list(session.branches)
        shows_item = self._item is not None and self.view.branch is self._item
        if self.view.branch.id not in session and branches and not shows_item:
            self.view.branch = session.default_branch or branches[0]
        nodes = build_tree(branches, self._cache)
        shown = self.view.branch
        with self.tree.hold_sync():
            self.tree.title = session.name or "Session"
            self.tree.nodes = nodes
            self.tree.runs = [run.summary() for run in session.runs]
            self.tree.selected = str(shown.id) if shown.id in session else ""
            page = self.tree.run_items
            if page:  # the page shown follows the run (its items end as it goes)
                self.show_run(page["run"], page["start"])

    def run_page(self, run: str, start: int = 0, size: int = 50) -> list[dict[str, Any]]:
        """A page of the items of the session's run named ``run`` (`BatchRun.page`)."""
        return self._run(run).page(start, size)

    def _run(self, name: str) -> Any:
        for found in self._session.runs:
            if found.name == name:
                return found
        names = ", ".join(f"`{r.name}`" for r in self._session.runs) or "none"
        raise KeyError(f"No run `{name}` in this session (runs: {names}).")

    def show_run(self, run: str, start: int = 0) -> dict[str, Any]:
        """Show the page of run ``run``'s items from ``start`` (moved to a page's first item,
        within the run) under its row; returns it."""
        found = self._run(run)
        size, total = self._run_page_size, len(found)
        start = max(0, min(int(start), max(total - 1, 0))) // size * size
        page = {"run": found.name, "start": start, "size": size, "total": total,
                "rows": found.page(start, size)}  # fmt: skip
        self.tree.run_items = page
        return page

    def close_run(self) -> None:
        """Hide the page of items shown."""
        self.tree.run_items = {}

    def open_item(self, run: str, index: int) -> Any:
        """Show item ``index`` of run ``run`` in the view: its branch, made from its row (not a
        member of the session); ``None`` if it has not run."""
        found = self._run(run)
        branch = found.branch(int(index))
        if branch is None:
            self.tree.status = f"{found.name}[{index}] has not run yet"
            return None
        self._item = branch
        self.view.branch = branch
        self.tree.selected = ""
        self.tree.status = f"showing {branch_label(branch)}"
        return branch

    # -- selecting and searching ------------------------------------------------------------------
    def select(self, branch: Any, index: int | None = None) -> Any:
        """Show a member branch (object, id or name); ``index``: page the view to that message."""
        target = self._session.get_branch(branch)
        if self.view.branch is not target:
            self.view.branch = target
        self.tree.selected = str(target.id)
        if index is not None:
            self.view.page(index)
        return target

    def search(self, query: str) -> list[dict[str, Any]]:
        """Messages of every branch whose text holds ``query`` (any case); also shown in the
        explorer. Each result: ``branch`` (id), ``name``, ``index``, ``role``, ``snippet``
        (escaped HTML, the match in ``<mark>``); a run's item: ``run`` and its ``index``
        instead of ``branch``, ``role`` naming the field (item, answer, error)."""
        results, total = search(list(self._session.branches), query, self._search_limit)
        more = False
        runs = self._session.runs
        if runs and len(results) < self._search_limit:
            items, counted, more = search_runs(runs, query, self._search_limit - len(results))
            results, total = results + items, total + counted
        elif runs:
            more = bool(query.strip())  # the limit is reached: the runs were not read
        with self.tree.hold_sync():
            self.tree.query = query
            self.tree.results = results
            self.tree.found = total
            self.tree.more = more
        return results

    # -- forking -------------------------------------------------------------------------------------
    def fork(self, branch: Any, message: Any) -> Any:
        """A new branch holding ``branch``'s history up to and including ``message`` (object
        or id), included in the session, shown in the tree under its source and selected."""
        source = self._session.get_branch(branch)
        pile = source.messages
        found = pile.get(getattr(message, "id", message))
        if found is None:
            raise ValueError(f"Message {message!r} is not on branch `{branch_label(source)}`.")
        index = pile.progression.index(found.id)
        fork = source.clone()
        for doomed in list(fork.messages)[index + 1 :]:
            fork.msgs.remove_message(doomed.id)
        fork.metadata["clone_from"].update(
            progression=[str(i) for i in pile.progression[: index + 1]],
            message_id=str(found.id),
            index=index,
        )
        taken = {b.name for b in self._session.branches if b.name}
        n = 1
        while f"{branch_label(source)}/fork-{n}" in taken:
            n += 1
        fork.name = f"{branch_label(source)}/fork-{n}"
        self._session.include_branches(fork)
        self.refresh()
        self.select(fork)
        return fork

    def _fork_in_view(self, message: Any) -> None:
        self.fork(self.view.branch, message)

    # -- export --------------------------------------------------------------------------------------
    def export(
        self, fmt: str = "json", path: str | Path | None = None, *, branch: Any = None
    ) -> str:
        """Write the selected branch (or ``branch``) as ``"json"`` or ``"markdown"`` to
        ``path`` (default: ``<branch>.json`` / ``<branch>.md`` in the working directory) and
        return the path written."""
        return str(self._export(fmt, path, branch)[0])

    def _export(self, fmt: str, path: Any, branch: Any) -> tuple[Path, str, str]:
        if fmt not in _FORMATS:
            raise ValueError(f'`fmt` is "json" or "markdown", not {fmt!r}.')
        target = self._session.get_branch(branch) if branch is not None else self.selected
        if target is None:
            raise ValueError("The session has no branch to export.")
        if fmt == "json":
            text = json.dumps(
                target.to_dict(mode="json"), indent=2, ensure_ascii=False, default=str
            )
        else:
            text = markdown_transcript(target, self._cache.get(target))
        suffix, mime = _FORMATS[fmt]
        where = Path(path) if path is not None else Path.cwd() / f"{_file_stem(target)}.{suffix}"
        where.write_text(text, encoding="utf-8")
        self.tree.status = f"saved {where}"
        return where, text, mime

    def _download(self, fmt: str) -> None:
        where, text, mime = self._export(fmt, None, None)
        self.tree.send(
            {"type": "download", "filename": where.name, "mime": mime}, [text.encode("utf-8")]
        )

    # -- the front end ----------------------------------------------------------------------------
    def _on_front_end(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        if kind == "select":
            call_safely(self.select, str(content.get("id")))
        elif kind == "open":
            index = content.get("index")
            call_safely(
                self.select, str(content.get("id")), int(index) if index is not None else None
            )
        elif kind == "search":
            call_safely(self.search, str(content.get("query") or ""))
        elif kind == "run_page":
            call_safely(self.show_run, str(content.get("run")), _whole(content.get("start")))
        elif kind == "close_run":
            call_safely(self.close_run)
        elif kind == "open_item":
            call_safely(self.open_item, str(content.get("run")), _whole(content.get("index")))
        elif kind == "export":
            call_safely(self._download, str(content.get("fmt")))
        elif kind == "refresh":
            call_safely(self.refresh)

    # -- static renderings -----------------------------------------------------------------------
    def static_html(self) -> str:
        nodes = build_tree(list(self._session.branches), self._cache)
        title = escape(self._session.name or "Session")
        head = f"<div><strong>{title}</strong> · {_count(len(nodes), 'branch')}</div>"
        if not nodes:
            return f'<div class="lnb-static">{head}<p><em>no branches</em></p></div>'
        parts, depth = [], -1
        for node in nodes:
            level = node["depth"]
            parts.append(
                "<ul>" * (level - depth)
                if level > depth
                else "</li>" + "</ul></li>" * (depth - level)
            )
            parts.append(f"<li>{escape(_static_label(node))}")
            depth = level
        parts.append("</li>" + "</ul></li>" * depth + "</ul>")
        return f'<div class="lnb-static">{head}{"".join(parts)}</div>'

    def static_text(self) -> str:
        nodes = build_tree(list(self._session.branches), self._cache)
        title = self._session.name or "Session"
        lines = [f"SessionExplorer({title!r}, {_count(len(nodes), 'branch')})"]
        lines += [f"{'  ' * node['depth']}- {_static_label(node)}" for node in nodes]
        for run in self._session.runs:
            info = run.summary()
            lines.append(
                f"- {info['run']} (run, {info['items']:,} items: {info['done']:,} done, "
                f"{info['failed']:,} failed)"
            )
        return "\n".join(lines)

    # -- closing -------------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop following the session, then close the tree, the view and the box."""
        release(self, subscriptions="_subscriptions")
        for part in (getattr(self, "view", None), getattr(self, "tree", None)):
            if part is not None:
                part.close()
        super().close()

    def __repr__(self) -> str:
        session = getattr(self, "_session", None)
        if session is None:
            return "SessionExplorer()"
        return f"SessionExplorer({session.name!r}, branches={len(session)})"


def _whole(value: Any) -> int:
    """A whole number from the front end (anything else is 0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 'es' if noun.endswith('ch') else 's'}"


def _static_label(node: dict[str, Any]) -> str:
    """A node without ids or times: an unnamed branch is ``(unnamed)``."""
    name = node["name"] if node["named"] else "(unnamed)"
    label = f"{name} ({_count(node['count'], 'message')}"
    if node.get("fork_index") is not None:
        label += f", from message {node['fork_index'] + 1}"
    return label + ")"


def _file_stem(branch: Any) -> str:
    if not branch.name:
        return f"branch-{str(branch.id)[:8]}"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", branch.name).strip("._") or "branch"


def _placeholder() -> Any:
    """What the view shows while the session has no branch."""
    from ..session.branch import Branch

    return Branch(name="(no branches)")
