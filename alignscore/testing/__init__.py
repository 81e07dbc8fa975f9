"""The promises of each pipeline stage, checked on a part: the harness the suite runs over every
registered part, and the one a plugin author runs over theirs.

Each check builds small random inputs (a seeded :class:`torch.Generator`, tiny dimensions),
calls the part the way the engine does, and raises :class:`AssertionError` whose message starts
with the promise that broke::

    >>> from alignscore.aligners import Greedy
    >>> from alignscore.testing import check_aligner
    >>> check_aligner(Greedy())
    >>> class Centred(Greedy):  # subtracts the batch mean: a pair's score depends on the others
    ...     def __call__(self, batch):
    ...         return {k: v - v.mean() for k, v in super().__call__(batch).items()}
    >>> check_aligner(Centred())
    Traceback (most recent call last):
    ...
    AssertionError: scores depend on batch neighbours: pair 0 precision changed by ...

Scores are compared to a tolerance tied to the dtype of the inputs (:func:`tolerance`), never bit
for bit: another batch shape may take another BLAS kernel (AVX2 or AVX-512), which rounds
differently.
"""

from __future__ import annotations

from .aggregators import check_aggregator
from .aligners import check_aligner
from .promises import tolerance
from .words import WordEncoder, check_filter, check_weighting

__all__ = ["WordEncoder", "check_aggregator", "check_aligner", "check_filter", "check_weighting", "tolerance"]
