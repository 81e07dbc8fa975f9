"""``alignscore perturb``: a challenge set made from candidates by deterministic perturbations."""

from __future__ import annotations

import click

from ..evaluation.perturb import KINDS, check_kinds, perturb_files
from . import main
from ..settings import comma_list
from .common import SEED, ManyValues, output_option


@main.command()
@click.option("-r", "--refs", "refs", cls=ManyValues, required=True, type=click.Path(dir_okay=False),
              help="Reference file, one text per line; several files give several references per candidate.")
@click.option("-c", "--cands", required=True, type=click.Path(dir_okay=False),
              help="Candidate file, one text per line: the correct candidates that are perturbed.")
@click.option("--seed", type=SEED, required=True, help="Seed of the perturbations (the same seed, the same set).")
@output_option("The challenge set to write (JSON lines).", required=True)
@click.option("--kinds", multiple=True, help=f"Kinds to make, e.g. 'number,negation' (default: all: "
              f"{', '.join(KINDS)}).")
def perturb(refs: tuple[str, ...], cands: str, seed: int, output: str | None, kinds: tuple[str, ...]) -> None:
    """Make a challenge set from CANDS: for every line and kind, the candidate as 'good', a
    perturbation of it as 'bad' (one error of that kind), the line's reference(s), the kind as
    the category and '<line>:<kind>' as the id. The kinds casing and punct_spacing are neutral
    controls (marked control: challenge reports their mean score change). Lines a kind does not
    apply to are skipped and counted (on stderr). See docs/challenge.md for every kind.

    \b
    alignscore perturb -r examples/refs.txt -c examples/cands.txt --seed 1 -o /tmp/set.jsonl
    """
    click.echo(perturb_files(cands, refs, seed, check_kinds(comma_list(kinds)), output), err=True)
