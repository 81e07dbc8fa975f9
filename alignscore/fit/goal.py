"""A fit's objective on a challenge set (``--objective``, ``--challenge``): the accuracy is a
count, so the gradient follows a smooth surrogate of it, while the values a fit keeps are
chosen on the accuracy itself, as ``alignscore challenge`` counts it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import torch

from ..errors import InputError
from ..evaluation.challenge import Item, challenge_pairs, read_items
from ..evaluation.objective import Objective, accuracy
from ..evaluation.wmt import LangPair
from .features import PairFeatures
from .model import Values, pair_scores, plain

#: the temperature of the surrogate accuracy ``mean sigmoid((s_good - s_bad) / TAU)``: a
#: difference of a few TAU counts as (almost) a sure win or loss
TAU = 0.01
#: in ``correlation, accuracy[C] >= X``, the gradient's weight on the surrogate's shortfall below X
SHORTFALL_WEIGHT = 1.0


def read_challenge(wanted: Objective, challenge: str | Path | None) -> list[Item]:
    """The ``challenge`` items the objective ``wanted`` reads, checked before any model loads:
    the set (:func:`~alignscore.evaluation.challenge.read_items`),
    its category, one reference per item (a fit scores each candidate against one reference).

    Parameters
    ----------
    wanted : Objective
        What is maximised (checked against ``challenge`` already:
        :class:`~alignscore.evaluation.objective.JudgedOptions`).
    challenge : str or Path, optional
        A challenge set (JSON lines); needed by, and only with, an objective on its accuracy.

    Returns
    -------
    list of Item

    Raises
    ------
    ConfigError, InputError
        One line: what is wrong.

    Examples
    --------
    >>> read_challenge(Objective(), None)
    []
    """
    items = read_items(challenge) if challenge is not None else []
    wanted.check_category(items)
    for k, item in enumerate(items):
        if len(item.refs) != 1:
            raise InputError(f"the item has {len(item.refs)} references; a fit scores each candidate against one",
                             str(challenge), item.line if item.line is not None else k + 1)
    return items


def challenge_texts(items: Sequence[Item]) -> tuple[LangPair, torch.Tensor, torch.Tensor]:
    """The distinct ``(candidate, reference)`` pairs of ``items`` as a language pair of no
    judgments (what :func:`~alignscore.fit.features.extract` keeps the products of,
    its idf fitted on these references as ``alignscore challenge`` fits it), and each item's
    good and bad candidate's row in it."""
    pairs = challenge_pairs(items)
    where = {pair: k for k, pair in enumerate(pairs)}
    good = torch.tensor([where[(i.good, i.refs)] for i in items], dtype=torch.long)
    bad = torch.tensor([where[(i.bad, i.refs)] for i in items], dtype=torch.long)
    lp = LangPair("", "challenge", "items", [refs[0] for _, refs in pairs], [c for c, _ in pairs],
                  np.zeros(len(pairs)))
    return lp, good, bad


@dataclass
class Goal:
    """What a fit with a challenge objective adds to the mean r: the ``objective``, its
    ``items``, their pairs' ``features`` and each item's ``good`` and ``bad`` row."""

    objective: Objective
    items: list[Item]
    features: PairFeatures
    good: torch.Tensor
    bad: torch.Tensor
    chosen: torch.Tensor = field(init=False)  # the items the accuracy reads

    def __post_init__(self) -> None:
        self.chosen = torch.as_tensor(self.objective.chosen(self.items))

    def scores(self, values: Mapping[str, object], metric: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Every item's good and bad candidate's score (differentiable in the tensors of ``values``)."""
        s = pair_scores(self.features, values, metric)
        return s[self.good], s[self.bad]

    def accuracy(self, good: torch.Tensor, bad: torch.Tensor) -> float:
        """The true accuracy on the objective's category (a tie is a miss, as ``alignscore challenge`` counts)."""
        return accuracy(self.items, good.detach().numpy(), bad.detach().numpy(), str(self.objective.category))

    def accuracy_of(self, values: Values) -> float:
        """The true accuracy of plain ``values``."""
        with torch.no_grad():
            return self.accuracy(*self.scores(plain(values), values.metric))

    def surrogate(self, good: torch.Tensor, bad: torch.Tensor, tau: float = TAU) -> torch.Tensor:
        """The smooth accuracy ``mean sigmoid((good - bad) / tau)`` over the category's items.

        Examples
        --------
        >>> import torch
        >>> g = Goal.__new__(Goal); g.chosen = torch.tensor([True, True, False])
        >>> round(g.surrogate(torch.tensor([1.0, 0.5, 0.0]), torch.tensor([1.0, 0.6, 9.0])).item(), 4)
        0.25
        """
        return torch.sigmoid((good - bad)[self.chosen] / tau).mean()

    def loss(self, surrogate: torch.Tensor) -> torch.Tensor:
        """The term the gradient descends: ``-W * surrogate``, or ``SHORTFALL_WEIGHT * max(X -
        surrogate, 0)`` under a constraint."""
        o = self.objective
        if o.minimum is not None:
            return SHORTFALL_WEIGHT * torch.relu(o.minimum - surrogate)
        return -o.weight * surrogate

    def value(self, r: float, acc: float) -> float:
        """The true objective: ``r + W * accuracy`` (``r`` under a constraint)."""
        return r + self.objective.weight * acc


__all__ = ["Goal", "SHORTFALL_WEIGHT", "TAU", "challenge_texts", "read_challenge"]
