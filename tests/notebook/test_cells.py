"""Cell-linked turns: tags, and what re-running a cell does under each policy."""

from __future__ import annotations

import pytest

from lion_nb import current_session
from tests.notebook.nbshell import run


def texts(branch):
    return [m.rendered for m in branch.messages if m.kind == "instruction"]


def get(name):
    return current_session().get_branch(name)


@pytest.fixture
def three_cells(ip):
    """Cells a, b, c run in order on main."""
    for cell_id, text in (("a", "one"), ("b", "two"), ("c", "three")):
        assert run(ip, f"%%lion -q\n{text}", cell_id=cell_id).error is None
    return ip


def test_every_message_is_tagged_with_its_cell_and_execution_count(ip):
    run(ip, "%%lion -q\nhello", cell_id="cell-1")
    count = ip.execution_count - 1
    tags = [m.metadata["lion"] for m in get("main").messages]
    assert {t["cell_id"] for t in tags} == {"cell-1"}
    assert {t["execution_count"] for t in tags} == {count}
    assert len({t["turn"] for t in tags}) == 1


def test_rerun_forks_before_the_earlier_turn_by_default(three_cells):
    ip = three_cells
    ran = run(ip, "%%lion\ntwo, better", cell_id="b")
    assert ran.error is None, ran
    main, kept = get("main"), get("main~1")
    assert texts(main) == ["one", "two, better"]  # the new timeline keeps the name
    assert texts(kept) == ["one", "two", "three"]  # nothing is lost
    assert "main~1" in ran.last["text/plain"]  # the cell says where the old turn went
    # the fork is active: the next cell continues it
    run(ip, "%%lion -q\nfour", cell_id="d")
    assert texts(get("main")) == ["one", "two, better", "four"]


def test_rerunning_the_last_cell_does_not_duplicate_history(three_cells):
    ip = three_cells
    run(ip, "%%lion -q\nthree again", cell_id="c")
    run(ip, "%%lion -q\nthree once more", cell_id="c")
    assert texts(get("main")) == ["one", "two", "three once more"]
    assert texts(get("main~1")) == ["one", "two", "three"]
    assert texts(get("main~2")) == ["one", "two", "three again"]


def test_a_cell_rerun_after_a_fork_appends_to_the_new_timeline(three_cells):
    ip = three_cells
    run(ip, "%%lion -q\ntwo b", cell_id="b")
    run(ip, "%%lion -q\nthree b", cell_id="c")  # c's old turn is on main~1, not on main
    assert texts(get("main")) == ["one", "two b", "three b"]
    assert len(current_session().branches) == 2


def test_fork_of_a_named_branch_becomes_active(ip):
    run(ip, "%%lion -q -b side\nx", cell_id="s")
    run(ip, "%%lion -q\nmain turn", cell_id="m")
    run(ip, "%%lion -q -b side\nx again", cell_id="s")
    run(ip, "%%lion -q\nwhere am I", cell_id="n")
    assert texts(get("side")) == ["x again", "where am I"]
    assert texts(get("side~1")) == ["x"]


def test_append_policy_keeps_both_turns(three_cells):
    ip = three_cells
    run(ip, "%%lion -q --policy append\ntwo again", cell_id="b")
    assert texts(get("main")) == ["one", "two", "three", "two again"]
    assert len(current_session().branches) == 1


def test_replace_policy_truncates_from_the_earlier_turn(three_cells):
    ip = three_cells
    run(ip, "%%lion -q --policy replace\ntwo replaced", cell_id="b")
    assert texts(get("main")) == ["one", "two replaced"]
    assert len(current_session().branches) == 1


def test_policy_from_configuration(three_cells):
    ip = three_cells
    run(ip, "%config LionMagics.rerun = 'append'")
    run(ip, "%%lion -q\none again", cell_id="a")
    assert texts(get("main")) == ["one", "two", "three", "one again"]


def test_without_a_cell_id_every_run_appends(ip):
    run(ip, "%%lion -q\nsame")
    run(ip, "%%lion -q\nsame")
    assert texts(get("main")) == ["same", "same"]
    assert len(current_session().branches) == 1


def test_the_kernel_parent_header_is_the_fallback_source_of_the_cell_id():
    from types import SimpleNamespace

    from lion_nb.notebook.cells import current_cell

    kernel = SimpleNamespace(get_parent=lambda channel="shell": {"metadata": {"cellId": "xyz"}})
    shell = SimpleNamespace(kernel=kernel, execution_count=4)
    assert current_cell(shell).cell_id == "xyz" and current_cell(shell).execution_count == 4
    assert current_cell(shell, "from-hook").cell_id == "from-hook"
    assert current_cell(SimpleNamespace(execution_count=1)).cell_id is None
