"""Shared body of the fake `claude`, `codex` and `gemini` executables used by the tests.

Each fake checks its arguments the way the real CLI would, then replays a transcript (one
JSON event per line) on stdout. Environment variables steer it:

- ``FAKE_CLI_TRANSCRIPT``: the transcript to replay (default: ``<cli>_tool_run.jsonl`` of the
  provider fixtures).
- ``FAKE_CLI_MODE``: ``replay`` (default); ``hang`` (print the first line, then sleep for
  ever); ``crash`` (print the first line, then kill itself with ``FAKE_CLI_SIGNAL``, default
  SIGKILL); ``child`` (spawn a child that sleeps for ever, then hang); ``stubborn`` (ignore
  SIGTERM, then hang); ``stubborn_child`` (spawn a child that ignores SIGTERM, then hang: only
  a SIGKILL sent to the whole process group ends the child).
- ``FAKE_CLI_EXIT``: exit code after replaying (default 0).
- ``FAKE_CLI_STDERR``: text written to stderr first; ``FAKE_CLI_STDERR_BYTES``: that many
  bytes of noise written to stderr first.
- ``FAKE_CLI_DELAY``: seconds to sleep between lines.
- ``FAKE_CLI_MCP_CALL``: (claude) a JSON ``{"tool", "arguments"}``: the fake reads the server
  of its ``--mcp-config`` file, calls that tool over streamable HTTP with the file's headers
  (`_fake_mcp_call`), and replays a run that used it, its answer quoting the tool's result.
- ``FAKE_CLI_RECORD``: a file to which one JSON line is appended per run: ``argv`` (without
  the executable), ``pid``, ``pgid``, ``cwd`` and ``child_pid`` (``child`` and ``stubborn_child`` modes).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "providers"


def _usage_error(message: str, code: int) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    sys.exit(code)


def _check_args(cli: str, argv: list[str]) -> None:
    if cli == "claude":
        if "-p" not in argv and "--print" not in argv:
            _usage_error("fake claude: only print mode (-p) is supported", 2)
        if "stream-json" in argv and "--verbose" not in argv:
            _usage_error(
                "Error: When using --print, --output-format=stream-json requires --verbose", 1
            )
    elif cli == "codex":
        if argv[:1] != ["exec"] or "--json" not in argv:
            _usage_error("fake codex: expected `codex exec --json ...`", 2)
    elif cli == "gemini" and not any(a == "-p" or a.startswith("--prompt=") for a in argv):
        _usage_error("fake gemini: expected -p <prompt>", 42)


def _hang() -> None:
    while True:
        time.sleep(3600)


def main(cli: str) -> None:
    argv = sys.argv[1:]
    _check_args(cli, argv)
    env = os.environ
    mode = env.get("FAKE_CLI_MODE", "replay")
    child_pid = None
    if mode == "child":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        child_pid = child.pid
    if mode == "stubborn_child":
        code = (
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"
        )
        child_pid = subprocess.Popen([sys.executable, "-c", code]).pid
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if record := env.get("FAKE_CLI_RECORD"):
        entry = {
            "cli": cli,
            "argv": argv,
            "pid": os.getpid(),
            "pgid": os.getpgid(0),
            "cwd": os.getcwd(),
            "child_pid": child_pid,
        }
        with open(record, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")
    if text := env.get("FAKE_CLI_STDERR"):
        sys.stderr.write(text + "\n")
    if size := int(env.get("FAKE_CLI_STDERR_BYTES", "0")):
        block = ("x" * 1023 + "\n").encode()
        for _ in range(size // len(block) + 1):
            sys.stderr.buffer.write(block)
    sys.stderr.flush()
    transcript = env.get("FAKE_CLI_TRANSCRIPT") or str(FIXTURES / f"{cli}_tool_run.jsonl")
    if env.get("FAKE_CLI_MCP_CALL") and cli == "claude":
        from _fake_mcp_call import mcp_run

        lines = mcp_run(argv, json.loads(env["FAKE_CLI_MCP_CALL"]))
    else:
        lines = Path(transcript).read_text(encoding="utf-8").splitlines()
    delay = float(env.get("FAKE_CLI_DELAY", "0"))
    for index, line in enumerate(lines):
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        if index == 0 and mode in ("hang", "child", "stubborn", "stubborn_child"):
            _hang()
        if index == 0 and mode == "crash":
            os.kill(os.getpid(), getattr(signal, env.get("FAKE_CLI_SIGNAL", "SIGKILL")))
        if delay:
            time.sleep(delay)
    sys.exit(int(env.get("FAKE_CLI_EXIT", "0")))
