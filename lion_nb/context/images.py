"""Figures and images as attached PNG/JPEG images.

A matplotlib figure is rendered to PNG at its own size and resolution (640×480 for the
default figure), and its axes' titles and labels go into the text, so a model that cannot see
images still learns what was plotted. An artist (the ``Axes`` of ``plt.gca()``, a line) is
its figure. A PIL image keeps JPEG when it was one, else becomes PNG; an
``IPython.display.Image`` sends its bytes, and one that only names a URL is described, never
fetched.
"""

from __future__ import annotations

import io
from typing import Any

from .content import Content, image_content

__all__ = ["artist", "figure", "ipython_image", "pil_image"]


def _labels(fig: Any) -> str:
    found = []
    for i, ax in enumerate(getattr(fig, "axes", [])[:8]):
        bits = []
        for what, get in (("title", "get_title"), ("x", "get_xlabel"), ("y", "get_ylabel")):
            try:
                text = getattr(ax, get)()
            except Exception:
                text = ""
            if text:
                bits.append(f"{what} {text!r}")
        if bits:
            found.append(f"axes {i + 1}: " + ", ".join(bits))
    return "; ".join(found)


def figure(fig: Any, name: str | None, budget: int) -> Content:
    root = getattr(fig, "figure", None) if type(fig).__name__ == "SubFigure" else fig
    root = root or fig
    buffer = io.BytesIO()
    root.savefig(buffer, format="png", dpi=root.dpi)
    content = image_content(buffer.getvalue(), name, "matplotlib figure")
    labels = _labels(root)
    if labels:
        content.text = content.text[:-1] + f"; {labels}]"
    return content


def artist(obj: Any, name: str | None, budget: int) -> Content | None:
    fig = getattr(obj, "figure", None)
    if fig is None:
        return Content(text=str(obj), summary=type(obj).__name__)
    return figure(fig, name, budget)


def pil_image(image: Any, name: str | None, budget: int) -> Content:
    buffer = io.BytesIO()
    fmt = "JPEG" if getattr(image, "format", None) == "JPEG" else "PNG"
    picture = image
    if fmt == "PNG" and image.mode not in ("1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"):
        picture = image.convert("RGBA")
    picture.save(buffer, format=fmt)
    return image_content(buffer.getvalue(), name)


def ipython_image(image: Any, name: str | None, budget: int) -> Content:
    data = getattr(image, "data", None)
    if isinstance(data, (bytes, bytearray)) and data:
        return image_content(bytes(data), name)
    url = getattr(image, "url", None) or getattr(image, "filename", None) or "an image"
    label = f"`{name}`, " if name else ""
    return Content(text=f"[image: {label}at {url}, not fetched]", summary="image link")
