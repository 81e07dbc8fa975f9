"""The outputs of ``alignscore tune``: the selected run as a run file, the leaderboard
(Markdown and CSV) with the published configurations marked, the nested cross-validation folds,
the held-out comparison and a chart."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from ..config.schema import OPTION
from ..textio import write_output_set
from ..weighting.schemes import Corpus, IdfL
from ..evaluation.chart import dot_line_chart
from ..evaluation.reference_free import BEST_FOR

if TYPE_CHECKING:
    from .crossval import SearchRun

OUTPUT_FILES = {"best": "best.toml", "table": "leaderboard.md", "csv": "leaderboard.csv", "folds": "folds.csv",
                "chart": "chart.png", "holdout": "holdout.csv", "corpus": "idf-corpus.txt"}
CHART_TOP = 30  # runs drawn in the chart
SELECTED = "selected"


def _f(x: float | None, digits: int = 3) -> str:
    return "undefined" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def _num(x: float | None) -> str:
    """A CSV cell: the full-precision number, or empty where it is undefined (never ``nan``)."""
    return repr(float(x)) if x is not None and math.isfinite(x) else ""


def ranking(run: SearchRun) -> list[int]:
    """Every entry: those that reached the last level in the final search's order, then by the
    level they reached and their value there; runs the objective left out last."""
    final = run.final
    rest = sorted((e for e in final.reached if e not in final.ranking),
                  key=lambda e: (-final.reached[e], -final.value[e] if math.isfinite(final.value[e]) else math.inf, e))
    out = list(final.ranking) + rest
    return out + [e for e in range(len(run.entries)) if e not in final.reached]


def summary(run: SearchRun) -> list[str]:
    """The lines that say what was selected and how well it generalises."""
    best = run.entries[run.best]
    lines = [f"Selected: **{best.id}** ({best.label}), output `{best.composition.metric}`: mean |r| "
             f"{_f(run.mean_abs_r.get(run.best))} over the {len(run.lang_pairs)} language pairs it was selected on"
             + (f", accuracy[{run.objective.category}] {_f(best.accuracy)}" if run.objective.uses_challenge else "")
             + "."]
    if run.estimates:
        sel = run.estimates[SELECTED]
        lines.append(f"On a language pair it never saw (nested cross-validation): **{_f(sel.estimate)}** mean |r| "
                     f"[{_f(sel.low)}, {_f(sel.high)}].")
        for name, gain in run.gains.items():
            lines.append(f"- {name}: {_f(run.estimates[name].estimate)}; the search's selection "
                         f"{gain.estimate:+.3f} [{gain.low:+.3f}, {gain.high:+.3f}]")
    else:
        lines.append("No cross-validated estimate: it needs at least two language pairs.")
    remapped = remapped_languages(run)
    if remapped:
        files = ", ".join(f"{lang} with {BEST_FOR.format(lang=lang)}" for lang in remapped)
        lines.append(f"Against sources with a remapping per source language: score {files} "
                     f"({OUTPUT_FILES['best']}: the composition without a remapping).")
    return lines


def remapped_languages(run: SearchRun) -> dict[str, str]:
    """The remapping file (an absolute path) of each source language the search remapped, in
    order: what :data:`BEST_FOR` holds beside best.toml."""
    out = {}
    for lp in run.lang_pairs:
        if lp.remap is not None and lp.remap.source is not None:
            out.setdefault(lp.src, str(Path(lp.remap.source).resolve()))
    return out


def markdown(run: SearchRun, data: str, command: str | None = None) -> str:
    lps = [lp.name for lp in run.lang_pairs]
    n = sorted({len(lp) for lp in run.lang_pairs})
    out = [f"## alignscore tune: {run.model} on {data}", ""]
    if command:
        out += [f"`{command}`", ""]
    out += summary(run) + [""]
    took = run.seconds.get("wall", run.seconds.get("total", 0.0))
    out += [f"Search: {len(run.entries)} runs; {run.schedule}; objective {run.objective}. Time: estimated "
            f"{(run.estimated_seconds or 0) / 60:.1f} min before the search, took {took / 60:.1f} min.", ""]
    if run.notes:
        out += ["What the engine said while scoring (each kind once, with how many batches said it):", ""]
        out += [f"- {text} ({count} batch{'es' if count > 1 else ''})" for text, count in run.notes.items()] + [""]
    if run.folds:
        names = list(run.folds[0].abs_r)
        out += ["### Nested cross-validation", "",
                "Each fold searches on the other language pairs and scores its selection on the one left out; a "
                "published group (a paper's table) is represented by its best run on the other pairs. |r| on every "
                "segment of the left-out pair.", "",
                "| left out | selected on the others | " + " | ".join(_esc(n) for n in names) + " |",
                "|---|---|" + "---:|" * len(names)]
        for f in run.folds:
            e = run.entries[f.chosen[SELECTED]]
            out.append(f"| {f.held_out} | {e.id} ({_esc(e.label)}) | " +
                       " | ".join(_f(f.abs_r[name]) for name in names) + " |")
        means = [run.estimates[name] for name in names]
        out.append("| **mean** | | " + " | ".join(f"**{_f(m.estimate)}** [{_f(m.low)}, {_f(m.high)}]" for m in means)
                   + " |")
        out.append("")
    if run.holdout:
        names = list(run.holdout[0].abs_r)
        out += [f"### Held-out data: {run.holdout_source}", "",
                "| language pair | " + " | ".join(_esc(n) for n in names) + " |", "|---|" + "---:|" * len(names)]
        for h in run.holdout:
            out.append(f"| {h.held_out} | " + " | ".join(_f(h.abs_r[name]) for name in names) + " |")
        out.append("")
    levels = run.schedule.levels
    acc = run.objective.uses_challenge
    out += ["### Leaderboard", "",
            f"Absolute Pearson r with the human scores (n = {', '.join(map(str, n))} per language pair, or the "
            f"level's sample: level k of {levels} scores {', '.join(f'{f:.3g}' for f in run.schedule.fractions)} of "
            "the segments), best first; published: the configuration the run is. Signatures: leaderboard.csv.", "",
            "| rank | id | run | published | level | " + " | ".join(lps) + " | mean |" + (" accuracy |" if acc else ""),
            "|---:|---|---|---|---:|" + "---:|" * (len(lps) + 1) + ("---:|" if acc else "")]
    for rank, i in enumerate(ranking(run), start=1):
        e = run.entries[i]
        label = f"**{_esc(e.label)}**" if i == run.best else _esc(e.label)
        level = run.final.reached.get(i)
        scores = run.per_pair.get(i) or [math.nan] * len(lps)
        mean = run.mean_abs_r.get(i) if i in run.mean_abs_r else run.final.value.get(i)
        out.append(f"| {rank} | {e.id} | {label} | {_esc('; '.join(e.published))} | "
                   f"{'-' if level is None else level + 1} | " + " | ".join(_f(v) for v in scores) +
                   f" | {_f(mean)} |" + (f" {_f(e.accuracy)} |" if acc else ""))
    timing = ", ".join(f"{k} {v:.1f} s" for k, v in run.seconds.items())
    out += ["", f"Time: {timing}."]
    return "\n".join(out) + "\n"


def _esc(text: str) -> str:
    return text.replace("|", "\\|")


def write_csv(path: Path, run: SearchRun) -> None:
    """One line per run: rank, id, sub-space, label, published names, the level it reached,
    |r| per language pair there (full precision), their mean, accuracy, selected, signature."""
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["rank", "id", "subspace", "run", "published", "level", *[lp.name for lp in run.lang_pairs],
                    "mean", "accuracy", "selected", "signature"])
        for rank, i in enumerate(ranking(run), start=1):
            e = run.entries[i]
            level = run.final.reached.get(i)
            scores = run.per_pair.get(i) or [None] * len(run.lang_pairs)
            w.writerow([rank, e.id, e.subspace, e.label, ";".join(e.published), "" if level is None else level + 1,
                        *[_num(v) for v in scores], _num(run.mean_abs_r.get(i)), _num(e.accuracy),
                        str(i == run.best).lower(), e.signature])


def write_folds(path: Path, run: SearchRun) -> None:
    """Per fold, every compared run's id and its |r| on the left-out pair; then the means with
    their intervals."""
    names = list(run.folds[0].abs_r) if run.folds else [SELECTED]
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["left_out", *[c for n in names for c in (f"{n} run", f"{n} abs_r")]])
        for f in run.folds:
            w.writerow([f.held_out, *[c for n in names for c in (run.entries[f.chosen[n]].id, _num(f.abs_r[n]))]])
        for row, pick in (("mean", "estimate"), ("low", "low"), ("high", "high")):
            if run.estimates:
                w.writerow([row, *[c for n in names for c in ("", _num(getattr(run.estimates[n], pick)))]])


def write_holdout(path: Path, run: SearchRun) -> None:
    names = list(run.holdout[0].abs_r) if run.holdout else []
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["lang_pair", *names])
        for h in run.holdout:
            w.writerow([h.held_out, *[_num(h.abs_r[n]) for n in names]])


def write_chart(path: Path, run: SearchRun) -> None:
    """The best :data:`CHART_TOP` runs: each language pair's |r| and their mean, with the
    cross-validated estimates of the selection and of the published configurations as lines."""
    top = ranking(run)[:CHART_TOP]
    rows = [[v if math.isfinite(v) else None for v in run.per_pair.get(i, [])] for i in top]
    lines = {("cross-validated estimate" if n == SELECTED else f"{n} (cross-validated)"): m.estimate
             for n, m in run.estimates.items()}
    title = (f"alignscore tune: {run.model}, best {len(top)} of {len(run.entries)} runs\n"
             f"(dots: the {len(run.lang_pairs)} language pairs)")
    dot_line_chart(path, [run.entries[i].id for i in top], {"dev |r|": rows}, title,
                   "|Pearson r| with human scores", lines={k: v for k, v in lines.items() if math.isfinite(v)})


def corpus_of(run: SearchRun) -> Corpus | None:
    """The in-memory idf-L corpus the selected run reads (written beside best.toml), if any."""
    weighting = run.entries[run.best].composition.weighting
    if isinstance(weighting, IdfL) and not isinstance(weighting.idf_corpus, str):
        return weighting.corpus
    return None


def write_best(path: Path, run: SearchRun, corpus: Path | None, lang: str | None = None) -> None:
    """The selected run as a run file (``lang``: with that source language's remapping)."""
    best = run.entries[run.best]
    # the data set's corpus: the file beside best.toml, named as the signature names it
    changes = {IdfL.corpus_setting(): str(corpus.resolve())} if corpus is not None else {}
    remapped = remapped_languages(run)
    if lang is not None:
        changes[OPTION.remap.name] = remapped[lang]
        note = (f"with the remapping of source language {lang}: score candidates against their {lang} sources with "
                f"this run file ({BEST_FOR.format(lang=lang)})\n")
    else:
        note = (f"the composition without a remapping; the search remapped the sources: for source language X use "
                f"{BEST_FOR.format(lang='X')} ({', '.join(BEST_FOR.format(lang=k) for k in remapped)})\n"
                if remapped else "")
    estimate = run.estimates.get(SELECTED)
    comment = (note + f"selected by alignscore tune: {best.id} ({best.label})\n"
               f"mean |r| {run.mean_abs_r.get(run.best)!r} on {', '.join(lp.name for lp in run.lang_pairs)}"
               + (f"; nested cross-validated estimate {estimate.estimate!r}" if estimate is not None else "")
               + (f"\nobjective {run.objective}: accuracy[{run.objective.category}] {best.accuracy!r}"
                  if run.objective.uses_challenge else "")
               + f"\nsignature{' (before the remapping, whose digest score adds)' if lang else ''}: {best.signature}")
    path.write_text(best.spec.toml(comment, changes), encoding="utf-8")


def output_paths(out_dir: str | Path, holdout: bool, corpus: bool = True, remapped: Iterable[str] = ()
                 ) -> dict[str, Path]:
    """The files :func:`write_outputs` writes (``holdout.csv`` only with held-out data,
    ``idf-corpus.txt`` only where the selection reads the data set's corpus, ``best.<lang>.toml``
    for each ``remapped`` source language)."""
    paths = {k: Path(out_dir) / name for k, name in OUTPUT_FILES.items()
             if (holdout or k != "holdout") and (corpus or k != "corpus")}
    return {**paths, **{f"best.{lang}": Path(out_dir) / BEST_FOR.format(lang=lang) for lang in remapped}}


def write_outputs(out_dir: str | Path, run: SearchRun, data: str, command: str | None = None) -> dict[str, Path]:
    """Write every output into ``out_dir`` as one set (:func:`~alignscore.textio.write_output_set`:
    an interrupted run leaves the earlier set whole)."""
    corpus = corpus_of(run)
    remapped = remapped_languages(run)
    paths = output_paths(out_dir, bool(run.holdout), corpus is not None, remapped)
    writers: dict[str, Callable[[Path], None]] = {
        "best": lambda p: write_best(p, run, paths.get("corpus")),
        **{f"best.{lang}": (lambda p, lang=lang: write_best(p, run, paths.get("corpus"), lang)) for lang in remapped},
        "table": lambda p: p.write_text(markdown(run, data, command), encoding="utf-8"),
        "csv": lambda p: write_csv(p, run), "folds": lambda p: write_folds(p, run),
        "chart": lambda p: write_chart(p, run), "holdout": lambda p: write_holdout(p, run),
        "corpus": lambda p: p.write_text("".join(t + "\n" for t in (corpus.texts if corpus else ())),
                                         encoding="utf-8")}
    return write_output_set(out_dir, writers, {key: path.name for key, path in paths.items()})


__all__ = ["BEST_FOR", "OUTPUT_FILES", "markdown", "output_paths", "ranking", "remapped_languages", "summary",
           "write_outputs"]
