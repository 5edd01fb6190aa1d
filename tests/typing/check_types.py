"""Type-check lion_nb with mypy against a baseline that may only shrink.

mypy runs with the ``[tool.mypy]`` configuration in pyproject.toml (the pydantic plugin; the
strict packages held to the per-module strict flags). The errors are counted per file and
error code -- never per line, so code moving up or down a file changes nothing -- and compared
with ``mypy_baseline.json`` beside this script. The run fails when any (file, code) count grows
or a file without a baseline entry has errors, naming each one; fewer errors pass (and the
summary says the baseline can be lowered).

    python tests/typing/check_types.py                   # check
    python tests/typing/check_types.py --update          # lower the baseline to today's counts
    python tests/typing/check_types.py --update --allow-growth   # re-baseline after a merge

``--update`` refuses to raise any count unless ``--allow-growth`` is given, so the baseline
only goes up by a deliberate, reviewed step.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASELINE = Path(__file__).resolve().with_name("mypy_baseline.json")
# Held to the strict per-module flags in pyproject.toml; the target is 0 errors in each.
STRICT_PACKAGES = (
    "lion_nb/protocols/",
    "lion_nb/models/",
    "lion_nb/runtime/",
    "lion_nb/operations/",
)
MYPY_ARGS = ("--no-pretty", "--no-error-summary", "--show-error-codes", "--hide-error-context")

# `path:line[:col]: error: message  [code]`; notes and the summary line are not errors.
_ERROR = re.compile(
    r"^(?P<path>[^:\n]+?):\d+(?::\d+)?: error: (?P<msg>.*?)(?:  \[(?P<code>[a-z0-9-]+)\])?$"
)

Counts = dict[str, dict[str, int]]  # file -> error code -> count


class MypyFailed(RuntimeError):
    """mypy stopped before checking everything (a crash, a blocking error, bad config)."""


def parse(output: str) -> Counts:
    """Count mypy's error lines per file and error code."""
    counts: dict[str, Counter[str]] = {}
    for line in output.splitlines():
        found = _ERROR.match(line.rstrip())
        if found:
            path = found["path"].replace("\\", "/")
            counts.setdefault(path, Counter())[found["code"] or "unknown"] += 1
    return {path: dict(sorted(codes.items())) for path, codes in sorted(counts.items())}


def total(counts: Counts) -> int:
    return sum(sum(codes.values()) for codes in counts.values())


def strict_total(counts: Counts) -> int:
    return sum(sum(c.values()) for path, c in counts.items() if path.startswith(STRICT_PACKAGES))


def by_package(counts: Counts) -> dict[str, int]:
    """Errors per top-level part of lion_nb (``lion_nb/session``, ``lion_nb/__init__.py``)."""
    packages: Counter[str] = Counter()
    for path, codes in counts.items():
        parts = path.split("/")
        packages["/".join(parts[:2])] += sum(codes.values())
    return dict(sorted(packages.items()))


def compare(baseline: Counts, current: Counts) -> tuple[list[str], list[str]]:
    """Return (grown, shrunk): one line per (file, code) whose count rose or fell."""
    grown: list[str] = []
    shrunk: list[str] = []
    for path in sorted(set(baseline) | set(current)):
        before, now = baseline.get(path, {}), current.get(path, {})
        if path not in baseline:
            detail = ", ".join(f"{code}: {n}" for code, n in now.items())
            grown.append(f"{path}: new file with {sum(now.values())} error(s) ({detail})")
            continue
        for code in sorted(set(before) | set(now)):
            was, is_ = before.get(code, 0), now.get(code, 0)
            if is_ > was:
                grown.append(f"{path}: [{code}] {was} -> {is_}")
            elif is_ < was:
                shrunk.append(f"{path}: [{code}] {was} -> {is_}")
    return grown, shrunk


def baseline_version(path: Path) -> str | None:
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8")).get("mypy")


def load_baseline(path: Path) -> Counts:
    """Read the baseline, refusing a file whose shape or total is off."""
    data = json.loads(path.read_text(encoding="utf-8"))
    errors = data.get("errors") if isinstance(data, dict) else None
    if not isinstance(errors, dict) or not all(
        isinstance(codes, dict)
        and all(isinstance(c, str) and isinstance(n, int) and n > 0 for c, n in codes.items())
        for codes in errors.values()
    ):
        raise ValueError(f"{path}: expected {{'errors': {{file: {{code: positive count}}}}}}")
    if data.get("total") != total(errors):
        raise ValueError(
            f"{path}: 'total' is {data.get('total')}, the counts add to {total(errors)}"
        )
    return errors


def write_baseline(path: Path, counts: Counts, mypy_version: str) -> None:
    data = {"mypy": mypy_version, "total": total(counts), "errors": counts}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def run_mypy() -> tuple[str, str]:
    """Run mypy on the configured files; return (its output, its version)."""
    version = subprocess.run(
        [sys.executable, "-m", "mypy", "--version"], cwd=ROOT, capture_output=True, text=True
    )
    if version.returncode != 0:
        raise MypyFailed(
            f"mypy is not installed: {version.stderr.strip()} (pip install -e '.[test]')"
        )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", *MYPY_ARGS], cwd=ROOT, capture_output=True, text=True
    )
    # 0: clean, 1: errors found; anything else means mypy did not finish the check.
    if done.returncode not in (0, 1):
        raise MypyFailed(f"mypy exited {done.returncode}:\n{done.stdout}{done.stderr}".rstrip())
    return done.stdout, version.stdout.split()[1]


def main(
    argv: Sequence[str] | None = None,
    run: Callable[[], tuple[str, str]] = run_mypy,
    out: Callable[[str], None] = print,
) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite the baseline")
    parser.add_argument(
        "--allow-growth", action="store_true", help="with --update: let counts rise too"
    )
    parser.add_argument("--baseline", type=Path, default=BASELINE, help=argparse.SUPPRESS)
    parser.add_argument("--by-package", action="store_true", help="print errors per package")
    args = parser.parse_args(argv)
    if args.allow_growth and not args.update:
        parser.error("--allow-growth only goes with --update")

    try:
        output, version = run()
    except MypyFailed as exc:
        out(f"type check failed: {exc}")
        return 2
    current = parse(output)
    baseline: Counts = load_baseline(args.baseline) if args.baseline.exists() else {}
    grown, shrunk = compare(baseline, current)

    recorded = baseline_version(args.baseline)
    if recorded and recorded != version and not args.update:
        out(f"note: the baseline was counted with mypy {recorded}; this is mypy {version}")
    if args.by_package:
        for package, n in by_package(current).items():
            out(f"  {package}: {n}")
    summary = (
        f"mypy {version}: {total(current)} errors in {len(current)} files "
        f"(strict packages: {strict_total(current)}); baseline {total(baseline)}"
    )
    if args.update:
        if grown and not args.allow_growth:
            out("refusing to raise the baseline (pass --allow-growth to accept):")
            for line in grown:
                out(f"  {line}")
            out(summary)
            return 1
        write_baseline(args.baseline, current, version)
        out(f"{summary}; baseline rewritten to {total(current)}")
        return 0
    if grown:
        out("new type errors (fix them, or re-baseline deliberately with --update --allow-growth):")
        for line in grown:
            out(f"  {line}")
        out(output_lines_for(output, grown_files(grown)))
        out(summary)
        return 1
    if shrunk:
        out(f"{len(shrunk)} count(s) fell below the baseline; lower it with --update")
    out(summary)
    return 0


def grown_files(grown: Sequence[str]) -> set[str]:
    return {line.split(": ", 1)[0] for line in grown}


def output_lines_for(output: str, files: set[str]) -> str:
    """mypy's own error lines for the files that grew, so the failure shows where to look."""
    lines = [
        line
        for line in output.splitlines()
        if (found := _ERROR.match(line.rstrip())) and found["path"].replace("\\", "/") in files
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
