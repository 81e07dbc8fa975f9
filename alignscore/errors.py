"""Errors that mean "the input or the configuration is wrong", as opposed to a bug.

The CLI turns every :class:`AlignScoreError` into one line on stderr and a non-zero exit; the
Python API lets them propagate so that callers can catch them.
"""

from __future__ import annotations

from typing import Sequence


class AlignScoreError(Exception):
    """Base class: a user-facing problem with input, configuration or environment.

    Parameters
    ----------
    message : str
        One line for the user; ``str(error)`` is that line.

    Examples
    --------
    >>> try:
    ...     raise InputError("not UTF-8", "refs.txt", 3)
    ... except AlignScoreError as error:   # catches every error of this module
    ...     print(error)
    refs.txt:3: not UTF-8
    """


class InputError(AlignScoreError):
    """Bad input data, optionally located at ``path`` and ``line`` (1-based).

    Parameters
    ----------
    message : str
        What is wrong.
    path : str, optional
        The file it is in; the message starts with it.
    line : int, optional
        The 1-based line of ``path``.

    Examples
    --------
    >>> str(InputError("not UTF-8", "refs.txt", 3)), str(InputError("empty file", "refs.txt"))
    ('refs.txt:3: not UTF-8', 'refs.txt: empty file')
    """

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.path, self.line = path, line


class ConfigError(AlignScoreError):
    """An impossible composition or option (unknown part, layer out of range, ...).

    Parameters
    ----------
    message : str
        What is wrong (``str(error)``, also kept as ``message``).
    options : tuple of str
        The settings it is about (field names), so that the configuration layer can name them
        as the user wrote them (``--n-gram``, ``n_gram=``, ``file.toml:3: n_gram``).

    Examples
    --------
    >>> error = ConfigError("n_gram: at least 1, got 0", ("n_gram",))
    >>> str(error), error.options
    ('n_gram: at least 1, got 0', ('n_gram',))
    """

    def __init__(self, message: str, options: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message, self.options = message, tuple(options)


class ConfigErrors(ConfigError):
    """Several errors found together, each its own line of the message: every run of a plan is
    checked before any runs (:func:`alignscore.config.plan.plan_runs`), so the user learns of
    every mistake at once.

    Parameters
    ----------
    errors : sequence of AlignScoreError
        The errors, kept in order as ``errors``; ``options`` joins theirs.

    Examples
    --------
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
    configuration error (the options may be fine); raised before a score could become NaN.

    Parameters
    ----------
    message : str
        Where the value is and what made it.

    Examples
    --------
    >>> print(NonFiniteError("token vectors of layer 9 hold NaN (a float16 overflow?)"))
    token vectors of layer 9 hold NaN (a float16 overflow?)
    """


class ModelLoadError(AlignScoreError):
    """The encoder's model or tokenizer could not be loaded.

    Parameters
    ----------
    message : str
        The model and why it could not be loaded.

    Examples
    --------
    >>> print(ModelLoadError("no-such-model: not a local folder, and the hub is offline"))
    no-such-model: not a local folder, and the hub is offline
    """


def describe(x: object) -> str:
    """``x`` named for an error message: its type and a short repr."""
    text = repr(x)
    return f"{type(x).__name__} {text if len(text) <= 40 else text[:39] + '…'}"
