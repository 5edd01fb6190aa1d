"""The notebook's names: what the model may list, and what a run created, changed or deleted.

A snapshot keeps, per user name, the object's identity and a cheap fingerprint (its length
or shape, where it has one), never a copy: a run's diff is the names bound to a new object
(created or changed), those whose fingerprint moved (changed in place) and those gone
(deleted). IPython's own names (``In``, ``Out``, ``_i3``, ...) and private ones are left out.
Values of secret-looking names (`lion_nb.models.secrets.SECRET_NAME`) are never shown.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Snapshot", "describe_size", "diff", "is_secret_name", "list_names", "snapshot"]

Snapshot = dict[str, tuple[int, Any]]


def user_names(shell: Any) -> dict[str, Any]:
    """The user's names and values: the shell's namespace without its hidden and private ones."""
    hidden = getattr(shell, "user_ns_hidden", {}) or {}
    return {
        name: value
        for name, value in shell.user_ns.items()
        if not name.startswith("_") and (name not in hidden or hidden[name] is not value)
    }


def is_secret_name(name: str) -> bool:
    from ...models.secrets import SECRET_NAME

    return bool(SECRET_NAME.search(name))


def _fingerprint(value: Any) -> Any:
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return ("shape", shape)
    if isinstance(value, (list, dict, set, bytearray)):
        return ("len", len(value))
    return None


def snapshot(shell: Any) -> Snapshot:
    return {name: (id(value), _fingerprint(value)) for name, value in user_names(shell).items()}


def diff(before: Snapshot, after: Snapshot) -> dict[str, list[str]]:
    """``{"created", "changed", "deleted"}``, each a sorted list of names."""
    return {
        "created": sorted(set(after) - set(before)),
        "changed": sorted(n for n in set(after) & set(before) if after[n] != before[n]),
        "deleted": sorted(set(before) - set(after)),
    }


def describe_size(value: Any) -> str:
    """A few words on how big ``value`` is (``"1,000 × 3"``, ``"12 items"``, ``"40 characters"``)."""
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        return " × ".join(f"{n:,}" for n in shape) if shape else "scalar"
    if isinstance(value, (str, bytes)):
        unit = "characters" if isinstance(value, str) else "bytes"
        return f"{len(value):,} {unit}"
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        return f"{len(value):,} items"
    return ""


def list_names(shell: Any) -> list[dict[str, str]]:
    """One row per user name: name, type and size; modules and callables say so."""
    rows = []
    for name, value in sorted(user_names(shell).items()):
        kind = type(value)
        if kind.__name__ == "module":
            what = "module"
        elif isinstance(value, type):
            what = "class"
        elif callable(value) and not hasattr(value, "shape"):
            what = "function"
        else:
            module = kind.__module__
            what = (
                kind.__name__ if module in ("builtins", None) else f"{module}.{kind.__qualname__}"
            )
        row = {"name": name, "type": what}
        size = "" if what in ("module", "class", "function") else describe_size(value)
        if size:
            row["size"] = size
        if is_secret_name(name):
            row["note"] = "secret-looking name: its value is never shown"
        rows.append(row)
    return rows
