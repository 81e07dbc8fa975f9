"""``alignscore tune``: search a space of compositions on WMT DAseg human judgments."""

from __future__ import annotations

import time
from typing import Any

import click

from ..config import sources_of
from ..runtime import peak_memory_mib
from ..tune import TuneOptions, tune as run_tune
from ..weighting.schemes import IdfL
from . import main
from .common import command_line, progress_log, quiet_option
from .options import FLAGS, command_options, command_opts, scorer_options, scorer_opts


@main.command()
@click.argument("space", required=False, type=click.Path(dir_okay=False))
@scorer_options(exclude=(IdfL.corpus_setting(),))  # tune's own --idf-corpus: the data's corpus (a template)
@command_options(TuneOptions)
@quiet_option("No progress.")
def tune(quiet: bool, **kwargs: Any) -> None:
    """Search the runs of SPACE (a TOML file of lists of choices; default: the packaged space,
    every published configuration of BERTScore, MoverScore, BaryScore and WRD and the choices
    between them) on the human judgments in --data.

    The options of `alignscore score` (--model, --batch-size, ...) apply to every run, below
    what the space chooses. The search fits --budget: every run is screened on a sample of
    every language pair and the best go on to more segments (successive halving), each text
    encoded once per level and encoder. How well the choice does on a language pair it never
    saw is estimated by nested cross-validation (leave one language pair out, search on the
    others), beside each published configuration, with 95% intervals. Writes best.toml (for
    `alignscore score --config`; with --sources --remap, best.<lang>.toml per source language),
    leaderboard.md, leaderboard.csv, folds.csv, chart.png, with --holdout holdout.csv.
    """
    start = time.perf_counter()
    kwargs["output"] = kwargs["output"] or "tune-out"
    opts = command_opts(TuneOptions, kwargs)  # before anything loads
    result = run_tune(opts, progress=not quiet, log=progress_log(quiet, "tune"), command=command_line("tune"),
                      sources=sources_of(scorer_opts(kwargs), FLAGS))
    for line in result.summary():
        click.echo(line.replace("**", ""))
    if result.proposal is not None:
        p = result.proposal
        click.echo(f"combination of {len(p.weights.parts)}: nested estimate "
                   f"{p.folds.intervals['combined'].estimate:.3f} against the selection's {p.single.estimate:.3f} "
                   f"({p.gain:+.3f}): "
                   + ("kept as best.toml" if p.kept else "not kept (combination.toml)"))
    peak = peak_memory_mib()
    written = dict.fromkeys(str(p) for p in result.written.values())  # best.toml once, replaced by the combination
    click.echo(f"wrote {', '.join(written)} ({time.perf_counter() - start:.1f} s"
               + (f", peak memory {peak:.0f} MiB)" if peak is not None else ")"), err=True)
