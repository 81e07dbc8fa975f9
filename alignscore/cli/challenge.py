"""``alignscore challenge``: accuracy of compositions on a challenge set, per category."""

from __future__ import annotations

from typing import Any

import click

from ..evaluation.challenge_report import ChallengeOptions, challenge_file, remap_option
from . import main
from .common import output_option, quiet_option, sides_specs
from .options import FLAGS, command_options, command_opts, scorer_options, scorer_opts


@main.command()
@click.argument("challenge_set", metavar="SET", type=click.Path(dir_okay=False))
@scorer_options()
@click.option("--a", "spec_a", default=None, help="Composition A: a preset name or scorer options in quotes, "
              "e.g. \"--aligner wmd --n-gram 2\" (default: the options outside --a/--b alone).")
@click.option("--b", "specs_b", multiple=True, help="A composition to compare with A, as --a; repeat for more "
              "(B1, B2, ...).")
@output_option("Output file.")
@command_options(ChallengeOptions)
@quiet_option()
def challenge(challenge_set: str, spec_a: str | None, specs_b: tuple[str, ...], output: str | None, quiet: bool,
              **kwargs: Any) -> None:
    """Score the challenge SET (JSON lines: ref or refs, good, bad, category, optional id and
    control, any other fields kept) and report, per composition and category (and 'all'; with
    --by FIELD, per value of that field too), the accuracy: the share of items whose good
    candidate gets a higher primary score than the bad one (a tie, within 1e-6, is a miss and
    counted in 'ties'), with a 95% bootstrap interval. Control categories
    report the mean score change bad - good instead. With --b, each B is compared with A by a
    paired bootstrap of the accuracy difference (delta = B - A, two-sided p). Each distinct
    text is encoded once for every composition of the same model. See docs/challenge.md.

    \b
    alignscore challenge examples/challenge.jsonl --model all-MiniLM-L6-v2 \\
        --b "--aligner wmd --n-gram 1"
    """
    opts = command_opts(ChallengeOptions, kwargs)  # before anything loads
    common, remap = remap_option(scorer_opts(kwargs), opts.against_sources, FLAGS)  # a file, or a folder: by each item's lp
    files: list[str] = []
    specs = sides_specs(common, [("--a", spec_a or "")] + [("--b", text) for text in specs_b], progress=not quiet,
                        files=files)
    challenge_file(specs, challenge_set, opts, output, files, lambda msg: click.echo(msg, err=True), remap)
    if output:
        click.echo(f"wrote {output}", err=True)
