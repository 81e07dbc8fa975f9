"""What a search maximises: the mean |r|, with or subject to a challenge set's accuracy."""

from __future__ import annotations

import math
import os
import re
from dataclasses import MISSING, dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import ConfigError
from ..settings import Options, SettingError, comma_list, setting
from .challenge import ALL, Item, judge


@dataclass(frozen=True)
class Objective:
    """What is maximised: the mean |r| (``correlation``), plus ``weight`` times a challenge
    set's accuracy on ``category`` (``correlation + 0.5 * accuracy[drop-function]``), or subject
    to that accuracy being at least ``minimum`` (``correlation, accuracy[drop-function] >=
    0.8``). A category is one of the set's, or ``all`` (every item that is not a control).

    Examples
    --------
    >>> Objective.parse("correlation + 0.5 * accuracy[swap]")
    Objective(category='swap', weight=0.5, minimum=None)
    """

    category: str | None = None
    weight: float = 0.0
    minimum: float | None = None

    PATTERN = re.compile(r"^\s*correlation\s*(?:(?P<join>[,+])\s*(?:(?P<weight>[0-9.eE+-]+)\s*\*\s*)?"
                         r"accuracy\[(?P<cat>[^\]]+)\]\s*(?:>=\s*(?P<min>[0-9.eE+-]+))?\s*)?$")

    @classmethod
    def parse(cls, text: str) -> "Objective":
        """The objective ``text`` writes.

        Parameters
        ----------
        text : str
            ``correlation``, ``correlation + W * accuracy[CATEGORY]`` or
            ``correlation, accuracy[CATEGORY] >= X``.

        Returns
        -------
        Objective

        Raises
        ------
        SettingError
            Any other text (of the setting ``objective``).
        """
        m = cls.PATTERN.match(text)
        if m is None or (m["join"] == "," and m["min"] is None) or (m["join"] == "+" and m["min"] is not None) \
                or (m["join"] == "," and m["weight"] is not None):
            raise SettingError("objective", f"{text!r}: one of correlation, 'correlation + W * accuracy[CATEGORY]' "
                               "or 'correlation, accuracy[CATEGORY] >= X'")
        if m["join"] is None:
            return cls()
        try:
            weight = float(m["weight"]) if m["weight"] else 1.0
            minimum = float(m["min"]) if m["min"] else None
        except ValueError:
            raise SettingError("objective", f"{text!r}: cannot read its numbers") from None
        if not math.isfinite(weight) or weight < 0 or (minimum is not None and not 0 <= minimum <= 1):
            raise SettingError("objective", f"{text!r}: the weight is a number >= 0 and the minimum accuracy in 0..1")
        return cls(m["cat"].strip(), weight if m["join"] == "+" else 0.0, minimum)

    @classmethod
    def given(cls, text: str, challenge: object, name: Callable[[str], str] = lambda o: f"{o}=") -> "Objective":
        """The objective ``text``, checked against whether a ``challenge`` set is given (an
        accuracy needs one, a set needs an objective that reads it); ``name`` names the two
        options as the caller gave them.

        Raises
        ------
        ConfigError
            Bad text, or the two options without each other.

        Examples
        --------
        >>> Objective.given("correlation", None)
        Objective(category=None, weight=0.0, minimum=None)
        """
        try:
            wanted = cls.parse(text)
        except SettingError as exc:
            raise ConfigError(f"{name(exc.field)} {exc.reason}", (exc.field,)) from None
        objective, challenge_set = name("objective"), name("challenge")
        if wanted.uses_challenge != (challenge is not None):
            raise ConfigError(f"{objective} on a challenge set's accuracy needs {challenge_set} SET, and "
                              f"{challenge_set} an {objective} that reads its accuracy" if wanted.uses_challenge else
                              f"{challenge_set} applies with an {objective} on its accuracy only")
        return wanted

    def check_category(self, items: Sequence[Item]) -> None:
        """Refuse a category the challenge ``items`` do not have (``all`` is every one's).

        Raises
        ------
        ConfigError
            Naming the set's categories.
        """
        found = {i.category for i in items}
        if self.category is not None and self.category != ALL and self.category not in found:
            raise ConfigError(f"the challenge set has no category {self.category!r} (it has: "
                              f"{', '.join(sorted(found))}, and all)")

    def chosen(self, items: Sequence[Item]) -> np.ndarray:
        """Which ``items`` the accuracy reads: those of its category (``all``: every one that is not a control)."""
        return np.array([(not i.control) if self.category == ALL else i.category == self.category for i in items],
                        dtype=bool)

    def meets(self, accuracy: float | None) -> bool:
        """Whether ``accuracy`` meets the constraint (always, without one)."""
        return self.minimum is None or (accuracy is not None and accuracy >= self.minimum)

    @property
    def uses_challenge(self) -> bool:
        return self.category is not None

    def __str__(self) -> str:
        if self.category is None:
            return "correlation"
        if self.minimum is not None:
            return f"correlation, accuracy[{self.category}] >= {self.minimum:g}"
        return f"correlation + {self.weight:g} * accuracy[{self.category}]"


@dataclass(frozen=True)
class JudgedOptions(Options):
    """The options a learner on human judgments shares (``alignscore fit``'s and ``tune``'s):
    the data, which of it, what is maximised and how the estimate's intervals are drawn.

    Examples
    --------
    >>> JudgedOptions.given({"data": "wmt", "lang_pairs": "de-en,cs-en"}).lang_pairs
    ('de-en', 'cs-en')
    >>> JudgedOptions.given({"data": "wmt", "lang_pairs": ["de-en", "de-en"]})
    Traceback (most recent call last):
    alignscore.errors.ConfigError: lang_pairs=: de-en is named twice
    """

    data: str | os.PathLike = setting(MISSING, metavar="DIR", help=(  # type: ignore[type-arg]
        "Folder of WMT DAseg files to learn on (DAseg.newstest{YEAR}.{reference,mt-system,human}.<lp>)."))
    lang_pairs: tuple[str, ...] | None = setting(None, metavar="PAIRS", help=(
        "Language pairs to learn on: repeat, or a comma list, e.g. 'cs-en,de-en' (default: all)."))
    year: str | None = setting(None, help="Which year, when the --data folder holds several.")
    holdout: str | os.PathLike | None = setting(None, metavar="DIR", help=(  # type: ignore[type-arg]
        "Another DAseg folder (another year): the start or the selection, and what it is compared with, are "
        "scored on it."))
    challenge: str | os.PathLike | None = setting(None, metavar="FILE", help=(  # type: ignore[type-arg]
        "A challenge set (JSON lines, see 'alignscore challenge') for an --objective on its accuracy."))
    objective: str = setting("correlation", help=(
        "What is maximised: correlation (mean |r| over the language pairs), 'correlation + W * accuracy[CATEGORY]' "
        "(W times the --challenge accuracy added) or 'correlation, accuracy[CATEGORY] >= X' (at least that "
        "accurate); CATEGORY: one of the set's, or all."))
    bootstrap: int = setting(1000, ge=100, help="Resamples of the intervals of the nested estimates.")
    seed: int = setting(0, ge=0, le=2**32 - 1, help="Seed of the samples, the inner split and the resamples.")

    def __post_init__(self) -> None:
        super().__post_init__()
        pairs = comma_list(self.lang_pairs or ())
        twice = [p for p in dict.fromkeys(pairs or ()) if pairs and pairs.count(p) > 1]
        if twice:
            raise self.relabel(SettingError("lang_pairs", f"{twice[0]} is named twice"))
        object.__setattr__(self, "lang_pairs", tuple(pairs) if pairs else None)
        Objective.given(self.objective, self.challenge, self.label)

    @property
    def wanted(self) -> Objective:
        """What is maximised (:attr:`objective`, read)."""
        return Objective.parse(self.objective)


def accuracy(items: Sequence[Item], good: np.ndarray, bad: np.ndarray, category: str) -> float:
    """The share of the items of ``category`` (``all``: every one that is not a control) whose
    good candidate scores above the bad one (a tie is a miss).

    Parameters
    ----------
    items : sequence of Item
        The challenge items.
    good, bad : numpy.ndarray
        Each item's good and bad candidate's score.
    category : str
        A category of the items, or ``all``.

    Returns
    -------
    float
    """
    chosen = Objective(category).chosen(items)
    correct, _ = judge(good[chosen], bad[chosen])
    return float(correct.mean())


__all__ = ["JudgedOptions", "Objective", "accuracy"]
