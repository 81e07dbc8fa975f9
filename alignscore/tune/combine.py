"""``alignscore tune --combine K``: after the search, the best combination of at most K of its
leaderboard's runs (:mod:`alignscore.combination`), kept as best.toml only where its nested
estimate beats the search's single selection's.

The pool is the leaderboard's best runs, each apart from the others (no two differ in fewer than
two of the settings the space varies: not K neighbours of one cell). Every pool run is scored on
every segment over one encoding per model; then, in each fold of the nested cross-validation
(leave one language pair out), forward selection chooses at most K runs of the pool and fits their
weights on the other pairs only (:func:`~alignscore.fit.combination_weights.choose`), and the combination is
scored on the pair left out. The pool itself is read from the search on every pair (the
leaderboard), which the nested estimate of the selection does not see: a small optimism, said in
the leaderboard."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..combination import Combination, CombinedScorer
from ..config import Compiled, Provenance
from ..errors import ConfigError
from ..evaluation.stats import Interval
from ..evaluation.wmt import LangPair
from ..fit.combination_weights import Folds, Weights, choose, fit_weights, mean_r, nested
from ..fit.combination_run import blocks_of, combination_of, score_holdout
from ..textio import replacing
from ..weighting.schemes import IdfL
from .book import Entry
from .cost import Cost
from .crossval import SearchRun
from .outputs import ranking

#: how many of the leaderboard's runs the combination is chosen from
POOL = 12
#: two runs are neighbours when the space's settings they differ in are fewer than this
APART = 2
SELECTED = "selected"


@dataclass
class Proposal:
    """What ``--combine`` proposed: the ``pool`` (entry indices), the ``combination`` chosen on
    every pair and its ``weights`` (indices into the pool), the nested ``folds``, the single
    selection's nested estimate it is compared with, whether it was ``kept``, and on the holdout
    the mean |r| of the combination and of the selection."""

    pool: list[int]
    combination: Combination
    weights: Weights
    folds: Folds
    single: Interval
    kept: bool
    in_sample: float
    holdout: dict[str, float]
    dear: int = 0

    @property
    def gain(self) -> float:
        return self.folds.intervals["combined"].estimate - self.single.estimate


def apart(a: Entry, b: Entry) -> bool:
    """Whether two runs differ in at least :data:`APART` of the settings the space gave them."""
    keys = set(a.values) | set(b.values)
    return sum(a.values.get(k) != b.values.get(k) for k in keys) >= APART


def pool_of(run: SearchRun, size: int = POOL, fits: Callable[[list[int]], bool] = lambda pool: True
            ) -> tuple[list[int], int]:
    """The leaderboard's best runs (:func:`~alignscore.tune.outputs.ranking`), each apart from
    those before it, while the pool ``fits`` (the time kept for the step); runs that read an
    in-memory idf-L corpus are left out (a combination's file would carry the corpus inline).
    Returns the pool and how many runs were passed over because they did not fit."""
    out: list[int] = []
    dear = 0
    for e in ranking(run):
        entry = run.entries[e]
        if isinstance(entry.composition.weighting, IdfL) and not isinstance(entry.composition.weighting.idf_corpus,
                                                                            str):
            continue
        if all(apart(entry, run.entries[o]) for o in out):
            if fits(out + [e]):
                out.append(e)
            else:
                dear += 1
        if len(out) == size:
            break
    return out, dear


def fits_of(pairs: int, most: int, pool: int = POOL) -> int:
    """How many weight fits ``--combine most`` makes over ``pairs`` language pairs: in each fold
    and on every pair, forward selection fits every pool run beside those chosen, at most
    ``most - 1`` times (:func:`~alignscore.fit.combination_weights.choose`)."""
    return (pairs + 1) * sum(max(pool - j, 0) for j in range(1, most))


@dataclass(frozen=True)
class CombineCost:
    """What ``--combine most`` costs after a search of measured ``cost`` on pairs of ``sizes``
    segments (and a holdout of ``held``), one weight fit taking ``fit`` seconds (timed on made-up
    scores of the pairs' sizes by :meth:`measure`: it does not depend on their values).

    Examples
    --------
    >>> combining = CombineCost(Cost(per_text=0.001, per_score=(0.01, 0.02, 0.03)), (100, 200), (), 2, fit=0.0)
    >>> round(combining.seconds([0, 2]), 6) == round(0.001 * 2 * 300 + 0.04 * 300, 6)
    True
    >>> combining.worst() == combining.seconds([2, 1, 0])   # the dearest runs, up to POOL of them
    True
    >>> combining.least() == combining.seconds([0, 1])
    True
    """

    cost: Cost
    sizes: tuple[int, ...]
    held: tuple[int, ...]
    most: int
    fit: float

    @classmethod
    def measure(cls, cost: Cost, sizes: Sequence[int], held: Sequence[int], most: int,
                clock: Callable[[], float] = time.perf_counter) -> "CombineCost":
        """The cost with one weight fit timed here."""
        rng = np.random.default_rng(0)
        blocks = [rng.normal(size=(2, n)) for n in sizes]
        humans = [rng.normal(size=n) for n in sizes]
        start = clock()
        fit_weights(blocks, humans, range(len(sizes)), [0, 1])
        return cls(cost, tuple(sizes), tuple(held), most, clock() - start)

    def _scoring(self, e: int) -> float:
        per_call = self.cost.per_call[e] if self.cost.per_call else 0.0
        return self.cost.per_score[e] * sum(self.sizes) + per_call * len(self.sizes)

    def seconds(self, pool: Sequence[int]) -> float:
        """The estimated seconds with the runs ``pool``: every segment encoded once more and scored
        by each of them, the :attr:`most` dearest on the holdout, and :func:`fits_of` weight fits."""
        encoding = self.cost.per_text * 2 * (sum(self.sizes) + sum(self.held))
        dear = sorted((self.cost.per_score[e] for e in pool), reverse=True)[:self.most]
        return (encoding + sum(self._scoring(e) for e in pool) + sum(dear) * sum(self.held)
                + self.fit * fits_of(len(self.sizes), self.most, len(pool)))

    def worst(self) -> float:
        """The seconds with the :data:`POOL` dearest runs (before the search, the pool is not known)."""
        runs = sorted(range(len(self.cost.per_score)), key=self._scoring, reverse=True)
        return self.seconds(runs[:POOL])

    def least(self) -> float:
        """The seconds with the two cheapest runs: the least a combination costs."""
        return self.seconds(sorted(range(len(self.cost.per_score)), key=self._scoring)[:2])


def propose(run: SearchRun, pairs: Sequence[LangPair], most: int, holdout: Sequence[LangPair] = (),
            pull: float = 0.0, resamples: int = 1000, seed: int = 0,
            say: Callable[[str], None] = lambda msg: None,
            fits: Callable[[list[int]], bool] = lambda pool: True) -> Proposal:
    """The best combination of at most ``most`` runs of the search's pool, with its nested
    estimate beside the single selection's (``run.estimates["selected"]``).

    Parameters
    ----------
    run : the search (its entries, leaderboard and estimates).
    pairs : the language pairs it searched on.
    most : K, the most runs combined (>= 2).
    holdout : another year's pairs the combination and the selection are scored on.
    pull : the weights' L2 pull toward equal ones.
    resamples, seed : of the intervals.
    fits : whether a pool (entry indices) is scored within the time kept for the step
        (:meth:`CombineCost.seconds`); a run that would not fit is passed over.

    Returns
    -------
    Proposal
        ``kept``: its nested estimate is above the selection's.
    """
    pool, dear = pool_of(run, fits=fits)
    if len(pool) < 2:  # the budget kept admitted two runs (tune checks it), but not two of them apart
        raise ConfigError(f"no two runs of the leaderboard apart from each other fit the time kept for the "
                          f"combination ({dear} passed over): nothing to combine")
    compiled = [Compiled(run.entries[e].spec, Provenance()) for e in pool]
    say(f"combining at most {most} of {len(pool)} runs of the leaderboard (each apart from the others"
        + (f"; {dear} passed over: they would not fit the time kept for it)" if dear else ")"))
    scorer = Combination.of(compiled, where="the combination").build()
    blocks = blocks_of(scorer, pairs)
    humans = [np.asarray(lp.human, dtype=np.float64) for lp in pairs]
    near = lambda i, j: apart(run.entries[pool[i]], run.entries[pool[j]])  # noqa: E731
    folds = nested(blocks, humans, [lp.name for lp in pairs],
                   lambda train: choose(blocks, humans, train, most, pull, near), resamples, seed)
    everything = list(range(len(pairs)))
    final = choose(blocks, humans, everything, most, pull, near)
    combination = combination_of(compiled, final)
    single = run.estimates[SELECTED]
    kept = len(final.parts) > 1 and folds.intervals["combined"].estimate > single.estimate
    held: dict[str, float] = {}
    if holdout:
        labels = [run.entries[pool[i]].id for i in final.parts]
        held = score_holdout(CombinedScorer(combination, [scorer.scorers[i] for i in final.parts]), holdout, labels)
    return Proposal(pool, combination, final, folds, single, kept, abs(mean_r(blocks, humans, everything,
                                                                            final.scores)), held, dear)


def report(run: SearchRun, proposal: Proposal, most: int) -> str:
    """The leaderboard's section on the combination: which runs and weights, its nested estimate
    against the selection's (and on the holdout), and whether it became best.toml."""
    iv = proposal.folds.intervals
    w = proposal.weights
    ids = [run.entries[proposal.pool[i]] for i in w.parts]
    lines = ["", f"### Combination (at most {most} runs)", "",
             f"Chosen from {len(proposal.pool)} runs of the leaderboard (each apart from the others: they differ in "
             f"at least {APART} of the space's settings) by forward selection, weights fitted on the judgments "
             "(standardised parts, weights >= 0 summing to 1); in each fold of the nested cross-validation the "
             "runs and weights were chosen on the other pairs. The pool itself comes from the search on every pair"
             + (f"; {proposal.dear} better-ranked runs were passed over: scoring them would not have fitted the time "
                "kept for the combination." if proposal.dear else "."),
             "", "| part | run | weight | location | scale |", "|---|---|---:|---:|---:|"]
    lines += [f"| {k} | {e.id} ({e.label}) | {x:.4f} | {m:.6f} | {d:.6f} |"
              for k, (e, x, m, d) in enumerate(zip(ids, w.weights, w.location, w.scale))]
    lines += ["", f"Nested estimate (mean held-out |r|): combination **{iv['combined'].estimate:.4f}** "
              f"[{iv['combined'].low:.4f}, {iv['combined'].high:.4f}] against the single selection's "
              f"{proposal.single.estimate:.4f} [{proposal.single.low:.4f}, {proposal.single.high:.4f}]: "
              f"{proposal.gain:+.4f}; in sample {proposal.in_sample:.4f}."]
    if proposal.holdout:
        lines.append("Holdout mean |r|: " + ", ".join(f"{k} {v:.4f}" for k, v in proposal.holdout.items()) + ".")
    lines.append("best.toml is the combination (the single selection: single.toml)." if proposal.kept else
                 "Not kept: it does not beat the single selection's nested estimate; best.toml is the single "
                 "selection (the combination: combination.toml).")
    per = ["", "| left out | runs chosen on the others | combination | best single pool run |", "|---|---|---:|---:|"]
    for name, chosen, rc, rs in zip(proposal.folds.names, proposal.folds.chosen, proposal.folds.r_combined,
                                    proposal.folds.r_single):
        runs = ", ".join(f"{run.entries[proposal.pool[i]].id} {x:.2f}" for i, x in zip(chosen.parts, chosen.weights))
        per.append(f"| {name} | {runs} | {rc:.3f} | {rs:.3f} |")
    return "\n".join(lines + per) + "\n"


def write(folder: str | Path, run: SearchRun, proposal: Proposal, most: int) -> dict[str, Path]:
    """Kept: best.toml becomes the combination and the selection moves to single.toml; else the
    combination goes to combination.toml. The section of :func:`report` is added to leaderboard.md."""
    out = Path(folder)
    best = out / "best.toml"
    written = {}
    if proposal.kept:
        written["single"] = out / "single.toml"
        with replacing(written["single"]) as tmp:
            tmp.write_bytes(best.read_bytes())
    target = best if proposal.kept else out / "combination.toml"
    with replacing(target) as tmp:
        tmp.write_text(proposal.combination.toml(f"tune, a combination of at most {most} runs: nested estimate "
                                                 f"{proposal.folds.intervals['combined'].estimate!r} against the "
                                                 f"single selection's {proposal.single.estimate!r}"), encoding="utf-8")
    written["combination"] = target
    board = out / "leaderboard.md"
    text = board.read_text(encoding="utf-8") + report(run, proposal, most)
    with replacing(board) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return written


__all__ = ["APART", "POOL", "CombineCost", "Proposal", "apart", "fits_of", "pool_of", "propose", "report", "write"]
