"""The outputs of ``alignscore tune``: the selected composition as a composition file, the
leaderboard (Markdown and CSV), the cross-validation folds, the held-out comparison and a chart."""

from __future__ import annotations

import csv
import math
from contextlib import ExitStack
from pathlib import Path
from typing import Callable

from ..textio import make_output_folder, replacing
from .chart import dot_line_chart
from .search import TuneRun

OUTPUT_FILES = {"best": "best.toml", "table": "leaderboard.md", "csv": "leaderboard.csv", "folds": "folds.csv",
                "chart": "chart.png", "holdout": "holdout.csv"}
CHART_TOP = 30  # compositions drawn in the chart


def _f(x: float | None, digits: int = 3) -> str:
    return "undefined" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def _num(x: float) -> str:
    """A CSV cell: the full-precision number, or empty where it is undefined (never ``nan``)."""
    return repr(float(x)) if math.isfinite(x) else ""


def _p(p: float) -> str:
    return f"{p:.3g}" if p >= 0.001 else "<0.001"


def summary(run: TuneRun) -> list[str]:
    """The lines that say what was selected and how well it generalises."""
    best, ref = run.entries[run.best], run.entries[run.reference]
    lines = [f"Selected: **{best.id}** ({best.label}), output `{best.composition.metric}`: mean |r| "
             f"{_f(best.average)} over the {len(run.lang_pairs)} language pairs it was selected on."]
    ref_text = f"the reference ({ref.id}: {ref.label if ref.in_space else 'the run your options describe'})"
    if run.estimate is not None:
        gain = run.estimate - ref.average
        lines.append(f"Cross-validated estimate (leave one language pair out: select on the others, score the "
                     f"left-out pair): **{_f(run.estimate)}** mean |r|; {ref_text}: {_f(ref.average)}"
                     + (f" ({gain:+.3f})." if math.isfinite(gain) else "."))
    else:
        lines.append(f"No cross-validated estimate: it needs at least two language pairs. {ref_text}: "
                     f"{_f(ref.average)}.")
    return lines


def markdown(run: TuneRun, data: str, command: str | None = None) -> str:
    lps = [lp.name for lp in run.lang_pairs]
    n = sorted({len(lp) for lp in run.lang_pairs})
    out = [f"## alignscore tune: {run.model} on {data}", ""]
    if command:
        out += [f"`{command}`", ""]
    out += summary(run) + [""]
    if run.folds:
        out += ["### Cross-validation folds", "",
                "Williams p: one-sided test that the fold's selection correlates better than BERTScore's default "
                "on the left-out pair.", "",
                "| left out | selected on the others | held-out \\|r\\| | BERTScore \\|r\\| | Williams p |",
                "|---|---|---:|---:|---:|"]
        for f in run.folds:
            e = run.entries[f.selected]
            same = f.selected == run.reference
            out.append(f"| {f.lang_pair} | {e.id} ({e.label}) | {_f(f.heldout)} | {_f(f.reference)} | "
                       f"{'same composition' if same else _p(f.williams_p)} |")
        out.append(f"| **mean** | | **{_f(run.estimate)}** | "
                   f"{_f(sum(f.reference for f in run.folds) / len(run.folds))} | |")
        out.append("")
    if run.holdout:
        out += [f"### Held-out data: {run.holdout_source}", "",
                "| language pair | n | selected \\|r\\| | BERTScore \\|r\\| | Williams p |", "|---|---:|---:|---:|---:|"]
        for h in run.holdout:
            out.append(f"| {h.lang_pair} | {h.n} | {_f(h.selected)} | {_f(h.reference)} | {_p(h.williams_p)} |")
        mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
        out += [f"| **mean** | | **{_f(mean([h.selected for h in run.holdout]))}** | "
                f"{_f(mean([h.reference for h in run.holdout]))} | |", ""]
    out += ["### Leaderboard", "",
            f"Absolute Pearson r with the human scores (n = {', '.join(map(str, n))} per language pair), every "
            "composition, best mean first; folds: the left-out pairs whose fold selected it. Signatures: "
            "leaderboard.csv.", "",
            "| rank | id | composition | " + " | ".join(lps) + " | mean | folds |",
            "|---:|---|---|" + "---:|" * (len(lps) + 1) + "---|"]
    folds = _folds_by_entry(run)
    for rank, i in enumerate(run.ranking, start=1):
        e = run.entries[i]
        name = f"**{e.label}**" if i == run.best else e.label
        if i == run.reference:
            name += " (BERTScore default)" if e.in_space else ""
        out.append(f"| {rank} | {e.id} | {name} | " + " | ".join(_f(v) for v in e.abs_r) +
                   f" | {_f(e.average)} | {', '.join(folds.get(i, []))} |")
    timing = ", ".join(f"{k} {v:.1f} s" for k, v in run.seconds.items())
    out += ["", f"Time: {timing}."]
    return "\n".join(out) + "\n"


def _folds_by_entry(run: TuneRun) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for f in run.folds:
        out.setdefault(f.selected, []).append(f.lang_pair)
    return out


def write_csv(path: Path, run: TuneRun) -> None:
    """One line per composition: rank, id, sub-space, label, |r| per language pair (full
    precision), mean, selected, the folds that selected it, signature."""
    folds = _folds_by_entry(run)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["rank", "id", "subspace", "composition", *[lp.name for lp in run.lang_pairs], "mean",
                    "selected", "reference", "folds_selected", "signature"])
        for rank, i in enumerate(run.ranking, start=1):
            e = run.entries[i]
            w.writerow([rank, e.id, e.subspace, e.label, *[_num(v) for v in e.abs_r], _num(e.average),
                        str(i == run.best).lower(),
                        str(i == run.reference).lower(), ";".join(folds.get(i, [])), e.signature])


def write_folds(path: Path, run: TuneRun) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["left_out", "selected", "heldout_abs_r", "reference_abs_r", "williams_p"])
        for f in run.folds:
            w.writerow([f.lang_pair, run.entries[f.selected].id, _num(f.heldout), _num(f.reference),
                        _num(f.williams_p)])
        if run.estimate is not None:
            w.writerow(["mean", "", _num(run.estimate), _num(sum(f.reference for f in run.folds) / len(run.folds)), ""])


def write_holdout(path: Path, run: TuneRun) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["lang_pair", "n", "selected_abs_r", "reference_abs_r", "williams_p"])
        for h in run.holdout:
            w.writerow([h.lang_pair, h.n, _num(h.selected), _num(h.reference), _num(h.williams_p)])


def write_chart(path: Path, run: TuneRun) -> None:
    """The best :data:`CHART_TOP` compositions: each language pair's |r| and their mean, with
    the cross-validated estimate and BERTScore's default as lines."""
    top = run.ranking[:CHART_TOP]
    rows = [[float(v) if math.isfinite(v) else None for v in run.entries[i].abs_r] for i in top]
    lines = {f"BERTScore default, mean ({run.entries[run.reference].id})": run.entries[run.reference].average}
    if run.estimate is not None:
        lines = {"cross-validated estimate": run.estimate, **lines}
    title = (f"alignscore tune: {run.model}, best {len(top)} of {len(run.entries)} compositions\n"
             f"(dots: the {len(run.lang_pairs)} language pairs)")
    dot_line_chart(path, [run.entries[i].id for i in top], {"dev |r|": rows}, title,
                   "|Pearson r| with human scores", lines={k: v for k, v in lines.items() if math.isfinite(v)})


def write_best(path: Path, run: TuneRun) -> None:
    best = run.entries[run.best]
    comment = (f"selected by alignscore tune: {best.id} ({best.label})\n"
               f"mean |r| {best.average!r} on {', '.join(lp.name for lp in run.lang_pairs)}"
               + (f"; cross-validated estimate {run.estimate!r}" if run.estimate is not None else "")
               + f"\nsignature: {best.signature}")
    path.write_text(best.spec.toml(comment), encoding="utf-8")


def output_paths(out_dir: str | Path, holdout: bool) -> dict[str, Path]:
    """The files :func:`write_outputs` writes (``holdout.csv`` only with held-out data)."""
    return {k: Path(out_dir) / name for k, name in OUTPUT_FILES.items() if holdout or k != "holdout"}


def write_outputs(out_dir: str | Path, run: TuneRun, data: str, command: str | None = None) -> dict[str, Path]:
    """Write every output into ``out_dir`` as one set: each into a temporary file, and only once
    all are written are they renamed into place (an interrupted run leaves the earlier set whole)."""
    paths = output_paths(out_dir, bool(run.holdout))
    make_output_folder(out_dir)
    writers: dict[str, Callable[[Path], None]] = {
        "best": lambda p: write_best(p, run),
        "table": lambda p: p.write_text(markdown(run, data, command), encoding="utf-8"),
        "csv": lambda p: write_csv(p, run), "folds": lambda p: write_folds(p, run),
        "chart": lambda p: write_chart(p, run), "holdout": lambda p: write_holdout(p, run)}
    with ExitStack() as stack:
        temporaries = {key: stack.enter_context(replacing(path)) for key, path in paths.items()}
        for key, tmp in temporaries.items():
            writers[key](tmp)
    return paths


__all__ = ["OUTPUT_FILES", "markdown", "output_paths", "summary", "write_outputs"]
