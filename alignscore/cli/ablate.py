"""``alignscore ablate``: run an ablation grid over WMT DAseg data and meta-evaluate every cell."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from typing import Any, Callable

import click

from ..ablation import evaluate, load_grid, run_grid, write_outputs
from ..ablation import challenge as grid_challenge
from ..ablation.grid import Grid
from ..ablation.report import OUTPUT_FILES
from ..config.compile import Source
from ..config.schema import options
from ..errors import ConfigError
from ..evaluation.challenge import check_sizes, read_items, settle_repeats
from ..evaluation.stats import CORRELATIONS
from ..evaluation.wmt import load_daseg
from ..textio import check_output_folder, read_lines
from . import main
from .inputs import comma_list
from .options import SEED, flag_sources, needs, scorer_options, scorer_opts




@main.command()
@click.argument("grid", type=click.Path(dir_okay=False))
@click.option("--data", default=None, type=click.Path(file_okay=False),
              help="Folder of WMT DAseg files (DAseg.newstest{YEAR}.{reference,mt-system,human}.<lp>).")
@click.option("--challenge", "challenge_set", default=None, type=click.Path(dir_okay=False),
              help="Or a challenge set (JSON lines, see 'alignscore challenge'): accuracy per category instead of "
                   "correlations; writes table.md, results.jsonl and heatmap.png.")
@scorer_options(exclude=("idf_corpus",))
@click.option("--mnli-model", default=None, help="Use this model for the grid's 'mnli' role.")
@click.option("--static-model", default=None,
              help="Use this static table (a model2vec folder or a word2vec file) for the grid's 'static' role.")
@click.option("--lang-pairs", multiple=True, help="Language pairs to run, e.g. 'cs-en,de-en' (default: all found).")
@click.option("--year", default=None, help="Which year, when the folder holds several.")
@click.option("--idf-corpus", default=None,
              help="idf-L corpus: a file, or a template like 'refs/newstest{year}-{src}{tgt}-ref.{tgt}' "
                   "(default: the official full reference file next to the data, when it is there).")
@click.option("--correlation", "correlations", multiple=True, type=click.Choice(CORRELATIONS),
              help="Correlation(s) to report; the first one is tabled (default: pearson). Repeat for more.")
@click.option("--significance", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="Significance level of the Williams test (bold cells).")
@click.option("--bootstrap", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Bootstrap resamples for confidence intervals of |r| (0: none).")
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="Seed of the bootstrap.")
@click.option("--download", is_flag=True, help="Allow models that are not on this machine to be downloaded.")
@click.option("--skip-missing", is_flag=True, help="Skip the cells whose model is not on this machine (or cannot be "
              "loaded), with a note under the table, instead of stopping with an error.")
@click.option("-o", "--output", type=click.Path(file_okay=False), default=None,
              help="Output folder (default: ablation-<grid name>).")
@click.option("--dedupe", is_flag=True, help="With --challenge: drop items that repeat an earlier one (as "
              "'alignscore challenge --dedupe').")
@click.option("-q", "--quiet", is_flag=True, help="No progress.")
def ablate(grid: str, data: str | None, challenge_set: str | None, mnli_model: str | None, static_model: str | None,
           lang_pairs: tuple[str, ...], year: str | None, idf_corpus: str | None, correlations: tuple[str, ...],
           significance: float, bootstrap: int, seed: int, download: bool, skip_missing: bool, output: str | None,
           dedupe: bool, quiet: bool, **kwargs: Any) -> None:
    """Run the ablation GRID (a TOML file, see docs/ablation.md) on the DAseg data in --data.

    Writes table.md (the layout of BERTScore Table 9), results.csv (long form: row, aligner,
    language pair, r, p-value, ...), chart.png and signatures.tsv into the output folder. Every
    cell is checked first, and every error is reported (a line each) before anything runs; a
    model that is not on this machine is one, unless --skip-missing skips its cells with a note.

    The options of `alignscore score` apply to every cell, above its model role and below the
    grid's [defaults], columns and rows (--model replaces every role but 'mnli' and 'static',
    whose models --mnli-model and --static-model name).

    With --challenge SET instead of --data: every cell's accuracy on each category of the
    challenge set (cells as rows, categories as columns, the best per column in bold), with
    sacreBLEU's sentence BLEU and chrF as reference rows when sacrebleu is installed; idf-L rows
    read --idf-corpus FILE.
    """
    start = time.perf_counter()
    say = (lambda msg: None) if quiet else (lambda msg: click.echo(f"[ablate] {msg}", err=True))
    if (data is None) == (challenge_set is None):
        raise ConfigError("give either --data DIR (correlations with human scores) or --challenge SET")
    ctx = click.get_current_context()
    needs(ctx, {"lang_pairs": "data", "year": "data", "correlations": "data", "significance": "data",
                "dedupe": "challenge_set"})
    flags = flag_sources(scorer_opts(kwargs))
    # which model each role runs, and what to do with one that is not on this machine
    planning: dict[str, Any] = {"models": {"mnli": mnli_model, "static": static_model}, "download": download,
                                "skip_missing": skip_missing}
    spec = load_grid(grid)
    if challenge_set is not None:
        if bootstrap < 40:
            raise ConfigError("--challenge reports 95% bootstrap intervals: --bootstrap needs at least 40 resamples")
        _challenge(spec, grid, challenge_set, idf_corpus, flags, planning, quiet, bootstrap, seed, output, say,
                   start, dedupe)
        return
    assert data is not None
    pairs = load_daseg(data, comma_list(lang_pairs), year=year, idf_corpus=idf_corpus)  # checks the data first
    out = Path(output or f"ablation-{spec.name}")
    # before any work: the folder must be writable and hold none of the inputs
    check_output_folder(out, OUTPUT_FILES.values(), [grid, idf_corpus, *_option_files(kwargs)])
    say(f"{spec.name}: {len(spec.rows)} rows x {len(spec.columns)} columns x {len(pairs)} language pair(s)")
    run = run_grid(spec, pairs, flags, progress=not quiet, log=say, **planning)
    methods = list(dict.fromkeys(correlations)) or ["pearson"]
    say("meta-evaluating" + (f" ({bootstrap} bootstrap resamples)" if bootstrap and "pearson" in methods else ""))
    stats = evaluate(run, methods, alpha=significance, bootstrap=bootstrap, seed=seed)
    run.seconds["wall"] = time.perf_counter() - start
    paths = write_outputs(out, run, stats, methods[0], significance, _command())
    click.echo(paths["table"].read_text(encoding="utf-8"))
    skipped = len({(c.row, c.column) for c in run.cells if c.skipped})
    click.echo(f"wrote {', '.join(str(p) for p in paths.values())} ({skipped} cell(s) skipped; "
               f"{time.perf_counter() - start:.1f} s)", err=True)


def _option_files(kwargs: dict[str, Any]) -> list[str]:
    """Files the command's own run options name (a run file, stop words, a baseline)."""
    opts = scorer_opts(kwargs)
    return [str(v) for k, v in opts.items() if v is not None and options()[k].file and isinstance(v, str)]


def _command() -> str | None:
    return "alignscore " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["ablate"] else None


def _challenge(spec: Grid, grid: str, challenge_set: str, idf_corpus: str | None, flags: list[Source],
               planning: dict[str, Any], quiet: bool, bootstrap: int, seed: int,
               output: str | None, say: Callable[[str], None], start: float, dedupe: bool = False) -> None:
    """``ablate --challenge``: the grid's cells on a challenge set (``planning``: the keywords
    ``models``, ``download``, ``skip_missing`` of :func:`~alignscore.ablation.challenge.run_grid_challenge`)."""
    items = read_items(challenge_set)
    corpus = read_lines(idf_corpus) if idf_corpus is not None else None
    out = Path(output or f"challenge-{spec.name}")
    check_output_folder(out, grid_challenge.OUTPUT_FILES.values(), [grid, challenge_set, idf_corpus])  # before any work
    items, repeated = settle_repeats(items, dedupe)
    if dedupe and repeated:
        say(f"--dedupe: dropped {repeated} item(s) that repeat an earlier one")
    check_sizes(items)
    say(f"{spec.name}: {len(spec.rows)} rows x {len(spec.columns)} columns on {len(items)} challenge items")
    run = grid_challenge.run_grid_challenge(spec, items, flags, idf_corpus=corpus, idf_corpus_name=idf_corpus,
                                            progress=not quiet, resamples=bootstrap, seed=seed, log=say,
                                            **planning)
    paths = grid_challenge.write_outputs(out, run, _command())
    click.echo(paths["table"].read_text(encoding="utf-8"))
    click.echo(f"wrote {', '.join(str(p) for p in paths.values())} ({len(run.skipped)} cell(s) skipped; "
               f"{time.perf_counter() - start:.1f} s)", err=True)
