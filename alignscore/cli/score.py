"""``alignscore score``: score a file of candidates against one or more files of references."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Any

import click
import numpy as np

from ..config import build
from ..distributed import Shard, init_from_env, leave
from ..errors import InputError
from ..evaluation.agreement import confidence_text, corpus_intervals, human_r
from ..evaluation.stats import SACREBLEU_SEED
from ..evaluation.wmt import read_human
from ..stream import clear_sidecar, score_stream
from ..textio import check_inputs, check_output, read_lines, replacing, write_scores
from . import main
from .inputs import Sources, input_options
from .options import SEED, compiled_of, needs, option_files, output_option, scorer_options, scorer_opts


@main.command()
@input_options
@scorer_options()
@click.option("--format", "fmt", type=click.Choice(["tsv", "jsonl"]), default="tsv", show_default=True,
              help="tsv: a header comment with the signature and means, then one row per candidate; "
                   "jsonl: one JSON object per candidate.")
@output_option("Output file.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@click.option("--stream", is_flag=True, help="Score in chunks with bounded memory, appending rows to "
              "OUT as they are done (needs -o; same rows as without).")
@click.option("--resume", is_flag=True, help="Keep the complete rows already in OUT and score the rest "
              "(implies --stream).")
@click.option("--chunk-size", type=click.IntRange(min=1), default=2000, show_default=True,
              help="Candidates per chunk with --stream or --resume.")
@click.option("--human", type=click.Path(dir_okay=False), default=None,
              help="Human scores, one number per candidate: print the Pearson r of the composition's metric "
                   "with them (e.g. to check a composition `alignscore tune` selected).")
@click.option("--confidence", is_flag=True, help="Also a bootstrap confidence interval of each metric's corpus "
              "mean (sacreBLEU's --confidence: percentile interval of resampled means, the same resamples for "
              "every metric).")
@click.option("--bootstrap", "resamples", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Resamples for --confidence.")
@click.option("--seed", type=SEED, default=SACREBLEU_SEED, show_default=True,
              help="Seed of the --confidence resamples.")
@click.option("--ray", "ray_address", metavar="ADDRESS|local", default=None,
              help="Score on a Ray cluster (pip install 'alignscore[ray]'): its address (ray://HOST:10001, or auto), "
                   "or local (a Ray started here); same output as without.")
@click.option("--ray-actors", type=click.IntRange(min=1), default=1, show_default=True,
              help="Actors scoring with --ray (each loads the model once).")
@click.option("--ray-gpus", type=click.FloatRange(min=0), default=0, show_default=True,
              help="GPUs per actor with --ray.")
@click.option("--pairwise", is_flag=True, help="Every line of CANDS against every line of CANDS (no -r): "
              "the primary metric's N x N matrix as float32 to -o OUT.npy (self-similarity, diversity).")
def score(refs: tuple[str, ...], cands: str | None, cand_texts: tuple[str, ...], ref_texts: tuple[str, ...],
          tsv: str | None, fmt: str, output: str | None, quiet: bool, stream: bool, resume: bool, chunk_size: int,
          human: str | None, confidence: bool, resamples: int, seed: int, ray_address: str | None, ray_actors: int,
          ray_gpus: float, pairwise: bool, **kwargs: Any) -> None:
    """Score each line of CANDS against the same line of REFS (or the pairs of --tsv FILE, or of
    --cand-text/--ref-text).

    The corpus means and the signature go to stderr; per-candidate scores go to OUT. Under
    torchrun (one process per GPU or node) the ranks share the work and rank 0 writes OUT; with
    --ray, the actors of a Ray cluster do.
    """
    needs(click.get_current_context(), {"chunk_size": ("stream", "resume"), "resamples": "confidence",
                                        "seed": "confidence", "ray_actors": "ray_address", "ray_gpus": "ray_address"})
    opts = scorer_opts(kwargs)
    if ray_address is not None and (pairwise or stream or resume):
        raise InputError("--ray scores the pairs at once: not with --pairwise, --stream or --resume")
    if pairwise:
        if human or confidence:
            raise InputError("--pairwise writes a matrix: --human and --confidence do not apply")
        if cand_texts or ref_texts or tsv:
            raise InputError("--pairwise reads one file of texts: give -c CANDS only")
        if not cands:
            raise click.UsageError("Missing option '-c' / '--cands'.")
        _pairwise(refs, cands, fmt, output, quiet, stream or resume, opts)
        return
    sources = Sources(cands, refs, cand_texts, ref_texts, tsv)
    shard, opts["device"] = init_from_env(opts.get("device"))
    if shard is not None and ray_address is not None:
        raise InputError("--ray shares the work between Ray actors: not under torchrun")
    _score(sources, fmt, output, quiet, stream, resume, chunk_size, opts, shard,
           _Judged(human, confidence, resamples, seed), _Ray(ray_address, ray_actors, ray_gpus))
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
    spec, provenance = compiled_of(opts, progress=not quiet)
    check_output(output, [cands, *option_files(spec, opts)])
    texts = read_lines(cands)
    if not texts:
        raise InputError("is empty: there is nothing to score", cands)
    scorer = build(spec, provenance=provenance)  # after the input is read: a bad file is found before the model loads
    matrix = scorer.pairwise(texts, texts)
    metric = scorer.resolved().metric
    with replacing(output) as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, matrix[metric].numpy().astype(np.float32))
    click.echo(f"{len(texts)} x {len(texts)} {metric} matrix: mean={float(matrix[metric].double().mean()):.6f}",
               err=True)
    click.echo(f"signature: {matrix.signature}", err=True)


@dataclass(frozen=True)
class _Judged:
    """What is computed from the scores beside them: the correlation with ``human`` scores and
    the bootstrap ``confidence`` interval of each mean."""

    human: str | None
    confidence: bool
    resamples: int
    seed: int


@dataclass(frozen=True)
class _Ray:
    """Where the pairs are scored: in this process (``address`` None) or by ``actors`` Ray
    actors with ``gpus`` each on the cluster at ``address``."""

    address: str | None = None
    actors: int = 1
    gpus: float = 0


def _score(sources: Sources, fmt: str, output: str | None, quiet: bool, stream: bool, resume: bool,
           chunk_size: int, opts: dict[str, Any], shard: Shard | None,
           judged: _Judged = _Judged(None, False, 1000, SACREBLEU_SEED), on: _Ray = _Ray()) -> None:
    """The work of :func:`score`, between joining and leaving the process group (if any)."""
    writer = shard is None or shard.rank == 0
    if (stream or resume) and not output:
        raise InputError("--stream and --resume write to a file: give -o OUT")
    if (stream or resume) and (judged.human or judged.confidence):
        raise InputError("--human and --confidence need every score at once: not with --stream or --resume")
    if (stream or resume) and shard is not None:
        raise InputError("--stream does not run under torchrun yet: shard the input files instead")
    if (stream or resume) and not sources.cands:
        raise InputError("--stream reads -c/-r files; --tsv and --cand-text/--ref-text are scored at once")
    spec, provenance = compiled_of(opts, progress=not quiet and writer)
    if output and writer:  # before any work: the output must be writable and none of the inputs
        check_output(output, [*sources.files, *option_files(spec, opts), judged.human])
    if stream or resume:
        check_inputs(sources.cands, sources.refs)  # every input read before the model loads
    else:
        cand_texts, ref_groups = sources.read()
        human = read_human(judged.human, len(cand_texts)) if judged.human else None
    scorer = build(replace(spec, runtime=replace(spec.runtime, shard=shard)), provenance=provenance)
    if stream or resume:
        result = score_stream(scorer, sources.cands, sources.refs, output, fmt=fmt, resume=resume,
                              files=option_files(spec, opts),
                              chunk_size=chunk_size)
        means = " ".join(f"{k}={v:.6f}" for k, v in result.means.items())
        click.echo(f"{result.total} candidates ({result.scored} scored now): {means}", err=True)
        click.echo(f"signature: {result.signature}", err=True)
        return
    if on.address is not None:
        from ..integrations.ray import score_pairs

        scores = score_pairs(cand_texts, ref_groups, spec, on.address, sources.several_refs, concurrency=on.actors,
                             num_gpus=on.gpus, progress=not quiet)
    else:
        scores = scorer.score(cand_texts, ref_groups)
    if not writer:
        return
    metric = scorer.composition.metric
    r = human_r(scores[metric], human, metric) if human is not None else None
    intervals = corpus_intervals(scores, judged.resamples, judged.seed) if judged.confidence else {}
    extra = [f"# confidence {confidence_text(intervals)}\n"] if intervals else []
    if output:
        with replacing(output) as tmp:
            with open(tmp, "w", encoding="utf-8") as fh:
                write_scores(scores, fh, fmt, sources.several_refs, extra)
            clear_sidecar(output)  # before the rename: OUT never sits next to another run's signature
    else:
        write_scores(scores, sys.stdout, fmt, sources.several_refs, extra)
    means = " ".join(f"{k}={v:.6f}" for k, v in scores.means().items())
    click.echo(f"{len(scores)} candidates: {means}", err=True)
    if intervals:
        click.echo(f"confidence: {confidence_text(intervals)}", err=True)
    if r is not None:
        click.echo(f"pearson r({metric}, human) = {r:.12f} (n = {len(human)})", err=True)
    click.echo(f"signature: {scores.signature}", err=True)
