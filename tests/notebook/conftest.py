"""A real in-process IPython shell with the lion extension loaded, fresh for every test."""

from __future__ import annotations

import pytest


@pytest.fixture
def ip():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.testing.globalipapp import start_ipython

    from lion_nb.notebook.state.session import reset_notebook_state

    start_ipython()
    shell = InteractiveShell.instance()
    shell.config.pop("LionMagics", None)  # `%config` values of an earlier test
    shell.run_line_magic("reset", "-f")
    reset_notebook_state()
    shell.run_line_magic("load_ext", "lion_nb")
    yield shell
    shell.run_line_magic("unload_ext", "lion_nb")
    shell.config.pop("LionMagics", None)
    reset_notebook_state()


from tests.fakes.mcp_fixtures import mcp_http, mcp_log  # noqa: E402,F401  (the MCP tests)
