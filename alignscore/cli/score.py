"""``alignscore score``: score a file of candidates against one or more files of references."""

from __future__ import annotations

import sys
from typing import Any

import click

from ..distributed import Shard, init_from_env, leave
from ..errors import InputError
from ..stream import clear_sidecar, score_stream
from ..textio import check_output, replacing, write_scores
from . import main
from .inputs import Sources, input_options
from .options import build_scorer, option_files, scorer_options, scorer_opts


@main.command()
@input_options
@scorer_options
@click.option("--format", "fmt", type=click.Choice(["tsv", "jsonl"]), default="tsv", show_default=True,
              help="tsv: a header comment with the signature and means, then one row per candidate; "
                   "jsonl: one JSON object per candidate.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Output file (default: stdout).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@click.option("--stream", is_flag=True, help="Score in chunks with bounded memory, appending rows to "
              "OUT as they are done (needs -o; same rows as without).")
@click.option("--resume", is_flag=True, help="Keep the complete rows already in OUT and score the rest "
              "(implies --stream).")
@click.option("--chunk-size", type=click.IntRange(min=1), default=2000, show_default=True,
              help="Candidates per chunk with --stream.")
def score(refs: tuple[str, ...], cands: str | None, cand_texts: tuple[str, ...], ref_texts: tuple[str, ...],
          tsv: str | None, fmt: str, output: str | None, quiet: bool, stream: bool, resume: bool, chunk_size: int,
          **kwargs: Any) -> None:
    """Score each line of CANDS against the same line of REFS (or the pairs of --tsv FILE, or of
    --cand-text/--ref-text).

    The corpus means and the signature go to stderr; per-candidate scores go to OUT. Under
    torchrun (one process per GPU or node) the ranks share the work and rank 0 writes OUT.
    """
    opts = scorer_opts(kwargs)
    sources = Sources(cands, refs, cand_texts, ref_texts, tsv)
    shard, opts["device"] = init_from_env(opts.get("device"))
    _score(sources, fmt, output, quiet, stream, resume, chunk_size, opts, shard)
    leave(shard)


def _score(sources: Sources, fmt: str, output: str | None, quiet: bool, stream: bool, resume: bool,
           chunk_size: int, opts: dict[str, Any], shard: Shard | None) -> None:
    """The work of :func:`score`, between joining and leaving the process group (if any)."""
    writer = shard is None or shard.rank == 0
    if (stream or resume) and not output:
        raise InputError("--stream and --resume write to a file: give -o OUT")
    if (stream or resume) and shard is not None:
        raise InputError("--stream does not run under torchrun yet: shard the input files instead")
    if (stream or resume) and not sources.cands:
        raise InputError("--stream reads -c/-r files; --tsv and --cand-text/--ref-text are scored at once")
    if output and writer:  # before any work: the output must be writable and none of the inputs
        check_output(output, [*sources.files, *option_files(opts)])
    scorer = build_scorer(opts, progress=not quiet and writer)
    scorer.shard = shard
    if stream or resume:
        result = score_stream(scorer, sources.cands, sources.refs, output, fmt=fmt, resume=resume,
                              chunk_size=chunk_size)
        means = " ".join(f"{k}={v:.6f}" for k, v in result.means.items())
        click.echo(f"{result.total} candidates ({result.scored} scored now): {means}", err=True)
        click.echo(f"signature: {result.signature}", err=True)
        return
    scores = scorer.score(*sources.read())
    if not writer:
        return
    if output:
        with replacing(output) as tmp:
            with open(tmp, "w", encoding="utf-8") as fh:
                write_scores(scores, fh, fmt, sources.several_refs)
            clear_sidecar(output)  # before the rename: OUT never sits next to another run's signature
    else:
        write_scores(scores, sys.stdout, fmt, sources.several_refs)
    means = " ".join(f"{k}={v:.6f}" for k, v in scores.means().items())
    click.echo(f"{len(scores)} candidates: {means}", err=True)
    click.echo(f"signature: {scores.signature}", err=True)
