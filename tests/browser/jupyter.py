"""A real Jupyter server started by the tests, and notebooks driven in it through Chromium.

Design decisions:

- One server for the whole test session (``jupyter lab`` serves JupyterLab at ``/lab`` and,
  with ``notebook>=7`` installed, Notebook 7 at ``/notebooks``). Its start costs seconds of
  imports; each test pays only for loading the page and starting a kernel.
- Isolation: ``JUPYTER_CONFIG_DIR``, ``JUPYTER_DATA_DIR``, ``JUPYTER_RUNTIME_DIR``,
  ``IPYTHONDIR`` and ``XDG_*`` point into a temporary directory, so no user setting, workspace,
  startup file or runtime file leaks in or out. The environment's own ``share/jupyter``
  (sys.prefix) stays on the data path, which ``jupyter_core`` always searches: the prebuilt
  labextensions of ipywidgets and anywidget and the ``python3`` kernelspec are found there.
- Offline and quiet: no news feed (``news_url=None``, ``fetchNews: "false"``), no update check,
  the read-only extension manager (the PyPI one asks PyPI), no language-server scan, no
  terminals. Nothing the page or the server does needs to leave 127.0.0.1.
- ``windowingMode: "none"``: every cell stays attached to the DOM, so a locator finds a cell
  that is scrolled out of view.
- The application is exposed as ``window.jupyterapp``. Cells run through the same commands as
  the toolbar and the Run menu; each run's promise is counted in the page, and a notebook is
  idle when no run is pending, no cell is running and the kernel reports idle. That wait has
  no race between "the run was asked for" and "the kernel went busy".
- ``open_notebook`` starts the notebook's session through the REST API before the page asks,
  so the kernel boots while the front end loads. When the page starts the kernel itself and
  the notebook names none, JupyterLab and Notebook 7 show a "Select Kernel" dialog seconds
  after the notebook appears. It is accepted with ``python3`` whenever it shows: while
  waiting here, and through a Playwright locator handler before any action of the test.
- Loading JupyterLab costs far more than opening a notebook in it (about 10 s against 2 s
  on a two-core machine), so a page that already shows the server's JupyterLab opens the
  next notebook as a tab; the fixtures share one page per test module.
- Teardown shuts kernels down through the API (they run in sessions of their own, outside
  the server's process group), then ends the server's process group.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

KERNEL = "python3"
KERNELSPEC = {"name": KERNEL, "display_name": "Python 3 (ipykernel)", "language": "python"}
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
# Kernels inherit the server's environment: no provider keys, no user Jupyter paths.
DROPPED_VARS = {
    "JUPYTER_PATH",
    "JUPYTER_CONFIG_PATH",
    "JUPYTER_TOKEN",
    "JUPYTER_PLATFORM_DIRS",
    "LION_CHAT_PROVIDER",
    "LION_CHAT_MODEL",
}
SCREENSHOTS = Path(os.environ.get("LION_SCREENSHOTS") or Path(__file__).parent / "screenshots")

SERVER_FLAGS = [
    "--no-browser",
    "--allow-root",
    "--ip=127.0.0.1",
    "--ServerApp.port_retries=0",
    "--ServerApp.terminals_enabled=False",
    "--LabApp.news_url=None",
    "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    "--LabApp.extension_manager=readonly",
    "--LabApp.expose_app_in_browser=True",
    "--JupyterNotebookApp.expose_app_in_browser=True",
    "--LanguageServerManager.autodetect=False",
]

USER_SETTINGS = {
    "@jupyterlab/apputils-extension/notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
}

# The extensions here are prebuilt: asking the server whether a rebuild is due only costs time.
PAGE_CONFIG = {"buildCheck": False, "buildAvailable": False}

KERNEL_DIALOG = '.jp-Dialog:has(.jp-Dialog-header:text-is("Select Kernel"))'

# The notebook panel in view, the same in JupyterLab and Notebook 7.
_PANEL_JS = """
function lionPanel(path) {
  const app = window.jupyterapp;
  if (!app || !app.shell) return null;
  const isPanel = w => w && w.content && w.sessionContext && w.context;
  const current = app.shell.currentWidget;
  if (isPanel(current) && (!path || current.context.path === path)) return current;
  if (!path) return null;
  for (const w of app.shell.widgets('main')) {
    if (isPanel(w) && w.context.path === path) return w;
  }
  return null;
}
"""

_STATE_JS = (
    "(path) => {"
    + _PANEL_JS
    + """
  if (document.querySelector('.jp-Dialog .jp-Dialog-header')?.textContent === 'Select Kernel')
    return 'dialog';
  const panel = lionPanel(path);
  if (!panel) return 'loading';
  const pending = (window.__lion && window.__lion.pending) || 0;
  const running = panel.content.widgets.some(
    c => c.model.type === 'code' && c.model.executionState === 'running');
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const status = panel.sessionContext.kernelDisplayStatus;
  if (!kernel) return 'no kernel';
  if (pending || running) return 'running';
  return status === 'idle' ? 'idle' : status;
}"""
)

#: the running code cells of the notebook in view, as ``[index, first line of source]``
_RUNNING_JS = (
    "(path) => {"
    + _PANEL_JS
    + """
  const panel = lionPanel(path);
  if (!panel) return [];
  return panel.content.widgets.map((c, i) => [i, c]).filter(([, c]) =>
    c.model.type === 'code' && c.model.executionState === 'running'
  ).map(([i, c]) => [i, c.model.sharedModel.getSource().split('\\n')[0]]);
}"""
)

_RUN_JS = (
    "([command, index]) => {"
    + _PANEL_JS
    + """
  const panel = lionPanel(null);
  if (!panel) throw new Error('no notebook is open in this page');
  const app = window.jupyterapp;
  app.shell.activateById(panel.id);
  if (index !== null) {
    panel.content.activeCellIndex = index;
    panel.content.deselectAll();
  }
  const lion = window.__lion = window.__lion || {pending: 0, errors: []};
  lion.pending += 1;
  app.commands.execute(command)
    .catch(e => lion.errors.push(String(e)))
    .finally(() => { lion.pending -= 1; });
}"""
)


@dataclass
class JupyterServer:
    """A running ``jupyter lab`` process and the directories it was given."""

    base: Path
    root: Path
    port: int
    token: str
    process: subprocess.Popen
    log: Path
    started_in: float = 0.0

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "", **query: str) -> str:
        """Absolute URL of a server path, with the token."""
        params = "&".join([*(f"{k}={quote(v)}" for k, v in query.items()), f"token={self.token}"])
        return f"{self.origin}/{path.lstrip('/')}?{params}"

    def api(self, method: str, path: str, body: Any = None, timeout: float = 10) -> Any:
        """Call the REST API; returns the decoded JSON answer (None when empty)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.origin}/api/{path.lstrip('/')}",
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            raw = answer.read()
        return json.loads(raw) if raw else None

    def write_notebook(self, path: str, notebook: Any) -> Path:
        """Write a notebook under the root directory. ``notebook`` is an nbformat node or a
        list of cell sources (code cells); a missing kernelspec is set to ``python3``."""
        import nbformat

        if isinstance(notebook, (list, tuple)):
            notebook = new_notebook(*notebook)
        notebook.metadata.setdefault("kernelspec", dict(KERNELSPEC))
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, target)
        return target

    def start_session(self, path: str, kernel: str = KERNEL) -> dict:
        """Start (or find) the notebook session of ``path``. The server answers at once and
        the kernel boots while the page loads; the page then joins this session. Its name is
        the file's name, as JupyterLab gives it: the server sets the kernel's
        ``JPY_SESSION_NAME`` to the notebook's folder joined with that name."""
        name = path.rsplit("/", 1)[-1]
        body = {"path": path, "name": name, "type": "notebook", "kernel": {"name": kernel}}
        return self.api("POST", "sessions", body)

    def shutdown_kernels(self) -> None:
        """End every session and kernel, so one test's kernels do not outlive it."""
        with contextlib.suppress(OSError, urllib.error.URLError):
            for session in self.api("GET", "sessions"):
                self.api("DELETE", f"sessions/{session['id']}")
            for kernel in self.api("GET", "kernels"):
                self.api("DELETE", f"kernels/{kernel['id']}")

    def log_tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 10) -> None:
        """Shut kernels down through the API, then end the server's process group."""
        if self.process.poll() is None:
            self.shutdown_kernels()
        _kill_group(self.process, timeout)


def new_notebook(*sources: str):
    """A notebook of code cells with the ``python3`` kernelspec."""
    import nbformat.v4 as v4

    notebook = v4.new_notebook(cells=[v4.new_code_cell(source) for source in sources])
    notebook.metadata["kernelspec"] = dict(KERNELSPEC)
    return notebook


def isolated_env(base: Path) -> dict[str, str]:
    """Environment whose Jupyter, IPython and XDG user directories all live under ``base``."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.endswith("_API_KEY") and name not in DROPPED_VARS
    }
    dirs = {
        "JUPYTER_CONFIG_DIR": "jupyter/config",
        "JUPYTER_DATA_DIR": "jupyter/data",
        "JUPYTER_RUNTIME_DIR": "jupyter/runtime",
        "IPYTHONDIR": "ipython",
        "XDG_CONFIG_HOME": "xdg/config",
        "XDG_DATA_HOME": "xdg/data",
        "XDG_CACHE_HOME": "xdg/cache",
        "XDG_STATE_HOME": "xdg/state",
        "XDG_RUNTIME_DIR": "xdg/runtime",
    }
    for name, sub in dirs.items():
        path = base / sub
        path.mkdir(parents=True, exist_ok=True)
        env[name] = str(path)
    os.chmod(env["XDG_RUNTIME_DIR"], 0o700)
    env["LION_HOME"] = str(base / "lion_home")
    env["JUPYTER_PREFER_ENV_PATH"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def write_user_settings(config_dir: Path) -> None:
    """JupyterLab and Notebook 7 read user settings from ``<config>/lab/user-settings`` and
    page options from ``<config>/labconfig/page_config.json``."""
    for plugin, values in USER_SETTINGS.items():
        target = config_dir / "lab" / "user-settings" / f"{plugin}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values, indent=2))
    page_config = config_dir / "labconfig" / "page_config.json"
    page_config.parent.mkdir(parents=True, exist_ok=True)
    page_config.write_text(json.dumps(PAGE_CONFIG, indent=2))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(base: Path, timeout: float = 90) -> JupyterServer:
    """Start ``jupyter lab`` on 127.0.0.1 and return once ``/api/status`` answers."""
    base.mkdir(parents=True, exist_ok=True)
    root = base / "root"
    root.mkdir(exist_ok=True)
    env = isolated_env(base)
    write_user_settings(Path(env["JUPYTER_CONFIG_DIR"]))
    last_error = "no attempt"
    for _attempt in range(3):  # a free port can be taken between choosing and binding it
        port, token = free_port(), secrets.token_hex(16)
        log = base / f"server-{port}.log"
        command = [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            *SERVER_FLAGS,
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
        ]
        began = time.perf_counter()
        with log.open("wb") as out:
            process = subprocess.Popen(
                command,
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        server = JupyterServer(base, root, port, token, process, log)
        if _wait_ready(server, timeout):
            server.started_in = time.perf_counter() - began
            return server
        last_error = server.log_tail()
        _kill_group(process, 5)
    raise RuntimeError(f"jupyter lab did not start:\n{last_error}")


def _wait_ready(server: JupyterServer, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            return False
        try:
            url = f"{server.origin}/api/status?token={server.token}"
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return True
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.05)
    return False


def _kill_group(process: subprocess.Popen, timeout: float) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(5)


# --- the page side ---------------------------------------------------------------------------


@dataclass
class PageLog:
    """What a browser context asked for: every request and WebSocket URL, and page errors.

    Requests accumulate over the context's life (JupyterLab fetches its extensions once, when
    it loads, which may be in an earlier test); ``test_errors`` are the uncaught page errors
    since ``begin_test``."""

    requests: list[str] = field(default_factory=list)
    websockets: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    first_test_error: int = 0

    def begin_test(self) -> None:
        self.first_test_error = len(self.errors)

    @property
    def test_errors(self) -> list[str]:
        return self.errors[self.first_test_error :]

    def attach(self, context) -> None:
        context.on("request", lambda request: self.requests.append(request.url))
        context.on("page", self.watch_page)

    def watch_page(self, page) -> None:
        page.on("websocket", lambda ws: self.websockets.append(ws.url))
        page.on("pageerror", lambda error: self.errors.append(str(error)))

    def foreign(self) -> list[str]:
        """URLs that would leave this machine (``data:`` and ``blob:`` never do)."""
        out = []
        for url in [*self.requests, *self.websockets]:
            parts = urlsplit(url)
            if parts.scheme not in ("data", "blob", "about") and parts.hostname not in LOCAL_HOSTS:
                out.append(url)
        return out


_ACCEPT_JS = """(kernel) => {
  const dialog = [...document.querySelectorAll('.jp-Dialog')].find(
    d => d.querySelector('.jp-Dialog-header')?.textContent === 'Select Kernel');
  if (!dialog) return false;
  const select = dialog.querySelector('select');
  const option = select && [...select.options].find(o => o.value.includes(`"${kernel}"`));
  if (option) select.value = option.value;
  dialog.querySelector('.jp-Dialog-button.jp-mod-accept').click();
  const lion = window.__lion = window.__lion || {pending: 0, errors: []};
  lion.kernelDialogs = (lion.kernelDialogs || 0) + 1;
  return true;
}"""


def accept_kernel_dialog(page) -> bool:
    """Choose the ``python3`` kernel in the "Select Kernel" dialog and accept it.

    Done in the page rather than with Playwright actions: an action would itself wake the
    locator handler of ``handle_kernel_dialog`` and the two would race for the dialog."""
    return page.evaluate(_ACCEPT_JS, KERNEL)


def kernel_dialogs_answered(page) -> int:
    """How many "Select Kernel" dialogs this page has answered since it loaded."""
    return page.evaluate("() => (window.__lion && window.__lion.kernelDialogs) || 0")


def handle_kernel_dialog(page) -> None:
    """Accept the "Select Kernel" dialog whenever it blocks an action of the test."""
    dialog = page.locator(KERNEL_DIALOG)
    page.remove_locator_handler(dialog)
    page.add_locator_handler(dialog, lambda _dialog: accept_kernel_dialog(page))


def notebook_url(server: JupyterServer, path: str, ui: str = "lab") -> str:
    if ui == "lab":
        return server.url(f"lab/tree/{quote(path)}", reset="")
    if ui == "notebook":
        return server.url(f"notebooks/{quote(path)}")
    raise ValueError(f"ui must be 'lab' or 'notebook', not {ui!r}")


def open_notebook(
    page,
    server: JupyterServer,
    path: str,
    notebook=None,
    *,
    ui: str = "lab",
    start_kernel: bool = True,
    timeout: float = 60,
):
    """Open ``path`` (written first when ``notebook`` is given) in JupyterLab (``ui="lab"``)
    or Notebook 7 (``ui="notebook"``); return the seconds it took for its kernel to be idle.

    A page that already shows this server's JupyterLab opens the notebook as a new tab
    (``docmanager:open``) instead of loading the application again. ``start_kernel`` starts
    the session through the REST API first, so the kernel boots while the front end loads;
    with ``False`` the page starts it (and may ask which kernel to use, answered here)."""
    began = time.perf_counter()
    if notebook is not None:
        server.write_notebook(path, notebook)
    if start_kernel:
        server.start_session(path)
    handle_kernel_dialog(page)
    if ui == "lab" and _shows_lab(page, server):
        page.evaluate(
            """async (path) => {
              const app = window.jupyterapp;
              await app.restored;
              await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
            }""",
            path,
        )
    else:
        page.goto(notebook_url(server, path, ui))
    wait_for_idle(page, timeout=timeout, path=path)
    return time.perf_counter() - began


def _shows_lab(page, server: JupyterServer) -> bool:
    if not page.url.startswith(f"{server.origin}/lab"):
        return False
    return page.evaluate("() => Boolean(window.jupyterapp && window.jupyterapp.restored)")


def close_notebooks(page) -> None:
    """Dismiss open dialogs and close every document without saving, so the page can open
    the next test's notebook (kernels are left to ``JupyterServer.shutdown_kernels``)."""
    with contextlib.suppress(Exception):
        page.evaluate(
            """() => {
              for (const b of document.querySelectorAll('.jp-Dialog .jp-mod-reject')) b.click();
              const app = window.jupyterapp;
              if (!app || !app.shell) return;
              for (const w of Array.from(app.shell.widgets('main'))) {
                if (w.context && w.context.model) w.context.model.dirty = false;
                w.close();
              }
            }"""
        )


def wait_for_idle(page, timeout: float = 60, path: str | None = None) -> None:
    """Wait until the notebook in view has no pending run, no running cell and an idle
    kernel, accepting the "Select Kernel" dialog on the way."""
    from playwright.sync_api import Error as PlaywrightError

    deadline = time.monotonic() + timeout
    state = "not checked"
    while time.monotonic() < deadline:
        try:
            state = page.evaluate(_STATE_JS, path)
        except PlaywrightError as error:  # the page is still navigating
            state = f"loading ({error.message.splitlines()[0]})"
        if state == "idle":
            return
        if state == "dialog":
            accept_kernel_dialog(page)
            continue
        page.wait_for_timeout(50)
    errors = page.evaluate("() => (window.__lion && window.__lion.errors) || []")
    running = page.evaluate(_RUNNING_JS, path) if state == "running" else []
    raise TimeoutError(
        f"notebook not idle after {timeout}s (state: {state}; running cells: {running}; "
        f"errors: {errors})"
    )


def run_all(page, wait: bool = True, timeout: float = 60) -> None:
    """Run every cell, as Run > Run All Cells does."""
    page.evaluate(_RUN_JS, ["notebook:run-all-cells", None])
    if wait:
        wait_for_idle(page, timeout)


def run_cell(page, index: int, wait: bool = True, timeout: float = 60) -> None:
    """Run the cell at ``index`` (0-based) without moving to the next one."""
    page.evaluate(_RUN_JS, ["notebook:run-cell", index])
    if wait:
        wait_for_idle(page, timeout)


def wait_for_output(page, index: int, text: str, timeout: float = 60) -> None:
    """Wait until the output of the cell at ``index`` shows ``text``: proof that the kernel
    is inside that cell (for a test that then interrupts it), where the kernel's busy status
    could also mean it is still starting. A run the page dropped (the notebook idle with the
    text not shown) is asked for once more; a timeout says what the page showed."""
    from playwright.sync_api import Error as PlaywrightError

    deadline = time.monotonic() + timeout
    shown, state, rerun = "", "not checked", False
    while time.monotonic() < deadline:
        state = page.evaluate(_STATE_JS, None)
        if state == "dialog":
            accept_kernel_dialog(page)
            continue
        try:
            shown = cell_output(page, index).inner_text(timeout=1000)
        except PlaywrightError:  # the output area is not drawn yet
            shown = ""
        if text in shown:
            return
        if state == "idle" and not rerun:
            rerun = True
            run_cell(page, index, wait=False)
        page.wait_for_timeout(50)
    errors = page.evaluate("() => (window.__lion && window.__lion.errors) || []")
    running = page.evaluate(_RUNNING_JS, None)
    raise TimeoutError(
        f"cell {index} did not show {text!r} after {timeout}s (state: {state}; running "
        f"cells: {running}; asked again: {rerun}; output: {shown!r}; errors: {errors})"
    )


def interrupt_kernel(page) -> None:
    """Press the notebook toolbar's interrupt (■) button."""
    _panel(page).locator('[data-command="notebook:interrupt-kernel"]').click()


def _panel(page):
    panel_id = page.evaluate("() => {" + _PANEL_JS + " return lionPanel(null)?.id; }")
    if not panel_id:
        raise LookupError("no notebook is open in this page")
    return page.locator(f'[id="{panel_id}"]')


def cell(page, index: int):
    """Locator of the cell at ``index`` in the notebook in view."""
    return _panel(page).locator(".jp-Notebook .jp-Cell").nth(index)


def cell_output(page, index: int):
    """Locator of the output area of the cell at ``index``."""
    return cell(page, index).locator(".jp-Cell-outputArea")


def screenshot(page, name: str, element=None) -> Path:
    """Save a PNG of the page (or of one locator, ``element``) under ``LION_SCREENSHOTS``
    (default ``tests/browser/screenshots``, kept out of git) and return its path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    target = SCREENSHOTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.png"
    if element is not None:
        element.screenshot(path=str(target))
    else:
        page.screenshot(path=str(target), full_page=True)
    return target
