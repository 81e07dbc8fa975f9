"""Learning the language-model term's fixed scale and weight (:class:`alignscore.lm.LMTerm`) from
training data, with the alignment and its remapping fixed: ``alignscore fit --sources --lm MODEL``
(:func:`fit_lm_term`).

The location and scale are the mean and standard deviation of the LM's scores of the training
candidates (every language pair pooled), so that the term ``(lm_score - location) / scale`` has
mean 0 and deviation 1 there and its weight is in the alignment score's units; the weight is the
one of a grid that maximises the mean |r| over the training pairs of ``aligned + weight * term``
with the human scores (the smallest where several tie). One number each, never taken from the
texts later scored.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from ..config import Provenance, RunSpec, build, run_spec
from ..config.schema import OPTION
from ..errors import ConfigError
from ..evaluation.reference_free import BEST_FOR
from ..evaluation.stats import CrossValidation, leave_one_pair_out
from ..evaluation.wmt import LangPair
from ..lm import LMTerm, check_readable
from ..textio import write_output_set
from .outputs import write_rows

#: the weights tried: 0 to 0.2 by 0.0025 (the term standardised; alignment scores in [0, 1])
TIE = 1e-12  # mean |r| this close are equal (a term that changes no |r| still moves it by rounding)
WEIGHT_GRID = tuple(float(w) for w in np.round(np.arange(0, 0.2001, 0.0025), 4))


def lm_scale_of(lm_scores: Sequence[np.ndarray]) -> tuple[float, float]:
    """``(location, scale)``: the mean and standard deviation of the LM scores of every training
    candidate (the arrays of each language pair pooled).

    >>> lm_scale_of([np.array([-4.0, -2.0]), np.array([-3.0])])
    (-3.0, 0.816496580927726)
    """
    pooled = np.concatenate([np.asarray(v, dtype=np.float64) for v in lm_scores]) if lm_scores else np.empty(0)
    if len(pooled) < 2 or not np.isfinite(pooled).all() or float(pooled.std()) == 0.0:
        raise ConfigError(f"the LM's scale needs at least two finite, different LM scores of training candidates "
                          f"(got {len(pooled)})")
    return float(pooled.mean()), float(pooled.std())


def learn_lm_weight(aligned: Sequence[np.ndarray], terms: Sequence[np.ndarray], human: Sequence[np.ndarray],
                    grid: Sequence[float] = WEIGHT_GRID) -> tuple[float, dict[float, float]]:
    """The weight of ``grid`` whose mix ``aligned + weight * term`` has the best mean |r| with
    ``human`` over the language pairs (each argument one array per pair), the smallest of those
    that tie (within :data:`TIE`: float rounding); and the mean |r| of every weight tried.

    >>> x = [np.array([0.1, 0.2, 0.3, 0.4])]
    >>> t = [np.array([1.0, -1.0, 1.0, -1.0])]
    >>> h = [np.array([0.2, 0.1, 0.4, 0.3])]  # x + 0.1 * t
    >>> learn_lm_weight(x, t, h, grid=(0.0, 0.05, 0.1, 0.5))[0]
    0.1
    """
    if not (len(aligned) == len(terms) == len(human)) or not aligned:
        raise ConfigError("learning the LM's weight needs the alignment scores, the LM terms and the human scores "
                          "of the same language pairs")

    def mean_r(w: float) -> float:
        return float(np.mean([abs(np.corrcoef(np.asarray(x, float) + w * np.asarray(t, float), h)[0, 1])
                              for x, t, h in zip(aligned, terms, human)]))

    tried = {float(w): mean_r(float(w)) for w in grid}
    best = max(tried.values())
    return min(w for w, r in tried.items() if r >= best - TIE), tried


#: what a fit of the LM term writes (and ``best.<lang>.toml`` per remapped source language)
OUTPUTS = ("best.toml", "scores.csv", "folds.csv", "leaderboard.md", "leaderboard.csv", "lm_weight.png")
#: the runs compared: the fitted term, the start's own term, and the alignment without the LM
RUNS = ("fitted", "start", "alignment")
#: the settings of the term a fit learns: its numbers (weight, location, scale), not which LM or score;
#: read from the class, not the option table, which would load every plugin at import
LEARNED = tuple(f.name for f in fields(LMTerm) if f.type in ("float", float))


@dataclass(frozen=True)
class PairScores:
    """One language pair scored against its sources: the alignment's score of each candidate
    (``aligned``, in the scorer's dtype), the LM's score (``lm``, float64, NaN where the score has
    none: :meth:`~alignscore.lm.LMTerm.values`) and the human scores."""

    name: str
    aligned: torch.Tensor
    lm: np.ndarray
    human: np.ndarray

    def scores(self, term: LMTerm | None) -> np.ndarray:
        """float64: what ``alignscore score --sources`` gives with ``term`` (None: no LM), the
        mix :meth:`~alignscore.lm.LMTerm.mix` itself."""
        if term is None:
            return self.aligned.double().numpy()
        lm = torch.from_numpy(np.where(np.isnan(self.lm), term.lm_location, self.lm))
        return term.mix(self.aligned, lm).double().numpy()


def learn_term(start: LMTerm, pairs: Sequence[PairScores], grid: Sequence[float] = WEIGHT_GRID
               ) -> tuple[LMTerm, dict[float, float]]:
    """``start`` with its location, scale (:func:`lm_scale_of`) and weight (:func:`learn_lm_weight`)
    learned on ``pairs``, and the mean |r| of every weight tried.

    >>> h = [np.array([0.1, 0.4, 0.2, 0.5])]
    >>> pair = PairScores("de-en", torch.tensor([0.1, 0.2, 0.3, 0.4]), np.array([-1.0, 1.0, -1.0, 1.0]), h[0])
    >>> term, _ = learn_term(LMTerm("gpt2"), [pair], grid=(0.0, 0.1, 0.2))
    >>> term.lm_weight, term.lm_location, term.lm_scale
    (0.2, 0.0, 1.0)
    """
    location, scale = lm_scale_of([p.lm[~np.isnan(p.lm)] for p in pairs])
    terms = [np.where(np.isnan(p.lm), 0.0, (p.lm - location) / scale) for p in pairs]
    weight, tried = learn_lm_weight([p.aligned.double().numpy() for p in pairs], terms, [p.human for p in pairs], grid)
    return replace(start, lm_weight=weight, lm_location=location, lm_scale=scale), tried


def score_pairs(spec: RunSpec, provenance: Provenance, pairs: Sequence[LangPair], progress: bool = False,
                say: Callable[[str], None] = lambda msg: None) -> list[PairScores]:
    """Each language pair (its references the sources, its ``remap`` its source language's) scored
    as ``alignscore score --sources`` scores it, the alignment and the LM apart. Every pair's
    candidates go through the LM's tokenizer first, before any model loads: texts it cannot read
    are one error naming the LM as the user gave it and the pair."""
    scorer = build(spec, provenance=provenance)
    scorer.runtime = replace(scorer.runtime, progress=progress)
    composition = scorer.resolved()
    term = composition.lm
    assert term is not None  # the caller checks it
    device, batch = scorer.runtime.device, scorer.runtime.batch_size
    for lp in pairs:
        check_readable(term, lp.candidates, provenance, lp.name, device, batch)
    out = []
    for lp in pairs:
        say(f"{lp.name}: {len(lp)} segments")
        remapped = composition if lp.remap is None else replace(composition, remap=lp.remap)
        aligned = replace(scorer, composition=replace(remapped, lm=None)).score(lp.candidates, sources=lp.references)
        values = term.values(lp.candidates, device, batch)
        lm = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        if not np.isfinite(lm[~np.isnan(lm)]).all():
            raise ConfigError(f"{lp.name}: the language model {term.lm!r} gave a score that is not finite")
        out.append(PairScores(lp.name, aligned[composition.metric], lm, np.asarray(lp.human, dtype=np.float64)))
    return out


@dataclass
class LMFit:
    """What :func:`fit_lm_term` found: the ``spec`` it writes (best.toml: the start with the
    fitted term), the ``start``, the ``term`` fitted on every pair, the fitted scores of each pair
    (what ``alignscore score --config best.toml`` gives, with the pair's remapping), the in-sample
    mean |r| of each weight tried (``tried``), the nested ``estimate`` (None with one pair:
    ``note`` says why), and the mean |r| of :data:`RUNS` in sample and on the ``holdout``."""

    spec: RunSpec
    start: RunSpec
    term: LMTerm
    pairs: list[PairScores]
    tried: dict[float, float]
    remapped: dict[str, str] = field(default_factory=dict)
    estimate: CrossValidation[LMTerm | None] | None = None
    note: str | None = None
    in_sample: dict[str, float] = field(default_factory=dict)
    holdout: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def lang_pairs(self) -> list[str]:
        return [p.name for p in self.pairs]

    def summary(self) -> list[str]:
        """The nested estimates, the holdout's mean |r| and the fitted term."""
        lines = []
        if self.estimate is not None:
            lines += [f"{name}: held-out mean |r| {i.estimate:.4f} [{i.low:.4f}, {i.high:.4f}]"
                      for name, i in self.estimate.estimates.items()]
            lines += [f"gain over {name}: {i.estimate:+.4f} [{i.low:+.4f}, {i.high:+.4f}]"
                      for name, i in self.estimate.gains.items()]
        lines += [f"{name}: holdout mean |r| {value:.4f}" for name, value in self.holdout.items()]
        t = self.term
        return lines + [f"fitted: {', '.join(f'{n} {getattr(t, n)!r}' for n in LEARNED)} ({t.lm_score}; in-sample "
                        f"mean |r| {self.in_sample['fitted']:.4f})"]


def mean_abs_r(pairs: Sequence[PairScores], term: LMTerm | None) -> float:
    """The mean over ``pairs`` of the |r| of the scores with ``term`` (None: no LM)."""
    return float(np.mean([abs(np.corrcoef(p.scores(term), p.human)[0, 1]) for p in pairs]))


def fit_lm_term(spec: RunSpec, provenance: Provenance, pairs: Sequence[LangPair], held: Sequence[LangPair] = (),
                output: str | Path | None = None, resamples: int = 1000, seed: int = 0, progress: bool = False,
                say: Callable[[str], None] = lambda msg: None) -> LMFit:
    """Learn the LM term's location, scale and weight of the run ``spec`` on the human judgments
    of ``pairs``, the alignment and each pair's remapping fixed.

    Parameters
    ----------
    spec, provenance : the compiled start (with an LM term) and how its options were given.
    pairs, held : the training and holdout language pairs, against their sources
        (:func:`~alignscore.evaluation.reference_free.against_sources`).
    output : a folder for :data:`OUTPUTS` (checked by the caller; nothing written when None).
    resamples, seed : of the nested estimate's bootstrap intervals.
    progress, say : progress bars, and where each line of progress goes.

    Returns
    -------
    LMFit
    """
    start = spec.composition.lm
    assert start is not None  # the caller checks it
    say(f"{len(pairs)} language pair(s), {sum(len(lp) for lp in pairs)} segments; learning lm_weight (the LM "
        f"{start.lm_score} score's location and scale from the training candidates)")
    scored = score_pairs(spec, provenance, [*pairs, *held], progress, say)  # the models load once
    result = fit_scored(spec, start, scored[:len(pairs)], scored[len(pairs):], resamples, seed)
    result.remapped = {lp.src: str(Path(lp.remap.source).resolve()) for lp in pairs
                       if lp.remap is not None and lp.remap.source is not None}
    if output is not None:
        write_lm_outputs(output, result)
    return result


def fit_scored(spec: RunSpec, start: LMTerm, scored: Sequence[PairScores], held: Sequence[PairScores] = (),
               resamples: int = 1000, seed: int = 0) -> LMFit:
    """:func:`fit_lm_term` on pairs already scored (:func:`score_pairs`): the term learned on every
    pair of ``scored``, the nested estimate (leave one pair out: the location, scale and weight
    learned on the others) beside ``start`` and the alignment alone, and the mean |r| of each on
    ``held``."""

    def choose(trains: list[list[int]]) -> list[dict[str, LMTerm | None]]:
        return [{"fitted": learn_term(start, [scored[i] for i in train])[0], "start": start, "alignment": None}
                for train in trains]

    def score(k: int, chosen: Mapping[str, LMTerm | None]) -> tuple[np.ndarray, np.ndarray]:
        return np.stack([scored[k].scores(t) for t in chosen.values()]), scored[k].human

    estimate, note = None, None
    if len(scored) > 1:
        estimate = leave_one_pair_out([p.name for p in scored], choose, score, resamples, seed)
    else:
        note = (f"one language pair ({scored[0].name}): no cross-validation, so no estimate of how the fit does on "
                "data it never saw; fit on two or more language pairs for one")
    term, tried = learn_term(start, scored)
    changes = {name: getattr(term, name) for name in LEARNED}
    result = LMFit(run_spec({**spec.to_mapping(), **changes}), spec, term, list(scored), tried, estimate=estimate,
                   note=note)
    runs = dict(zip(RUNS, (term, start, None)))
    result.in_sample = {name: mean_abs_r(scored, t) for name, t in runs.items()}
    if held:
        result.holdout = {name: mean_abs_r(held, t) for name, t in runs.items()}
    return result


def lm_output_names(languages: Sequence[str]) -> list[str]:
    """The files a fit of the LM term writes, with ``best.<lang>.toml`` for each remapped language."""
    return [*OUTPUTS, *(BEST_FOR.format(lang=lang) for lang in sorted(set(languages)))]


def write_lm_outputs(folder: str | Path, result: LMFit) -> dict[str, Path]:
    """Every output of :func:`fit_lm_term` into ``folder``, as one set."""
    t, est = result.term, result.estimate
    fitted_on = f"alignscore fit against sources: the LM term fitted on {', '.join(result.lang_pairs)}"

    def best(lang: str | None) -> Callable[[Path], None]:
        if lang is None:
            note = (f"{fitted_on}; the composition without a remapping (for source language X use "
                    f"{BEST_FOR.format(lang='X')})" if result.remapped else fitted_on)
            return lambda p: p.write_text(result.spec.toml(note), encoding="utf-8")
        note = f"{fitted_on}; with the remapping of source language {lang}, for its sources"
        return lambda p: p.write_text(result.spec.toml(note, {OPTION.remap.name: result.remapped[lang]}),
                                      encoding="utf-8")

    def scores(p: Path) -> None:
        rows = [[pair.name, i, repr(float(s)), repr(float(h)), repr(float(a)), "" if np.isnan(m) else repr(float(m))]
                for pair in result.pairs
                for i, (s, h, a, m) in enumerate(zip(pair.scores(t), pair.human, pair.aligned.tolist(), pair.lm))]
        write_rows(p, ["lang_pair", "segment", "score", "human", "aligned", "fluency"], rows)

    def folds(p: Path) -> None:
        rows = [[f.held_out, *(f"{f.abs_r[n]:.6f}" for n in RUNS), *(repr(getattr(f.chosen["fitted"], n))
                                                                     for n in LEARNED)]
                for f in (est.folds if est is not None else ())]
        write_rows(p, ["held_out", *(f"abs_r_{n}" for n in RUNS), *LEARNED], rows)

    def board() -> list[list[str]]:
        out = []
        for name in RUNS:
            i = est.estimates.get(name) if est is not None else None
            out.append([name, *((f"{i.estimate:.4f}", f"{i.low:.4f}", f"{i.high:.4f}") if i else ("", "", "")),
                        f"{result.in_sample[name]:.4f}", f"{result.holdout[name]:.4f}" if result.holdout else ""])
        return out

    head = ["run", "heldout_mean_abs_r", "low", "high", "in_sample", "holdout"]

    def markdown(p: Path) -> None:
        rows = ["| " + " | ".join(r) + " |" for r in [head, ["---"] * len(head), *board()]]
        p.write_text("\n".join([f"# {fitted_on}", "", *result.summary(), "", *rows]) + "\n", encoding="utf-8")

    writers: dict[str, Callable[[Path], None]] = {
        "best.toml": best(None), **{BEST_FOR.format(lang=lang): best(lang) for lang in result.remapped},
        "scores.csv": scores, "folds.csv": folds, "leaderboard.md": markdown,
        "leaderboard.csv": lambda p: write_rows(p, head, board()), "lm_weight.png": lambda p: write_figure(p, result)}
    return write_output_set(folder, writers)


def write_figure(path: Path, result: LMFit) -> None:
    """The in-sample mean |r| of each weight tried, the fitted one marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.0, 3.0))
    ax.plot(list(result.tried), list(result.tried.values()), color="#4c72b0")
    ax.axvline(result.term.lm_weight, color="#c44e52", linestyle="--")
    ax.set_xlabel("lm_weight (the term standardised on the training candidates)")
    ax.set_ylabel("mean |r| in sample")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)


__all__ = ["LEARNED", "LMFit", "OUTPUTS", "PairScores", "RUNS", "TIE", "WEIGHT_GRID", "fit_lm_term", "fit_scored",
           "learn_lm_weight", "learn_term", "lm_output_names", "lm_scale_of", "mean_abs_r", "score_pairs",
           "write_lm_outputs"]
