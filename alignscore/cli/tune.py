"""``alignscore tune``: search a space of compositions on WMT DAseg human judgments."""

from __future__ import annotations

import time
from typing import Any

import click

from ..tune import DEFAULT_BUDGET_MIN, check_budget, tune as run_tune
from ..config import sources_of
from ..runtime import peak_memory_mib
from ..weighting.schemes import IdfL
from . import main
from .options import (command_line, objective_options, progress_log, quiet_option, scorer_options, scorer_opts,
                      seed_option, sources_option)


@main.command()
@click.argument("space", required=False, type=click.Path(dir_okay=False))
@click.option("--data", required=True, type=click.Path(file_okay=False),
              help="Folder of WMT DAseg files to select on (DAseg.newstest{YEAR}.{reference,mt-system,human}.<lp>).")
@scorer_options(exclude=(IdfL.corpus_setting(),))  # --idf-corpus below: the data's corpus (a template)
@click.option("-o", "--output", type=click.Path(file_okay=False), default="tune-out", show_default=True,
              help="Output folder.")
@click.option("--lang-pairs", multiple=True, help="Language pairs to select on, e.g. 'cs-en,de-en' (default: all).")
@click.option("--year", default=None, help="Which year, when the --data folder holds several.")
@sources_option("each MT output against its source (DAseg.*.source.*; --remap: a file, or a folder of <lang>.remap "
                "files), and --challenge items against their 'source' field")
@click.option("--idf-corpus", default=None,
              help="The idf-L corpus: a file, or a template like 'refs/newstest{year}-{src}{tgt}-ref.{tgt}' (one "
                   "corpus: every language pair's, together). Default: the official full reference files next to "
                   "the data, else every reference of the --data folder.")
@click.option("--holdout", type=click.Path(file_okay=False), default=None,
              help="Another DAseg folder: the selection and the published configurations are scored on it.")
@objective_options("the search")
@click.option("--budget", default=None, metavar="MINUTES",
              help=f"Minutes the whole command may take on this machine (default {DEFAULT_BUDGET_MIN:g}): the full "
                   "grid when it fits, else the successive-halving schedule that scores the most segments within it "
                   "(a cost measured here first, in at most a tenth of it). A --budget that even the cheapest "
                   "schedule exceeds is refused; the default one screens harder instead, and says so.")
@click.option("--skip-missing", is_flag=True,
              help="Leave out the runs of a model that is not on this machine (else: an error naming it).")
@click.option("--max-compositions", type=click.IntRange(min=1), default=5000, show_default=True,
              help="Refuse a space with more runs than this.")
@click.option("--bootstrap", type=click.IntRange(min=100), default=1000, show_default=True,
              help="Resamples of the intervals of the cross-validated estimates.")
@click.option("--combine", type=int, default=None, metavar="K", help="After the search, propose the best "
              "combination of at most K of the leaderboard's runs (weights fitted, docs/combinations.md); best.toml "
              "only where its nested estimate beats the single selection's.")
@seed_option(0, "Seed of the samples and the resamples.")
@quiet_option("No progress.")
def tune(space: str | None, data: str, output: str, lang_pairs: tuple[str, ...], year: str | None,
         against_sources: bool, idf_corpus: str | None, holdout: str | None, challenge_set: str | None, objective: str,
         budget: str | None, skip_missing: bool, max_compositions: int, bootstrap: int, combine: int | None, seed: int,
         quiet: bool, **kwargs: Any) -> None:
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
    minutes = check_budget(budget, "--budget") if budget is not None else None  # before anything loads
    result = run_tune(data, space, budget=minutes, objective=objective, challenge=challenge_set, holdout=holdout,
                      output=output, lang_pairs=lang_pairs, year=year, idf_corpus=idf_corpus,
                      max_compositions=max_compositions, bootstrap=bootstrap, seed=seed, skip_missing=skip_missing,
                      progress=not quiet, log=progress_log(quiet, "tune"), command=command_line("tune"),
                      sources=sources_of(scorer_opts(kwargs), style="flag"), against_sources=against_sources,
                      combine=combine)
    for line in result.summary():
        click.echo(line.replace("**", ""))
    if result.proposal is not None:
        p = result.proposal
        click.echo(f"combination of {len(p.weights.parts)}: nested estimate "
                   f"{p.folds.intervals['combined'].estimate:.3f} against the selection's {p.single.estimate:.3f} "
                   f"({p.gain:+.3f}): "
                   + ("kept as best.toml" if p.kept else "not kept (combination.toml)"))
    peak = peak_memory_mib()
    click.echo(f"wrote {', '.join(str(p) for p in result.written.values())} ({time.perf_counter() - start:.1f} s"
               + (f", peak memory {peak:.0f} MiB)" if peak is not None else ")"), err=True)
