"""The extension loader: by path, module and entry point; all-or-nothing on failure.

Entry points are discovered for real: each test writes a ``*.dist-info`` folder with an
``entry_points.txt`` into a temporary ``sys.path`` entry, which is exactly how installed
distributions are found by ``importlib.metadata``.
"""

from __future__ import annotations

import sys
import textwrap
import warnings
from pathlib import Path
from uuid import uuid4

import anyio
import pytest

from lion_nb import Branch, Session, iModel
from lion_nb.errors import ExtensionError, LionError
from lion_nb.extensions import (
    ENTRY_POINT_GROUP,
    ExtensionWarning,
    entry_point_extensions,
    for_each_branch,
    load_entry_point_extensions,
    load_extension,
    loaded_extensions,
)

GOOD = """
async def hello(branch, instruction=None):
    return f"hello {instruction}"

def extend(session, greeting="hello"):
    session.register_operation(greeting, hello)
    return "the value"
"""


@pytest.fixture
def modules():
    """Forget the modules a test imported (extension modules get unique names anyway)."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("lnx_", "_lion_nb_extension_")):
            sys.modules.pop(name, None)


def unique(prefix: str = "lnx") -> str:
    return f"{prefix}_{uuid4().hex[:10]}"


def write(path: Path, source: str) -> Path:
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def make_dist(root: Path, dist: str, entry_points: dict[str, str], modules: dict[str, str]):
    """A distribution as pip leaves it in site-packages: modules and a dist-info folder."""
    for name, source in modules.items():
        write(root / f"{name}.py", source)
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = [f"[{ENTRY_POINT_GROUP}]", *(f"{k} = {v}" for k, v in entry_points.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def offline(reply: str = "fine") -> iModel:
    return iModel(provider="offline", model="function", function=lambda messages: reply)


# -- loading by path and by module ---------------------------------------------------------------
def test_a_path_extension_registers_through_the_seams_and_reports_what_it_added(tmp_path, modules):
    session = Session()
    record = load_extension(session, write(tmp_path / "greet.py", GOOD))
    assert record.name == "greet" and record.origin == "path"
    assert record.operations == ("hello",) and record.value == "the value"
    assert record.summary == "operation hello"
    assert "hello" in session.operations
    assert anyio.run(lambda: session.run_operation("hello", instruction="you")) == "hello you"
    assert record.module.__name__ in sys.modules  # importable by name (dataclasses need it)
    assert loaded_extensions(session) == [record]
    assert "extension `greet` (path" in repr(record)


def test_options_are_passed_to_extend(tmp_path, modules):
    session = Session()
    record = load_extension(session, str(write(tmp_path / "greet.py", GOOD)), greeting="hi")
    assert record.operations == ("hi",) and session.operations == ["hi"]


def test_a_dotted_module_and_a_module_object_load(tmp_path, monkeypatch, modules):
    name = unique()
    write(tmp_path / f"{name}.py", GOOD)
    monkeypatch.syspath_prepend(str(tmp_path))
    session = Session()
    record = load_extension(session, name)
    assert (record.name, record.origin, record.operations) == (name, "module", ("hello",))
    other = Session()
    assert load_extension(other, sys.modules[name]).operations == ("hello",)


def test_loading_the_same_extension_again_changes_nothing(tmp_path, modules):
    session = Session()
    path = write(tmp_path / "greet.py", GOOD)
    first = load_extension(session, path)
    again = load_extension(session, tmp_path / "." / "greet.py")  # the same file, another spelling
    assert again is first
    assert session.operations == ["hello"] and len(loaded_extensions(session)) == 1


def test_each_session_loads_an_extension_on_its_own(tmp_path, modules):
    path = write(tmp_path / "greet.py", GOOD)
    a, b = Session(), Session()
    load_extension(a, path)
    assert b.operations == [] and loaded_extensions(b) == []
    load_extension(b, path)
    assert b.operations == ["hello"]


# -- entry points --------------------------------------------------------------------------------
def test_entry_points_are_discovered_and_loaded(tmp_path, monkeypatch, modules):
    mod, fn_mod = unique(), unique()
    make_dist(
        tmp_path,
        unique("lnx_dist"),
        {"greeter": mod, "named": f"{fn_mod}:setup"},
        {
            mod: GOOD,
            fn_mod: """
                async def shout(branch, instruction=None):
                    return str(instruction).upper()

                def setup(session):
                    session.register_operation("shout", shout)
            """,
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    found = {ep.name: ep.value for ep in entry_point_extensions()}
    assert found == {"greeter": mod, "named": f"{fn_mod}:setup"}

    session = Session()
    records = load_entry_point_extensions(session)
    assert [(r.name, r.origin, r.operations) for r in records] == [
        ("greeter", "entry point", ("hello",)),
        ("named", "entry point", ("shout",)),
    ]
    assert "from lnx_dist" in records[0].source
    assert anyio.run(lambda: session.run_operation("shout", instruction="hi")) == "HI"
    assert load_entry_point_extensions(session) == records  # once per session
    assert sorted(session.operations) == ["hello", "shout"]


def test_discovery_sees_a_distribution_installed_after_the_first_look(
    tmp_path, monkeypatch, modules
):
    monkeypatch.syspath_prepend(str(tmp_path))
    assert entry_point_extensions() == []
    mod = unique()
    make_dist(tmp_path, unique("lnx_dist"), {"late": mod}, {mod: GOOD})
    assert [ep.name for ep in entry_point_extensions()] == ["late"]


def test_a_broken_entry_point_warns_and_the_others_still_load(tmp_path, monkeypatch, modules):
    good, bad = unique(), unique()
    make_dist(
        tmp_path,
        unique("lnx_dist"),
        {"a_broken": bad, "b_good": good},
        {bad: "import lnx_no_such_dependency\n", good: GOOD},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    session = Session()
    with pytest.warns(ExtensionWarning) as caught:
        records = load_entry_point_extensions(session)
    message = str(caught[0].message)
    assert "Extension `a_broken` (entry point a_broken = " in message
    assert (
        "failed to import: ModuleNotFoundError: No module named 'lnx_no_such_dependency'" in message
    )
    assert [r.name for r in records] == ["b_good"] and session.operations == ["hello"]

    other = Session()
    with pytest.raises(ExtensionError, match="a_broken") as info:
        load_entry_point_extensions(other, on_error="raise")
    assert info.value.stage == "import" and info.value.extension == "a_broken"


# -- broken extensions ---------------------------------------------------------------------------
BROKEN = {
    "syntax": ("def extend(session)\n    pass\n", "import", "SyntaxError"),
    "dependency": ("import lnx_missing_dependency\n", "import", "No module named"),
    "no_function": ("x = 1\n", "shape", "has no `extend(session)` function"),
    "not_callable": ("extend = 3\n", "shape", "`extend` is a int, not a function"),
    "no_parameter": ("def extend():\n    pass\n", "shape", "cannot be called with the session"),
    "async_def": (
        "async def extend(session):\n    session.register_operation('x', None)\n",
        "shape",
        "is `async def`; make it a plain `def`",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_extension_is_a_clear_error_and_the_session_is_unchanged(case, tmp_path, modules):
    source, stage, says = BROKEN[case]
    session = Session()
    path = write(tmp_path / f"broken_{case}.py", source)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an async extend must not leak "never awaited"
        with pytest.raises(ExtensionError) as info:
            load_extension(session, path)
    assert info.value.stage == stage and info.value.extension == f"broken_{case}"
    assert f"Extension `broken_{case}` (path {path})" in str(info.value)
    assert says in str(info.value)
    assert session.operations == [] and loaded_extensions(session) == []
    assert not [m for m in sys.modules if m.startswith(f"_lion_nb_extension_broken_{case}")]


def test_missing_things_are_find_errors(tmp_path):
    session = Session()
    cases = {
        str(tmp_path / "nope.py"): "does not exist",
        str(tmp_path): "is a directory",
        "lnx_no_such_module.sub": "no module named `lnx_no_such_module` on `sys.path`",
        "not a name": "not a dotted module name nor a path",
    }
    (tmp_path / "data.txt").write_text("x")
    cases[str(tmp_path / "data.txt")] = "is not a `.py` file"
    for ref, says in cases.items():
        with pytest.raises(ExtensionError, match=None) as info:
            load_extension(session, ref)
        assert info.value.stage == "find" and says in str(info.value), ref


HALFWAY = """
from lion_nb import RunEnd

async def first(branch, instruction=None):
    return 1

class Note:
    name = "note"
    async def provide(self, branch, instruction):
        return "a note"

def lookup(city: str) -> str:
    '''Look a city up.'''
    return city

def extend(session):
    session.register_operation("first", first)
    session.observe(RunEnd, lambda signal: None)
    session.new_branch(name="scratch")
    for branch in session.branches:
        branch.providers.register(Note())
        branch.acts.register_tool(lookup)
        branch.memory  # claims a store on a branch that had none
    raise RuntimeError("half way")
"""


def test_an_extension_failing_half_way_is_rolled_back_entirely(tmp_path, modules):
    session = Session()
    main = session.default_branch
    main.chat_model = offline("still works")
    main.providers.register(_Fixed("kept"))
    before_observers = len(session._observer)
    with pytest.raises(ExtensionError) as info:
        load_extension(session, write(tmp_path / "halfway.py", HALFWAY))
    text = str(info.value)
    line = textwrap.dedent(HALFWAY).splitlines().index('    raise RuntimeError("half way")') + 1
    assert info.value.stage == "extend" and isinstance(info.value, LionError)
    assert f"failed in `extend(session)`: RuntimeError: half way (halfway.py, line {line})" in text
    assert "the session is unchanged" in text
    assert isinstance(info.value.__cause__, RuntimeError)

    assert session.operations == []
    assert len(session._observer) == before_observers
    assert [b.name for b in session.branches] == [main.name]
    assert session.default_branch is main
    assert main.providers.names == ["kept"] and main.tools == {}
    assert main._memory is None  # the extension's claim was undone: the session may offer one
    assert anyio.run(main.communicate, "hello?") == "still works"  # and the session works


MESSY = """
def extend(session):
    main = session.default_branch
    main.msgs.add_message(instruction="planted by the extension")
    main.name = "renamed-by-extension"
    main.metadata["tag"] = "extension"
    main.metadata["kept"]["nested"] = "changed"
    session.metadata["ext"] = True
    session.name = "theirs"
    raise RuntimeError("after the changes")
"""


def test_a_failed_extension_takes_back_messages_names_and_metadata(tmp_path, modules):
    session = Session(name="mine")
    main = session.default_branch
    main.name = "main"
    main.metadata["kept"] = {"nested": "original"}
    main.msgs.add_message(instruction="mine")
    before = session.to_dict(mode="json")
    with pytest.raises(ExtensionError) as info:
        load_extension(session, write(tmp_path / "messy.py", MESSY))
    assert "the session is unchanged" in str(info.value)
    assert session.to_dict(mode="json") == before
    assert [m.rendered for m in main.messages] == ["mine"]
    assert main.name == "main" and main.metadata == {"kept": {"nested": "original"}}
    assert session.name == "mine" and "ext" not in session.metadata
    assert main.msgs.chat_messages()[-1]["content"] == "mine"  # the request cache follows


def test_an_extension_that_replaced_an_operation_gets_the_old_one_back(tmp_path, modules):
    session = Session()

    async def mine(branch, instruction=None):
        return "mine"

    session.register_operation("first", mine)
    source = """
        async def theirs(branch, instruction=None):
            return "theirs"

        def extend(session):
            session.register_operation("first", theirs, update=True)
            raise ValueError("no")
    """
    with pytest.raises(ExtensionError):
        load_extension(session, write(tmp_path / "replacer.py", source))
    assert anyio.run(lambda: session.run_operation("first")) == "mine"


def test_a_fixed_module_loads_after_it_failed(tmp_path, monkeypatch, modules):
    name = unique()
    path = write(tmp_path / f"{name}.py", "def extend(session):\n    raise ValueError('not yet')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    session = Session()
    with pytest.raises(ExtensionError, match="not yet"):
        load_extension(session, name)
    assert name not in sys.modules  # forgotten, so the next load imports the fixed file
    write(path, GOOD)
    assert load_extension(session, name).operations == ("hello",)


def test_an_interrupt_in_extend_rolls_back_and_propagates(tmp_path, modules):
    session = Session()
    source = """
        async def op(branch):
            return 1

        def extend(session):
            session.register_operation("op", op)
            raise KeyboardInterrupt
    """
    with pytest.raises(KeyboardInterrupt):
        load_extension(session, write(tmp_path / "interrupted.py", source))
    assert session.operations == [] and loaded_extensions(session) == []


def test_an_error_message_never_shows_a_key(tmp_path, modules):
    from lion_nb.models.secrets import Secret

    key = "sk-test-" + uuid4().hex
    Secret(key)
    source = f"def extend(session):\n    raise ValueError('rejected {key}')\n"
    with pytest.raises(ExtensionError) as info:
        load_extension(Session(), write(tmp_path / "leaky.py", source))
    assert key not in str(info.value) and "rejected ****" in str(info.value)


# -- for_each_branch -------------------------------------------------------------------------------
class _Fixed:
    def __init__(self, name: str):
        self.name = name

    async def provide(self, branch, instruction):
        return f"[{self.name}]"


def test_for_each_branch_sets_up_members_now_and_newcomers_at_their_first_run():
    seen: list = []

    def model(messages):
        seen.append(messages[0]["content"])
        return "ok"

    session = Session()
    session.default_branch.chat_model = iModel(provider="offline", model="function", function=model)
    calls: list[str] = []

    def setup(branch: Branch) -> None:
        calls.append(branch.name or "main")
        branch.providers.register(_Fixed("note"))

    subscription = for_each_branch(session, setup)
    assert calls == ["main"]
    later = session.new_branch(name="later", system="Be brief.", chat_model=model_of(model))
    assert later.providers.names == []  # not yet: at its first observed run
    anyio.run(later.communicate, "one")
    anyio.run(later.communicate, "two")
    assert calls == ["main", "later"] and later.providers.names == ["note"]
    assert "[note]" in seen[0]  # set up before the first request was prepared

    subscription()
    last = session.new_branch(name="last", system="s", chat_model=model_of(model))
    anyio.run(last.communicate, "three")
    assert calls == ["main", "later"] and last.providers.names == []


def model_of(function) -> iModel:
    return iModel(provider="offline", model="function", function=function)
