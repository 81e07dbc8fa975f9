"""``alignscore baseline``: a rescaling baseline for any model, in bert_score's file format."""

from __future__ import annotations

from typing import Any

import click

from ..config import encoder_of
from ..rescale import compute_baseline
from ..textio import check_output, read_lines, write_output
from . import main
from .options import SEED, given, output_option, scorer_options, scorer_opts, spec_of


@main.command()
@scorer_options(groups=("encoder", "runtime", "cache"))
@click.option("--corpus", required=True, type=click.Path(dir_okay=False),
              help="Text corpus, one sentence per line; random pairs of its lines are scored.")
@output_option("Where to write the baseline (CSV: LAYER,P,R,F, one row per layer).", required=True)
@click.option("--pairs", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="How many random pairs to average.")
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
def baseline(corpus: str, output: str | None, pairs: int, seed: int, quiet: bool, **kwargs: Any) -> None:
    """Compute BERTScore's rescaling baseline b for every layer of --model: the mean P, R and F
    of random sentence pairs from CORPUS (no idf), written as bert_score's baseline files are.
    The encoder, runtime and cache options are those of `alignscore score`."""
    ctx = click.get_current_context()
    if not given(ctx, "model") and not given(ctx, "lang"):
        raise click.UsageError("Missing option '--model' (the model whose layers the baseline is for).")
    spec = spec_of(scorer_opts(kwargs), progress=not quiet)
    check_output(output, [corpus, *spec.files()])  # before any work: writable, and not an input
    encoder = encoder_of(spec.encoder, spec.runtime.device)
    if spec.cache is not None:
        from ..encoders.cached import CachedEncoder

        encoder = CachedEncoder(encoder, spec.cache.build())
    result = compute_baseline(encoder, read_lines(corpus), pairs=pairs, seed=seed, runtime=spec.runtime)
    write_output(output, result.csv())
    click.echo(f"wrote {output or 'the baseline to standard output'}: layers 0..{max(result.rows)}, {pairs} random "
               f"pairs of {corpus}", err=True)
