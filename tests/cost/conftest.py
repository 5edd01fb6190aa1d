"""Fixtures of the cost tests: a real loopback provider server, and no key from the machine."""

from __future__ import annotations

from tests.fakes.provider_fixtures import _no_provider_keys, http_fake

__all__ = ["_no_provider_keys", "http_fake"]
