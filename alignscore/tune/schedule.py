"""The schedules of successive halving and the nested samples each level scores."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

MIN_SEGMENTS = 24  # the fewest segments of a pair a screen correlates on


@dataclass(frozen=True)
class Schedule:
    """Levels of successive halving: at level ``k`` the survivors are scored on ``fractions[k]``
    of every language pair's segments (the last is 1), and ``keep`` of them (at least
    ``min_keep``) go on to the next level.

    Examples
    --------
    >>> Schedule.halving(3, 3).survivors(100)
    [100, 34, 12]
    """

    fractions: tuple[float, ...]
    keep: float = 1.0
    min_keep: int = 4

    @classmethod
    def halving(cls, eta: int, levels: int) -> "Schedule":
        """``levels`` levels, each scoring ``eta`` times the segments of the one before and
        keeping a ``1 / eta`` of its runs: every level costs about the same.

        Parameters
        ----------
        eta : int
            The factor between levels.
        levels : int
            How many levels.

        Returns
        -------
        Schedule
        """
        return cls(tuple(float(eta) ** -(levels - 1 - k) for k in range(levels)), 1 / eta)

    @property
    def levels(self) -> int:
        return len(self.fractions)

    def survivors(self, n: int) -> list[int]:
        """How many runs each level scores, starting from ``n``."""
        out = [n]
        for _ in self.fractions[1:]:
            out.append(min(out[-1], max(self.min_keep, math.ceil(out[-1] * self.keep))))
        return out

    def __str__(self) -> str:
        if self.levels == 1:
            return "every run on every segment (the full grid)"
        shares = ", ".join(f"{f:.3g}" for f in self.fractions)
        return f"successive halving: {self.levels} levels on {shares} of the segments, keeping {self.keep:.3g}"


#: cheapest last: the first that fits the budget is used
SCHEDULES = (Schedule((1.0,)), Schedule.halving(3, 2), Schedule.halving(4, 2), Schedule.halving(3, 3),
             Schedule.halving(4, 3), Schedule.halving(4, 4))
#: screening harder than :data:`SCHEDULES` (fewer runs kept per level): only where the default
#: budget is in effect and even the cheapest of those does not fit
HARDER = (Schedule.halving(6, 4), Schedule.halving(8, 4))


def sample_size(n: int, fraction: float) -> int:
    """How many of ``n`` segments a level of ``fraction`` scores (at least :data:`MIN_SEGMENTS`)."""
    return min(n, max(MIN_SEGMENTS, math.ceil(fraction * n)))


def samples(n: int, fractions: Sequence[float], seed: int) -> list[np.ndarray]:
    """Nested samples of ``range(n)``: level ``k`` takes the first ``ceil(fractions[k] * n)`` of
    one seeded permutation (at least :data:`MIN_SEGMENTS`), in their original order.

    Parameters
    ----------
    n : int
        The number of segments.
    fractions : sequence of float
        Each level's share of them.
    seed : int
        The permutation's seed.

    Returns
    -------
    list of numpy.ndarray
        Each level's segment indices, sorted.

    Examples
    --------
    >>> [len(s) for s in samples(300, (1 / 9, 1 / 3, 1.0), seed=5)]
    [34, 100, 300]
    """
    order = np.random.default_rng(seed).permutation(n)
    return [np.sort(order[:sample_size(n, f)]) for f in fractions]


__all__ = ["HARDER", "MIN_SEGMENTS", "SCHEDULES", "Schedule", "sample_size", "samples"]
