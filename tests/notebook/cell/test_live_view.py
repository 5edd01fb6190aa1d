"""The widget view of a cell's turn, and a Branch or Session shown as its widget."""

from __future__ import annotations

import warnings

from IPython.utils.capture import capture_output

from lion_nb.notebook.cell.handle_view import HandleView, TurnInfo, make_view
from lion_nb.widgets import TurnWidget
from tests.notebook.nbshell import run


def test_the_widget_view_displays_the_widget_then_the_answer_once(ip):
    stopped = []
    info = TurnInfo(branch="main", operation="communicate", model="offline/auto", live="widget")
    info.stop = lambda: stopped.append(1) or True
    with capture_output() as out:
        view = make_view(info)
        view.start()
        view.text("hel")
        view.text("lo")
        view.inner.widget.stop()
        view.finish("hello")
    widget = view.inner.widget
    assert isinstance(widget, TurnWidget) and stopped == [1]
    first, answer = out.outputs[0].data, out.outputs[-1].data
    assert "application/vnd.jupyter.widget-view+json" in first
    assert answer["text/plain"] == "hello" and "<p>hello</p>" in answer["text/html"]
    assert len(out.outputs) == 2  # the widget, then the answer: nothing printed in between


def test_text_mode_and_an_in_process_shell_keep_the_text_view(ip):
    info = TurnInfo(branch="main", operation="communicate", model="m", live="text")
    assert isinstance(make_view(info).inner, HandleView)
    auto = TurnInfo(branch="main", operation="communicate", model="m")
    assert isinstance(make_view(auto).inner, HandleView)  # no kernel here: no widget front end


def test_a_branch_or_session_shows_its_widget_where_widgets_can_show(ip, monkeypatch):
    run(ip, "from lion_nb import Branch, current_session\nb = Branch(name='x', system='hi')")
    plain = run(ip, "b")
    assert "application/vnd.jupyter.widget-view+json" not in str(plain.outputs)  # no kernel
    monkeypatch.setattr(ip, "kernel", object(), raising=False)  # as in ipykernel
    shown = run(ip, "b")
    data = ip.display_formatter.format(ip.user_ns["b"])[0]
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/plain"].startswith("BranchView('x', 1 messages)")
    assert "<strong>x</strong>" in data["text/html"]
    assert shown.error is None
    session = ip.display_formatter.format(ip.user_ns["current_session"]())[0]
    assert "application/vnd.jupyter.widget-view+json" in session and "main" in session["text/plain"]


def test_unloading_removes_the_formatters(ip, monkeypatch):
    monkeypatch.setattr(ip, "kernel", object(), raising=False)
    run(ip, "from lion_nb import Branch\nb = Branch(name='x')")
    ip.run_line_magic("unload_ext", "lion_nb")
    data = ip.display_formatter.format(ip.user_ns["b"])[0]
    assert "application/vnd.jupyter.widget-view+json" not in data
    ip.run_line_magic("load_ext", "lion_nb")


def test_a_re_run_note_is_shown_once_and_its_names_as_code(ip):
    from ipywidgets import Widget

    run(ip, "%config LionMagics.live_view = 'widget'")
    run(ip, "%%lion\nfirst", cell_id="c")
    ran = run(ip, "%%lion\nfirst, again", cell_id="c")
    assert ran.error is None, ran
    first, answer = ran.outputs[0].data, ran.outputs[-1].data
    model_id = first["application/vnd.jupyter.widget-view+json"]["model_id"]
    with warnings.catch_warnings():  # the registry's public name is deprecated, not gone
        warnings.simplefilter("ignore", DeprecationWarning)
        widget = Widget.widgets[model_id]
    assert widget.note == ""  # finished: the answer carries the note
    assert "<code>main~1</code>" in answer["text/html"] and "`" not in answer["text/html"]
    assert answer["text/plain"].count("re-run") == 1


def test_a_signal_log_built_after_some_turns_starts_with_them(ip):
    from lion_nb import current_session
    from lion_nb.widgets import SignalLog

    run(ip, "%%lion -q\none")
    run(ip, "%%lion -q\ntwo")
    log = SignalLog(current_session())
    kinds = [row["kind"] for row in log.rows]
    assert kinds.count("RunStart") == 2 and kinds.count("MessageAdded") == 4
    run(ip, "%%lion -q\nthree")
    log._throttle.flush()
    assert [row["kind"] for row in log.rows].count("RunStart") == 3  # and goes on live
    assert SignalLog(current_session(), signals=[]).rows == []  # given ones replace them
    run(ip, "%lion reset --all")
    assert SignalLog(current_session()).rows == []  # a new Session: none of the old one's
