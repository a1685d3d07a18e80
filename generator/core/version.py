"""The version of the memspec installed: read by `memspec --version` before anything else of
memspec is imported, so it imports nothing but the standard library's package metadata."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def memspec_version() -> str:
    """The version of the memspec installed, as its package metadata gives it."""
    try:
        return version("memspec")
    except PackageNotFoundError:
        return "unknown"
