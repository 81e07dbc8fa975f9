"""Which run a search selects: the best, or a published configuration within one standard
error of it (the one-standard-error rule)."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..evaluation.stats import pooled_abs_r
from .book import Book


def preferred(book: Book, order: Sequence[int], value: Mapping[int, float], lps: Sequence[int], level: int,
              resamples: int = 200) -> int:
    """The selection among ``order`` (best value first): the best, or the best published
    configuration within one standard error of it.

    The standard error is that of the paired difference of the mean |r| over ``lps``,
    resampling every pair's segments (seeded, so the same data select the same run).

    Parameters
    ----------
    book : Book
        The scores.
    order : sequence of int
        The entries, best value first.
    value : mapping of int to float
        Each entry's value at ``level``.
    lps : sequence of int
        The language pairs the search sees.
    level : int
        The level the values are from.
    resamples : int
        Resamples of the standard error.

    Returns
    -------
    int
        The selected entry.
    """
    best = order[0]
    rivals = [e for e in order[1:] if book.entries[e].published]
    if book.entries[best].published or not rivals:
        return best
    boot = pooled_abs_r(*book.blocks([best, *rivals], lps, level), resamples, seed=0)
    se = np.nanstd(boot[0] - boot[1:], axis=1)
    close = [e for e, s in zip(rivals, se) if value[best] - value[e] <= s]
    return close[0] if close else best


def best_of(book: Book, members: Sequence[int], lps: Sequence[int], level: int) -> int:
    """The member with the best mean |r| over ``lps`` (the first where none is defined)."""
    means = book.mean_abs_r(list(members), lps, level)
    if not np.isfinite(means).any():
        return members[0]
    return int(members[int(np.nanargmax(means))])


__all__ = ["best_of", "preferred"]
