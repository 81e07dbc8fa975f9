"""``alignscore fit --from A.toml --from B.toml ...``: a combination of runs with its weights
learned on human judgments (:mod:`~alignscore.fit.combination_weights`), the nested estimate, and its
outputs (best.toml, a combination's run file; the leaderboard; a figure of the weights)."""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..combination import Combination, CombinedScorer, Part, is_combination
from ..config import Compiled, Source, compile_labelled, sources_of
from ..config.schema import OPTION
from ..errors import ConfigError
from ..evaluation.wmt import LangPair, load_daseg
from ..textio import check_output_folder, replacing
from .combination_weights import Folds, Weights, fit_weights, mean_r, nested

OUTPUTS = ("best.toml", "scores.csv", "folds.csv", "leaderboard.md", "leaderboard.csv", "weights.png")


@dataclass
class CombinationFit:
    """What :func:`fit_combination` found: the ``combination`` (best.toml), the ``runs`` it was
    made from (labels), its ``weights`` fitted on every pair, the nested ``folds`` (None with one
    pair), mean |r| in sample and on the ``holdout`` per run and for the combination, the seconds."""

    combination: Combination
    runs: list[str]
    weights: Weights
    pairs: list[str]
    blocks: list[np.ndarray]
    folds: Folds | None
    in_sample: dict[str, float] = field(default_factory=dict)
    holdout: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    def summary(self) -> list[str]:
        """What was fitted and how it generalises."""
        w = ", ".join(f"{r} {x:.3f}" for r, x in zip(self.runs, self.weights.weights))
        lines = [f"weights: {w}"]
        if self.folds is not None:
            iv = self.folds.intervals
            lines.append(f"nested estimate (leave one language pair out, {len(self.pairs)} folds): combination "
                         f"{_iv(iv['combined'])}, best single run chosen in the fold {_iv(iv['single'])}, gain "
                         f"{_iv(iv['gain'], True)}")
        if self.holdout:
            lines.append("holdout mean |r|: " + ", ".join(f"{k} {v:.4f}" for k, v in self.holdout.items()))
        return lines


def _iv(i: object, signed: bool = False) -> str:
    f = "+.4f" if signed else ".4f"
    return f"{i.estimate:{f}} [{i.low:{f}}, {i.high:{f}}]"  # type: ignore[attr-defined]


def fit_combination(data: str | Path, starts: Sequence[str | Path], above: Sequence[Source] = (),
                    output: str | Path | None = None, holdout: str | Path | None = None,
                    lang_pairs: str | Sequence[str] | None = None, year: str | None = None, pull: float = 0.0,
                    seed: int = 0, resamples: int = 1000, label: Callable[[str], str] = lambda name: f"{name}=",
                    say: Callable[[str], None] | None = None) -> CombinationFit:
    """Learn the weights of a combination of the runs ``starts`` on the judgments of ``data``.

    Parameters
    ----------
    data : a DAseg folder.
    starts : two or more run files (the parts).
    above : run options over each part's (its model only: ``model=``, the command line's ``--model``).
    output : a folder for :data:`OUTPUTS` (nothing written when None).
    holdout : another DAseg folder the parts and the combination are scored on.
    lang_pairs, year : which language pairs and year of ``data``.
    pull : the L2 pull of the weights toward equal ones (>= 0).
    seed, resamples : of the bootstrap intervals.
    label : how an option is named in errors, from its name (the command line's flag, or ``name=``).

    Returns
    -------
    CombinationFit

    Raises
    ------
    ConfigError, InputError
        Before any model loads or anything is written: a run file that fails its own checks
        (named by its place and file), a file that is itself a combination, a bad pull.

    Examples
    --------
    >>> fit_combination("data", ["a.toml"])
    Traceback (most recent call last):
    ...
    alignscore.errors.ConfigError: start=: a combination needs two or more runs (one run alone is that run)
    """
    began = time.monotonic()
    say = say or (lambda msg: None)
    name = label("start")
    if len(starts) < 2:
        raise ConfigError(f"{name}: a combination needs two or more runs (one run alone is that run)")
    if isinstance(pull, bool) or not isinstance(pull, (int, float)) or not np.isfinite(pull) or pull < 0:
        raise ConfigError(f"{label('pull')}: expected a finite number >= 0, not {pull!r}")
    compiled = []
    for i, path in enumerate(starts):
        where = f"{name} {path} (run {i})"
        if is_combination(path):
            raise ConfigError(f"{where}: a combination; its parts are runs (give each part's run file)")
        try:
            compiled.append(compile_labelled([*sources_of({OPTION.config.name: str(path)}), *above]))
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}", exc.options) from None
    if output is not None:
        check_output_folder(output, OUTPUTS, list(starts))
    if isinstance(lang_pairs, str):
        lang_pairs = [lp.strip() for lp in lang_pairs.split(",") if lp.strip()] or None
    pairs = load_daseg(data, lang_pairs, year)
    held = load_daseg(holdout) if holdout is not None else []
    start = Combination.of(compiled, where=name)
    scorer = start.build()
    labels = [Path(p).name for p in starts]
    say(f"{len(starts)} runs on {len(pairs)} language pair(s), {sum(len(lp) for lp in pairs)} segments")
    blocks = blocks_of(scorer, pairs)
    humans = [np.asarray(lp.human, dtype=np.float64) for lp in pairs]
    everything = list(range(len(pairs)))
    parts = list(range(len(starts)))
    folds = None
    if len(pairs) > 1:
        folds = nested(blocks, humans, [lp.name for lp in pairs],
                       lambda train: fit_weights(blocks, humans, train, parts, pull), resamples, seed)
    final = fit_weights(blocks, humans, everything, parts, pull)
    combination = combination_of(compiled, final)
    result = CombinationFit(combination, labels, final, [lp.name for lp in pairs], blocks, folds)
    for i, label in enumerate(labels):
        result.in_sample[label] = abs(mean_r(blocks, humans, everything, lambda b, i=i: b[i]))
    result.in_sample["combination"] = abs(mean_r(blocks, humans, everything, final.scores))
    if held:
        result.holdout = score_holdout(CombinedScorer(combination, scorer.scorers), held, labels)
    result.seconds = time.monotonic() - began
    if output is not None:
        write_outputs(output, result, pairs)
    return result


def blocks_of(scorer: CombinedScorer, pairs: Sequence[LangPair]) -> list[np.ndarray]:
    """Per language pair, every part's primary scores ``[parts, n]`` (float64), each pair scored
    as ``alignscore score`` scores its files (one engine call per pair: each text encoded once
    per model)."""
    return [scorer.part_scores(lp.candidates, lp.references)[1].numpy() for lp in pairs]


def combination_of(compiled: Sequence[Compiled], weights: Weights) -> Combination:
    """The combination of the runs ``weights.parts`` with the fitted weights and standardisation."""
    return Combination(tuple(Part(compiled[i].spec, w, m, d, compiled[i].provenance) for i, w, m, d in
                             zip(weights.parts, weights.weights, weights.location, weights.scale)))


def score_holdout(scorer: CombinedScorer, held: Sequence[LangPair], labels: Sequence[str]) -> dict[str, float]:
    """Mean |r| over the holdout's pairs of each part alone and of the combination, scored as
    ``alignscore score --config best.toml`` scores them."""
    blocks = blocks_of(scorer, held)
    humans = [np.asarray(lp.human, dtype=np.float64) for lp in held]
    which = range(len(held))
    out = {label: abs(mean_r(blocks, humans, which, lambda b, i=i: b[i])) for i, label in enumerate(labels)}
    out["combination"] = abs(mean_r(blocks, humans, which, lambda b: scorer.combine(_tensor(b)).numpy()))
    return out


def _tensor(block: np.ndarray):  # noqa: ANN202 - torch is imported with the scorer already
    import torch

    return torch.as_tensor(block)


def write_outputs(folder: str | Path, result: CombinationFit, pairs: Sequence[LangPair]) -> dict[str, Path]:
    """best.toml, scores.csv (each segment's combined and part scores), folds.csv,
    leaderboard.md/.csv and weights.png into ``folder`` (each replaced whole)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in OUTPUTS}
    w = result.weights
    with replacing(paths["best.toml"]) as tmp:
        tmp.write_text(result.combination.toml("alignscore fit: a combination of "
                                               + ", ".join(result.runs) + " (weights, locations and scales "
                                               "fitted on " + ", ".join(result.pairs) + ")"), encoding="utf-8")
    with replacing(paths["scores.csv"]) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["lang_pair", "segment", "combined", *result.runs])
        for lp, block in zip(pairs, result.blocks):
            for j, (c, *parts) in enumerate(zip(w.scores(block), *block)):
                writer.writerow([lp.name, j, repr(float(c)), *(repr(float(x)) for x in parts)])
    rows = leaderboard_rows(result)
    with replacing(paths["leaderboard.csv"]) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    with replacing(paths["leaderboard.md"]) as tmp:
        md = ["| " + " | ".join(map(str, rows[0])) + " |", "|" + "---|" * len(rows[0])]
        md += ["| " + " | ".join(map(str, r)) + " |" for r in rows[1:]]
        tmp.write_text("\n".join(["# alignscore fit: a combination", "", *result.summary(), "", *md]) + "\n",
                       encoding="utf-8")
    with replacing(paths["folds.csv"]) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["held_out", "r_combined", "r_single", "single", *(f"w_{r}" for r in result.runs)])
        if result.folds is not None:
            f = result.folds
            for name, chosen, single, rc, rs in zip(f.names, f.chosen, f.single, f.r_combined, f.r_single):
                ws = dict(zip(chosen.parts, chosen.weights))
                writer.writerow([name, f"{rc:.6f}", f"{rs:.6f}", result.runs[single],
                                 *(f"{ws.get(i, 0.0):.6f}" for i in range(len(result.runs)))])
    write_figure(paths["weights.png"], result.runs, w.weights)
    return paths


def leaderboard_rows(result: CombinationFit) -> list[list[object]]:
    """Each run alone and the combination: weight, mean |r| in sample, nested held-out (a run alone
    is fixed: its held-out mean is its mean over the pairs) and on the holdout."""
    head = ["run", "weight", "in-sample mean |r|", "nested held-out mean |r|", "holdout mean |r|"]
    rows: list[list[object]] = [head]
    held = result.holdout
    for i, label in enumerate(result.runs):
        rows.append([label, f"{result.weights.weights[i]:.4f}", f"{result.in_sample[label]:.4f}",
                     f"{result.in_sample[label]:.4f}", f"{held[label]:.4f}" if held else "-"])
    if result.folds is not None:
        rows.append(["best single run (chosen in each fold)", "-", "-",
                     f"{result.folds.intervals['single'].estimate:.4f}", "-"])
    nested_c = f"{result.folds.intervals['combined'].estimate:.4f}" if result.folds is not None else "-"
    rows.append(["combination", "1", f"{result.in_sample['combination']:.4f}", nested_c,
                 f"{held['combination']:.4f}" if held else "-"])
    return rows


def write_figure(path: Path, labels: Sequence[str], weights: Sequence[float]) -> None:
    """A bar chart of the weights."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(labels)), 3.0))
    ax.bar(range(len(labels)), weights, color="#4c72b0")
    ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("weight")
    ax.set_ylim(0, 1)
    fig.tight_layout()
    with replacing(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)


__all__ = ["CombinationFit", "OUTPUTS", "blocks_of", "combination_of", "fit_combination", "score_holdout",
           "write_outputs"]
