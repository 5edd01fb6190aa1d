"""SessionExplorer: the fork tree, one view, stats, search, fork from a message, export, live."""

from __future__ import annotations

import asyncio
import json
import re

import anyio
import pytest

from lion_nb import Branch, Session, iModel
from lion_nb.notebook.cell.cells import CellRef, apply_policy, tag_messages
from lion_nb.widgets import BranchView, SessionExplorer
from tests.waiting import until

SECRET = "sk-test-DO-NOT-LEAK-4242"
HOSTILE = [
    "<script>window.pwned=1</script>",
    "<img src=x onerror=\"window.pwned='img'\">",
    '<iframe srcdoc="<script>parent.pwned=1</script>"></iframe>',
]


def _scripted(*answers: str, **kw) -> iModel:
    return iModel(provider="offline", model="scripted", responses=list(answers), **kw)


def _session(*answers: str) -> tuple[Session, Branch]:
    """A session whose default branch ``main`` has had real offline turns."""
    session = Session(name="demo")
    main = session.default_branch
    main.name = "main"
    main.chat_model = _scripted(*answers, api_key=SECRET)
    for i, _ in enumerate(answers):
        anyio.run(main.communicate, f"question {i}")
    return session, main


def _node(explorer: SessionExplorer, branch: Branch) -> dict:
    return next(n for n in explorer.nodes if n["id"] == str(branch.id))


def _texts(branch: Branch) -> list[str]:
    return [m.rendered for m in branch.messages]


# -- the tree -------------------------------------------------------------------------------------
def test_clones_and_rerun_forks_sit_under_the_branch_and_message_they_came_from():
    session, main = _session("one", "two", "three")
    tag_messages(list(main.messages)[2:4], CellRef("cell-b", 2), "turn-b")
    clone = session.split(main)  # a clone of all six messages
    session.new_branch(name="lone")
    rerun = apply_policy(session, main, CellRef("cell-b", 5), "fork")  # re-run of turn two
    assert rerun.action == "fork" and rerun.kept_as == "main~1"
    fork, old = rerun.branch, main  # the old timeline keeps the object, renamed main~1
    explorer = SessionExplorer(session)
    shape = [(n["name"], n["depth"], n["parent"]) for n in explorer.nodes]
    assert shape == [
        ("main~1", 0, None),
        (clone.name or str(clone.id)[:8], 1, str(old.id)),
        ("main", 1, str(old.id)),
        ("lone", 0, None),
    ]
    # the message each came from: a clone at the source's last message, the re-run fork
    # before the re-run turn (turn one's answer, index 1)
    assert _node(explorer, clone)["fork_index"] == 5
    assert _node(explorer, fork)["fork_index"] == 1 and len(fork.messages) == 2
    assert _node(explorer, old)["fork_index"] is None
    grandchild = explorer.fork(fork, fork.messages[0])
    node = _node(explorer, grandchild)
    assert (node["name"], node["depth"], node["parent"], node["fork_index"]) == (
        "main/fork-1",
        2,
        str(fork.id),
        0,
    )


def test_a_branch_whose_source_left_the_session_is_a_root():
    session, main = _session("one")
    clone = session.split(main)
    session.remove_branch(main)
    explorer = SessionExplorer(session)
    assert [(n["id"], n["depth"], n["parent"]) for n in explorer.nodes] == [
        (str(clone.id), 0, None)
    ]


def test_selecting_a_branch_shows_it_in_the_one_embedded_view():
    session, main = _session("one")
    other = session.new_branch(name="other")
    other.msgs.add_message(instruction="only on other")
    explorer = SessionExplorer(session)
    view = explorer.view
    assert isinstance(view, BranchView) and view.branch is main
    assert explorer.tree.selected == str(main.id)
    explorer._on_front_end(explorer.tree, {"type": "select", "id": str(other.id)}, [])
    assert explorer.view is view and view.branch is other and explorer.selected is other
    assert view.title == "other" and [e["html"].strip() for e in view.entries] == [
        "<p>only on other</p>"
    ]
    assert explorer.tree.selected == str(other.id)
    assert explorer.select("main") is main and view.branch is main


# -- statistics ---------------------------------------------------------------------------------------
def test_stats_count_models_tokens_and_cost_from_real_turns():
    session, main = _session("first answer", "second answer")
    explorer = SessionExplorer(session)
    usage = [m.metadata["usage"]["total_tokens"] for m in main.messages if "usage" in m.metadata]
    assert len(usage) == 2
    node = _node(explorer, main)
    assert node["count"] == 4 and node["models"] == ["offline/scripted"]
    assert node["tokens"] == sum(usage) and node["cost"] == "$0.0000"  # offline models are free
    # another model joins the branch; one response reports a cost, one has none (recorded
    # by hand), so the sum is a lower bound
    main.chat_model = iModel(provider="offline", model="auto")
    anyio.run(main.communicate, "third")
    main.msgs.add_message(
        assistant_response="priced",
        metadata={"model": "priced/model", "usage": {"total_tokens": 10}, "cost_usd": 0.0025},
    )
    main.msgs.add_message(
        assistant_response="unpriced",
        metadata={"model": "other/model", "usage": {"total_tokens": 3}},
    )
    explorer.refresh()
    node = _node(explorer, main)
    assert node["models"] == ["offline/scripted", "offline/auto", "priced/model", "other/model"]
    assert node["count"] == 8 and node["tokens"] > sum(usage) + 13
    assert node["cost"] == "≥ $0.0025"
    fresh = session.new_branch(name="fresh", chat_model=iModel(provider="offline", model="auto"))
    explorer.refresh()
    assert _node(explorer, fresh)["models"] == ["offline/auto"]
    assert _node(explorer, fresh)["tokens"] is None
    assert explorer.stats(fresh).count == 0


def test_a_cost_every_response_reported_is_exact():
    session = Session()
    branch = session.default_branch
    for cost in (0.001, 0.002):
        branch.msgs.add_message(assistant_response="a", metadata={"model": "m/x", "cost_usd": cost})
    assert _node(SessionExplorer(session), branch)["cost"] == "$0.0030"


# -- search ------------------------------------------------------------------------------------------
def test_search_finds_text_in_every_branch_and_opening_a_result_pages_the_view():
    session, main = _session("alpha")
    long = session.new_branch(name="long")
    for i in range(12):
        long.msgs.add_message(instruction=f"line {i}" + (" the Needle here" if i == 7 else ""))
    clone = session.split(main)
    explorer = SessionExplorer(session, page_size=3)
    results = explorer.search("needle")
    assert [(r["name"], r["index"], r["role"]) for r in results] == [("long", 7, "user")]
    assert results[0]["snippet"] == "line 7 the <mark>Needle</mark> here"
    assert explorer.tree.results == results and explorer.tree.found == 1
    both = explorer.search("ALPHA")  # main's answer and its copy in the clone
    assert [(r["branch"], r["index"]) for r in both] == [(str(main.id), 1), (str(clone.id), 1)]
    explorer._on_front_end(explorer.tree, {"type": "search", "query": "needle"}, [])
    assert explorer.tree.query == "needle" and explorer.tree.found == 1
    explorer._on_front_end(explorer.tree, {"type": "open", "id": str(long.id), "index": 7}, [])
    view = explorer.view
    assert view.branch is long and view.following is False and view.start == 7
    assert "Needle" in view.entries[0]["html"] and view.entries[0]["index"] == 7
    assert explorer.search("") == [] and explorer.tree.found == 0


def test_search_results_are_capped_but_counted():
    session = Session()
    for i in range(30):
        session.default_branch.msgs.add_message(instruction=f"repeat {i}")
    explorer = SessionExplorer(session, search_limit=10)
    assert len(explorer.search("repeat")) == 10 and explorer.tree.found == 30


# -- fork from a message -------------------------------------------------------------------------
def test_fork_from_a_message_in_the_view_makes_a_branch_with_exactly_that_history():
    session, main = _session("one", "two", "three")
    explorer = SessionExplorer(session)
    view = explorer.view
    assert "fork" in view.actions
    at = main.messages[3]  # the second answer
    view._on_front_end(view, {"type": "action", "name": "fork", "id": str(at.id)}, [])
    assert len(session) == 2
    fork = session.branches[1]
    assert fork.name == "main/fork-1"
    assert _texts(fork) == _texts(main)[:4] and len(main.messages) == 6
    assert {m.id for m in fork.messages}.isdisjoint({m.id for m in main.messages})
    record = fork.metadata["clone_from"]
    assert record["id"] == str(main.id) and record["message_id"] == str(at.id)
    assert record["index"] == 3 and len(record["progression"]) == 4
    node = _node(explorer, fork)
    assert node["parent"] == str(main.id) and node["depth"] == 1 and node["fork_index"] == 3
    assert view.branch is fork and explorer.tree.selected == str(fork.id)
    again = explorer.fork(main, main.messages[0])
    assert again.name == "main/fork-2" and _texts(again) == _texts(main)[:1]
    with pytest.raises(ValueError, match="not on branch"):
        explorer.fork(main, fork.messages[0])


def test_a_fork_can_continue_the_conversation():
    session, main = _session("one", "two")
    explorer = SessionExplorer(session)
    fork = explorer.fork(main, main.messages[1])
    fork.chat_model = _scripted("another two")
    anyio.run(fork.communicate, "question 1 again")
    explorer.refresh()
    assert _texts(fork) == ["question 0", "one", "question 1 again", "another two"]
    assert _node(explorer, fork)["fork_index"] == 1 and _node(explorer, fork)["count"] == 4


# -- export --------------------------------------------------------------------------------------------
def _with_tools() -> tuple[Session, Branch]:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    session = Session(name="tools")
    branch = session.new_branch(
        name="calc",
        tools=[add],
        chat_model=iModel(provider="offline", model="auto", api_key=SECRET),
    )
    session.default_branch = branch
    anyio.run(lambda: branch.ReAct({"instruction": "add 2 and 3"}, max_extensions=1))
    assert any(m.kind == "action_response" for m in branch.messages)
    return session, branch


def test_export_json_round_trips_and_holds_no_api_key(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session, branch = _with_tools()
    explorer = SessionExplorer(session)
    path = explorer.export("json")
    assert path == str(tmp_path / "calc.json") and explorer.tree.status == f"saved {path}"
    text = (tmp_path / "calc.json").read_text(encoding="utf-8")
    assert SECRET not in text
    again = Branch.from_dict(json.loads(text))
    assert [m.id for m in again.messages] == [m.id for m in branch.messages]
    assert _texts(again) == _texts(branch) and again.name == "calc"


def test_export_markdown_is_a_readable_transcript_without_the_key(tmp_path):
    session, branch = _with_tools()
    explorer = SessionExplorer(session)
    path = explorer.export("markdown", tmp_path / "out.md")
    text = (tmp_path / "out.md").read_text(encoding="utf-8")
    assert path == str(tmp_path / "out.md") and SECRET not in text
    assert text.startswith("# calc\n")
    assert "## User\n\nadd 2 and 3" in text and "## Assistant" in text
    request = next(m for m in branch.messages if m.kind == "action_request")
    response = next(m for m in branch.messages if m.kind == "action_response")
    args = json.dumps(request.arguments, indent=2)
    assert f"## Tool call: `add`\n\nArguments:\n\n```json\n{args}\n```" in text
    assert f"Result:\n\n```\n{response.rendered}\n```" in text
    assert text.count("## Tool call") == 1  # a request and its response: one block
    with pytest.raises(ValueError, match="markdown"):
        explorer.export("pdf")


def test_the_export_button_writes_a_file_and_sends_the_bytes_for_a_download(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session, _main = _session("one")
    explorer = SessionExplorer(session)
    sent: list = []
    explorer.tree.send = lambda content, buffers=None: sent.append((content, buffers))
    explorer._on_front_end(explorer.tree, {"type": "export", "fmt": "markdown"}, [])
    ((content, buffers),) = sent
    assert content == {"type": "download", "filename": "main.md", "mime": "text/markdown"}
    assert buffers[0] == (tmp_path / "main.md").read_bytes()
    assert b"## Assistant\n\none" in buffers[0] and SECRET.encode() not in buffers[0]


def test_a_markdown_fence_outlasts_backticks_in_a_tool_result(tmp_path):
    session = Session()
    branch = session.default_branch
    branch.msgs.add_message(
        action_response={"function": "f", "arguments": {}, "output": "```\nbreak out\n```"}
    )
    explorer = SessionExplorer(session)
    text = explorer._export("markdown", tmp_path / "f.md", None)[1]
    assert "````\n```\nbreak out\n```\n````" in text


# -- safety and static renderings ---------------------------------------------------------------------
@pytest.mark.parametrize("attack", HOSTILE)
def test_hostile_text_stays_escaped_in_snippets_and_static_html(attack):
    session = Session()
    branch = session.default_branch
    branch.name = attack
    branch.msgs.add_message(assistant_response=f"look: {attack} done")
    explorer = SessionExplorer(session)
    (result,) = explorer.search("look")
    tags = re.findall(r"</?([a-zA-Z]+)", result["snippet"])
    assert set(tags) == {"mark"}
    assert "&lt;" in result["snippet"] and "<script" not in result["snippet"]
    html = explorer.static_html()
    assert "<script" not in html and "<img" not in html and "<iframe" not in html
    assert "&lt;" in html
    assert explorer.nodes[0]["name"] == attack  # plain data; the front end sets it as text


def test_static_renderings_are_nested_lists_without_ids():
    session, main = _session("one", "two")
    explorer = SessionExplorer(session)
    fork = explorer.fork(main, main.messages[1])
    session.new_branch()  # unnamed
    explorer.refresh()
    html, text = explorer.static_html(), explorer.static_text()
    assert (
        "<ul><li>main (4 messages)<ul><li>main/fork-1 (2 messages, from message 2)</li></ul>"
        "</li><li>(unnamed) (0 messages)</li></ul>"
    ) in html
    assert text.splitlines() == [
        "SessionExplorer('demo', 3 branches)",
        "- main (4 messages)",
        "  - main/fork-1 (2 messages, from message 2)",
        "- (unnamed) (0 messages)",
    ]
    for branch in session.branches:
        for form in (str(branch.id), str(branch.id)[:8]):
            assert form not in html and form not in text
    for message in fork.messages:
        assert str(message.id) not in html
    bundle = explorer._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert data["text/html"] == html and data["text/plain"] == text
    assert "application/vnd.jupyter.widget-view+json" in data


# -- live ---------------------------------------------------------------------------------------------
def test_the_tree_follows_the_session_live():
    session, main = _session("one")

    async def run() -> SessionExplorer:
        explorer = SessionExplorer(session, max_rate=20)
        side = session.new_branch(name="side", chat_model=_scripted("side answer"))
        await side.communicate("hello")  # new branch, new messages: MessageAdded and RunEnd
        main.msgs.add_message(instruction="one more")
        await until(  # the trailing flush
            lambda: {n["name"]: n["count"] for n in explorer.nodes}.get("main") == 3,
            what="the tree to show the new message",
        )
        return explorer

    explorer = asyncio.run(run())
    names = {n["name"]: n["count"] for n in explorer.nodes}
    assert names == {"main": 3, "side": 2}


def test_an_explorer_of_an_empty_session_picks_up_its_first_branch():
    session = Session()
    session.remove_branch(session.default_branch)
    explorer = SessionExplorer(session)
    assert explorer.nodes == [] and explorer.selected is None
    assert "no branches" in explorer.static_html()
    branch = session.new_branch(name="first")
    branch.msgs.add_message(instruction="hi")  # a signal: the tree and view catch up
    assert [n["name"] for n in explorer.nodes] == ["first"]
    assert explorer.view.branch is branch and explorer.selected is branch


def test_a_removed_selected_branch_hands_the_view_to_the_default():
    session, main = _session("one")
    other = session.new_branch(name="other")
    explorer = SessionExplorer(session)
    explorer.select(other)
    session.remove_branch(other)
    explorer.refresh()
    assert explorer.view.branch is main and [n["name"] for n in explorer.nodes] == ["main"]


def test_close_stops_following():
    session, main = _session("one")
    explorer = SessionExplorer(session)
    scans = explorer.scans
    explorer.close()
    main.msgs.add_message(instruction="after close")
    assert explorer.scans == scans and explorer._subscriptions == []


# -- scale ----------------------------------------------------------------------------------------------
def test_two_hundred_branches_build_and_refresh_from_cached_stats():
    session = Session(name="many")
    first = session.default_branch
    first.name = "b0"
    first.msgs.add_message(instruction="root question")
    for i in range(1, 200):
        branch = session.split(first) if i % 2 else session.new_branch(name=f"b{i}")
        branch.msgs.add_message(instruction=f"question {i}")
    explorer = SessionExplorer(session)
    assert len(explorer.nodes) == 200 and explorer.scans == 200
    assert sum(1 for n in explorer.nodes if n["parent"] == str(first.id)) == 100
    explorer.refresh()
    explorer.static_text()
    assert explorer.scans == 200  # nothing changed: nothing rescanned
    target = session.branches[57]
    target.msgs.add_message(instruction="one more")  # a signal: only this branch rescans
    explorer.refresh()
    assert explorer.scans == 201 and _node(explorer, target)["count"] == 3
    target.msgs.remove_message(target.messages[-1].id)  # same count as before, new version
    explorer.refresh()
    assert explorer.scans == 202 and _node(explorer, target)["count"] == 2
