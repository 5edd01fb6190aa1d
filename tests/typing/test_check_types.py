"""The mypy baseline parses and check_types.py's comparison holds it to only shrinking.

Fast: mypy never runs here; `main` gets synthetic mypy output through its `run` seam.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

_spec = importlib.util.spec_from_file_location("check_types", HERE / "check_types.py")
assert _spec and _spec.loader
check_types = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_types)

OUTPUT = """\
lion_nb/session/branch.py:10: error: Item "None" has no attribute "x"  [union-attr]
lion_nb/session/branch.py:20:5: error: Item "None" has no attribute "y"  [union-attr]
lion_nb/session/branch.py:30: note: See https://mypy.readthedocs.io/
lion_nb/models/imodel.py:7: error: Returning Any from function  [no-any-return]
lion_nb/protocols/pile.py:3: error: Missing type parameters for generic type "dict"  [type-arg]
lion_nb/store/store.py:5: error: Something without a code
Found 5 errors in 4 files (checked 182 source files)
"""


def _run(output: str, version: str = "2.4.1"):
    return lambda: (output, version)


def _write(path: Path, counts: dict[str, dict[str, int]]) -> Path:
    check_types.write_baseline(path, counts, "2.4.1")
    return path


def _main(argv: list[str], output: str, baseline: Path) -> tuple[int, str]:
    lines: list[str] = []
    code = check_types.main([*argv, "--baseline", str(baseline)], _run(output), lines.append)
    return code, "\n".join(lines)


def test_committed_baseline_parses_and_adds_up():
    path = HERE / "mypy_baseline.json"
    counts = check_types.load_baseline(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["total"] == check_types.total(counts) > 0
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", data["mypy"])
    assert all(p.startswith("lion_nb/") and p.endswith(".py") for p in counts)


def test_parse_counts_per_file_and_code_ignoring_notes_and_summary():
    assert check_types.parse(OUTPUT) == {
        "lion_nb/models/imodel.py": {"no-any-return": 1},
        "lion_nb/protocols/pile.py": {"type-arg": 1},
        "lion_nb/session/branch.py": {"union-attr": 2},
        "lion_nb/store/store.py": {"unknown": 1},
    }
    assert check_types.strict_total(check_types.parse(OUTPUT)) == 2


def test_moved_lines_change_nothing(tmp_path):
    baseline = _write(tmp_path / "b.json", check_types.parse(OUTPUT))
    moved = OUTPUT.replace("branch.py:10:", "branch.py:410:").replace(":20:5:", ":99:1:")
    code, out = _main([], moved, baseline)
    assert code == 0, out
    assert "5 errors in 4 files (strict packages: 2); baseline 5" in out


def test_a_grown_count_fails_naming_the_file_and_code(tmp_path):
    baseline = _write(tmp_path / "b.json", check_types.parse(OUTPUT))
    grown = OUTPUT + "lion_nb/models/imodel.py:90: error: Returning Any  [no-any-return]\n"
    code, out = _main([], grown, baseline)
    assert code == 1
    assert "lion_nb/models/imodel.py: [no-any-return] 1 -> 2" in out
    assert "lion_nb/models/imodel.py:90: error" in out  # mypy's own line, to find it
    assert "branch.py" not in out  # only what grew is shown


def test_a_new_code_in_a_known_file_and_a_new_file_both_fail(tmp_path):
    baseline = _write(tmp_path / "b.json", check_types.parse(OUTPUT))
    extra = (
        "lion_nb/session/branch.py:1: error: Incompatible types  [assignment]\n"
        "lion_nb/runtime/loop.py:1: error: Function is missing a type annotation  [no-untyped-def]\n"
    )
    code, out = _main([], OUTPUT + extra, baseline)
    assert code == 1
    assert "lion_nb/session/branch.py: [assignment] 0 -> 1" in out
    assert "lion_nb/runtime/loop.py: new file with 1 error(s) (no-untyped-def: 1)" in out
    assert "(strict packages: 3)" in out


def test_fewer_errors_pass_and_say_the_baseline_can_be_lowered(tmp_path):
    baseline = _write(tmp_path / "b.json", check_types.parse(OUTPUT))
    fewer = "\n".join(line for line in OUTPUT.splitlines() if "pile.py" not in line)
    code, out = _main([], fewer, baseline)
    assert code == 0
    assert "lower it with --update" in out
    assert "4 errors in 3 files" in out and "baseline 5" in out


def test_update_refuses_growth_and_leaves_the_baseline_alone(tmp_path):
    baseline = _write(tmp_path / "b.json", {"lion_nb/protocols/pile.py": {"type-arg": 1}})
    before = baseline.read_text(encoding="utf-8")
    code, out = _main(["--update"], OUTPUT, baseline)
    assert code == 1
    assert "refusing to raise the baseline" in out
    assert "lion_nb/session/branch.py: new file with 2 error(s)" in out
    assert baseline.read_text(encoding="utf-8") == before


def test_update_with_allow_growth_rewrites_and_then_checks_clean(tmp_path):
    baseline = _write(tmp_path / "b.json", {"lion_nb/protocols/pile.py": {"type-arg": 1}})
    code, out = _main(["--update", "--allow-growth"], OUTPUT, baseline)
    assert code == 0, out
    assert check_types.load_baseline(baseline) == check_types.parse(OUTPUT)
    assert _main([], OUTPUT, baseline)[0] == 0


def test_update_lowers_the_baseline_without_allow_growth(tmp_path):
    baseline = _write(tmp_path / "b.json", check_types.parse(OUTPUT))
    fewer = OUTPUT.replace("lion_nb/store/store.py:5: error: Something without a code\n", "")
    assert _main(["--update"], fewer, baseline)[0] == 0
    assert "lion_nb/store/store.py" not in check_types.load_baseline(baseline)


def test_allow_growth_without_update_is_a_usage_error(tmp_path):
    with pytest.raises(SystemExit) as exited:
        _main(["--allow-growth"], OUTPUT, tmp_path / "b.json")
    assert exited.value.code == 2


def test_mypy_not_finishing_fails_instead_of_passing(tmp_path):
    def crash():
        raise check_types.MypyFailed("mypy exited 2:\nlion_nb/x.py:1: error: invalid syntax")

    lines: list[str] = []
    code = check_types.main(["--baseline", str(tmp_path / "b.json")], crash, lines.append)
    assert code == 2
    assert "invalid syntax" in lines[0]


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        '{"total": 1, "errors": {"lion_nb/a.py": {"misc": 0}}}',
        '{"total": 3, "errors": {"lion_nb/a.py": {"misc": 2}}}',
    ],
)
def test_a_malformed_baseline_is_refused(tmp_path, text):
    path = tmp_path / "b.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"b\.json"):
        check_types.load_baseline(path)


def test_strict_packages_match_the_pyproject_overrides():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = pyproject.split("disallow_untyped_defs = true")[0].rsplit("[[tool.mypy.overrides]]", 1)[
        1
    ]
    modules = set(re.findall(r'"(lion_nb\.[a-z_]+)\.\*"', block))
    assert modules == {p.rstrip("/").replace("/", ".") for p in check_types.STRICT_PACKAGES}


def test_ci_runs_the_type_check_after_lint():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.index("ruff format --check") < ci.index("python tests/typing/check_types.py")
    assert ci.index("python tests/typing/check_types.py") < ci.index("python -m pytest")
