"""The package version (one place; the signature and ``alignscore --version`` read it)."""

__version__ = "0.2.0"
