"""The shapes of data lion_nb passes through, named once with why each holds `Any`.

A public signature that says `Any` needs a reason beside it (`tests/typing/test_any_reasons.py`);
the common shapes carry theirs here, once, instead of at every signature.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

__all__ = ["JsonMapping", "JsonObject", "Keywords"]

#: A JSON object: a request or response body, a message in a provider's format, a usage
#: block, a schema, a ``to_dict``. Any: its values are any JSON value, read by keys whose
#: types the reader knows (and checks, when they come from a provider); a recursive JSON
#: type would make every such read narrow first, for no safety the checks do not give.
JsonObject: TypeAlias = dict[str, Any]
#: A `JsonObject` only read. Any: as `JsonObject`.
JsonMapping: TypeAlias = Mapping[str, Any]
#: Keyword arguments passed on to a callable (an operation, an endpoint, a model).
#: Any: each keyword has its own type, checked by the callable that takes it.
Keywords: TypeAlias = dict[str, Any]
