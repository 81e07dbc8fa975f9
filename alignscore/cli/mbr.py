"""``alignscore mbr``: minimum Bayes risk selection, one sample per block of K lines."""

from __future__ import annotations

from typing import Any

import click

from ..errors import InputError
from ..mbr import check_blocks, mbr_select, mbr_signature, write_selections
from ..textio import check_output, output_stream, read_lines
from . import main
from ..config import build
from .options import compiled_of, option_files, output_option, scorer_options, scorer_opts


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
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
def mbr(samples_file: str, k: int | None, exclude_self: bool, fmt: str, output: str | None, quiet: bool,
        **kwargs: Any) -> None:
    """Pick, for each source, the sample with the highest expected utility: the mean primary
    score (the composition's --metric) of the sample as candidate against each sample of its
    block as reference, itself included unless --exclude-self. Ties go to the first sample.
    Any composition is the utility; every text is encoded once for the whole file."""
    opts = scorer_opts(kwargs)
    spec, provenance = compiled_of(opts, progress=not quiet)
    check_output(output, [samples_file, *option_files(spec, opts)])
    samples = read_lines(samples_file)
    if not samples:
        raise InputError("is empty: there are no samples to select from", samples_file)
    k = k or len(samples)
    check_blocks(len(samples), k, exclude_self, samples_file)
    scorer = build(spec, provenance=provenance)
    selections = mbr_select(scorer, samples, k, exclude_self)
    signature = mbr_signature(scorer.signature(), k, exclude_self)
    with output_stream(output) as fh:
        write_selections(selections, signature, fmt, fh)
    mean = sum(s.utility for s in selections) / len(selections)
    click.echo(f"{len(selections)} blocks of {k} samples: mean selected utility={mean:.6f}", err=True)
    click.echo(f"signature: {signature}", err=True)
