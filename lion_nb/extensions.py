"""Extensions: modules that extend a `Session` through its public seams, loaded by entry
point or by reference.

An extension is a Python module with a plain function ``extend(session)`` (keyword options
may follow). It may register named operations (`Session.register_operation`), subscribe
observers (`Session.observe`), register context providers and tools on branches, offer
Middle adapters through an operation that passes them to ``operate(middle=...)``, and create
memory stores and branches that use them. What ``extend`` returns is kept as the record's
``value`` (a store, a helper object), so a caller can reach it.

Two ways in:

- ``load_extension(session, ref)``: ``ref`` is a dotted module name (``mypkg.ext``), a path
  to a ``.py`` file (``../extensions/critique_revise.py``), or a module object;
- ``load_entry_point_extensions(session)``: every entry point of the installed distributions
  in the group ``lion_nb.extensions`` (``name = "package.module"``, or
  ``"package.module:function"`` to name the function instead of ``extend``). The notebook
  layer loads them into the notebook's Session when it creates one.

Decisions:

- **All or nothing.** The session's seams are snapshotted before ``extend`` runs; if it
  raises, or returns a coroutine (it must be a plain ``def``), the snapshot is restored
  (`lion_nb._seams`), so a broken extension leaves the session exactly as it was and the
  error (`ExtensionError`) names the extension, the stage that failed and the line. A module
  that failed is removed from ``sys.modules`` again, so fixing it and loading again works.
- **Once per session.** Loading the same extension again (the same resolved file, module
  or entry point) returns its record and changes nothing, so re-running a notebook cell is
  harmless. To load an edited version, start a fresh session.
- **Entry points warn, they do not stop.** One broken installed package must not keep the
  others, or the notebook, from working: by default each failure is an `ExtensionWarning`.
- **Discovery is cached** per state of ``sys.path`` (each entry's modification time), so a
  fresh session costs a few ``stat`` calls; installing a package changes the state.

Context providers are branch-scoped (ADR-0016 D3); `for_each_branch` applies a setup to
every member branch now and to a branch that joins later when its first observed run starts.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import traceback
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from hashlib import sha1
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from ._seams import SeamSnapshot
from .errors import ExtensionError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from .session.branch import Branch
    from .session.session import Session

__all__ = [
    "ENTRY_POINT_GROUP",
    "EXTEND_FUNCTION",
    "ExtensionError",
    "ExtensionWarning",
    "LoadedExtension",
    "entry_point_extensions",
    "for_each_branch",
    "load_entry_point_extensions",
    "load_extension",
    "loaded_extensions",
]

ENTRY_POINT_GROUP = "lion_nb.extensions"
EXTEND_FUNCTION = "extend"

Origin = Literal["module", "path", "entry point"]


class ExtensionWarning(UserWarning):
    """An installed extension (entry point) could not be loaded; the others still were."""


@dataclass(frozen=True)
class LoadedExtension:
    """One extension loaded into one session, and what it added to the seams."""

    name: str
    origin: Origin
    source: str
    module: ModuleType | None = field(repr=False)
    value: Any = field(default=None, repr=False)
    operations: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    branches: tuple[str, ...] = ()
    observers: int = 0

    @property
    def summary(self) -> str:
        """What it added, e.g. ``operation critique_and_revise · 1 observer``."""
        from ._seams import SeamChanges

        return SeamChanges(
            self.operations, self.providers, self.tools, self.branches, self.observers
        ).describe()

    def __repr__(self) -> str:
        added = self.summary or "nothing registered"
        return f"<extension `{self.name}` ({self.origin} {self.source}): {added}>"


# session -> key -> record, in loading order
_LOADED: weakref.WeakKeyDictionary[Any, dict[str, LoadedExtension]] = weakref.WeakKeyDictionary()


def loaded_extensions(session: Session) -> list[LoadedExtension]:
    """The extensions loaded into ``session``, in loading order."""
    return list(_LOADED.get(session, {}).values())


# -- loading by reference ----------------------------------------------------------------------
def load_extension(session: Session, ref: str | Path | ModuleType, **options: Any) -> Any:
    """Load one extension into ``session`` and return its `LoadedExtension`.

    ``ref`` is a dotted module name, a path to a ``.py`` file, or a module. ``options`` are
    passed to ``extend(session, **options)``. Raises `ExtensionError` (the session unchanged).
    """
    if isinstance(ref, ModuleType):
        name = ref.__name__
        return _load(session, f"module:{name}", name, "module", name, lambda: (ref, None), options)
    text = os.fspath(ref)
    if isinstance(ref, Path) or text.endswith(".py") or os.sep in text or "/" in text:
        path = Path(text).expanduser()
        name = path.stem
        if not path.is_file():
            why = "is a directory" if path.is_dir() else "does not exist"
            raise ExtensionError(
                f"Extension `{text}`: the file `{path}` {why}. Give a path to a `.py` file "
                "or an importable dotted module name.",
                extension=name,
                stage="find",
            )
        if path.suffix != ".py":
            raise ExtensionError(
                f"Extension `{text}`: `{path.name}` is not a `.py` file.",
                extension=name,
                stage="find",
            )
        resolved = path.resolve()
        return _load(
            session,
            f"path:{resolved}",
            name,
            "path",
            text,
            lambda: (_import_path(resolved), None),
            options,
        )
    if not all(part.isidentifier() for part in text.split(".")):
        raise ExtensionError(
            f"Extension `{text}`: not a dotted module name nor a path to a `.py` file.",
            extension=text,
            stage="find",
        )
    return _load(
        session,
        f"module:{text}",
        text,
        "module",
        text,
        lambda: (_import_module(text), None),
        options,
    )


def _import_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise _NotFound(
                f"Extension `{name}`: no module named `{exc.name}` on `sys.path`. Give an "
                "importable dotted module name, or a path to a `.py` file."
            ) from None
        raise


def _import_path(path: Path) -> ModuleType:
    digest = sha1(str(path).encode(), usedforsecurity=False).hexdigest()[:8]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    module_name = f"_lion_nb_extension_{stem}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has one
        raise ImportError(f"cannot load `{path}` as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


class _NotFound(Exception):
    """Raised by an importer when the extension itself does not exist."""


# -- loading by entry point --------------------------------------------------------------------
_DISCOVERED: tuple[Any, list[EntryPoint]] = (None, [])


def _path_state() -> tuple[Any, ...]:
    state = []
    for entry in sys.path:
        try:
            state.append((entry, os.stat(entry or ".").st_mtime_ns))
        except (OSError, TypeError, ValueError):
            state.append((entry, None))
    return tuple(state)


def entry_point_extensions() -> list[EntryPoint]:
    """The installed entry points in the group ``lion_nb.extensions``, sorted by name."""
    global _DISCOVERED
    state = _path_state()
    cached_state, found = _DISCOVERED
    if cached_state != state:
        from importlib.metadata import entry_points

        found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
        _DISCOVERED = (state, found)
    return list(found)


def load_entry_point_extensions(
    session: Session, *, on_error: Literal["warn", "raise"] = "warn"
) -> list[LoadedExtension]:
    """Load every installed entry-point extension not yet in ``session``; return the records
    of all entry-point extensions now loaded. A failure is an `ExtensionWarning` (the others
    still load), or with ``on_error="raise"`` an `ExtensionError` that stops there."""
    if on_error not in ("warn", "raise"):
        raise ValueError(f'`on_error` is "warn" or "raise", got {on_error!r}.')
    for ep in entry_point_extensions():
        try:
            _load_entry_point(session, ep)
        except ExtensionError as exc:
            if on_error == "raise":
                raise
            warnings.warn(str(exc), ExtensionWarning, stacklevel=2)
    return [r for r in loaded_extensions(session) if r.origin == "entry point"]


def _load_entry_point(session: Session, ep: EntryPoint) -> LoadedExtension:
    dist = getattr(ep, "dist", None)
    where = f" from {dist.name} {dist.version}" if dist is not None else ""
    source = f"{ep.name} = {ep.value}{where}"

    def importer() -> tuple[ModuleType, Any]:
        target = ep.load()
        if isinstance(target, ModuleType):
            return target, None
        return sys.modules.get(ep.module), target

    return _load(session, f"entry point:{ep.name}", ep.name, "entry point", source, importer, {})


# -- the one loading path ----------------------------------------------------------------------
def _load(
    session: Session,
    key: str,
    name: str,
    origin: Origin,
    source: str,
    importer: Callable[[], tuple[ModuleType | None, Any]],
    options: dict[str, Any],
) -> LoadedExtension:
    records = _LOADED.setdefault(session, {})
    if key in records:
        return records[key]
    label = f"Extension `{name}` ({origin} {source})"
    before = set(sys.modules)
    try:
        module, func = importer()
    except _NotFound as exc:
        raise ExtensionError(str(exc), extension=name, stage="find") from None
    except Exception as exc:
        raise ExtensionError(
            f"{label} failed to import: {_describe(exc, None)}.", extension=name, stage="import"
        ) from exc
    try:
        func = _extend_function(label, name, module, func, options)
    except ExtensionError:
        _forget_module(module, before)
        raise
    snapshot = SeamSnapshot(session)
    try:
        value = func(session, **options)
        if inspect.isawaitable(value):
            close = getattr(value, "close", None)
            if close is not None:
                close()
            raise ExtensionError(
                f"{label}: `{_func_name(func)}` is `async def`; make it a plain `def` (the "
                "operations it registers can be async).",
                extension=name,
                stage="shape",
            )
    except ExtensionError:
        snapshot.restore()
        _forget_module(module, before)
        raise
    except Exception as exc:
        snapshot.restore()
        _forget_module(module, before)
        file = getattr(module, "__file__", None) if module is not None else None
        raise ExtensionError(
            f"{label} failed in `{_func_name(func)}(session)`: {_describe(exc, file)}. "
            "Nothing it registered was kept; the session is unchanged.",
            extension=name,
            stage="extend",
        ) from exc
    except BaseException:  # KeyboardInterrupt: undo, and let it through
        snapshot.restore()
        _forget_module(module, before)
        raise
    changes = snapshot.changes()
    record = LoadedExtension(
        name=name,
        origin=origin,
        source=source,
        module=module,
        value=value,
        operations=changes.operations,
        providers=changes.providers,
        tools=changes.tools,
        branches=changes.branches,
        observers=changes.observers,
    )
    records[key] = record
    return record


def _extend_function(label: str, name: str, module: Any, func: Any, options: dict[str, Any]) -> Any:
    if func is None:
        func = getattr(module, EXTEND_FUNCTION, None)
        if func is None:
            raise ExtensionError(
                f"{label} has no `{EXTEND_FUNCTION}(session)` function. Define "
                f"`def {EXTEND_FUNCTION}(session): ...` at the top level of the module.",
                extension=name,
                stage="shape",
            )
    if not callable(func):
        raise ExtensionError(
            f"{label}: `{EXTEND_FUNCTION}` is a {type(func).__name__}, not a function. Define "
            f"`def {EXTEND_FUNCTION}(session): ...`.",
            extension=name,
            stage="shape",
        )
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        return func
    try:
        signature.bind(object(), **options)
    except TypeError as exc:
        given = f" and {', '.join(options)}" if options else ""
        raise ExtensionError(
            f"{label}: `{_func_name(func)}{signature}` cannot be called with the session"
            f"{given} ({exc}). Its first parameter receives the session: "
            f"`def {EXTEND_FUNCTION}(session): ...`.",
            extension=name,
            stage="shape",
        ) from None
    return func


def _func_name(func: Any) -> str:
    return getattr(func, "__name__", EXTEND_FUNCTION)


def _describe(exc: BaseException, file: str | None) -> str:
    """``Type: message (file.py, line N)``, the line being the extension's own when known."""
    from .models.secrets import redact

    text = redact(str(exc))
    head = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    if isinstance(exc, SyntaxError):
        return head  # its message already says where
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return head
    frame = frames[-1]
    if file:
        target = os.path.abspath(file)
        own = [f for f in frames if os.path.abspath(f.filename) == target]
        frame = own[-1] if own else frame
    return f"{head} ({Path(frame.filename).name}, line {frame.lineno})"


def _forget_module(module: ModuleType | None, before: set[str]) -> None:
    """Drop the extension's module (and its submodules) if this load imported it, so that
    loading again after a fix imports it afresh. Other modules it imported stay."""
    if module is None or module.__name__ in before:
        return
    prefix = module.__name__
    for name in [n for n in sys.modules if n == prefix or n.startswith(prefix + ".")]:
        if name not in before:
            sys.modules.pop(name, None)


# -- helpers for extension authors -----------------------------------------------------------
def for_each_branch(session: Session, setup: Callable[[Branch], Any]) -> Any:
    """Call ``setup(branch)`` once for every branch of ``session``: now for its members, and
    for a branch that joins later when its first observed run (``communicate``, ``operate``,
    ``ReAct``, ``run``) starts -- before its request is prepared. Returns the observer's
    subscription (call it to stop setting up new branches).

    A branch that only ever uses ``chat`` (no run lifecycle) is not reached after loading.
    """
    from .errors import ItemNotFoundError
    from .protocols.signals import RunStart

    done: set[str] = set()

    def visit(branch: Branch) -> None:
        key = str(branch.id)
        if key not in done:
            done.add(key)
            setup(branch)

    for branch in session.branches:
        visit(branch)

    def on_start(signal: Any) -> None:
        if signal.branch_id is None or signal.branch_id in done:
            return
        try:
            branch = session.get_branch(signal.branch_id)
        except ItemNotFoundError:
            return
        visit(branch)

    return session.observe(RunStart, on_start)
