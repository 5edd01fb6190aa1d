"""Fixtures of the hardening tests: the real loopback provider server, and no keys."""

from tests.fakes.provider_fixtures import _no_provider_keys, http_fake

__all__ = ["_no_provider_keys", "http_fake"]
