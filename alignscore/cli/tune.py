"""``alignscore tune``: search a space of compositions on WMT DAseg human judgments."""

from __future__ import annotations

import shlex
import sys
import time
from typing import Any

import click

from ..config import build
from ..errors import ConfigError
from ..evaluation.challenge import read_items
from ..evaluation.leaderboard import OUTPUT_FILES, output_paths, summary, write_outputs
from ..evaluation.search import Objective, challenge_accuracy, measure, plan, prepare, search
from ..evaluation.space import load_space
from ..evaluation.wmt import LangPair, load_daseg
from ..textio import check_output_folder
from ..weighting.schemes import Corpus
from . import main
from .ablate import _split
from .options import SEED, flag_sources, scorer_options, scorer_opts


@main.command()
@click.argument("space", required=False, type=click.Path(dir_okay=False))
@click.option("--data", required=True, type=click.Path(file_okay=False),
              help="Folder of WMT DAseg files to select on (DAseg.newstest{YEAR}.{reference,mt-system,human}.<lp>).")
@scorer_options(exclude=("idf_corpus",))
@click.option("-o", "--output", type=click.Path(file_okay=False), default="tune-out", show_default=True,
              help="Output folder.")
@click.option("--lang-pairs", multiple=True, help="Language pairs to select on, e.g. 'cs-en,de-en' (default: all).")
@click.option("--year", default=None, help="Which year, when the --data folder holds several.")
@click.option("--idf-corpus", default=None,
              help="The idf-L corpus: a file, or a template like 'refs/newstest{year}-{src}{tgt}-ref.{tgt}' (one "
                   "corpus: every language pair's, together). Default: the official full reference files next to "
                   "the data, else every reference of the --data folder.")
@click.option("--holdout", type=click.Path(file_okay=False), default=None,
              help="Another DAseg folder: the selection and the published configurations are scored on it.")
@click.option("--challenge", "challenge_set", type=click.Path(dir_okay=False), default=None,
              help="A challenge set (JSON lines, see 'alignscore challenge') for an --objective on its accuracy.")
@click.option("--objective", default="correlation", show_default=True,
              help="What the search maximises: correlation (mean |r| over the language pairs); "
                   "'correlation + W * accuracy[CATEGORY]' (W times the --challenge accuracy added); or "
                   "'correlation, accuracy[CATEGORY] >= X' (among the runs at least that accurate). CATEGORY: "
                   "one of the set's, or all.")
@click.option("--budget", type=click.FloatRange(min=0, min_open=True), default=30.0, show_default=True,
              help="Minutes the search may take on this machine: the full grid when it fits, else the successive-"
                   "halving schedule that scores the most segments within it (a cost measured here first).")
@click.option("--max-compositions", type=click.IntRange(min=1), default=5000, show_default=True,
              help="Refuse a space with more runs than this.")
@click.option("--bootstrap", type=click.IntRange(min=100), default=1000, show_default=True,
              help="Resamples of the intervals of the cross-validated estimates.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the samples and the resamples.")
@click.option("-q", "--quiet", is_flag=True, help="No progress.")
def tune(space: str | None, data: str, output: str, lang_pairs: tuple[str, ...], year: str | None,
         idf_corpus: str | None, holdout: str | None, challenge_set: str | None, objective: str, budget: float,
         max_compositions: int, bootstrap: int, seed: int, quiet: bool, **kwargs: Any) -> None:
    """Search the runs of SPACE (a TOML file of lists of choices; default: the packaged space,
    every published configuration of BERTScore, MoverScore, BaryScore and WRD and the choices
    between them) on the human judgments in --data.

    The options of `alignscore score` (--model, --batch-size, ...) apply to every run, below
    what the space chooses. The search fits --budget: every run is screened on a sample of
    every language pair and the best go on to more segments (successive halving), each text
    encoded once per level and encoder. How well the choice does on a language pair it never
    saw is estimated by nested cross-validation (leave one language pair out, search on the
    others), beside each published configuration, with 95% intervals. Writes best.toml (for
    `alignscore score --config`), leaderboard.md, leaderboard.csv, folds.csv, chart.png and,
    with --holdout, holdout.csv into the output folder.
    """
    start = time.perf_counter()
    say = (lambda msg: None) if quiet else (lambda msg: click.echo(f"[tune] {msg}", err=True))
    wanted = Objective.parse(objective)
    if wanted.uses_challenge != (challenge_set is not None):
        raise ConfigError("--objective on a challenge set's accuracy needs --challenge SET, and --challenge an "
                          "--objective that reads its accuracy" if wanted.uses_challenge else
                          "--challenge applies with an --objective on its accuracy only")
    parsed = load_space(space)
    flags = flag_sources(scorer_opts(kwargs))
    paths = output_paths(output, holdout is not None)
    check_output_folder(output, [p.name for p in paths.values()], [space, challenge_set, idf_corpus])
    pairs = load_daseg(data, _split(lang_pairs), year=year, idf_corpus=idf_corpus)
    held = load_daseg(holdout) if holdout is not None else []
    items = read_items(challenge_set) if challenge_set is not None else []
    corpus = data_corpus(data, year, pairs)
    candidates = parsed.candidates(flags, max_compositions, {"idf_corpus": corpus})  # compiled: nothing loaded yet
    published = {}
    for name, spec in parsed.published_runs(flags, {"idf_corpus": corpus}).items():
        try:
            build(spec)  # a published configuration this model cannot run (no default layer) is left out
            published[name] = spec
        except ConfigError as exc:
            say(f"{name}: left out ({exc})")
    entries, scorers = prepare(candidates, published)  # every run checked against its model's configuration
    if items:
        say(f"accuracy of {len(entries)} runs on {len(items)} challenge items")
        challenge_accuracy(entries, scorers, items, str(wanted.category))
    cost = measure(entries, scorers, pairs)
    schedule, estimate = plan(cost, [len(lp) for lp in pairs], budget * 60)
    say(f"{parsed.path}: {len(entries)} runs x {sum(len(lp) for lp in pairs)} segments; {schedule}; about "
        f"{estimate / 60:.1f} min (measured here)")
    run = search(entries, scorers, pairs, schedule, wanted, held, holdout, bootstrap, seed, not quiet, say, cost)
    run.estimated_seconds = estimate
    say("writing outputs")
    command = "alignscore " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["tune"] else None
    run.seconds["wall"] = time.perf_counter() - start
    written = write_outputs(output, run, data, command)
    for line in summary(run):
        click.echo(line.replace("**", ""))
    click.echo(f"wrote {', '.join(str(p) for p in written.values())} ({time.perf_counter() - start:.1f} s"
               f"{_peak_memory()})", err=True)


def data_corpus(data: str, year: str | None, pairs: list[LangPair]) -> Corpus:
    """The idf-L corpus of a search: every language pair's own corpus together where each has
    one, else every reference of the data folder."""
    if all(lp.idf_corpus is not None for lp in pairs):
        texts = [t for lp in pairs for t in lp.idf_corpus or ()]
    else:
        texts = [t for lp in load_daseg(data, year=year) for t in lp.references]
    # named as the file tune writes it to beside best.toml, so that the signatures agree
    return Corpus(list(dict.fromkeys(texts)), OUTPUT_FILES["corpus"])


def _peak_memory() -> str:
    """``, peak memory N MiB`` (this process's peak resident set), where the system says it."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return ""
    return f", peak memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
