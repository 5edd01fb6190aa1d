"""What the verbs' ``context=``, ``images=`` and ``files=`` become on an `Instruction`.

Plain data (text, numbers, and dicts and lists of them) stays as given, so a saved branch
holds exactly what was passed; anything richer -- a DataFrame, a figure, an exception, a
dict holding one -- is converted by `to_content`: its text becomes the context, its images
and documents join the instruction's ``images`` and ``files``. A text file of ``files=`` is
text in the context; a PDF is a file part; an image file is an image.
"""

from __future__ import annotations

from typing import Any

from .content import Content
from .convert import to_content

__all__ = ["instruction_parts", "is_plain"]

_PLAIN = (str, int, float, bool, type(None))


def is_plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is JSON-like data: scalars, and dicts / lists / tuples of them."""
    if isinstance(value, _PLAIN):
        return True
    if depth > 20:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_plain(v, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(is_plain(v, depth + 1) for v in value)
    return False


def _rich(value: Any, budget: int | None) -> Content:
    if isinstance(value, dict):
        out = Content()
        texts = []
        for key, item in value.items():
            got = to_content(item, name=str(key), budget=budget)
            texts.append(f"{key}:\n{got.text}")
            out.images += got.images
            out.files += got.files
        out.text = "\n\n".join(texts)
        return out
    return to_content(value, budget=budget)


def instruction_parts(
    context: Any, images: Any, files: Any, *, budget: int | None = None
) -> tuple[Any, list[str] | None, list[dict[str, Any]] | None]:
    """``(context, images, files)`` for an `Instruction` (see the module docstring)."""
    from .files import as_file_parts, as_image_urls

    urls = as_image_urls(images) if images else []
    parts: list[dict[str, Any]] = []
    if context is not None and not is_plain(context):
        got = _rich(context, budget)
        context = got.text
        urls += got.images
        parts += got.files
    if files:
        got = as_file_parts(files, budget=budget)
        urls += got.images
        parts += got.files
        if got.text:
            if context in (None, "", [], {}):
                context = got.text
            else:
                head = context if isinstance(context, str) else to_content(context).text
                context = f"{head}\n\n{got.text}"
    return context, (urls or None), (parts or None)
