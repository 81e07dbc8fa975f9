"""How scores agree: with human judgements (Pearson's r, :func:`human_r`), with themselves under
resampling (bootstrap intervals of the corpus means, :func:`corpus_intervals`), and with another
composition's scores of the same pairs (ranks, Spearman's rho and the pairs ranked most
differently, :func:`disagreements`). What ``alignscore score --human/--confidence`` and
``alignscore diff`` print, as library functions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence, TextIO

import numpy as np
import torch

from ..errors import InputError
from .stats import SACREBLEU_SEED, BootstrapMean, bootstrap_mean, correlation, flat, flat_text

if TYPE_CHECKING:
    from ..combination import CombinedScorer
    from ..scorer import Scorer
    from ..scores import Scores

__all__ = ["Disagreements", "average_ranks", "confidence_text", "corpus_intervals", "disagreements", "human_r",
           "rank_pairs", "spearman", "spearman_text"]


def human_r(values: torch.Tensor, human: np.ndarray, metric: str) -> float:
    """Pearson's r of a metric's scores with human scores.

    Parameters
    ----------
    values : torch.Tensor
        ``[N]`` scores of ``metric``.
    human : numpy.ndarray
        ``[N]`` human scores of the same candidates.
    metric : str
        The metric's name, for the error message.

    Returns
    -------
    float
        ``r``. Raises :class:`~alignscore.errors.InputError` where it is undefined: scores
        constant up to the rounding of their dtype (:func:`~alignscore.evaluation.stats.flat`),
        or a correlation that is not finite.

    Examples
    --------
    >>> round(human_r(torch.tensor([0.1, 0.4, 0.2, 0.9]), np.array([1.0, 3.0, 2.0, 4.0]), "f1"), 3)
    0.943
    >>> human_r(torch.tensor([0.5, 0.5, 0.5]), np.array([1.0, 2.0, 3.0]), "f1")
    Traceback (most recent call last):
    ...
    alignscore.errors.InputError: every f1 score is the same (all equal): its correlation with the human scores is undefined
    """
    scores, eps = values.double().numpy(), torch.finfo(values.dtype).eps
    if flat(scores, eps):
        raise InputError(f"every {metric} score is the same ({flat_text(scores, eps)}): its correlation with the "
                         "human scores is undefined")
    r, _ = correlation(scores, human)
    if not math.isfinite(r):
        raise InputError(f"the correlation of {metric} with the human scores is undefined")
    return r


def corpus_intervals(scores: Scores, resamples: int = 1000, seed: int = SACREBLEU_SEED) -> dict[str, BootstrapMean]:
    """Each metric's bootstrap interval of its corpus mean (sacreBLEU's ``--confidence``: the same
    resamples for every metric; :func:`~alignscore.evaluation.stats.bootstrap_mean`), by metric."""
    return {k: bootstrap_mean(v.double().numpy(), resamples, seed) for k, v in scores.metrics.items()}


def confidence_text(intervals: dict[str, BootstrapMean]) -> str:
    """``f1=0.798134 ±0.008012 [0.790123, 0.806012] ...``: per metric the observed mean,
    sacreBLEU's half-width and the 95% percentile interval, then the resampling.

    Examples
    --------
    >>> from alignscore.evaluation.stats import bootstrap_mean
    >>> confidence_text({"f1": bootstrap_mean(np.array([0.2, 0.4, 0.6, 0.8]), resamples=100, seed=1)})
    'f1=0.500000 ±0.200000 [0.300000, 0.700000] (95% bootstrap intervals, 100 resamples, seed 1)'
    """
    first = next(iter(intervals.values()))
    body = " ".join(f"{k}={b.estimate:.6f} ±{b.half_width:.6f} [{b.low:.6f}, {b.high:.6f}]"
                    for k, b in intervals.items())
    return f"{body} (95% bootstrap intervals, {first.resamples} resamples, seed {first.seed})"


def average_ranks(x: torch.Tensor) -> torch.Tensor:
    """Rank 1 for the highest value, ``n`` for the lowest; ties share their average rank.

    Examples
    --------
    >>> average_ranks(torch.tensor([0.2, 0.9, 0.2, 0.5])).tolist()
    [3.5, 1.0, 3.5, 2.0]
    """
    order = torch.argsort(x, descending=True, stable=True)
    values, inverse, counts = torch.unique_consecutive(x[order], return_inverse=True, return_counts=True)
    ends = counts.cumsum(0).double()
    mean_rank = ends - (counts.double() - 1) / 2  # ranks start..end of each tie group, averaged
    ranks = torch.empty_like(ends[inverse])
    ranks[order] = mean_rank[inverse]
    return ranks


def _flat(v: torch.Tensor) -> bool:
    """Whether the scores ``v`` are constant up to the rounding of their dtype (or fewer than two):
    their ranks would order rounding noise."""
    return len(v) < 2 or flat(v.double().numpy(), torch.finfo(v.dtype).eps)


def _finite(*values: torch.Tensor) -> bool:
    return all(bool(torch.isfinite(v).all()) for v in values)


def spearman(a: torch.Tensor, b: torch.Tensor) -> float | None:
    """Spearman's rho: Pearson's r of the average ranks.

    Returns
    -------
    float or None
        ``None`` where it is undefined: a side whose scores are all equal, up to the rounding of
        their dtype (or fewer than two pairs), or scores that are not finite.

    Examples
    --------
    >>> round(spearman(torch.tensor([0.1, 0.5, 0.3]), torch.tensor([1.0, 9.0, 4.0])), 12)
    1.0
    >>> spearman(torch.tensor([0.1, 0.1, 0.1]), torch.tensor([1.0, 9.0, 4.0])) is None
    True
    """
    if not _finite(a, b) or _flat(a) or _flat(b):
        return None
    ra, rb = average_ranks(a.double()), average_ranks(b.double())
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = (ra.norm() * rb.norm()).item()
    return float((ra * rb).sum() / denom) if denom > 0 else None


def spearman_text(a: torch.Tensor, b: torch.Tensor) -> str:
    """Spearman's rho to 4 decimals, or "undefined" and why.

    Examples
    --------
    >>> spearman_text(torch.tensor([0.1, 0.5, 0.3]), torch.tensor([0.3, 0.2, 0.1]))
    '-0.5000'
    >>> spearman_text(torch.tensor([0.1, 0.1]), torch.tensor([0.2, 0.2]))
    'undefined (A and B: all scores equal)'
    """
    rho = spearman(a, b)
    if rho is not None:
        return f"{rho:.4f}"
    if not _finite(a, b):
        return "undefined (scores not finite)"
    how = {name: flat_text(v.double().numpy(), torch.finfo(v.dtype).eps) for name, v in (("A", a), ("B", b))
           if _flat(v)}
    if set(how.values()) == {"all equal"}:
        return f"undefined ({' and '.join(how)}: all scores equal)"
    return "undefined (" + "; ".join(f"{name}: scores {text}" for name, text in how.items()) + ")"


def rank_pairs(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(ranks_a, ranks_b, order)``: each pair's rank under each composition (1 = best) and the
    pairs ordered by ``|rank_a - rank_b|``, largest first (ties: input order).

    Examples
    --------
    >>> ra, rb, order = rank_pairs(torch.tensor([0.9, 0.5, 0.1]), torch.tensor([0.1, 0.5, 0.9]))
    >>> ra.tolist(), rb.tolist(), order.tolist()
    ([1.0, 2.0, 3.0], [3.0, 2.0, 1.0], [0, 2, 1])
    """
    ra, rb = average_ranks(a.double()), average_ranks(b.double())
    order = torch.argsort((ra - rb).abs(), descending=True, stable=True)
    return ra, rb, order


@dataclass(frozen=True)
class Disagreements:
    """Two compositions' scores of the same pairs, compared by rank (scales differ between
    compositions): ``cands`` and ``refs`` the pairs, ``a`` and ``b`` their
    :class:`~alignscore.scores.Scores`, ``metric_a`` and ``metric_b`` the primary metric each
    ranks by, ``ranks_a``, ``ranks_b`` each pair's rank (1 = best) and ``order`` the pairs by
    ``|rank A - rank B|``, largest first. :meth:`head`, :meth:`columns` and :meth:`row` are
    ``alignscore diff``'s table (``diff.tsv``: :meth:`write_tsv`)."""

    cands: list[str]
    refs: list[list[str]]
    a: Scores
    b: Scores
    metric_a: str
    metric_b: str
    ranks_a: torch.Tensor
    ranks_b: torch.Tensor
    order: torch.Tensor

    @property
    def values_a(self) -> torch.Tensor:
        return self.a[self.metric_a]

    @property
    def values_b(self) -> torch.Tensor:
        return self.b[self.metric_b]

    def rho_text(self) -> str:
        """Spearman's rho of the two metrics (:func:`spearman_text`)."""
        return spearman_text(self.values_a, self.values_b)

    def head(self) -> list[str]:
        """The table's comment lines: both signatures, Spearman's rho, how to read the ranks."""
        return [f"# A: {self.a.signature}", f"# B: {self.b.signature}",
                f"# {len(self.cands)} pairs; Spearman rho(A {self.metric_a}, B {self.metric_b}) = "
                f"{self.rho_text()}; rank 1 = best; shift = rank B - rank A"]

    def columns(self) -> list[str]:
        return ["line", f"A.{self.metric_a}", "A.rank", f"B.{self.metric_b}", "B.rank", "shift", "candidate",
                "reference"]

    def row(self, i: int) -> list[str]:
        """Pair ``i``'s row: its line (1-based), each side's score and rank, the shift, the texts."""
        va, vb, ra, rb = self.values_a[i], self.values_b[i], self.ranks_a[i], self.ranks_b[i]
        return [str(i + 1), f"{float(va):.4f}", f"{float(ra):g}", f"{float(vb):.4f}", f"{float(rb):g}",
                f"{float(rb - ra):+g}", self.cands[i], " || ".join(self.refs[i])]

    def write_tsv(self, out: TextIO) -> None:
        """The whole table, most disputed pair first, as tab-separated rows (tabs in texts
        become spaces)."""
        out.write("\n".join(self.head()) + "\n" + "\t".join(self.columns()) + "\n")
        for i in self.order.tolist():
            out.write("\t".join(c.replace("\t", " ") for c in self.row(i)) + "\n")


def disagreements(scorer_a: Scorer | CombinedScorer, scorer_b: Scorer | CombinedScorer, cands: Sequence[str],
                  refs: Sequence[str] | Sequence[Sequence[str]]) -> Disagreements:
    """Score the same pairs with two scorers (one encoding where they share an encoder,
    :func:`~alignscore.scorer.score_together`) and rank the pairs by each one's primary metric
    (a combination's: its combined score).

    Parameters
    ----------
    scorer_a, scorer_b : Scorer or CombinedScorer
        The two compositions (A and B); a combination's parts are scored with the other side's
        run in one engine call.
    cands : sequence of str
        The candidates.
    refs : sequence of str, or of sequences of str
        One reference, or a list of references, per candidate.

    Returns
    -------
    Disagreements
        Both sides' scores, ranks, and the pairs in the order of how differently they rank them.
    """
    from ..combination import score_runs
    from ..scores import check_references

    cands, groups = check_references(cands, refs)
    (sa, metric_a), (sb, metric_b) = score_runs([scorer_a, scorer_b], cands, groups)
    ra, rb, order = rank_pairs(sa[metric_a], sb[metric_b])
    return Disagreements(cands, groups, sa, sb, metric_a, metric_b, ra, rb, order)
