"""Fixtures of the Responses API tests: a real loopback server, no key from the machine."""

from __future__ import annotations

from tests.fakes.provider_fixtures import _no_provider_keys, http_fake

__all__ = ["_no_provider_keys", "http_fake"]
