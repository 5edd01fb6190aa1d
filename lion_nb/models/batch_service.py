"""`batch_service`: a model's provider batch service, behind the cassette in force for it.

Its own module above both the endpoints' batch services and the cassettes, because it joins
them: the cassettes record what the services send and receive (so they know the services'
types), and the services know nothing of cassettes.
"""

from __future__ import annotations

from typing import Any

from .cassettes.scope import cassette_for
from .endpoints.batches import provider_batch_service
from .imodel import iModel

__all__ = ["batch_service"]


# Any: an iModel or an endpoint; the provider's service (imodel imports this module)
def batch_service(model: Any) -> Any:
    """The batch service of an iModel (or endpoint); a clear error for one without any.

    With a cassette in force for the model, the service records into it or replays from it
    (`CassetteBatches`); with ``LION_NB_CASSETTE_MODE=none`` and none, `CassetteError`."""
    service = provider_batch_service(model)
    if model is getattr(model, "endpoint", model):
        model = iModel(endpoint=model)
    tape = cassette_for(model)
    if tape is None:
        return service
    from .cassettes._batches import CassetteBatches

    return CassetteBatches(service, model, tape)
