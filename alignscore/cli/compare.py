"""``alignscore compare``: two compositions on the same human judgments, with significance tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click
import numpy as np

from ..config import plan_runs
from ..errors import ConfigError
from ..evaluation.stats import (SACREBLEU_SEED, bootstrap_r_difference, flat, flat_text, pearson_rows,
                                permutation_r_difference, williams_matrix)
from ..evaluation.wmt import load_daseg, read_human
from ..scorer import score_together
from ..textio import read_aligned
from . import main
from .diff import side_specs
from .inputs import comma_list
from .options import SEED, scorer_options, scorer_opts

COLUMNS = ("lang_pair", "n", "A.abs_r", "B.abs_r", "delta", "williams_p", "bootstrap_low", "bootstrap_high",
           "bootstrap_p", "permutation_p")


@dataclass(frozen=True)
class Comparison:
    """Two metrics ``a`` and ``b`` against the same ``human`` scores of ``n`` segments: |r| of
    each, ``delta = |r_a| - |r_b|``, the two-sided Williams p-value, the paired bootstrap
    interval of ``delta`` with its p-value, and the permutation test's p-value."""

    name: str
    n: int
    abs_r_a: float
    abs_r_b: float
    delta: float
    williams_p: float
    bootstrap_low: float
    bootstrap_high: float
    bootstrap_p: float
    permutation_p: float

    def row(self) -> list[str]:
        """The TSV cells, in :data:`COLUMNS` order: correlations to 6 decimals, p-values to 4 digits."""
        r = lambda v: f"{v:.6f}"  # noqa: E731
        p = lambda v: f"{v:.4g}"  # noqa: E731
        return [self.name, str(self.n), r(self.abs_r_a), r(self.abs_r_b), r(self.delta), p(self.williams_p),
                r(self.bootstrap_low), r(self.bootstrap_high), p(self.bootstrap_p), p(self.permutation_p)]


def compare_scores(name: str, a: np.ndarray, b: np.ndarray, human: np.ndarray, bootstrap: int, permutations: int,
                   seed: int) -> Comparison:
    """The :class:`Comparison` of two metrics' scores ``a``, ``b`` with ``human``."""
    for label, v in (("A", a), ("B", b)):
        if flat(v):  # constant up to the rounding of the dtype the scores were computed in
            raise ConfigError(f"{name}: every score of composition {label} is the same ({flat_text(v)}): its "
                              "correlation with the human scores is undefined")
    ra, rb = np.abs(pearson_rows(np.stack([a, b]), np.stack([human, human])))
    one_sided = williams_matrix(np.stack([a, b]), human)[0, 1]
    boot = bootstrap_r_difference(a, b, human, resamples=bootstrap, seed=seed)
    perm = permutation_r_difference(a, b, human, resamples=permutations, seed=seed)
    williams = float(min(1.0, 2 * min(one_sided, 1 - one_sided)))
    return Comparison(name, len(human), float(ra), float(rb), float(ra - rb), williams, boot.low, boot.high,
                      boot.p_value, perm.p_value)


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
@click.option("--bootstrap", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Resamples of the paired bootstrap of the difference in |r|.")
@click.option("--permutations", type=click.IntRange(min=1), default=10000, show_default=True,
              help="Permutations of the paired permutation test.")
@click.option("--seed", type=SEED, default=SACREBLEU_SEED, show_default=True, help="Seed of both resampling tests.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
def compare(refs: tuple[str, ...], cands: str | None, human: str | None, data: str | None,
            lang_pairs: tuple[str, ...], year: str | None, spec_a: str, spec_b: str, bootstrap: int,
            permutations: int, seed: int, quiet: bool, **kwargs: Any) -> None:
    """Compare two compositions, A and B, on the same human judgments: |Pearson r| of each,
    their difference, Williams' test for dependent correlations, the paired bootstrap interval
    of the difference and the paired permutation test (all p-values two-sided). One line per
    language pair (TSV on stdout). Options outside --a/--b apply to both sides; when both use
    the same model each text is encoded once for both.

    \b
    alignscore compare --data ../shared/data/wmt16-da-seg --model all-MiniLM-L6-v2 --layer 4 \\
        --a "--aligner wmd --n-gram 2 --special-tokens keep" --b "--aligner greedy"
    """
    if (data is None) == (cands is None):
        raise ConfigError("give either -r REF -c CAND --human FILE, or --data DIR")
    if data is None and (not refs or human is None):
        raise ConfigError("-c CAND needs -r REF and --human FILE")
    if data is not None and (refs or human):
        raise ConfigError("--data DIR holds the references and human scores: no -r or --human with it")
    common = scorer_opts(kwargs)
    run_a, run_b = side_specs(common, spec_a, spec_b, progress=not quiet)
    if data is not None:
        sets = [(lp.name, lp.candidates, lp.references, lp.human)
                for lp in load_daseg(data, comma_list(lang_pairs), year=year)]
    else:
        cand_texts, ref_groups = read_aligned(cands, refs)
        sets = [("all", cand_texts, ref_groups, read_human(human, len(cand_texts)))]
    scorer_a, scorer_b = plan_runs([run_a, run_b]).scorers()  # one model when both sides' encoders are the same
    sigs = [scorer_a.signature(), scorer_b.signature()]  # both build for their model before any encoding
    out = [f"# A: {sigs[0]}", f"# B: {sigs[1]}",
           f"# delta = |r_A| - |r_B| (Pearson r with the human scores); p-values two-sided: Williams' test, paired "
           f"bootstrap ({bootstrap} resamples; interval: 95%), paired permutation ({permutations}); seed {seed}",
           "\t".join(COLUMNS)]
    for name, cand_texts, ref_groups, scores_h in sets:  # every row before the first byte: a failure prints none
        sa, sb = score_together([scorer_a, scorer_b], cand_texts, ref_groups)
        a, b = (s[c.composition.metric].double().numpy() for s, c in ((sa, scorer_a), (sb, scorer_b)))
        out.append("\t".join(compare_scores(name, a, b, scores_h, bootstrap, permutations, seed).row()))
    click.echo("\n".join(out))
