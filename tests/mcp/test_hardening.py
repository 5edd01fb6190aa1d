"""MCP tools beside a branch's own: distinct names, answers bounded, errors that say why.

Acceptance -> test
- a server tool never replaces or removes a local tool, and every tool keeps a distinct
  name -> test_server_tools_never_replace_or_remove_local_tools
- a tool result (MCP or local) is bounded before it joins the history, with a marker
  saying how much was cut; the bound is configurable
    -> test_a_huge_result_is_cut_before_it_joins_the_history
- a tool that raises shows the exception's text -> test_a_tool_that_raises_says_why
- a non-positive or NaN timeout is refused -> test_timeouts_must_be_positive
- a name in use is refused unless the same server, or ``replace=True``
    -> test_a_name_in_use_needs_replace
"""

from __future__ import annotations

import json
import math
import sys

import anyio
import pytest

from lion_nb import Branch, Session
from lion_nb.errors import ItemExistsError
from tests.fakes.mcp_fixtures import QUICK_SERVER

pytestmark = pytest.mark.timeout(180)


def quick(*tools: str) -> list[str]:
    command = [sys.executable, str(QUICK_SERVER)]
    return [*command, "--tools", ",".join(tools)] if tools else command


def web_search(q: str) -> str:
    """The notebook's own web search."""
    return f"local web_search {q}"


def search(q: str) -> str:
    """The notebook's own search."""
    return f"local search {q}"


def test_server_tools_never_replace_or_remove_local_tools():
    async def main():
        branch = Branch(tools=[web_search, search])
        local = dict(branch.tools)
        server = await branch.connect_mcp("web", command=quick("search", "web_search"))
        try:
            mine = {n: t for n, t in branch.tools.items() if getattr(t, "server", None)}
            outs = {}
            for name, tool in {**local, **mine}.items():
                arguments = {"q": "x"} if name in local else {"text": "x"}
                if getattr(tool, "remote_name", "") in ("add", "big"):
                    continue
                [out] = await branch.act({"function": name, "arguments": arguments})
                outs[name] = out.output
            kept = {n: branch.tools[n] for n in local}
            await branch.remove_mcp("web")
            return local, kept, mine, outs, dict(branch.tools), server
        finally:
            await branch.aclose()

    local, kept, mine, outs, after, _server = anyio.run(main)
    assert all(kept[n] is local[n] for n in local)  # not replaced
    assert after == local  # not removed
    remote = {t.remote_name: n for n, t in mine.items()}
    assert set(remote) == {"add", "big", "search", "web_search"}
    assert len(set(remote.values())) == 4 and not set(remote.values()) & set(local)
    assert outs[remote["search"]] == "search: x"
    assert outs[remote["web_search"]] == "web_search: x"
    assert outs["web_search"] == "local web_search x" and outs["search"] == "local search x"


def test_session_servers_with_the_same_tool_keep_distinct_names():
    async def main():
        session = Session()
        branch = session.default_branch
        branch.acts.register_tool(search)
        await session.connect_mcp("a", command=quick("search"))
        await session.connect_mcp("b", command=quick("search"))
        try:
            late = session.new_branch(name="late")
            names = {}
            for key, b in (("main", branch), ("late", late)):
                names[key] = {
                    n: (t.server_name, t.remote_name)
                    for n, t in b.tools.items()
                    if getattr(t, "server", None)
                }
            return names, branch.tools["search"].func_callable
        finally:
            await session.aclose()

    names, kept = anyio.run(main)
    assert kept is search
    for found in names.values():
        assert sorted(v for v in found.values() if v[1] == "search") == [
            ("a", "search"),
            ("b", "search"),
        ]
    assert "search" not in names["main"]  # the local `search` keeps its name
    assert names["late"]["search"] == ("a", "search")  # no local one there


def big_local(size: int) -> str:
    """A large text."""
    return "y" * size


def big_data(size: int) -> dict:
    """A large object."""
    return {"rows": ["z" * 100] * (size // 100)}


def test_a_huge_result_is_cut_before_it_joins_the_history():
    size = 5_000_000

    async def main():
        branch = Branch(tools=[big_local, big_data])
        await branch.connect_mcp("files", command=quick())
        try:
            outs = []
            for name in ("big", "big_local", "big_data"):
                [out] = await branch.act({"function": name, "arguments": {"size": size}})
                outs.append(out)
            branch.acts.result_budget = 100
            [small] = await branch.act({"function": "big_local", "arguments": {"size": 5000}})
            branch.acts.result_budget = None
            [whole] = await branch.act({"function": "big_local", "arguments": {"size": 50_000}})
            history = json.dumps(branch.to_dict(mode="json"))
            return outs, small, whole, history
        finally:
            await branch.aclose()

    from lion_nb.protocols.actions import RESULT_BUDGET

    outs, small, whole, history = anyio.run(main)
    for out in outs:
        assert isinstance(out.output, str) and not out.is_error
        assert len(out.output) <= RESULT_BUDGET * 4 + 200
        assert "characters cut …]" in out.output
        assert out.metadata["output_cut"]["characters"] > 4_000_000
    assert outs[0].output.startswith("xxx") and outs[1].output.endswith("yyy")
    assert "of 5,000,000 characters cut" in outs[0].output
    assert "characters cut" in small.output and len(small.output) < 1000
    assert whole.output == "y" * 50_000
    assert len(history) < 500_000  # what the next request carries


def test_a_tool_that_raises_says_why(mcp_command):
    async def main():
        branch = Branch()
        await branch.connect_mcp("flaky", command=mcp_command)
        try:
            [out] = await branch.act({"function": "fail", "arguments": {}}, suppress_errors=True)
            [again] = await branch.act({"function": "fail", "arguments": {}}, suppress_errors=True)
            return out, again
        finally:
            await branch.aclose()

    out, again = anyio.run(main)
    for response in (out, again):
        assert response.is_error
        error = response.output["error"]
        assert "Error executing tool fail" in error
        assert "RuntimeError: the fake tool failed" in error
        assert "\n" not in error and "Traceback" not in error


def test_timeouts_must_be_positive():
    async def main(timeout):
        await Branch().connect_mcp("t", command=quick(), timeout=timeout)

    for bad in (-5, 0, math.nan, math.inf, "soon"):
        with pytest.raises(ValueError, match="positive number of seconds"):
            anyio.run(main, bad)


def test_a_name_in_use_needs_replace():
    async def main():
        branch = Branch()
        first = await branch.connect_mcp("calc", command=quick())
        same = await branch.connect_mcp("calc", command=quick())  # a cell run again
        refused = None
        try:
            await branch.connect_mcp("calc", command=quick("echo"))
        except ItemExistsError as exc:
            refused = str(exc)
        still = "echo" not in branch.tools and first.status == "connected"
        replaced = await branch.connect_mcp("calc", command=quick("echo"), replace=True)
        try:
            return first, same, refused, still, replaced, sorted(branch.tools)
        finally:
            await branch.aclose()

    first, same, refused, still, replaced, names = anyio.run(main)
    assert same is first
    assert refused is not None and "`calc`" in refused and "replace=True" in refused
    assert still
    assert replaced is not first and first.status == "closed"
    assert "echo" in names
