"""``alignscore score``: score a file of candidates against one or more files of references."""

from __future__ import annotations

import sys
from typing import Any

import click
import numpy as np

from ..distributed import Shard, init_from_env, leave
from ..errors import InputError
from ..stream import clear_sidecar, score_stream
from ..textio import check_output, read_aligned, read_lines, replacing, write_scores
from . import main
from .options import build_scorer, option_files, scorer_options, scorer_opts


@main.command()
@click.option("-r", "--refs", "refs", multiple=True, type=click.Path(dir_okay=False),
              help="Reference file, one text per line; repeat for several references per candidate.")
@click.option("-c", "--cands", required=True, type=click.Path(dir_okay=False),
              help="Candidate file, one text per line.")
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
@click.option("--pairwise", is_flag=True, help="Every line of CANDS against every line of CANDS (no -r): "
              "the primary metric's N x N matrix as float32 to -o OUT.npy (self-similarity, diversity).")
def score(refs: tuple[str, ...], cands: str, fmt: str, output: str | None, quiet: bool, stream: bool,
          resume: bool, chunk_size: int, pairwise: bool, **kwargs: Any) -> None:
    """Score each line of CANDS against the same line of REFS.

    The corpus means and the signature go to stderr; per-candidate scores go to OUT. Under
    torchrun (one process per GPU or node) the ranks share the work and rank 0 writes OUT.
    """
    opts = scorer_opts(kwargs)
    if pairwise:
        _pairwise(refs, cands, fmt, output, quiet, stream or resume, opts)
        return
    if not refs:
        raise click.UsageError("Missing option '-r' / '--refs'.")
    shard, opts["device"] = init_from_env(opts.get("device"))
    _score(refs, cands, fmt, output, quiet, stream, resume, chunk_size, opts, shard)
    leave(shard)


def _pairwise(refs: tuple[str, ...], cands: str, fmt: str, output: str | None, quiet: bool, stream: bool,
              opts: dict[str, Any]) -> None:
    """``score --pairwise``: the primary metric of every line of CANDS (row i, candidate) against
    every line (column j, reference), written with numpy as an ``[N, N]`` float32 ``.npy``."""
    if refs:
        raise InputError("--pairwise scores every line of -c against every line of -c: give no -r")
    if not output or not output.endswith(".npy"):
        raise InputError("--pairwise writes a matrix: give -o OUT.npy (a file name ending in .npy)")
    if stream or fmt != "tsv":
        raise InputError("--pairwise writes one .npy matrix: --stream, --resume and --format do not apply")
    check_output(output, [cands, *option_files(opts)])
    texts = read_lines(cands)
    if not texts:
        raise InputError("is empty: there is nothing to score", cands)
    scorer = build_scorer(opts, progress=not quiet)
    matrix = scorer.pairwise(texts, texts)
    metric = scorer.resolved().metric
    with replacing(output) as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, matrix[metric].numpy().astype(np.float32))
    click.echo(f"{len(texts)} x {len(texts)} {metric} matrix: mean={float(matrix[metric].double().mean()):.6f}",
               err=True)
    click.echo(f"signature: {matrix.signature}", err=True)


def _score(refs: tuple[str, ...], cands: str, fmt: str, output: str | None, quiet: bool, stream: bool,
           resume: bool, chunk_size: int, opts: dict[str, Any], shard: Shard | None) -> None:
    """The work of :func:`score`, between joining and leaving the process group (if any)."""
    writer = shard is None or shard.rank == 0
    if (stream or resume) and not output:
        raise InputError("--stream and --resume write to a file: give -o OUT")
    if (stream or resume) and shard is not None:
        raise InputError("--stream does not run under torchrun yet: shard the input files instead")
    if output and writer:  # before any work: the output must be writable and none of the inputs
        check_output(output, [cands, *refs, *option_files(opts)])
    scorer = build_scorer(opts, progress=not quiet and writer)
    scorer.shard = shard
    if stream or resume:
        result = score_stream(scorer, cands, refs, output, fmt=fmt, resume=resume, chunk_size=chunk_size)
        means = " ".join(f"{k}={v:.6f}" for k, v in result.means.items())
        click.echo(f"{result.total} candidates ({result.scored} scored now): {means}", err=True)
        click.echo(f"signature: {result.signature}", err=True)
        return
    cand_texts, ref_groups = read_aligned(cands, refs)
    scores = scorer.score(cand_texts, ref_groups)
    if not writer:
        return
    if output:
        with replacing(output) as tmp:
            with open(tmp, "w", encoding="utf-8") as fh:
                write_scores(scores, fh, fmt, len(refs) > 1)
            clear_sidecar(output)  # before the rename: OUT never sits next to another run's signature
    else:
        write_scores(scores, sys.stdout, fmt, len(refs) > 1)
    means = " ".join(f"{k}={v:.6f}" for k, v in scores.means().items())
    click.echo(f"{len(scores)} candidates: {means}", err=True)
    click.echo(f"signature: {scores.signature}", err=True)
