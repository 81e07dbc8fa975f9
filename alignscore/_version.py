"""The package version (one place; the signature and ``alignscore --version`` read it), and the
installed versions of the libraries that change numbers (read from their metadata, not imported)."""

from __future__ import annotations

import functools
from importlib import metadata

__version__ = "0.2.0"


@functools.lru_cache(maxsize=None)
def installed_version(package: str) -> str:
    """``package``'s installed version, from its metadata (importing transformers costs a second;
    reading metadata costs milliseconds, so it is read once per process); ``"none"`` when it is
    not installed."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "none"
