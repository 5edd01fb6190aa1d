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


def test_fork_of_a_branch_named_with_b_keeps_the_active_branch(ip):
    run(ip, "%%lion -q -b side\nx", cell_id="s")
    run(ip, "%%lion -q\nmain turn", cell_id="m")
    run(ip, "%%lion -q -b side\nx again", cell_id="s")
    run(ip, "%%lion -q\nwhere am I", cell_id="n")  # `-b` applies to its cell only
    assert texts(get("side")) == ["x again"]
    assert texts(get("side~1")) == ["x"]
    assert texts(get("main")) == ["main turn", "where am I"]


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

    from lion_nb.notebook.cell.cells import current_cell

    kernel = SimpleNamespace(get_parent=lambda channel="shell": {"metadata": {"cellId": "xyz"}})
    shell = SimpleNamespace(kernel=kernel, execution_count=4)
    assert current_cell(shell).cell_id == "xyz" and current_cell(shell).execution_count == 4
    assert current_cell(shell, "from-hook").cell_id == "from-hook"
    assert current_cell(SimpleNamespace(execution_count=1)).cell_id is None


# -- `--system` and re-runs ------------------------------------------------------------------------
def system_of(branch):
    return branch.system.rendered if branch.system is not None else None


def test_rerunning_a_cell_that_sets_the_system_prompt_forks_as_usual(ip):
    cell = '%%lion -q -b critic -s "Be harsh."\nReview my plan'
    assert run(ip, cell, cell_id="c1").error is None
    ran = run(ip, cell, cell_id="c1")
    assert ran.error is None, ran
    assert texts(get("critic")) == ["Review my plan"]
    assert texts(get("critic~1")) == ["Review my plan"]
    assert system_of(get("critic")) == system_of(get("critic~1")) == "Be harsh."


def test_rerunning_a_system_cell_on_the_active_branch(ip):
    cell = '%%lion -q -s "Be brief."\nhello'
    assert run(ip, cell, cell_id="m1").error is None
    ran = run(ip, cell, cell_id="m1")
    assert ran.error is None, ran
    assert texts(get("main")) == ["hello"] and system_of(get("main")) == "Be brief."


def test_a_rerun_with_a_new_system_prompt_sets_it_on_the_fork_only(ip):
    run(ip, '%%lion -q -b critic -s "Be harsh."\nReview', cell_id="c1")
    ran = run(ip, '%%lion -q -b critic -s "Be kind."\nReview', cell_id="c1")
    assert ran.error is None, ran
    assert system_of(get("critic")) == "Be kind."
    assert system_of(get("critic~1")) == "Be harsh."  # the old timeline keeps its prompt


def test_the_same_system_prompt_again_is_a_no_op(ip):
    run(ip, '%%lion -q -s "Be brief."\nfirst', cell_id="a")
    ran = run(ip, '%%lion -q -s "Be brief."\nsecond', cell_id="b")  # another cell
    assert ran.error is None, ran
    main = get("main")
    assert texts(main) == ["first", "second"] and system_of(main) == "Be brief."
    assert [m.kind for m in main.messages].count("system") == 1


def test_a_new_system_prompt_is_refused_when_the_fork_keeps_a_conversation(three_cells):
    ip = three_cells
    ran = run(ip, '%%lion -q -s "Now formal."\ntwo', cell_id="b")  # `one` stays before it
    assert "already has a conversation" in str(ran.error)
    assert [b.name for b in current_session().branches] == ["main"]  # nothing was forked
    assert texts(get("main")) == ["one", "two", "three"]
    assert system_of(get("main")) is None


# -- CLI agents on a forked or replaced timeline ----------------------------------------------------
@pytest.fixture
def agent_cells(ip):
    """Two turns of an offline CLI agent on branch `ag`, from cells g1 and g2."""
    assert (
        run(ip, 'from lion_nb import iModel\nagent = iModel(provider="offline_cli")').error is None
    )
    for cell_id, text in (("g1", "first"), ("g2", "second")):
        assert run(ip, f"%%lion -q -b ag -m agent\n{text}", cell_id=cell_id).error is None
    agent = ip.user_ns["agent"]
    assert [c.resume for c in agent.endpoint.calls] == [None, agent.provider_session_id]
    return ip


def test_a_forked_cli_turn_starts_a_fresh_agent_session(agent_cells):
    from lion_nb.notebook.state.session import notebook_state

    ip = agent_cells
    agent = ip.user_ns["agent"]
    old_session = agent.provider_session_id
    ran = run(ip, "%%lion -b ag -m agent\nfirst again", cell_id="g1")
    assert ran.error is None, ran
    assert len(agent.endpoint.calls) == 2  # the old session was not resumed
    assert agent.provider_session_id == old_session  # `ag~1` keeps its agent
    fork = get("ag")
    fresh, source = notebook_state().models[(str(fork.id), "agent")]
    assert source is agent  # made from the `agent` variable as it is now
    assert fresh is not agent and fresh.endpoint.calls[0].resume is None
    assert "starts a fresh session" in ran.last["text/plain"] and "ag~1" in ran.last["text/plain"]
    # the fork's next turn resumes the fork's own new session
    assert run(ip, "%%lion -q -b ag -m agent\nthird", cell_id="g3").error is None
    assert fresh.endpoint.calls[1].resume == fresh.provider_session_id != old_session
    assert texts(fork) == ["first again", "third"]


def test_a_replaced_cli_turn_starts_a_fresh_agent_session(agent_cells):
    ip = agent_cells
    agent = ip.user_ns["agent"]
    ran = run(ip, "%%lion -b ag --policy replace\nsecond again", cell_id="g2")
    assert ran.error is None, ran
    assert len(agent.endpoint.calls) == 2
    model = get("ag").chat_model
    assert model is not agent and model.endpoint.calls[0].resume is None
    assert "replaced" in ran.last["text/plain"] and "fresh session" in ran.last["text/plain"]
    assert texts(get("ag")) == ["first", "second again"]


def test_an_appended_cli_turn_resumes_the_agent_session(agent_cells):
    ip = agent_cells
    agent = ip.user_ns["agent"]
    ran = run(ip, "%%lion -b ag -m agent --policy append\nfirst again", cell_id="g1")
    assert ran.error is None, ran
    assert agent.endpoint.calls[-1].resume == agent.provider_session_id
    assert "fresh session" not in ran.last["text/plain"]
