"""``alignscore tune``: search a space of compositions on WMT DAseg human judgments."""

from __future__ import annotations

import shlex
import sys
import time
from typing import Any

import click

from ..config import compile_run
from ..evaluation.leaderboard import output_paths, summary, write_outputs
from ..evaluation.search import aligner_runs, estimate_seconds, prepare, tune as run_tune
from ..evaluation.space import load_space
from ..evaluation.wmt import load_daseg
from ..errors import ConfigError
from ..textio import check_output_folder
from . import main
from .ablate import _split
from .options import flag_sources, scorer_options, scorer_opts


@main.command()
@click.argument("space", required=False, type=click.Path(dir_okay=False))
@click.option("--data", required=True, type=click.Path(file_okay=False),
              help="Folder of WMT DAseg files to select on (DAseg.newstest{YEAR}.{reference,mt-system,human}.<lp>).")
@scorer_options()
@click.option("-o", "--output", type=click.Path(file_okay=False), default="tune-out", show_default=True,
              help="Output folder.")
@click.option("--lang-pairs", multiple=True, help="Language pairs to select on, e.g. 'cs-en,de-en' (default: all).")
@click.option("--year", default=None, help="Which year, when the --data folder holds several.")
@click.option("--holdout", type=click.Path(file_okay=False), default=None,
              help="Another DAseg folder: the selection and the reference are scored on it.")
@click.option("--max-compositions", type=click.IntRange(min=1), default=2000, show_default=True,
              help="Refuse a space with more runs than this.")
@click.option("--budget", type=click.FloatRange(min=0, min_open=True), default=15.0, show_default=True,
              help="Refuse a space whose time on this machine, measured on a sample before the search, is more "
                   "than this many minutes.")
@click.option("-q", "--quiet", is_flag=True, help="No progress.")
def tune(space: str | None, data: str, output: str, lang_pairs: tuple[str, ...], year: str | None,
         holdout: str | None, max_compositions: int, budget: float, quiet: bool, **kwargs: Any) -> None:
    """Search the runs of SPACE (a TOML file of lists of choices; default: the packaged
    space) on the human judgments in --data, with one encoding of every sentence per encoder.

    The options of `alignscore score` (--model, --layer, --batch-size, ...) apply to every
    candidate, below what the space chooses; alone, they describe the reference the leaderboard
    compares with (BERTScore's default unless they say otherwise).
    Selects the composition with the best mean |Pearson r| over the language pairs, estimates
    how that choice generalises by leave-one-language-pair-out cross-validation, and writes
    best.toml (for `alignscore score --config`), leaderboard.md, leaderboard.csv, folds.csv,
    chart.png and, with --holdout, holdout.csv into the output folder.
    """
    start = time.perf_counter()
    say = (lambda msg: None) if quiet else (lambda msg: click.echo(f"[tune] {msg}", err=True))
    parsed = load_space(space)
    flags = flag_sources(scorer_opts(kwargs))
    paths = output_paths(output, holdout is not None)
    check_output_folder(output, [p.name for p in paths.values()], [space])  # before any work
    pairs = load_daseg(data, _split(lang_pairs), year=year)
    held = load_daseg(holdout) if holdout is not None else []
    candidates = parsed.candidates(flags, max_compositions)  # every run compiled before any model loads
    reference = compile_run(flags)
    entries, ref_index, scorers = prepare(candidates, reference)  # checked against the models' configurations
    compositions = [e.composition for e in entries]
    n_pairs = sum(len(lp) for lp in pairs)
    estimate = estimate_seconds(scorers, compositions, pairs)
    size = (f"{len(entries)} compositions, {len(aligner_runs(compositions))} distinct aligner runs x {n_pairs} "
            f"pairs: about {estimate / 60:.1f} min, measured on a sample here")
    if estimate > budget * 60:
        raise ConfigError(f"the space is too large for --budget {budget:g} min: {size}; narrow its lists or "
                          "raise --budget")
    say(f"{parsed.path}: {size}")
    run = run_tune(entries, ref_index, scorers, pairs, held, holdout, progress=not quiet, log=say)
    say("writing outputs")
    command = "alignscore " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["tune"] else None
    run.seconds["wall"] = time.perf_counter() - start
    written = write_outputs(output, run, data, command)
    for line in summary(run):
        click.echo(line.replace("**", ""))
    click.echo(f"wrote {', '.join(str(p) for p in written.values())} ({time.perf_counter() - start:.1f} s"
               f"{_peak_memory()})", err=True)


def _peak_memory() -> str:
    """``, peak memory N MiB`` (this process's peak resident set), where the system says it."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return ""
    return f", peak memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
