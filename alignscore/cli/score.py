"""``alignscore score``: score a file of candidates against one or more files of references."""

from __future__ import annotations

import os
from typing import Any

import click

from ..config.schema import OPTION
from ..distributed import init_from_env, leave
from ..evaluation.stats import SACREBLEU_SEED
from ..combination import combination_in
from ..evaluation.wmt import read_human
from ..scorefiles import score_combination, score_file_stream, score_matrix, score_texts
from ..textio import check_output, check_readable
from . import main
from .inputs import Sources, input_options
from .common import needs, option_files, output_option, quiet_option, refuse, seed_option
from .options import FLAGS, compiled_of, scorer_options, scorer_opts


@main.command()
@input_options
@scorer_options()
@click.option("--format", "fmt", type=click.Choice(["tsv", "jsonl"]), default="tsv", show_default=True,
              help="tsv: a header comment with the signature and means, then one row per candidate; "
                   "jsonl: one JSON object per candidate.")
@output_option("Output file.")
@quiet_option()
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
@click.option("--bootstrap", "resamples", type=click.IntRange(min=40), default=1000, show_default=True,
              help="Resamples for --confidence.")
@seed_option(SACREBLEU_SEED, "Seed of the --confidence resamples.")
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
          source_file: str | None, tsv: str | None, tsv_sources: bool, fmt: str, output: str | None, quiet: bool,
          stream: bool, resume: bool, chunk_size: int, human: str | None, confidence: bool, resamples: int, seed: int,
          ray_address: str | None, ray_actors: int, ray_gpus: float, pairwise: bool, **kwargs: Any) -> None:
    """Score each line of CANDS against the same line of REFS (or of --sources FILE, or the pairs
    of --tsv FILE, or of --cand-text/--ref-text).

    The corpus means and the signature go to stderr; per-candidate scores go to OUT. Under
    torchrun (one process per GPU or node) the ranks share the work and rank 0 writes OUT; with
    --ray, the actors of a Ray cluster do.
    """
    needs(click.get_current_context(), {"chunk_size": ("stream", "resume"), "resamples": "confidence",
                                        "seed": "confidence", "ray_actors": "ray_address", "ray_gpus": "ray_address",
                                        "tsv_sources": "tsv"})
    opts = scorer_opts(kwargs)
    combination = combination_in(opts, FLAGS)  # --config names a [[parts]] file: its parts, the flags above each
    torchrun = os.environ.get("WORLD_SIZE", "1") != "1"
    refuse((combination is not None and (pairwise or torchrun),
            "a combination ([[parts]] in --config) is scored in one process or on Ray: not with --pairwise or "
            "under torchrun"),
           (ray_address is not None and (pairwise or stream or resume),
            "--ray scores the pairs at once: not with --pairwise, --stream or --resume"))
    if pairwise:
        refuse((human or confidence, "--pairwise writes a matrix: --human and --confidence do not apply"),
               (cand_texts or ref_texts or tsv, "--pairwise reads one file of texts: give -c CANDS only"))
        if not cands:
            raise click.UsageError("Missing option '-c' / '--cands'.")
        refuse((refs or source_file, "--pairwise scores every line of -c against every line of -c: give no -r"),
               (not output or not output.endswith(".npy"),
                "--pairwise writes a matrix: give -o OUT.npy (a file name ending in .npy)"),
               (stream or resume or fmt != "tsv",
                "--pairwise writes one .npy matrix: --stream, --resume and --format do not apply"))
        spec, provenance = compiled_of(opts, progress=not quiet)
        click.echo("\n".join(score_matrix(spec, cands, output, option_files(spec, opts), provenance)), err=True)
        return
    sources = Sources(cands, refs, cand_texts, ref_texts, tsv, source_file, tsv_sources)
    shard, opts[OPTION.device.name] = init_from_env(opts.get(OPTION.device.name))
    streamed = stream or resume
    refuse((shard is not None and ray_address is not None,
            "--ray shares the work between Ray actors: not under torchrun"),
           (streamed and not output, "--stream and --resume write to a file: give -o OUT"),
           (streamed and (human or confidence),
            "--human and --confidence need every score at once: not with --stream or --resume"),
           (streamed and shard is not None, "--stream does not run under torchrun yet: shard the input files instead"),
           (streamed and not sources.cands,
            "--stream reads -c/-r files; --tsv and --cand-text/--ref-text are scored at once"))
    if combination is not None:  # each part compiled already; built together (one encoding per model)
        files = option_files(combination, opts)
        if streamed:
            lines = score_file_stream(combination, sources.cands, sources.sides, output, fmt, resume, chunk_size,
                                      files, against_sources=sources.against_sources)
        else:
            if output:
                check_output(output, [*sources.files, *files, human])
            ray = (ray_address, ray_actors, ray_gpus) if ray_address is not None else None
            lines = score_combination(combination, *sources.read(), output, fmt, sources.several_refs, human,
                                      sources.against_sources, confidence, resamples, seed, ray, not quiet, "--ray")
        for line in lines:
            click.echo(line, err=True)
        return
    writer = shard is None or shard.rank == 0
    read: list[tuple[list[str], list[list[str]]]] = []

    def inputs() -> None:  # the texts and human scores, after the options' values, before the model's absence
        if streamed:
            check_readable(sources.files)
            return
        read.append(sources.read())
        if human:
            read_human(human, len(read[0][0]))

    spec, provenance = compiled_of(opts, progress=not quiet and writer, before_model=inputs)
    files = option_files(spec, opts)
    if output and writer:  # before any work: the output must be writable and none of the inputs
        check_output(output, [*sources.files, *files, human])
    if streamed:
        lines = score_file_stream(spec, sources.cands, sources.sides, output, fmt, resume, chunk_size, files,
                                  provenance, sources.against_sources)
    else:
        ray = (ray_address, ray_actors, ray_gpus) if ray_address is not None else None
        lines = score_texts(spec, *read[0], output, fmt, sources.several_refs, human, confidence, resamples,
                            seed, shard, ray, not quiet, provenance, sources.against_sources, "--ray")
    for line in lines:
        click.echo(line, err=True)
    leave(shard)
