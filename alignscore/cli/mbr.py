"""``alignscore mbr``: minimum Bayes risk selection, one sample per block of K lines."""

from __future__ import annotations

from typing import Any

import click

from ..mbr import MbrOptions, mbr_file, read_samples
from . import main
from .common import option_files, output_option, quiet_option
from .options import command_options, command_opts, compiled_of, scorer_options, scorer_opts


@main.command()
@click.option("-c", "--cands", "samples_file", required=True, type=click.Path(dir_okay=False),
              help="Samples, one per line: each block of --samples consecutive lines is one source's.")
@command_options(MbrOptions)
@scorer_options()
@output_option("Output file.")
@quiet_option()
def mbr(samples_file: str, output: str | None, quiet: bool, **kwargs: Any) -> None:
    """Pick, for each source, the sample with the highest expected utility: the mean primary
    score (the composition's --metric) of the sample as candidate against each sample of its
    block as reference, itself included unless --exclude-self. Ties go to the first sample.
    Any composition is the utility; every text is encoded once for the whole file."""
    own = command_opts(MbrOptions, kwargs)  # before anything loads
    opts = scorer_opts(kwargs)
    spec, provenance = compiled_of(opts, progress=not quiet,  # the samples before the model's absence
                                   before_model=lambda: read_samples(samples_file, own))
    lines = mbr_file(spec, samples_file, own, output, option_files(spec, opts), provenance)
    click.echo("\n".join(lines), err=True)
