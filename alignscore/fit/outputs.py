"""What ``alignscore fit`` writes: best.toml, scores.csv, folds.csv, leaderboard.md/.csv and a
figure of the learned layer and token-class weights, as one set (each file renamed into place once all are
written)."""

from __future__ import annotations

import csv
from pathlib import Path
from dataclasses import dataclass, field
from typing import Callable, cast

import torch

from ..config import RunSpec
from ..evaluation.stats import CrossValidation, Interval
from ..textio import write_output_set
from .features import Features
from .model import CLASS_SETTINGS, NUMBERS, Values
from ..evaluation.objective import Objective
from .optimise import Fitted


@dataclass
class FitResult:
    """What :func:`fit` found: the ``spec`` it writes (best.toml), the ``start`` it began from,
    their values (``values``, ``start_values``), the kept ``layers``, the fitted metric's
    ``scores`` per language pair (what ``alignscore score --config best.toml`` gives), the
    nested ``estimate`` (None with one language pair: ``note`` says why), the mean |r| on the
    ``holdout`` data, the ``final`` fit on every pair and the settings it ``learned``; the
    ``objective`` and, where it reads a challenge set, the ``accuracy`` of the start and of
    the fitted values on its category. A static
    table's fit keeps its one state per token (``layers`` ``(0,)``) and mixes nothing."""

    spec: RunSpec
    start: RunSpec
    values: Values
    start_values: Values
    layers: tuple[int, ...]
    lang_pairs: list[str]
    scores: list[torch.Tensor]
    human: list[torch.Tensor]
    final: Fitted
    estimate: CrossValidation[Fitted | Values] | None = None
    note: str | None = None
    holdout: dict[str, float] = field(default_factory=dict)
    in_sample: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    state_bytes: int = 0
    learned: tuple[str, ...] = ()
    objective: Objective = field(default_factory=Objective)
    accuracy: dict[str, float] = field(default_factory=dict)

    @property
    def intervals(self) -> dict[str, Interval]:
        """The nested estimate's held-out mean |r| of ``fitted`` and ``start``, and their
        difference ``gain``, each with its interval (none without an estimate)."""
        if self.estimate is None:
            return {}
        return {**self.estimate.estimates, "gain": self.estimate.gains["start"]}

    @property
    def static(self) -> bool:
        """Whether the encoder is a static table (no layers, no mix)."""
        return self.spec.encoder.static is not None

    def mixed(self, values: Values | None = None) -> str:
        """What the layer mix of ``values`` (default: the fitted ones) is, in words."""
        if self.static:
            return "static table: no layers"
        weights = (values or self.values).weights()
        return "layer weights " + ", ".join(f"{k}: {w:.3f}" for k, w in zip(self.layers, weights))

    def summary(self) -> list[str]:
        """The lines that say what was fitted: the nested estimates, the holdout's mean |r| and
        the fitted values."""
        lines = [f"{name}: held-out mean |r| {i.estimate:.4f} [{i.low:.4f}, {i.high:.4f}]"
                 for name, i in self.intervals.items()]
        lines += [f"{name}: holdout mean |r| {value:.4f}" for name, value in self.holdout.items()]
        if self.objective.uses_challenge:
            acc = f"accuracy[{self.objective.category}]"
            lines.append(f"objective {self.objective}: {acc} fitted {self.accuracy['fitted']:.4f}, start "
                         f"{self.accuracy['start']:.4f}")
            if not self.final.start_meets:
                lines.append(f"the start's {acc} {self.accuracy['start']:.4f} is below {self.objective.minimum:g}: "
                             + ("kept the best values that meet it" if self.objective.meets(self.accuracy["fitted"])
                                else "no values met it, so the start is kept"))
        return lines + [f"fitted: {self.mixed()}; {self.values.describe()}"]



def write_rows(path: Path, header: list[str], rows: list[list[object]]) -> None:
    """A CSV file of ``header`` and ``rows``."""
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def _number(x: float) -> str:
    return repr(float(x))


def leaderboard_rows(result: FitResult) -> list[list[object]]:
    """``[name, estimate, low, high, in-sample mean |r|, holdout mean |r|]`` of the fitted
    metric, its start and their difference (empty cells where there is no value), and the
    challenge accuracy where the objective reads one."""
    est = result.intervals
    out: list[list[object]] = []
    for name in ("fitted", "start", "gain"):
        i = est.get(name)
        row: list[object] = [name, *((f"{i.estimate:.4f}", f"{i.low:.4f}", f"{i.high:.4f}") if i else ("", "", ""))]
        row.append(f"{result.in_sample[name]:.4f}" if name in result.in_sample else "")
        row.append(f"{result.holdout[name]:.4f}" if name in result.holdout else "")
        if result.objective.uses_challenge:
            acc = result.accuracy
            row.append(f"{acc[name]:.4f}" if name in acc else f"{acc['fitted'] - acc['start']:.4f}")
        out.append(row)
    return out


def markdown(result: FitResult) -> str:
    """The leaderboard as Markdown, with what the numbers are."""
    lines = ["# alignscore fit", "",
             f"Language pairs: {', '.join(result.lang_pairs)}; "
             + ("static table: no layers." if result.static else f"layers mixed: {', '.join(map(str, result.layers))}."),
             ""]
    if result.note:
        lines += [f"**No estimate**: {result.note}.", ""]
    else:
        lines += ["Nested estimate: each language pair is left out in turn, the settings are fitted on the others "
                  "and the held-out pair is scored; the mean held-out |r| is shown with a 95% bootstrap interval "
                  "(segments resampled). In-sample: the final fit's mean |r| on the pairs it was fitted on "
                  "(optimistic).", ""]
    acc = f"accuracy[{result.objective.category}]" if result.objective.uses_challenge else None
    if acc:
        lines += [f"Objective: {result.objective}; each fit kept the values with the best inner objective on the "
                  f"true {acc} of the challenge set's items (its gradient follows a smooth surrogate); the estimate is "
                  "still the held-out mean |r|.", ""]
    lines += [f"| run | held-out mean abs r | 95% interval | in-sample | holdout |{f' {acc} |' if acc else ''}",
              "|---|---|---|---|---|" + ("---|" if acc else "")]
    for name, est, low, high, ins, hold, *accuracy in leaderboard_rows(result):
        interval = f"[{low}, {high}]" if low != "" else ""
        lines.append(f"| {name} | {est} | {interval} | {ins} | {hold} |" + "".join(f" {a} |" for a in accuracy))
    v = result.values
    lines += ["", f"Learned: {result.mixed()}; {v.describe()}; metric {v.metric}.",
              f"Start: {result.mixed(result.start_values)}; the final fit ran {result.final.steps} steps on every "
              "pair.",
              ""]
    return "\n".join(lines)


def write_figure(path: Path, result: FitResult) -> None:
    """Bar charts of the learned layer weights and token-class weights beside the start's (a
    static table's: the token-class weights alone)."""
    from matplotlib.figure import Figure

    pairs = ", ".join(result.lang_pairs)
    # a static table's panel shows the classes it learned: it has no special tokens, a bar fixed at 1 says nothing
    shown = [i for i, s in enumerate(CLASS_SETTINGS) if not result.static or s.name in result.learned] or \
        list(range(len(CLASS_SETTINGS)))
    classes = ([CLASS_SETTINGS[i].name.removesuffix("_weight") for i in shown],
               [result.start_values.class_weights[i] for i in shown], [result.values.class_weights[i] for i in shown],
               "token class", "mass multiplier")
    if result.static:
        fig = Figure(figsize=(4.4, 3.6))
        axes = [fig.subplots(1, 1)]
        panels = [(*classes, f"learned token-class weights\n(static: no layers; {pairs})")]
    else:
        fig = Figure(figsize=(max(4.0, 0.6 * len(result.layers) + 2) + 3.6, 3.6))
        axes = list(fig.subplots(1, 2, width_ratios=(max(len(result.layers), 2), 4)))
        panels = [([str(k) for k in result.layers], result.start_values.weights(), result.values.weights(), "layer",
                    "softmax weight", f"learned layer mix ({pairs})"), (*classes, "learned token-class weights")]
    width = 0.4
    for ax, (labels, start, fitted, xlabel, ylabel, title) in zip(axes, panels):
        xs = range(len(labels))
        ax.bar([x - width / 2 for x in xs], start, width, label="start", color="C7")
        ax.bar([x + width / 2 for x in xs], fitted, width, label="fitted", color="C0")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=8)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def write_outputs(folder: str | Path, result: FitResult, features: Features) -> dict[str, Path]:
    """Every output into ``folder`` (checked before the fit began)."""
    def scores(p: Path) -> None:
        write_rows(p, ["lang_pair", "segment", "score", "human"],
                   [[name, i, _number(s), _number(h)]
                    for name, sc, hu in zip(result.lang_pairs, result.scores, result.human)
                    for i, (s, h) in enumerate(zip(sc.tolist(), hu.tolist()))])

    acc = result.objective.uses_challenge
    inner = "inner_objective" if result.objective.weight else "inner_r"  # r + W * accuracy is not an r

    folds_of = result.estimate.folds if result.estimate else ()
    fitted_of = [cast(Fitted, f.chosen["fitted"]) for f in folds_of]

    def folds(p: Path) -> None:
        rows = [[f.held_out, f"{f.abs_r['fitted']:.6f}", f"{f.abs_r['start']:.6f}",
                 *((f"{ft.accuracy_best:.6f}", f"{ft.accuracy_start:.6f}") if acc else ()),
                 ft.steps, f"{ft.inner_start:.6f}",
                 f"{ft.inner_best:.6f}", *(f"{getattr(ft.values, name):.6g}" for name in NUMBERS),
                 "" if result.static else ";".join(f"{w:.4f}" for w in ft.values.weights())]
                for f, ft in zip(folds_of, fitted_of)]
        write_rows(p, ["held_out", "abs_r_fitted", "abs_r_start",
                       *(("accuracy_fitted", "accuracy_start") if acc else ()), "steps", f"{inner}_start",
                       f"{inner}_best", *NUMBERS, "layer_weights"], rows)

    comment = f"alignscore fit on {', '.join(result.lang_pairs)}: {result.mixed()}"
    writers: dict[str, Callable[[Path], None]] = {
        "best.toml": lambda p: p.write_text(result.spec.toml(comment), encoding="utf-8"),
        "scores.csv": scores, "folds.csv": folds,
        "leaderboard.md": lambda p: p.write_text(markdown(result), encoding="utf-8"),
        "leaderboard.csv": lambda p: write_rows(p, ["run", "heldout_mean_abs_r", "low", "high", "in_sample",
                                                    "holdout", *([f"accuracy[{result.objective.category}]"] if acc
                                                                 else [])],
                                                leaderboard_rows(result)),
        "layer_weights.png": lambda p: write_figure(p, result)}
    return write_output_set(folder, writers)
