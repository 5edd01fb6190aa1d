"""``%lion extend`` and the notebook's loading of installed extensions, in a real IPython
shell; entry points are real ``*.dist-info`` folders on a temporary ``sys.path`` entry."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from uuid import uuid4

import pytest

from lion_nb import current_session
from lion_nb.extensions import ENTRY_POINT_GROUP, loaded_extensions
from tests.notebook.nbshell import run, usage_error

REPO = Path(__file__).resolve().parents[3]

GREETER = """
async def greet(branch, instruction=None):
    return f"Hello, {instruction}!"

def extend(session):
    session.register_operation("greet", greet)
"""


@pytest.fixture
def modules():
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("lnx_", "_lion_nb_extension_")):
            sys.modules.pop(name, None)


def install(root: Path, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """What pip leaves in site-packages: the modules and a dist-info with entry points."""
    for name, source in modules.items():
        (root / f"{name}.py").write_text(textwrap.dedent(source))
    info = root / f"lnx_dist_{uuid4().hex[:8]}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {info.name[:-15]}\nVersion: 1.0\n"
    )
    lines = [f"[{ENTRY_POINT_GROUP}]", *(f"{k} = {v}" for k, v in entry_points.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def test_extend_by_path_registers_and_a_cell_can_use_it(ip, tmp_path, modules):
    path = tmp_path / "greeter.py"
    path.write_text(GREETER)
    ran = run(ip, f"%lion extend {path}")
    assert ran.error is None
    assert "extension `greeter` (path" in repr(ran.value) and "operation greet" in repr(ran.value)
    assert "greet" in current_session().operations
    ran = run(ip, "%%lion --op greet -f text\nworld")
    assert ran.error is None and ran.value == "Hello, world!"


def test_running_the_cell_again_changes_nothing(ip, tmp_path, modules):
    path = tmp_path / "greeter.py"
    path.write_text(GREETER)
    first = run(ip, f"%lion extend {path}").value
    again = run(ip, f"%lion extend {path}")
    assert again.error is None and again.value is first
    assert len(loaded_extensions(current_session())) == 1


def test_extend_alone_lists_the_loaded_extensions(ip, modules):
    for name in ("critique_revise", "self_check"):
        assert run(ip, f"%lion extend {REPO / 'extensions' / name}.py").error is None
    table = run(ip, "%lion extend").value
    assert [r["extension"] for r in table.rows] == ["critique_revise", "self_check"]
    assert table.rows[0]["adds"] == "operation critique_and_revise"
    assert table.rows[1]["from"].startswith("path: ")
    assert "--entry-points" in run(ip, "%lion help extend").stdout
    assert "  extend " in run(ip, "%lion help").stdout


def test_a_broken_extension_is_a_usage_error_and_the_session_keeps_working(ip, tmp_path, modules):
    path = tmp_path / "broken.py"
    path.write_text(
        "async def half(branch):\n    return 1\n\n"
        "def extend(session):\n"
        "    session.register_operation('half', half)\n"
        "    raise RuntimeError('the config file is missing')\n"
    )
    message = usage_error(ip, f"%lion extend {path}")
    assert message.startswith(f"`%lion extend {path}`: Extension `broken` (path {path}) failed")
    assert "RuntimeError: the config file is missing (broken.py, line 6)" in message
    assert "the session is unchanged" in message
    assert current_session().operations == [] and loaded_extensions(current_session()) == []
    ran = run(ip, "%%lion -f text\nStill there?")
    assert ran.error is None and "Still there?" in ran.value


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ("lnx_no_such_module", "no module named `lnx_no_such_module`"),
        ("missing/file.py", "does not exist"),
    ],
)
def test_an_extension_that_is_not_there_says_so(ip, ref, says):
    assert says in usage_error(ip, f"%lion extend {ref}")


def test_installed_extensions_load_with_the_notebook_session(ip, tmp_path, monkeypatch, modules):
    name = f"lnx_{uuid4().hex[:8]}"
    install(tmp_path, {"greeter": name}, {name: GREETER})
    monkeypatch.syspath_prepend(str(tmp_path))
    table = run(ip, "%lion extend").value  # the first use creates the session
    assert [(r["extension"], r["adds"]) for r in table.rows] == [("greeter", "operation greet")]
    assert table.rows[0]["from"].startswith(f"entry point: greeter = {name} from lnx_dist_")
    ran = run(ip, "%%lion --op greet -f text\nplugins")
    assert ran.value == "Hello, plugins!"


def test_a_broken_installed_extension_warns_and_the_others_load(ip, tmp_path, monkeypatch, modules):
    good, bad = f"lnx_{uuid4().hex[:8]}", f"lnx_{uuid4().hex[:8]}"
    install(
        tmp_path,
        {"good": good, "bad": bad},
        {good: GREETER, bad: "def extend(session):\n    raise ValueError('no licence')\n"},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(UserWarning, match=r"Extension `bad` \(entry point bad = .*no licence"):
        ran = run(ip, "%lion branches")
    assert ran.error is None
    assert [r.name for r in loaded_extensions(current_session())] == ["good"]


def test_autoload_can_be_turned_off_and_entry_points_loaded_on_demand(
    ip, tmp_path, monkeypatch, modules
):
    monkeypatch.setenv("LION_NB_AUTOLOAD_EXTENSIONS", "0")
    name = f"lnx_{uuid4().hex[:8]}"
    install(tmp_path, {"greeter": name}, {name: GREETER})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert run(ip, "%lion extend").value.rows == []
    table = run(ip, "%lion extend --entry-points").value
    assert [r["extension"] for r in table.rows] == ["greeter"]
    assert "not both" in usage_error(ip, f"%lion extend {name} --entry-points")


def test_a_new_session_gets_the_installed_extensions_again(ip, tmp_path, monkeypatch, modules):
    name = f"lnx_{uuid4().hex[:8]}"
    install(tmp_path, {"greeter": name}, {name: GREETER})
    monkeypatch.syspath_prepend(str(tmp_path))
    first = current_session()
    assert "greet" in first.operations
    assert run(ip, "%lion reset --all").error is None
    assert current_session() is not first and "greet" in current_session().operations
