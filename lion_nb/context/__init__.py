"""Notebook values as model context: ``{df}``, ``{fig}``, files, the notebook itself.

One conversion (`to_content`) turns any value into what a model reads best -- text within a
token budget, images as ``data:`` URLs, documents as file parts -- in the order of
ADR-0110: the object's own ``_ai_repr_`` (the Jupyter proposal), then ``_repr_llm_``, then
what `register_ai_repr` registered for its type, then the built-ins (data frames, arrays,
exceptions, figures, images, bytes, rich displays, long text and containers). The
``%%lion`` interpolation and the verbs' ``context=``, ``images=`` and ``files=`` all use it.

Nothing heavy is imported here: pandas, NumPy, matplotlib and PIL are touched only when a
value of their type is converted (its class's module names them), never to test a type.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "Content": "lion_nb.context.content",
    "DEFAULT_BUDGET": "lion_nb.context.convert",
    "register_ai_repr": "lion_nb.context.convert",
    "to_content": "lion_nb.context.convert",
    "load_file": "lion_nb.context.files",
    "as_image_urls": "lion_nb.context.files",
    "as_file_parts": "lion_nb.context.files",
    "notebook_context": "lion_nb.context.cells",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
