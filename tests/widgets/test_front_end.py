"""One front-end rule: every widget's ES module is built by `_base.esm`, which puts the shared
helpers (`_shared.js`) first, and no widget's own file defines a helper again or loads code
another way."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import anywidget
import pytest

import lion_nb.widgets as widgets_pkg
from lion_nb.widgets._base import PRELUDE, STATIC, esm

SHARED = (STATIC / "_shared.js").read_text(encoding="utf-8")
HELPERS = sorted(set(re.findall(r"^function\s+(\w+)\s*\(", SHARED, re.M)))
OWN_FILES = sorted(p for p in STATIC.glob("*.js") if p.name not in PRELUDE)


def _widget_classes() -> list[type]:
    found: dict[str, type] = {}
    for info in pkgutil.iter_modules(widgets_pkg.__path__):
        module = importlib.import_module(f"lion_nb.widgets.{info.name}")
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, anywidget.AnyWidget) and cls.__module__ == module.__name__:
                found[cls.__qualname__] = cls
    return [found[k] for k in sorted(found)]


def test_the_shared_file_defines_the_helpers():
    assert {"el", "icon", "plural", "uniqueId"} <= set(HELPERS)


@pytest.mark.parametrize("path", OWN_FILES, ids=lambda p: p.name)
def test_no_widget_file_defines_a_shared_helper(path):
    source = path.read_text(encoding="utf-8")
    for name in HELPERS:
        forms = [
            rf"\bfunction\s+{name}\s*\(",
            rf"\b(?:const|let|var)\s+{name}\s*=",
        ]
        for form in forms:
            assert not re.search(form, source), f"{path.name} defines `{name}` again"


@pytest.mark.parametrize("path", OWN_FILES, ids=lambda p: p.name)
def test_no_widget_file_loads_code_another_way(path):
    source = path.read_text(encoding="utf-8")
    assert not re.search(r"^\s*import\b", source, re.M), f"{path.name} imports a module"
    assert not re.search(r"\bimport\s*\(", source), f"{path.name} imports dynamically"
    assert "<script" not in source


def test_every_widget_is_built_by_esm_with_the_shared_helpers():
    classes = _widget_classes()
    assert len(classes) >= 7
    used = set()
    for cls in classes:
        module = cls._esm
        assert isinstance(module, str), cls
        own = [p for p in OWN_FILES if module == esm(p.name)]
        assert own, f"{cls.__qualname__}'s module is not `esm(<its file>)`"
        used.add(own[0].name)
        assert module.index("function el(") < module.index(own[0].read_text(encoding="utf-8"))
        assert module.count("function el(") == 1
    assert used == {p.name for p in OWN_FILES}, "a front-end file no widget loads"
