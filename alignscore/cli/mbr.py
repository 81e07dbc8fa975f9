"""``alignscore mbr``: minimum Bayes risk selection, one sample per block of K lines."""

from __future__ import annotations

from typing import Any

import click

from ..mbr import mbr_file, read_samples
from . import main
from .common import option_files, output_option, quiet_option
from .options import compiled_of, scorer_options, scorer_opts


@main.command()
@click.option("-c", "--cands", "samples_file", required=True, type=click.Path(dir_okay=False),
              help="Samples, one per line: each block of --samples consecutive lines is one source's.")
@click.option("--samples", "k", type=click.IntRange(min=1), default=None,
              help="Samples per source (K). Default: the whole file is one block.")
@click.option("--exclude-self", is_flag=True,
              help="Expected utility over the other samples of the block only (j != i).")
@scorer_options()
@click.option("--format", "fmt", type=click.Choice(["tsv", "jsonl"]), default="tsv", show_default=True,
              help="tsv: a signature comment line, then 'block index utility text' rows; jsonl: one "
                   "object per block with those keys.")
@output_option("Output file.")
@quiet_option()
def mbr(samples_file: str, k: int | None, exclude_self: bool, fmt: str, output: str | None, quiet: bool,
        **kwargs: Any) -> None:
    """Pick, for each source, the sample with the highest expected utility: the mean primary
    score (the composition's --metric) of the sample as candidate against each sample of its
    block as reference, itself included unless --exclude-self. Ties go to the first sample.
    Any composition is the utility; every text is encoded once for the whole file."""
    opts = scorer_opts(kwargs)
    spec, provenance = compiled_of(opts, progress=not quiet,  # the samples before the model's absence
                                   before_model=lambda: read_samples(samples_file, k, exclude_self))
    lines = mbr_file(spec, samples_file, k, exclude_self, fmt, output, option_files(spec, opts), provenance)
    click.echo("\n".join(lines), err=True)
