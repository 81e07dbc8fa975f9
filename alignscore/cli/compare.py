"""``alignscore compare``: two compositions on the same human judgments, with significance tests."""

from __future__ import annotations

from typing import Any

import click

from ..errors import ConfigError
from ..evaluation.compare import compare_runs, comparison_sets
from ..evaluation.stats import SACREBLEU_SEED
from . import main
from ..settings import comma_list
from .common import quiet_option, refuse, seed_option, sides_specs
from .options import scorer_options, scorer_opts


@main.command()
@click.option("-r", "--refs", "refs", multiple=True, type=click.Path(dir_okay=False),
              help="Reference file, one text per line; repeat for several references per candidate.")
@click.option("-c", "--cands", type=click.Path(dir_okay=False), default=None, help="Candidate file, one text per line.")
@click.option("--human", type=click.Path(dir_okay=False), default=None,
              help="Human scores, one number per candidate (with -r/-c).")
@click.option("--data", type=click.Path(file_okay=False), default=None,
              help="Or a folder of WMT DAseg files: every language pair is compared.")
@click.option("--lang-pairs", multiple=True, help="With --data: the language pairs, e.g. 'cs-en,de-en' (default: all).")
@click.option("--year", default=None, help="With --data: which year, when the folder holds several.")
@click.option("--a", "spec_a", required=True, help="Composition A: a preset name or scorer options in quotes, "
              "e.g. \"--aligner wmd --n-gram 2\" or \"--config best.toml\".")
@click.option("--b", "spec_b", required=True, help="Composition B, as --a.")
@scorer_options()
@click.option("--bootstrap", type=click.IntRange(min=40), default=1000, show_default=True,
              help="Resamples of the paired bootstrap of the difference in |r|.")
@click.option("--permutations", type=click.IntRange(min=40), default=10000, show_default=True,
              help="Permutations of the paired permutation test.")
@seed_option(SACREBLEU_SEED, "Seed of both resampling tests.")
@quiet_option()
def compare(refs: tuple[str, ...], cands: str | None, human: str | None, data: str | None,
            lang_pairs: tuple[str, ...], year: str | None, spec_a: str, spec_b: str, bootstrap: int,
            permutations: int, seed: int, quiet: bool, **kwargs: Any) -> None:
    """Compare two compositions, A and B, on the same human judgments: |Pearson r| of each,
    their difference, Williams' test for dependent correlations, the paired bootstrap interval
    of the difference and the paired permutation test (all p-values two-sided). One line per
    language pair (TSV on stdout). Options outside --a/--b apply to both sides; when both use
    the same model each text is encoded once for both. A side whose --config is a combination
    ([[parts]]) is compared by its combined score.

    \b
    alignscore compare --data ../shared/data/wmt16-da-seg --model all-MiniLM-L6-v2 --layer 4 \\
        --a "--aligner wmd --n-gram 2 --special-tokens keep" --b "--aligner greedy"
    """
    refuse(((data is None) == (cands is None), "give either -r REF -c CAND --human FILE, or --data DIR"),
           (data is None and (not refs or human is None), "-c CAND needs -r REF and --human FILE"),
           (data is not None and (refs or human), "--data DIR holds the references and human scores: no -r or --human "
            "with it"), error=ConfigError)
    sets = comparison_sets(data, comma_list(lang_pairs), year, cands, refs, human)  # the data before the model
    runs = sides_specs(scorer_opts(kwargs), [("--a", spec_a), ("--b", spec_b)], progress=not quiet,
                       combinations=True)
    click.echo("\n".join(compare_runs(*runs, sets, bootstrap, permutations, seed)))
