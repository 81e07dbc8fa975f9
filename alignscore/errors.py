"""Errors that mean "the input or the configuration is wrong", as opposed to a bug.

The CLI turns every :class:`AlignScoreError` into one line on stderr and a non-zero exit; the
Python API lets them propagate so that callers can catch them.
"""

from __future__ import annotations

from typing import Sequence


class AlignScoreError(Exception):
    """Base class: a user-facing problem with input, configuration or environment."""


class InputError(AlignScoreError):
    """Bad input data, optionally located at ``path`` and ``line`` (1-based)."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.path, self.line = path, line


class ConfigError(AlignScoreError):
    """An impossible composition or option (unknown part, layer out of range, ...). ``options``
    names the settings it is about (field names), so that the configuration layer can name
    them as the user wrote them (``--n-gram``, ``n_gram=``, ``file.toml:3: n_gram``)."""

    def __init__(self, message: str, options: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message, self.options = message, tuple(options)


class ConfigErrors(ConfigError):
    """Several errors found together, each its own line of the message (``errors``): every run
    of a plan is checked before any runs (:func:`alignscore.config.plan.plan_runs`), so the user
    learns of every mistake at once.

    Example:
        >>> both = ConfigErrors([ConfigError("a.toml:3: n_gram: at least 1"), ConfigError("a.toml:9: reg: > 0")])
        >>> str(both).splitlines()
        ['a.toml:3: n_gram: at least 1', 'a.toml:9: reg: > 0']
    """

    def __init__(self, errors: Sequence[AlignScoreError]) -> None:
        super().__init__("\n".join(str(e) for e in errors),
                         tuple(o for e in errors for o in getattr(e, "options", ())))
        self.errors = tuple(errors)


class NonFiniteError(AlignScoreError):
    """NaN or infinity where a number must be finite: in the token vectors an encoder or an
    aggregator made (a float16 overflow), or in a cost matrix built from them. Not a
    configuration error (the options may be fine); raised before a score could become NaN."""


class ModelLoadError(AlignScoreError):
    """The encoder's model or tokenizer could not be loaded."""


def describe(x: object) -> str:
    """``x`` named for an error message: its type and a short repr."""
    text = repr(x)
    return f"{type(x).__name__} {text if len(text) <= 40 else text[:39] + '…'}"
