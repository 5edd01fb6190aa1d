"""The tests mirror the package, so a module's tests are found by its name.

Two checks, both from the file tree: every folder of tests is a ``lion_nb`` package or one
of the folders that group tests by kind (listed below, each with why); and a notebook test
module whose name starts with the name of a module of ``lion_nb/notebook/cell``,
``commands`` or ``state`` (or of the sub-package itself) is in that sub-package's folder.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PACKAGE = ROOT / "lion_nb"

#: test folders that are not a package: they group tests by how they run or what they cover
BY_KIND = {
    "bench": "benchmarks, not part of the suite",
    "browser": "widgets in a real Chromium",
    "cost": "prices, usage and budgets across models, session and notebook",
    "extensions": "the bundled extensions in the repository's extensions/ folder",
    "fakes": "loopback servers, fake CLIs and the loopback-only guard the tests use",
    "fixtures": "provider wire transcripts",
    "hardening": "one test per finding of the hardening pass, across the package",
    "typing": "the mypy baseline check",
    "models/cli": "the CLI endpoints against executable fake CLIs",
    "models/http": "the HTTP endpoints against a real loopback server",
    "models/responses": "the Responses API endpoint against a real loopback server",
}

NOTEBOOK_PARTS = ("agent", "cell", "commands", "state")


def _test_folders() -> set[str]:
    """Every folder under tests/ that holds a test module, relative to tests/."""
    return {
        path.parent.relative_to(TESTS).as_posix()
        for path in TESTS.rglob("test_*.py")
        if path.parent != TESTS
    }


def _by_kind(folder: str) -> bool:
    return any(folder == kind or folder.startswith(kind + "/") for kind in BY_KIND)


def test_every_test_folder_is_a_package_or_a_kind_of_test():
    strays = sorted(
        folder
        for folder in _test_folders()
        if not _by_kind(folder) and not (PACKAGE / folder / "__init__.py").is_file()
    )
    assert not strays, (
        f"test folders with no lion_nb package of that name: {strays}; mirror the package, "
        "or add the folder to BY_KIND with why"
    )


def test_the_kinds_of_test_are_not_packages_and_still_exist():
    for kind in BY_KIND:
        assert (TESTS / kind).is_dir(), f"tests/{kind} is gone: drop it from BY_KIND"
        assert not (PACKAGE / kind / "__init__.py").is_file(), (
            f"lion_nb/{kind} is a package now: its tests mirror it, drop it from BY_KIND"
        )


def _owners(stem: str) -> set[str]:
    """The notebook sub-packages a test module named ``test_<stem>`` belongs to by its name."""
    owners = set()
    for part in NOTEBOOK_PARTS:
        names = [part] + [p.stem for p in (PACKAGE / "notebook" / part).glob("*.py")]
        if any(stem == name or stem.startswith(name + "_") for name in names if name[0] != "_"):
            owners.add(part)
    return owners


def test_notebook_tests_are_in_the_folder_of_what_they_test():
    misplaced = {}
    for path in (TESTS / "notebook").rglob("test_*.py"):
        owners = _owners(path.stem.removeprefix("test_"))
        folder = path.parent.relative_to(TESTS / "notebook").as_posix()
        if owners and folder not in owners:
            misplaced[path.relative_to(TESTS).as_posix()] = sorted(owners)
    assert not misplaced, f"move these into tests/notebook/<one of the folders named>: {misplaced}"


def test_the_name_rule_sees_the_package():
    """The check above is not vacuous: every module of the three folders names its folder."""
    for part in NOTEBOOK_PARTS:
        modules = [p.stem for p in (PACKAGE / "notebook" / part).glob("[!_]*.py")]
        assert modules, f"lion_nb/notebook/{part} has no modules"
        for name in modules:
            assert part in _owners(name) and part in _owners(name + "_more"), name
        assert _owners(part) == {part}  # the sub-package's own name
    assert _owners("no_module_is_called_this") == set()
