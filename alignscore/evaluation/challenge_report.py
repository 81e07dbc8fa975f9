"""A challenge run's results as tables (TSV, JSON lines) and ``alignscore challenge`` as one
library call (:func:`challenge_file`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..config.schema import OPTION
from ..config.sources import KEYWORDS, Naming, sources_of
from ..lm import check_readable
from ..settings import Options, setting
from .challenge import (COLUMNS, TIE_TOLERANCE, CompositionResult, check_sizes, check_sources, evaluate_scores,
                        field_values, read_items, settle_repeats)
from .reference_free import challenge_remaps, check_remaps, remapped_item_scores, split_remap
from .stats import SACREBLEU_SEED

if TYPE_CHECKING:
    from ..config import Compiled, RunSpec


def columns(by: str | None = None) -> list[str]:
    """The TSV columns: :data:`COLUMNS`, with the field ``by`` after the composition."""
    return list(COLUMNS) if by is None else [COLUMNS[0], by, *COLUMNS[1:]]


def rows(results: Sequence[CompositionResult], by: str | None = None) -> list[dict[str, Any]]:
    """One dict per composition and category (the JSON lines of ``alignscore challenge``); with
    ``by``, per composition, value of that field and category, the value under the key ``by``."""
    return [{"composition": r.name, **({by: c.group} if by is not None else {}), "category": c.category, "n": c.n,
             "kind": "control" if c.control else "accuracy", "accuracy": c.accuracy,
             "correct": None if c.control else c.correct, "ties": c.ties, "low": c.low, "high": c.high,
             "mean_change": c.mean_change, "against": c.against, "delta": c.test and c.test.difference,
             "delta_low": c.test and c.test.low, "delta_high": c.test and c.test.high,
             "p_value": c.test and c.test.p_value, "signature": r.signature} for r in results for c in r.categories]


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4f}"
    return "" if value is None else str(value)


def tsv(results: Sequence[CompositionResult], head: Sequence[str] = (), by: str | None = None) -> str:
    """The results as TSV: a comment line per composition's signature, then :func:`columns`."""
    names = columns(by)
    lines = [*head, *(f"# {r.name}: {r.signature}" for r in results), "\t".join(names)]
    lines += ["\t".join(_cell(row[k]) for k in names) for row in rows(results, by)]
    return "\n".join(lines) + "\n"


def jsonl(results: Sequence[CompositionResult], by: str | None = None) -> str:
    """The results as JSON lines (:func:`rows`)."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows(results, by))


def remap_option(opts: Mapping[str, Any], sources: bool, naming: Naming = KEYWORDS
                 ) -> tuple[dict[str, Any], tuple[str, str] | None]:
    """Against sources, the options (written as ``naming`` says: the caller's way in) without the
    remapping option, and its value and label (:func:`~alignscore.evaluation.reference_free.split_remap`:
    a file, or a folder resolved per item by :func:`~alignscore.evaluation.reference_free.challenge_remaps`);
    else the options as they are.

    Examples
    --------
    >>> rest, given = remap_option({"remap": "remaps", "layer": 3}, True)
    >>> rest, given[1], given[0].endswith("remaps")
    ({'layer': 3}, 'remap=', True)
    >>> remap_option({"remap": "de.remap"}, False)
    ({'remap': 'de.remap'}, None)
    """
    if not sources:
        return dict(opts), None
    return {k: v for k, v in opts.items() if k != OPTION.remap.name}, split_remap(sources_of(opts, naming))[1]


@dataclass(frozen=True)
class ChallengeOptions(Options):
    """``alignscore challenge``'s own options (its flags, :func:`challenge_file`'s ``opts``): how the
    results are broken down, resampled and written; the runs' options are the scorer's.

    Examples
    --------
    >>> ChallengeOptions.given({"bootstrap": 10})
    Traceback (most recent call last):
    alignscore.errors.ConfigError: bootstrap=: expected an integer >= 40, not 10
    """

    format: str = setting("tsv", choices=("tsv", "jsonl"), help=(
        "tsv: a comment line per signature, then one row per composition and category; jsonl: one JSON object per "
        "row, with the composition's signature."))
    bootstrap: int = setting(1000, ge=40, help="Resamples of the 95% bootstrap intervals and of the paired tests.")
    seed: int = setting(SACREBLEU_SEED, ge=0, le=2**32 - 1, help="Seed of the resampling.")
    by: str | None = setting(None, metavar="FIELD", help=(
        "Break the results down by a field of the items (e.g. lp): one row per composition, value of FIELD and "
        "category, the value in a column named FIELD. Every item must have the field."))
    dedupe: bool = setting(False, help=(
        "Drop items that repeat an earlier one (every field the same, the id aside); without it they count as often "
        "as they appear, with a warning."))
    against_sources: bool = setting(False, flag="sources", help=(
        "Score good and bad against each item's field 'source' (--remap: a file, or a folder of <lang>.remap by lp), "
        "not against the reference: reference-free, as 'alignscore score --sources' does (--remap, --lm apply)."))


def challenge_file(specs: Sequence[RunSpec | Compiled], challenge_set: str, opts: ChallengeOptions | None = None,
                   output: str | None = None, files: Sequence[str] = (), log: Callable[[str], None] | None = None,
                   remap: tuple[str, str] | None = None) -> None:
    """The challenge results (:func:`~alignscore.evaluation.challenge.evaluate_scores` of
    :func:`~alignscore.evaluation.challenge.item_scores`) of the runs ``specs`` (A, then B or B1,
    B2, ...) on the items of ``challenge_set``, written as ``opts.format`` (tsv or jsonl) to
    ``output`` (None: standard output), which may not be the set or one of the ``files`` the runs
    read; ``log`` says how many repeated items ``opts.dedupe`` dropped; ``opts.against_sources``:
    every item scored against its ``source`` (reference-free); ``remap``: the remapping option's
    value and label (a file, or a folder of ``<lang>.remap`` chosen by each item's ``lp``) for
    every run without one of its own, resolved per item as ``tune --sources --challenge``
    resolves it (:func:`~alignscore.evaluation.reference_free.challenge_remaps`). Items, ``by``
    field, remappings and output are checked, and every run built for its model, before anything
    is scored; errors name ``opts``' options through its labels."""
    from ..config import plan_runs
    from ..textio import check_output, write_output

    opts = opts or ChallengeOptions()
    by, sources, bootstrap, seed = opts.by, opts.against_sources, opts.bootstrap, opts.seed
    names = ["A"] + (["B"] if len(specs) == 2 else [f"B{i}" for i in range(1, len(specs))])
    items = read_items(challenge_set)
    if sources:
        check_sources(items, challenge_set, opts.label("against_sources"))
    if by is not None:  # every item has the field, with a usable value: checked before any work
        field_values(items, by, challenge_set, opts.label("by"))
    # each item's remapping (by its language with a folder), before any model loads
    remaps = challenge_remaps(specs, items, remap, challenge_set)
    if output:  # before any work: the output must be writable and none of the inputs
        check_output(output, [challenge_set, *files, *{r.source for rs in remaps for r in rs or () if r.source}])
    # every composition checked for its model (one that cannot be built fails before any warning),
    # one encoder per model
    scorers = plan_runs(specs, sources=sources).scorers()
    remapped = [k for k, chosen in enumerate(remaps) if chosen is not None]
    if remap is not None and remapped:  # a remapping of another model or layer: refused before anything is scored
        check_remaps([scorers[k].composition for k in remapped], [scorers[k] for k in remapped],
                     remaps[remapped[0]] or (), remap[1])
    for spec, scorer in zip(specs, scorers):  # texts a run's LM cannot read: before any model loads
        for side in ("good", "bad") if scorer.composition.lm is not None else ():
            check_readable(scorer.composition.lm, [getattr(item, side) for item in items],
                           getattr(spec, "provenance", None), f"{challenge_set} ({side})", scorer.runtime.device,
                           scorer.runtime.batch_size)
    position = {id(item): k for k, item in enumerate(items)}
    items, _ = settle_repeats(items, opts.dedupe, opts.label("dedupe"), log)
    settled = {id(r): [r[position[id(item)]] for item in items] for r in remaps if r is not None}
    remaps = [None if r is None else settled[id(r)] for r in remaps]  # still one list: its runs scored together
    groups = field_values(items, by, challenge_set, opts.label("by")) if by is not None else None
    check_sizes(items, groups=groups, by=by)
    scores = remapped_item_scores(scorers, items, sources, remaps)
    results = evaluate_scores(items, [(name, *scored) for name, scored in zip(names, scores)], bootstrap, seed,
                              groups=groups)
    write_output(output, jsonl(results, by) if opts.format == "jsonl" else
                 tsv(results, [f"# {len(items)} items of {challenge_set}{f', by {by}' if by else ''}"
                               f"{' against their sources' if sources else ''}; accuracy: good "
                               f"scores above bad (ties within {TIE_TOLERANCE:g} are misses); 95% bootstrap "
                               f"intervals and paired tests with {bootstrap} resamples, seed {seed}; delta = accuracy "
                               "- A's"], by))


__all__ = ["ChallengeOptions", "challenge_file", "columns", "jsonl", "remap_option", "rows", "tsv"]
