"""``alignscore fit``: learn a composition's continuous settings on WMT DAseg human judgments."""

from __future__ import annotations

from typing import Any

import click

from ..config import sources_of
from ..config.schema import OPTION
from ..fit.run import FitOptions
from . import main
from .common import progress_log, quiet_option
from .options import FLAGS, command_options, command_opts, scorer_options, scorer_opts


@main.command()
@scorer_options(names=(OPTION.model.name, OPTION.remap.name, OPTION.lm.name, OPTION.lm_score.name))
@command_options(FitOptions)
@quiet_option("No progress.")
def fit(quiet: bool, **kwargs: Any) -> None:
    """Fit the continuous settings of a composition (the layer mix, a soft greedy match's
    temperature, the idf exponent, F-beta's beta) to the human judgments in --data, by gradient
    on the mean Pearson r over language pairs, every text encoded once; with two or more --from,
    the weights of their combination.

    With --sources, every MT output is scored against its source (--remap: a file, or a folder
    of <lang>.remap files) and the weight of the --lm term is learned, with its location and scale
    (the training candidates' LM scores), the composition and its remapping fixed.

    With two or more language pairs, nested cross-validation (leave one language pair out, fit
    on the others) estimates the fitted metric's held-out mean |r| beside its start's, with 95%
    intervals; with one, the fit runs but no estimate is made. best.toml is an ordinary run
    file: `alignscore score --config best.toml` gives the scores in scores.csv.
    """
    from ..fit.run import fit as run_fit

    kwargs["output"] = kwargs["output"] or "fit-out"
    opts = command_opts(FitOptions, kwargs)
    sources = sources_of(scorer_opts(kwargs), FLAGS)
    if opts.start is not None and len(opts.start) > 1:  # a combination's weights (docs/combinations.md)
        result = run_fit(opts, sources=sources, say=progress_log(quiet, "fit"))
        click.echo("\n".join(result.summary()))
        click.echo(f"wrote {opts.output}/best.toml and the leaderboard ({result.seconds:.1f} s)", err=True)
        return
    result = run_fit(opts, sources=sources, quiet=quiet, say=progress_log(quiet, "fit"))
    if result.note:
        click.echo(f"alignscore: note: {result.note}", err=True)
    click.echo("\n".join(result.summary()))
    kept = f"; kept {result.state_bytes / 2**20:.0f} MiB" if not opts.against_sources else ""
    click.echo(f"wrote {opts.output}/best.toml and the leaderboard ({result.seconds:.1f} s{kept})", err=True)
