"""``alignscore ablate``: run an ablation grid over WMT DAseg data and meta-evaluate every cell."""

from __future__ import annotations

import time
from typing import Any

import click

from ..ablation import load_grid
from ..ablation.ablate import ablate_challenge, ablate_daseg
from ..config import sources_of
from ..config.sources import input_files
from ..errors import ConfigError
from ..evaluation.stats import CORRELATIONS
from ..weighting.schemes import IdfL
from . import main
from ..settings import comma_list
from .common import command_line, flag_of, needs, progress_log, quiet_option, seed_option
from .options import FLAGS, scorer_options, scorer_opts


@main.command()
@click.argument("grid", type=click.Path(dir_okay=False))
@click.option("--data", default=None, type=click.Path(file_okay=False),
              help="Folder of WMT DAseg files (DAseg.newstest{YEAR}.{reference,mt-system,human}.<lp>).")
@click.option("--challenge", "challenge_set", default=None, type=click.Path(dir_okay=False),
              help="Or a challenge set (JSON lines, see 'alignscore challenge'): accuracy per category instead of "
                   "correlations; writes table.md, results.jsonl and heatmap.png.")
@scorer_options(exclude=(IdfL.corpus_setting(),))  # --idf-corpus below: the data's corpus (a template)
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
@seed_option(0, "Seed of the bootstrap.")
@click.option("--download", is_flag=True, help="Allow models that are not on this machine to be downloaded.")
@click.option("--skip-missing", is_flag=True, help="Skip the cells whose model is not on this machine (or cannot be "
              "loaded), with a note under the table, instead of stopping with an error.")
@click.option("-o", "--output", type=click.Path(file_okay=False), default=None,
              help="Output folder (default: ablation-<grid name>).")
@click.option("--dedupe", is_flag=True, help="With --challenge: drop items that repeat an earlier one (as "
              "'alignscore challenge --dedupe').")
@quiet_option("No progress.")
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
    if (data is None) == (challenge_set is None):
        raise ConfigError("give either --data DIR (correlations with human scores) or --challenge SET")
    ctx = click.get_current_context()
    needs(ctx, {"lang_pairs": "data", "year": "data", "correlations": "data", "significance": "data",
                "dedupe": "challenge_set"})
    flag = flag_of(ctx)
    opts = scorer_opts(kwargs)
    flags = sources_of(opts, FLAGS)
    # which model each role runs, and what to do with one that is not on this machine
    planning: dict[str, Any] = {"models": {"mnli": mnli_model, "static": static_model}, "download": download,
                                "model_labels": {"mnli": flag("mnli_model"), "static": flag("static_model")},
                                "label": flag,
                                "skip_missing": skip_missing, "progress": not quiet,
                                "log": progress_log(quiet, "ablate"), "command": command_line("ablate")}
    spec = load_grid(grid)
    if challenge_set is not None:
        if bootstrap < 40:
            raise ConfigError("--challenge reports 95% bootstrap intervals: --bootstrap needs at least 40 resamples")
        paths, skipped = ablate_challenge(spec, grid, challenge_set, flags, idf_corpus=idf_corpus,
                                          output=output, dedupe=dedupe, dedupe_label=flag("dedupe"),
                                          resamples=bootstrap, seed=seed, **planning)
    else:
        paths, skipped = ablate_daseg(spec, grid, data, flags, lang_pairs=comma_list(lang_pairs),
                                      year=year, idf_corpus=idf_corpus, output=output, inputs=input_files(flags),
                                      methods=correlations, significance=significance, bootstrap=bootstrap,
                                      seed=seed, start=start, **planning)
    click.echo(paths["table"].read_text(encoding="utf-8"))
    click.echo(f"wrote {', '.join(str(p) for p in paths.values())} ({skipped} cell(s) skipped; "
               f"{time.perf_counter() - start:.1f} s)", err=True)
