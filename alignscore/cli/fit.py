"""``alignscore fit``: learn a composition's continuous settings on WMT DAseg human judgments."""

from __future__ import annotations

import click

from ..errors import ConfigError
from ..settings import int_list
from . import main
from .options import SEED


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [n.strip().replace("-", "_") for n in text.split(",") if n.strip()]


@main.command()
@click.option("--data", required=True, type=click.Path(file_okay=False),
              help="Folder of WMT DAseg files to fit on (DAseg.newstest{YEAR}.{reference,mt-system,human}.<lp>).")
@click.option("--model", default=None, help="The encoder (hub id or local directory); overrides the --from file's.")
@click.option("--from", "start", type=click.Path(dir_okay=False), default=None,
              help="A run file to start from (e.g. tune's best.toml): aggregator single or mix, aligner greedy, "
                   "weighting none, idf-S or idf-L. Default: BERTScore's composition for --model.")
@click.option("--learn", default=None, metavar="NAMES",
              help="The settings to learn, a comma list of mix_weights, temperature, idf_power, beta. Default: "
                   "every one that applies (idf_power only with an idf weighting).")
@click.option("--layers", default=None, metavar="LIST",
              help="The layers a single-layer start is mixed over, e.g. '2-6' (default: every block; the start's "
                   "layer among them).")
@click.option("--budget", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
              help="Minutes the fits may take in all (the nested folds and the final fit share them).")
@click.option("--steps", type=click.IntRange(min=1), default=200, show_default=True,
              help="The most optimisation steps of one fit (early stopping usually ends it sooner).")
@click.option("-o", "--output", type=click.Path(file_okay=False), default="fit-out", show_default=True,
              help="Output folder: best.toml, scores.csv, folds.csv, leaderboard.md, leaderboard.csv, "
                   "layer_weights.png.")
@click.option("--holdout", type=click.Path(file_okay=False), default=None,
              help="Another DAseg folder (another year): the start and the fitted metric are scored on it.")
@click.option("--lang-pairs", default=None, help="Language pairs to fit on, e.g. 'cs-en,de-en' (default: all).")
@click.option("--year", default=None, help="Which year, when the --data folder holds several.")
@click.option("--bootstrap", type=click.IntRange(min=100), default=1000, show_default=True,
              help="Resamples of the intervals of the nested estimate.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the inner split and the resamples.")
@click.option("-q", "--quiet", is_flag=True, help="No progress.")
def fit(data: str, model: str | None, start: str | None, learn: str | None, layers: str | None, budget: float,
        steps: int, output: str, holdout: str | None, lang_pairs: str | None, year: str | None, bootstrap: int,
        seed: int, quiet: bool) -> None:
    """Fit the continuous settings of a composition (the layer mix, a soft greedy match's
    temperature, the idf exponent, F-beta's beta) to the human judgments in --data, by gradient
    on the mean Pearson r over language pairs, every text encoded once.

    With two or more language pairs, nested cross-validation (leave one language pair out, fit
    on the others) estimates the fitted metric's held-out mean |r| beside its start's, with 95%
    intervals; with one, the fit runs but no estimate is made. best.toml is an ordinary run
    file: `alignscore score --config best.toml` gives the scores in scores.csv.
    """
    from ..evaluation.fit.run import fit as run_fit

    say = (lambda msg: None) if quiet else (lambda msg: click.echo(f"[fit] {msg}", err=True))
    try:
        mixed = int_list(layers, "--layers") if layers is not None else None
    except ConfigError as exc:
        raise ConfigError(str(exc)) from None
    result = run_fit(data, model, start, _names(learn), budget, output, holdout, mixed,
                     [lp.strip() for lp in lang_pairs.split(",")] if lang_pairs else None, year, seed, steps,
                     bootstrap, quiet, "flag", say)
    if result.note:
        click.echo(f"alignscore: note: {result.note}", err=True)
    for name, i in (result.estimate.intervals.items() if result.estimate else ()):
        click.echo(f"{name}: held-out mean |r| {i.estimate:.4f} [{i.low:.4f}, {i.high:.4f}]")
    for name, value in result.holdout.items():
        click.echo(f"{name}: holdout mean |r| {value:.4f}")
    weights = ", ".join(f"{k}: {w:.3f}" for k, w in zip(result.layers, result.values.weights()))
    click.echo(f"fitted: layer weights {weights}; temperature {result.values.temperature:.4g}; idf exponent "
               f"{result.values.idf_power:.4g}; beta {result.values.beta:.4g}")
    click.echo(f"wrote {output}/best.toml and the leaderboard ({result.seconds:.1f} s; kept states "
               f"{result.state_bytes / 2**20:.0f} MiB)", err=True)
