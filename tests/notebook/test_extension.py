"""``%load_ext lion_nb`` registers everything cheaply; ``%unload_ext`` undoes all of it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.notebook.nbshell import run


def _hooks(shell, event):
    return [getattr(cb, "__qualname__", "") for cb in shell.events.callbacks[event]]


def test_load_registers_magics_configurable_transformer_and_hooks(ip):
    from lion_nb.notebook.cell.runner import await_transformer
    from lion_nb.notebook.magics import LionMagics

    assert "lion" in ip.magics_manager.magics["cell"]
    assert "lion" in ip.magics_manager.magics["line"]
    assert any(isinstance(c, LionMagics) for c in ip.configurables)
    assert await_transformer in ip.input_transformers_post
    assert any("pre_run_cell" in q for q in _hooks(ip, "pre_run_cell"))
    assert any("post_run_cell" in q for q in _hooks(ip, "post_run_cell"))


def test_unload_undoes_everything_and_load_again_works(ip):
    from lion_nb import current_session
    from lion_nb.notebook.cell.runner import await_transformer
    from lion_nb.notebook.magics import LionMagics

    assert run(ip, "%%lion -q\nremember me").error is None
    session = current_session()
    ip.run_line_magic("unload_ext", "lion_nb")
    assert "lion" not in ip.magics_manager.magics["cell"]
    assert "lion" not in ip.magics_manager.magics["line"]
    assert "LionMagics" not in ip.magics_manager.registry
    assert not any(isinstance(c, LionMagics) for c in ip.configurables)
    assert await_transformer not in ip.input_transformers_post
    assert not any(
        "lion_nb" in getattr(cb, "__module__", "") for cb in ip.events.callbacks["pre_run_cell"]
    )
    assert not any(
        "lion_nb" in getattr(cb, "__module__", "") for cb in ip.events.callbacks["post_run_cell"]
    )
    ran = run(ip, "%%lion\nhello")
    assert ran.error is not None  # the magic is gone
    # the conversation is the user's: it survives unloading
    assert current_session() is session and len(session.default_branch.messages) == 2
    ip.run_line_magic("load_ext", "lion_nb")
    assert run(ip, "%%lion -q\nagain").error is None
    assert len(session.default_branch.messages) == 4


def test_loading_twice_registers_once(ip):
    from lion_nb.notebook.cell.runner import await_transformer
    from lion_nb.notebook.extension import load_ipython_extension

    load_ipython_extension(ip)
    assert ip.input_transformers_post.count(await_transformer) == 1


_PROBE = textwrap.dedent(
    """
    import json, sys
    from IPython.testing.globalipapp import start_ipython
    from IPython.core.interactiveshell import InteractiveShell
    start_ipython()
    ip = InteractiveShell.instance()
    before = set(sys.modules)
    ip.run_line_magic("load_ext", "lion_nb")
    new = sorted(set(sys.modules) - before)
    print(json.dumps(new))
    """
)


def test_load_ext_imports_no_provider_widget_markdown_or_core_code():
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    new = json.loads(out.stdout.strip().splitlines()[-1])
    heavy = [
        m
        for m in new
        if m.split(".")[0] in ("httpx", "ipywidgets", "markdown_it", "pydantic", "anyio")
        or m.startswith(
            ("lion_nb.models", "lion_nb.session", "lion_nb.operations", "lion_nb.widgets")
        )
    ]
    assert heavy == [], heavy
    assert "lion_nb.notebook.magics" in new
