"""``alignscore baseline``: a rescaling baseline for any model, in bert_score's file format."""

from __future__ import annotations

import click

from ..encoders.spec import EncoderSpec
from ..spec import encoder_of
from ..rescale import compute_baseline
from ..runtime import Runtime
from ..textio import check_output, read_lines, write_output
from . import main
from .options import output_option


@main.command()
@click.option("--model", required=True, help="Hugging Face hub id or local directory.")
@click.option("--corpus", required=True, type=click.Path(dir_okay=False),
              help="Text corpus, one sentence per line; random pairs of its lines are scored.")
@output_option("Where to write the baseline (CSV: LAYER,P,R,F, one row per layer).", required=True)
@click.option("--pairs", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="How many random pairs to average.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--device", default=None)
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
def baseline(model: str, corpus: str, output: str | None, pairs: int, seed: int, batch_size: int,
             device: str | None, quiet: bool) -> None:
    """Compute BERTScore's rescaling baseline b for every layer of MODEL: the mean P, R and F of
    random sentence pairs from CORPUS (no idf), written as bert_score's baseline files are."""
    check_output(output, [corpus])  # before any work: writable, and not the corpus
    runtime = Runtime(batch_size=batch_size, progress=not quiet, device=device)
    encoder = encoder_of(EncoderSpec(model), runtime.device)
    result = compute_baseline(encoder, read_lines(corpus), pairs=pairs, seed=seed, runtime=runtime)
    write_output(output, result.csv())
    click.echo(f"wrote {output or 'the baseline to standard output'}: layers 0..{max(result.rows)}, {pairs} random "
               f"pairs of {corpus}", err=True)
