"""``alignscore ablate``: run an ablation grid over WMT DAseg data and meta-evaluate every cell."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import click

from ..ablation import evaluate, load_grid, run_grid, write_outputs
from ..ablation.report import OUTPUT_FILES
from ..evaluation.stats import CORRELATIONS
from ..evaluation.wmt import load_daseg
from ..textio import check_output
from . import main


def _split(values: tuple[str, ...]) -> list[str] | None:
    out = [v.strip() for text in values for v in text.split(",") if v.strip()]
    return out or None


@main.command()
@click.argument("grid", type=click.Path(dir_okay=False))
@click.option("--data", required=True, type=click.Path(file_okay=False),
              help="Folder of WMT DAseg files (DAseg.newstest{YEAR}.{reference,mt-system,human}.<lp>).")
@click.option("--model", default=None, help="Use this model for every model role of the grid but 'mnli'.")
@click.option("--layer", type=int, default=None,
              help="Single layer for every model role (rows that name their own layer keep it).")
@click.option("--mnli-model", default=None, help="Use this model for the grid's 'mnli' role.")
@click.option("--lang-pairs", multiple=True, help="Language pairs to run, e.g. 'cs-en,de-en' (default: all found).")
@click.option("--year", default=None, help="Which year, when the folder holds several.")
@click.option("--idf-corpus", default=None,
              help="idf-L corpus: a file, or a template like 'refs/newstest{year}-{src}{tgt}-ref.{tgt}' "
                   "(default: the official full reference file next to the data, when it is there).")
@click.option("--correlation", "correlations", multiple=True, type=click.Choice(CORRELATIONS),
              help="Correlation(s) to report; the first one is tabled (default: pearson). Repeat for more.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="Significance level of the Williams test (bold cells).")
@click.option("--bootstrap", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Bootstrap resamples for confidence intervals of |r| (0: none).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option("--download", is_flag=True, help="Allow models that are not on this machine to be downloaded.")
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--device", default=None, help="cpu, cuda, cuda:1, ... Default: CUDA when available.")
@click.option("-o", "--output", type=click.Path(file_okay=False), default=None,
              help="Output folder (default: ablation-<grid name>).")
@click.option("-q", "--quiet", is_flag=True, help="No progress.")
def ablate(grid: str, data: str, model: str | None, layer: int | None, mnli_model: str | None,
           lang_pairs: tuple[str, ...], year: str | None, idf_corpus: str | None, correlations: tuple[str, ...],
           alpha: float, bootstrap: int, seed: int, download: bool, batch_size: int, device: str | None,
           output: str | None, quiet: bool) -> None:
    """Run the ablation GRID (a TOML file, see docs/ablation.md) on the DAseg data in --data.

    Writes table.md (the layout of BERTScore Table 9), results.csv (long form: row, aligner,
    language pair, r, p-value, ...), chart.png and signatures.tsv into the output folder. Rows
    whose model is not on this machine are skipped with a note.
    """
    start = time.perf_counter()
    say = (lambda msg: None) if quiet else (lambda msg: click.echo(f"[ablate] {msg}", err=True))
    spec = load_grid(grid).with_models(model=model, layer=layer, mnli_model=mnli_model)
    pairs = load_daseg(data, _split(lang_pairs), year=year, idf_corpus=idf_corpus)  # checks the data first
    out = Path(output or f"ablation-{spec.name}")
    for name in OUTPUT_FILES.values():  # before any work: the folder must be writable and hold none of the inputs
        check_output(out / name, [grid, idf_corpus])
    say(f"{spec.name}: {len(spec.rows)} rows x {len(spec.columns)} columns x {len(pairs)} language pair(s)")
    run = run_grid(spec, pairs, device=device, batch_size=batch_size, download=download,
                   progress=not quiet, log=say)
    methods = list(dict.fromkeys(correlations)) or ["pearson"]
    say("meta-evaluating" + (f" ({bootstrap} bootstrap resamples)" if bootstrap and "pearson" in methods else ""))
    stats = evaluate(run, methods, alpha=alpha, bootstrap=bootstrap, seed=seed)
    command = "alignscore " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["ablate"] else None
    run.seconds["wall"] = time.perf_counter() - start
    paths = write_outputs(out, run, stats, methods[0], alpha, command)
    click.echo(paths["table"].read_text(encoding="utf-8"))
    skipped = len({(c.row, c.column) for c in run.cells if c.skipped})
    click.echo(f"wrote {', '.join(str(p) for p in paths.values())} ({skipped} cell(s) skipped; "
               f"{time.perf_counter() - start:.1f} s)", err=True)
