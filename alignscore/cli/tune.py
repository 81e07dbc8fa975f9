"""``alignscore tune``: search a space of compositions on WMT DAseg human judgments."""

from __future__ import annotations

import shlex
import sys
import time

import click

from ..encoders.spec import EncoderSpec
from ..spec import encoder_of
from ..errors import ConfigError
from ..evaluation.leaderboard import output_paths, summary, write_outputs
from ..evaluation.search import aligner_runs, estimate_seconds, reference_composition, tune as run_tune
from ..evaluation.space import load_space
from ..evaluation.wmt import load_daseg
from ..runtime import Runtime
from ..textio import check_output_folder
from . import main
from .ablate import _split


@main.command()
@click.argument("space", required=False, type=click.Path(dir_okay=False))
@click.option("--data", required=True, type=click.Path(file_okay=False),
              help="Folder of WMT DAseg files to select on (DAseg.newstest{YEAR}.{reference,mt-system,human}.<lp>).")
@click.option("--model", required=True, help="Hugging Face hub id or local directory (e.g. all-MiniLM-L6-v2).")
@click.option("-o", "--output", type=click.Path(file_okay=False), default="tune-out", show_default=True,
              help="Output folder.")
@click.option("--lang-pairs", multiple=True, help="Language pairs to select on, e.g. 'cs-en,de-en' (default: all).")
@click.option("--year", default=None, help="Which year, when the --data folder holds several.")
@click.option("--holdout", type=click.Path(file_okay=False), default=None,
              help="Another DAseg folder: the selection and BERTScore's default are scored on it.")
@click.option("--layer", type=int, default=None,
              help="The layer of the BERTScore reference composition (default: the model's tuned layer).")
@click.option("--max-compositions", type=click.IntRange(min=1), default=2000, show_default=True,
              help="Refuse a space with more compositions than this.")
@click.option("--budget", type=click.FloatRange(min=0, min_open=True), default=15.0, show_default=True,
              help="Refuse a space whose estimated time on a 2-core CPU is more than this many minutes.")
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--device", default=None, help="cpu, cuda, cuda:1, ... Default: CUDA when available.")
@click.option("-q", "--quiet", is_flag=True, help="No progress.")
def tune(space: str | None, data: str, model: str, output: str, lang_pairs: tuple[str, ...], year: str | None,
         holdout: str | None, layer: int | None, max_compositions: int, budget: float, batch_size: int,
         device: str | None, quiet: bool) -> None:
    """Search the compositions of SPACE (a TOML file of lists of choices; default: the packaged
    space) on the human judgments in --data, with one encoding of every sentence.

    Selects the composition with the best mean |Pearson r| over the language pairs, estimates
    how that choice generalises by leave-one-language-pair-out cross-validation, and writes
    best.toml (for `alignscore score --config`), leaderboard.md, leaderboard.csv, folds.csv,
    chart.png and, with --holdout, holdout.csv into the output folder.
    """
    start = time.perf_counter()
    say = (lambda msg: None) if quiet else (lambda msg: click.echo(f"[tune] {msg}", err=True))
    parsed = load_space(space)
    paths = output_paths(output, holdout is not None)
    check_output_folder(output, [p.name for p in paths.values()], [space])  # before any work
    pairs = load_daseg(data, _split(lang_pairs), year=year)
    held = load_daseg(holdout) if holdout is not None else []
    candidates = parsed.candidates(max_compositions)  # every composition built before any encoding
    runtime = Runtime(batch_size=batch_size, progress=not quiet, device=device)
    encoder = encoder_of(EncoderSpec(model), runtime.device)
    reference = reference_composition(encoder, layer)
    compositions = [c.resolve(encoder) for c in candidates] + [reference]
    n_pairs = sum(len(lp) for lp in pairs)
    n_texts = len({t.strip() for lp in pairs for t in lp.references + lp.candidates})
    estimate = estimate_seconds(compositions, n_pairs, n_texts)
    runs = len(aligner_runs(compositions))
    size = (f"{len(candidates)} compositions, {runs} distinct aligner runs x {n_pairs} pairs: about "
            f"{estimate / 60:.1f} min estimated on a 2-core CPU")
    if estimate > budget * 60:
        raise ConfigError(f"the space is too large for --budget {budget:g} min: {size}; narrow its lists or "
                          "raise --budget")
    say(f"{parsed.source}: {size}")
    run = run_tune(encoder, candidates, pairs, runtime, reference, held, holdout, log=say)
    say("writing outputs")
    command = "alignscore " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["tune"] else None
    run.seconds["wall"] = time.perf_counter() - start
    written = write_outputs(output, run, data, command)
    for line in summary(run):
        click.echo(line.replace("**", ""))
    click.echo(f"wrote {', '.join(str(p) for p in written.values())} ({time.perf_counter() - start:.1f} s"
               f"{_peak_memory()})", err=True)


def _peak_memory() -> str:
    """``, peak memory N MiB`` (this process's peak resident set), where the system says it."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return ""
    return f", peak memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
