"""Two compositions on the same human judgments, with significance tests: what ``alignscore
compare`` prints, as library functions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..errors import ConfigError
from .stats import (bootstrap_r_difference, flat, flat_text, pearson_rows, permutation_r_difference,
                    williams_matrix)
from .wmt import load_daseg, read_human

if TYPE_CHECKING:
    from ..combination import Combination
    from ..config import Compiled, RunSpec

__all__ = ["COLUMNS", "Comparison", "compare_runs", "compare_scores", "comparison_sets"]

COLUMNS = ("lang_pair", "n", "A.abs_r", "B.abs_r", "delta", "williams_p", "bootstrap_low", "bootstrap_high",
           "bootstrap_p", "permutation_p")

#: one set of pairs to compare on: its name, candidates, references per candidate, human scores
Set = tuple[str, list[str], list[list[str]], np.ndarray]


@dataclass(frozen=True)
class Comparison:
    """Two metrics ``a`` and ``b`` against the same ``human`` scores of ``n`` segments: |r| of
    each, ``delta = |r_a| - |r_b|``, the two-sided Williams p-value, the paired bootstrap
    interval of ``delta`` with its p-value, and the permutation test's p-value."""

    name: str
    n: int
    abs_r_a: float
    abs_r_b: float
    delta: float
    williams_p: float
    bootstrap_low: float
    bootstrap_high: float
    bootstrap_p: float
    permutation_p: float

    def row(self) -> list[str]:
        """The TSV cells, in :data:`COLUMNS` order: correlations to 6 decimals, p-values to 4 digits."""
        r = lambda v: f"{v:.6f}"  # noqa: E731
        p = lambda v: f"{v:.4g}"  # noqa: E731
        return [self.name, str(self.n), r(self.abs_r_a), r(self.abs_r_b), r(self.delta), p(self.williams_p),
                r(self.bootstrap_low), r(self.bootstrap_high), p(self.bootstrap_p), p(self.permutation_p)]


def compare_scores(name: str, a: np.ndarray, b: np.ndarray, human: np.ndarray, bootstrap: int, permutations: int,
                   seed: int) -> Comparison:
    """The :class:`Comparison` of two metrics' scores ``a``, ``b`` with ``human``.

    Raises
    ------
    ConfigError
        When either metric's scores are all the same (their correlation is undefined).
    """
    for label, v in (("A", a), ("B", b)):
        if flat(v):  # constant up to the rounding of the dtype the scores were computed in
            raise ConfigError(f"{name}: every score of composition {label} is the same ({flat_text(v)}): its "
                              "correlation with the human scores is undefined")
    ra, rb = np.abs(pearson_rows(np.stack([a, b]), np.stack([human, human])))
    one_sided = williams_matrix(np.stack([a, b]), human)[0, 1]
    boot = bootstrap_r_difference(a, b, human, resamples=bootstrap, seed=seed)
    perm = permutation_r_difference(a, b, human, resamples=permutations, seed=seed)
    williams = float(min(1.0, 2 * min(one_sided, 1 - one_sided)))
    return Comparison(name, len(human), float(ra), float(rb), float(ra - rb), williams, boot.low, boot.high,
                      boot.p_value, perm.p_value)


def comparison_sets(data: str | None, lang_pairs: Sequence[str] | None = None, year: str | None = None,
                    cands: str | None = None, refs: Sequence[str] = (), human: str | None = None) -> list[Set]:
    """The sets to compare on: every language pair of the DAseg folder ``data``, or the one set
    ``"all"`` of the files ``cands``, ``refs`` and ``human``."""
    if data is not None:
        return [(lp.name, lp.candidates, lp.references, lp.human) for lp in load_daseg(data, lang_pairs, year=year)]
    from ..textio import read_aligned

    cand_texts, ref_groups = read_aligned(cands, refs)
    return [("all", cand_texts, ref_groups, read_human(human, len(cand_texts)))]


def compare_runs(run_a: RunSpec | Compiled | Combination, run_b: RunSpec | Compiled | Combination,
                 sets: Sequence[Set], bootstrap: int = 1000, permutations: int = 10000, seed: int = 0) -> list[str]:
    """Compare two runs on each set (each text encoded once per model for both; a combination by
    its combined score).

    Returns
    -------
    list of str
        The report's lines: both signatures and how to read the table as comments, the
        :data:`COLUMNS` header, then one tab-separated row per set.
    """
    from ..combination import build_runs, score_runs

    scorers = build_runs([run_a, run_b])  # one model when both sides' encoders are the same
    sigs = [s.signature() for s in scorers]  # both build for their model before any encoding
    out = [f"# A: {sigs[0]}", f"# B: {sigs[1]}",
           f"# delta = |r_A| - |r_B| (Pearson r with the human scores); p-values two-sided: Williams' test, paired "
           f"bootstrap ({bootstrap} resamples; interval: 95%), paired permutation ({permutations}); seed {seed}",
           "\t".join(COLUMNS)]
    for name, cand_texts, ref_groups, scores_h in sets:  # every row before the first byte: a failure prints none
        a, b = (s[metric].double().numpy() for s, metric in score_runs(scorers, cand_texts, ref_groups))
        out.append("\t".join(compare_scores(name, a, b, scores_h, bootstrap, permutations, seed).row()))
    return out
