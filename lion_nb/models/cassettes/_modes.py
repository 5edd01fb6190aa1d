"""The record modes and the environment variable that forces one (no imports: cheap to load)."""

from __future__ import annotations

__all__ = ["ENV_MODE", "MODES", "MODE_HELP"]

#: forces one mode on every cassette; ``none`` also stops live calls made with no cassette
ENV_MODE = "LION_NB_CASSETTE_MODE"

MODES = ("once", "new", "none", "all")

MODE_HELP = {
    "once": "replay when the file exists, else record it",
    "new": "replay what matches, record what is new",
    "none": "replay only: a request with no recording is an error",
    "all": "call the provider for every request and re-record the file",
}
