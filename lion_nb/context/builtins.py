"""The built-in conversions, found by the modules of a value's classes.

A pandas DataFrame is recognised because one of its classes is ``DataFrame`` defined in a
``pandas`` module -- read from ``type(value).__mro__``, so nothing is imported to ask, and a
subclass of a user's own is recognised too. Only then is the converter's module (and the
library, which is loaded already, since the value exists) imported.
"""

from __future__ import annotations

from typing import Any

from .content import Content, check_size, from_bundle, image_content

__all__ = ["builtin"]

# (top-level module, class name) -> "module:function" of the converter
_BY_CLASS: dict[tuple[str, str], str] = {
    ("pandas", "DataFrame"): "frames:pandas_frame",
    ("pandas", "Series"): "frames:pandas_series",
    ("polars", "DataFrame"): "frames:polars_frame",
    ("polars", "LazyFrame"): "frames:polars_lazy",
    ("polars", "Series"): "frames:polars_series",
    ("numpy", "ndarray"): "arrays:ndarray",
    ("numpy", "generic"): "arrays:scalar",
    ("matplotlib", "Figure"): "images:figure",
    ("matplotlib", "SubFigure"): "images:figure",
    ("matplotlib", "Artist"): "images:artist",
    ("PIL", "Image"): "images:pil_image",
    ("IPython", "Image"): "images:ipython_image",
}


def _converter(value: Any) -> Any:
    for cls in type(value).__mro__:
        module = getattr(cls, "__module__", "") or ""
        found = _BY_CLASS.get((module.partition(".")[0], cls.__name__))
        if found is not None:
            import importlib

            where, _, name = found.partition(":")
            return getattr(importlib.import_module(f"lion_nb.context.{where}"), name)
    return None


def builtin(value: Any, name: str | None, budget: int) -> Content | None:
    """``value`` converted by a built-in, or None when none applies."""
    fn = _converter(value)
    if fn is not None:
        return fn(value, name, budget)
    if isinstance(value, BaseException):
        from .errors import exception_text

        return exception_text(value, budget)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _bytes(bytes(value), name)
    if isinstance(value, (list, tuple)) and value and _converter(value[0]) is not None:
        figure = _one_figure(value)  # `plt.plot(...)`'s list of lines: their figure
        if figure is not None:
            return figure
    if not isinstance(value, type):
        return _rich_display(value, name, budget)
    return None


def _one_figure(items: Any) -> Content | None:
    figures = {id(getattr(item, "figure", None)): getattr(item, "figure", None) for item in items}
    if len(figures) == 1 and None not in figures.values():
        fig = next(iter(figures.values()))
        if _converter(fig) is not None:
            return builtin(fig, None, 0)
    return None


def _bytes(data: bytes, name: str | None) -> Content:
    from ..models.media import file_part, pdf_pages, sniff

    kind = sniff(data)
    if kind == "application/pdf":
        check_size(kind, len(data), name)
        pages = pdf_pages(data)
        label = f"`{name}`, " if name else ""
        count = f"{pages} page{'s' if pages != 1 else ''}" if pages else "a PDF"
        return Content(
            text=f"[PDF: {label}{count}, attached]",
            files=[file_part(f"{name or 'document'}.pdf", data, kind)],
            summary=f"PDF, {count}",
        )
    if kind is not None:
        return image_content(data, name)
    head = data[:64].hex(" ")
    return Content(
        text=f"[{len(data):,} bytes of binary data; first bytes: {head}]",
        summary=f"{len(data):,} bytes",
    )


def _rich_display(value: Any, name: str | None, budget: int) -> Content | None:
    """An object whose rich display has an ``image/png`` or ``image/jpeg`` form."""
    cls = type(value)
    bundle: dict[str, Any] = {}
    mimebundle = getattr(cls, "_repr_mimebundle_", None)
    if callable(mimebundle):
        try:
            got = mimebundle(value)
            got = got[0] if isinstance(got, tuple) else got
            bundle = dict(got) if isinstance(got, dict) else {}
        except Exception:
            bundle = {}
    for mime, method in (("image/png", "_repr_png_"), ("image/jpeg", "_repr_jpeg_")):
        fn = getattr(cls, method, None)
        if mime not in bundle and callable(fn):
            try:
                got = fn(value)
            except Exception:
                continue
            got = got[0] if isinstance(got, tuple) else got
            if got:
                bundle[mime] = got
    images = {k: v for k, v in bundle.items() if k in ("image/png", "image/jpeg") and v}
    if not images:
        return None
    return from_bundle(images, name, budget)
