"""``alignscore fit``: learn a composition's continuous settings on WMT DAseg human judgments."""

from __future__ import annotations

import click

from ..config.schema import OPTION
from ..errors import ConfigError
from ..settings import int_list
from . import main
from .options import objective_options, progress_log, quiet_option, scorer_options, seed_option


@main.command()
@click.option("--data", required=True, type=click.Path(file_okay=False),
              help="Folder of WMT DAseg files to fit on (DAseg.newstest{YEAR}.{reference,mt-system,human}.<lp>).")
@scorer_options(names=(OPTION.model.name,))
@click.option("--from", "start", type=click.Path(dir_okay=False), multiple=True,
              help="A run file to start from (e.g. tune's best.toml; --model overrides its model): aggregator single "
                   "or mix, aligner greedy, wmd (no flow dropout) or sinkhorn, over tokens or n-gram windows, "
                   "weighting none, idf-S or idf-L. Default: BERTScore's composition for --model. Given two or more "
                   "times: a combination of those runs, its weights learned (docs/combinations.md); best.toml is then a combination's run file.")
@click.option("--pull", type=float, default=0.0, show_default=True, help="With several --from: the L2 pull of the "
              "combination's weights toward equal weights.")
@click.option("--learn", default=None, metavar="NAMES", help="The settings to learn, a comma list (default: every "
              "one that applies to the start, docs/fit.md) of mix_weights, temperature, idf_power, beta, reg and the "
              "token-class weights special_weight, punct_weight, stopword_weight, subword_weight.")
@click.option("--layers", default=None, metavar="LIST",
              help="The layers a single-layer start is mixed over, e.g. '2-6' (default: every block; the start's "
                   "layer among them). Not with a static table (no layers).")
@click.option("--budget", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
              help="Minutes the fits may take in all (the nested folds and the final fit share them).")
@click.option("--steps", type=click.IntRange(min=1), default=200, show_default=True,
              help="The most optimisation steps of one fit (early stopping usually ends it sooner).")
@click.option("-o", "--output", type=click.Path(file_okay=False), default="fit-out", show_default=True,
              help="Output folder: best.toml, scores.csv, folds.csv, leaderboard.md/.csv, layer_weights.png.")
@click.option("--holdout", type=click.Path(file_okay=False), default=None,
              help="Another DAseg folder (another year): the start and the fitted metric are scored on it.")
@click.option("--lang-pairs", default=None, help="Language pairs to fit on, e.g. 'cs-en,de-en' (default: all).")
@click.option("--year", default=None, help="Which year, when the --data folder holds several.")
@click.option("--bootstrap", type=click.IntRange(min=100), default=1000, show_default=True,
              help="Resamples of the intervals of the nested estimate.")
@click.option("--max-memory", type=click.FloatRange(min=0, min_open=True), default=None,
              help="GiB the fit may keep (the products of the mixed layers' states, and through n-gram windows those "
                   "within each text; default 8); refused past it.")
@objective_options("each fit")
@seed_option(0, "Seed of the inner split and the resamples.")
@quiet_option("No progress.")
def fit(data: str, model: str | None, start: tuple[str, ...], pull: float, learn: str | None, layers: str | None,
        budget: float, steps: int, output: str, holdout: str | None, lang_pairs: str | None, year: str | None,
        bootstrap: int, max_memory: float | None, challenge_set: str | None, objective: str, seed: int, quiet: bool) -> None:
    """Fit the continuous settings of a composition (the layer mix, a soft greedy match's
    temperature, the idf exponent, F-beta's beta) to the human judgments in --data, by gradient
    on the mean Pearson r over language pairs, every text encoded once.

    With two or more language pairs, nested cross-validation (leave one language pair out, fit
    on the others) estimates the fitted metric's held-out mean |r| beside its start's, with 95%
    intervals; with one, the fit runs but no estimate is made. best.toml is an ordinary run
    file: `alignscore score --config best.toml` gives the scores in scores.csv.
    """
    from ..fit.run import fit as run_fit

    if len(start) > 1:
        combined(data, model, start, pull, output, holdout, lang_pairs, year, bootstrap, seed, quiet,
                 learn=learn, layers=layers, max_memory=max_memory, challenge=challenge_set, objective=objective)
        return
    if pull:
        raise ConfigError("--pull applies to a combination (two or more --from) only")
    result = run_fit(data, model, start[0] if start else None, learn, budget, output, holdout,
                     int_list(layers, "--layers") if layers is not None else None, lang_pairs, year, seed, steps,
                     bootstrap, max_memory, quiet, "flag", progress_log(quiet, "fit"), challenge=challenge_set,
                     objective=objective)
    if result.note:
        click.echo(f"alignscore: note: {result.note}", err=True)
    click.echo("\n".join(result.summary()))
    click.echo(f"wrote {output}/best.toml and the leaderboard ({result.seconds:.1f} s; kept "
               f"{result.state_bytes / 2**20:.0f} MiB)", err=True)


def combined(data: str, model: str | None, starts: tuple[str, ...], pull: float, output: str, holdout: str | None,
             lang_pairs: str | None, year: str | None, bootstrap: int, seed: int, quiet: bool,
             **continuous: object) -> None:
    """``fit --from A --from B ...``: the weights of a combination of the runs (the options of a
    continuous fit do not apply)."""
    from ..fit.combination_run import fit_combination

    given = [k for k, v in continuous.items() if v not in (None, "correlation")]
    if given:
        raise ConfigError(f"--{given[0].replace('_', '-')}: applies to a fit of one run's settings, not to a "
                          "combination's weights (several --from)")
    result = fit_combination(data, starts, model, output, holdout, lang_pairs, year, pull, seed, bootstrap, "flag",
                             progress_log(quiet, "fit"))
    click.echo("\n".join(result.summary()))
    click.echo(f"wrote {output}/best.toml and the leaderboard ({result.seconds:.1f} s)", err=True)
