"""Sentinels for "not given", distinct from ``None`` where ``None`` is a real value."""

from __future__ import annotations

from typing import Any

__all__ = ["Undefined", "UndefinedType", "is_undefined"]


class UndefinedType:
    """The type of `Undefined`: a value that was never provided."""

    _instance: UndefinedType | None = None

    def __new__(cls) -> UndefinedType:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "Undefined"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "Undefined"


Undefined = UndefinedType()


def is_undefined(value: Any) -> bool:
    return value is Undefined
