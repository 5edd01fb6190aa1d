"""A real in-process IPython shell with the lion extension loaded, reset for every test.

IPython keeps one shell per process, so every test gets that shell, cleared as a fresh one:
``%reset -f`` (user namespace, histories, output cache), no ``%config LionMagics`` values,
a fresh notebook state (Session, active branch, errors, runs), and the extension loaded
anew (so `LionMagics` starts from its defaults). ``%reset -f`` also runs two full garbage
collections, which scan every object the process holds; that scan was most of the time the
notebook tests spent. So each test module first collects once and freezes what is alive
(`gc.freeze`): the per-test collections then scan only what the module's tests made --
every test's garbage is still collected at the next reset -- and the frozen objects are
handed back to the collector when the module ends.
"""

from __future__ import annotations

import gc

import pytest


@pytest.fixture(scope="module")
def _shell_of_the_module():
    """The process's IPython shell, with what the module starts from frozen out of the
    garbage collector's scans until the module ends."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.testing.globalipapp import start_ipython

    start_ipython()
    shell = InteractiveShell.instance()
    gc.collect()
    gc.freeze()
    try:
        yield shell
    finally:
        gc.unfreeze()


@pytest.fixture
def ip(_shell_of_the_module):
    from lion_nb.notebook.state.session import reset_notebook_state

    shell = _shell_of_the_module
    shell.config.pop("LionMagics", None)  # `%config` values of an earlier test
    shell.run_line_magic("reset", "-f")
    reset_notebook_state()
    shell.run_line_magic("load_ext", "lion_nb")
    yield shell
    shell.run_line_magic("unload_ext", "lion_nb")
    shell.config.pop("LionMagics", None)
    reset_notebook_state()


from tests.fakes.mcp_fixtures import mcp_http, mcp_log  # noqa: E402,F401  (the MCP tests)
