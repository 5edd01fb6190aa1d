"""The notebook always has an active branch: removing it needs ``--force`` and leaves another
active (a new empty one when it was the only one), and renaming it keeps it active."""

from __future__ import annotations

from lion_nb import current_session
from lion_nb.notebook.state.persistence import installed
from lion_nb.store import SessionStore
from lion_nb.store_location import store_path
from tests.notebook.nbshell import run, usage_error


def names() -> list[str]:
    return [b.name for b in current_session().branches]


def test_removing_the_only_active_branch_needs_force(ip):
    run(ip, "%%lion -q\nkeep me")
    message = usage_error(ip, "%lion remove main")
    assert "active branch (2 message(s))" in message and "--force" in message
    assert len(current_session().get_branch("main").messages) == 2  # nothing lost


def test_a_forced_removal_leaves_a_new_active_branch(ip):
    run(ip, "%%lion -q\nforget me")
    ran = run(ip, "%lion remove main --force")
    assert ran.error is None, ran
    assert "Removed `main` (2 message(s)). Active branch: `main`." in ran.stdout
    session = current_session()
    assert names() == ["main"] and len(session.default_branch.messages) == 0
    assert session.default_branch is not None
    assert run(ip, "%%lion -q\nstill works").error is None
    assert len(session.default_branch.messages) == 2
    persistence = installed()
    persistence.checkpoint()
    persistence.store.flush()
    (info,) = SessionStore(store_path()).sessions()
    assert info.default_branch == "main" and info.messages == 2


def test_a_forced_removal_makes_another_member_active(ip):
    run(ip, "%lion new side")
    run(ip, "%%lion -q\non side")
    assert run(ip, "%lion remove side --force").error is None
    assert names() == ["main"] and current_session().default_branch.name == "main"
    assert run(ip, "%lion branches").value.rows[0][""] == "*"


def test_removing_another_branch_needs_no_force(ip):
    run(ip, "%lion new side")
    run(ip, "%lion switch main")
    ran = run(ip, "%lion remove side")
    assert ran.error is None and "Active branch: `main`." in ran.stdout
    assert names() == ["main"]


def test_renaming_the_active_branch_keeps_it_active(ip):
    run(ip, "%%lion -q\nbefore the rename")
    branch = current_session().get_branch("main")
    branch.name = "renamed"
    ran = run(ip, "%%lion -q\nafter the rename")
    assert ran.error is None, ran
    assert names() == ["renamed"] and len(branch.messages) == 4
    assert run(ip, "%lion branches").value.rows[0][""] == "*"
    assert run(ip, "%lion history").value.title == "history of `renamed`"
