"""``alignscore diff``: two compositions on the same pairs, and the pairs where they disagree most."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..errors import ConfigError
from ..evaluation.diff import check_diff_folder, write_diff
from . import main
from .common import ManyValues, quiet_option, sides_specs
from .options import scorer_options, scorer_opts


@main.command()
@click.option("-r", "--refs", "refs", cls=ManyValues, required=True, type=click.Path(dir_okay=False),
              help="Reference file, one text per line; several files (-r a.txt b.txt, or -r repeated) give "
                   "several references per candidate.")
@click.option("-c", "--cands", required=True, type=click.Path(dir_okay=False),
              help="Candidate file, one text per line.")
@click.option("--a", "spec_a", required=True,
              help="Composition A: a preset name or scorer options in quotes, e.g. \"--aligner greedy\".")
@click.option("--b", "spec_b", required=True, help="Composition B, as --a.")
@scorer_options()
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True,
              help="How many of the most disputed pairs to list and explain.")
@click.option("--format", "fmt", type=click.Choice(["text", "png", "svg", "html"]), default="text",
              show_default=True, help="How the alignments are shown: text tables on stdout (or in -o DIR), "
                                     "or png/svg/html files in -o DIR.")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Folder for diff.tsv (every pair) and the alignments (line<N>-a.<fmt>, line<N>-b.<fmt>).")
@quiet_option()
def diff(refs: tuple[str, ...], cands: str, spec_a: str, spec_b: str, top: int, fmt: str,
         out_dir: str | None, quiet: bool, **kwargs: Any) -> None:
    """Score the same pairs with two compositions, A and B, and list the pairs where they
    disagree most, with both alignments, to see what changing one part does.

    Scales differ between compositions, so pairs are compared by rank: each composition ranks
    the pairs by its primary score (1 = best; F1 for greedy, the score for OT) and pairs are
    ordered by |rank A - rank B|. Options outside --a/--b apply to both sides; --a/--b override.
    A side whose --config is a combination ([[parts]]) ranks by its combined score and shows
    each part's alignment.

    \b
    alignscore diff -r refs.txt -c cands.txt --model all-MiniLM-L6-v2 \\
        --a "--aligner greedy --layer 4" --b "--aligner wmd --layer 4" --top 5
    """
    if fmt in ("png", "svg", "html") and out_dir is None:
        raise ConfigError(f"--format {fmt} writes files: give a folder with -o DIR")
    common = scorer_opts(kwargs)
    files: list[str] = []
    run_a, run_b = sides_specs(common, [("--a", spec_a), ("--b", spec_b)], progress=not quiet, files=files,
                               combinations=True)
    if out_dir is not None:  # before any work: the folder must be writable and hold none of the inputs
        check_diff_folder(out_dir, [cands, *refs, *files], fmt)
    shown = write_diff(run_a, run_b, cands, refs, top, fmt, out_dir, click.get_text_stream("stdout"))
    if out_dir is not None and shown:
        click.echo(f"wrote {Path(out_dir) / 'diff.tsv'} and the alignments of {shown} pair(s)", err=True)
