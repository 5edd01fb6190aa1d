"""Every code block of the README, as a reader would use it.

- ``python`` blocks and plain ``%%lion`` / ``%lion`` blocks run top to bottom in one real
  IPython shell (magics and top-level ``await``), as the cells of one notebook, on the
  offline models. A block that calls a real provider runs after the substitutions in
  `OFFLINE`: each replaces a quoted model name in that block by an offline model that answers
  as the real one would be expected to. Every substitution must apply, and without them the
  block's calls fail for want of a key (its grid is all failures) -- nothing passes unseen. A
  block that only makes a real model (``Use a real model``) runs as written.
- ``bash`` blocks are not run (they create environments and install packages); each command
  they name is checked instead: the module or script exists, the extras are in
  ``pyproject.toml``, the paths exist, the options are ones the script accepts.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.notebook.nbshell import run

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
FENCE = re.compile(r"^```([\w-]*)\n(.*?)\n```$", re.S | re.M)


def blocks() -> list[tuple[str, str, str]]:
    """``(section, language, code)`` for each fenced block, in order."""
    text = README.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        headings = re.findall(r"^## (.+)$", text[: match.start()], re.M)
        found.append((headings[-1] if headings else "", match.group(1), match.group(2)))
    return found


# -- the offline stand-ins of the README's real models -------------------------------------------
CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Peru": "Lima"}
GRADED: list[str] = []


def _country(prompt: str) -> str:
    return next(country for country in CAPITALS if country in prompt)


def small_model(messages, **_request):
    """A small chat model: the capital, in one word when asked for one."""
    prompt = messages[-1]["content"]
    capital = CAPITALS[_country(prompt)]
    return capital if "One word" in prompt else f"The capital is {capital}."


def haiku_model(messages, **_request):
    """Another small chat model, wordier."""
    prompt = messages[-1]["content"]
    return f"{CAPITALS[_country(prompt)]} is the capital of {_country(prompt)}."


def grader_model(messages, **_request):
    """A grader: passes an answer that names the case's capital, as the judge's JSON."""
    prompt = messages[-1]["content"]
    GRADED.append(prompt)
    case = json.loads(prompt.split("Case:\n", 1)[1].split("\n\nAnswer to grade:", 1)[0])
    answer = prompt.rsplit("<<<\n", 1)[1].rsplit("\n>>>", 1)[0]
    passed = case["capital"] in answer
    return json.dumps({"pass": passed, "reason": "names it" if passed else "does not"})


#: section -> {quoted model name in its block: the offline model put in its place}
OFFLINE = {
    "Evaluate prompts and models": {
        '"openai/gpt-4o-mini"': "readme_models['small']",
        '"anthropic/claude-haiku-4-5"': "readme_models['haiku']",
        '"openai/gpt-4o"': "readme_models['grader']",
    },
}


def offline_models() -> dict:
    from lion_nb import iModel

    def function(play):
        return iModel(provider="offline", model="function", function=play)

    return {
        "small": function(small_model),
        "haiku": function(haiku_model),
        "grader": function(grader_model),
    }


def runnable(section: str, code: str) -> str:
    """``code`` with its section's substitutions, each of which must apply."""
    for name, replacement in OFFLINE.get(section, {}).items():
        assert name in code, f"README section {section!r} no longer names {name}"
        code = code.replace(name, replacement)
    return code


def test_every_block_is_one_this_module_checks():
    found = blocks()
    assert len(found) >= 9
    for section, language, code in found:
        assert language in ("python", "bash", ""), (section, language)
        if language == "":  # a plain block is a cell of magics
            assert code.startswith(("%%lion", "%lion")), (section, code)
    assert set(OFFLINE) <= {section for section, _, _ in found}


def test_the_python_blocks_run_in_order_in_one_shell(ip):
    GRADED.clear()
    ip.user_ns["readme_models"] = offline_models()
    cells = [(s, runnable(s, code)) for s, lang, code in blocks() if lang in ("python", "")]
    assert len(cells) >= 6
    last = {}
    for section, code in cells:
        ran = run(ip, code)
        assert ran.error is None, (section, code, ran)
        last[section] = ran

    from lion_nb import Budget, current_session
    from lion_nb.widgets import EvalGrid

    ns = ip.user_ns
    evaluated = ns["run"]
    assert ns["session"] is current_session()
    # 2 prompts x 2 models x 3 cases x 3 repeats, every answer checked, the grader included
    assert len(evaluated.rows) == 36
    assert len(GRADED) == 36
    summary = evaluated.summary_text()
    assert "terse" in summary and "full" in summary
    assert all(row.passed for row in evaluated.rows), summary
    assert isinstance(last["Evaluate prompts and models"].value, EvalGrid)
    assert "100%" in last["Evaluate prompts and models"].stdout  # the printed summary
    assert [ns[name].chat_model.provider for name in ("branch", "local", "agent")] == [
        "openai",
        "ollama",
        "claude_code",
    ]  # made, never called: the blocks after it only read their cost
    assert isinstance(ns["session"].budget, Budget) and ns["session"].budget.usd == 2.0


def test_a_real_model_is_never_called_without_its_substitute(ip):
    """The substitution is what keeps the Evaluate block offline: without it every cell of
    the grid reaches for a real provider and fails (no key), instead of passing unseen."""
    code = next(c for s, lang, c in blocks() if s in OFFLINE)
    ran = run(ip, code)
    assert ran.error is None, ran  # a failing cell is a row of the grid, not an error
    rows = ip.user_ns["run"].rows
    assert rows and all(row.status == "failed" for row in rows)
    assert all("_API_KEY" in row.error for row in rows), {row.error for row in rows}


# -- bash blocks: the commands they name exist ----------------------------------------------------
def commands(code: str) -> list[list[str]]:
    """The simple commands of a bash block (``&&`` chains, continued lines, comments dropped)."""
    text = code.replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            while words and re.match(r"^[A-Z_]+=", words[0]):  # VAR=value before a command
                words = words[1:]
            if words:
                out.append(words)
    return out


def extras() -> set[str]:
    """The extras of ``pyproject.toml`` (read as text: ``tomllib`` is not in Python 3.10)."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    table = text.split("\n[project.optional-dependencies]\n", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([A-Za-z0-9][\w.-]*)\s*=", table, re.M))


def check_command(words: list[str]) -> None:
    if words[0] == "." and words[1:] == [".venv/bin/activate"]:
        return  # made by the `python3 -m venv .venv` before it
    assert words[0] in ("python", "python3"), words
    if words[1] == "-m":
        module, args = words[2], words[3:]
        found = subprocess.run(
            [sys.executable, "-c", f"import importlib.util as u; print(u.find_spec({module!r}))"],
            capture_output=True,
            text=True,
        )
        assert found.stdout.strip() != "None", f"no module {module}"
        if module == "venv":
            assert args == [".venv"], args  # the environment it creates
        elif module == "pip":
            assert args[:2] == ["install", "-e"], words
            target = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", args[2])
            assert target, f"pip installs from the clone: {args[2]}"
            assert set((target.group(1) or "").split(",")) - {""} <= extras(), args[2]
            assert (REPO / "pyproject.toml").exists()
        elif module == "jupyter":
            assert args[0] == "lab", args
            import jupyterlab  # noqa: F401  (what `jupyter lab` runs)

            for arg in args[1:]:
                assert arg.startswith("--") or (REPO / arg).exists(), arg
        else:
            for arg in args:
                assert arg.startswith("-") or (REPO / arg).exists(), arg
        return
    script, args = REPO / words[1], words[2:]
    assert script.is_file(), script
    shown = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, cwd=REPO
    )
    assert shown.returncode == 0, shown.stderr
    for arg in args:
        if arg.startswith("--"):
            assert arg.split("=")[0] in shown.stdout, f"{script.name} has no {arg}"


@pytest.mark.parametrize(
    "section,code",
    [(s, c) for s, lang, c in blocks() if lang == "bash"],
    ids=lambda value: value if len(value) < 40 else None,
)
def test_the_commands_of_a_bash_block_exist(section, code):
    named = commands(code)
    assert named, section
    for words in named:
        check_command(words)
    if "LION_BENCH_LIONAGI_PYTHON" in code:  # the variable is one the benchmark reads
        assert "LION_BENCH_LIONAGI_PYTHON" in (REPO / "tests/bench/bench_lionagi.py").read_text()


def test_a_missing_extra_is_seen():
    """The checker itself: an extra that pyproject.toml does not define fails."""
    with pytest.raises(AssertionError):
        check_command(["python", "-m", "pip", "install", "-e", ".[no-such-extra]"])
    with pytest.raises(AssertionError):
        check_command(["python", "-m", "pip", "install", "lion-nb[mcp]"])
