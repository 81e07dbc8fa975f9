"""A challenge run's results as tables (TSV, JSON lines) and ``alignscore challenge`` as one
library call (:func:`challenge_file`)."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .challenge import (COLUMNS, TIE_TOLERANCE, CompositionResult, check_sizes, check_sources, field_values,
                        read_items, run_challenge, settle_repeats)
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


def challenge_file(specs: Sequence[RunSpec | Compiled], challenge_set: str, fmt: str = "tsv",
                   output: str | None = None, bootstrap: int = 1000, seed: int = SACREBLEU_SEED, by: str | None = None,
                   dedupe: bool = False, files: Sequence[str] = (), log: Callable[[str], None] | None = None,
                   sources: bool = False) -> None:
    """:func:`run_challenge` of the runs ``specs`` (A, then B or B1, B2, ...) on the items of
    ``challenge_set``, written as ``fmt`` (tsv or jsonl) to ``output`` (None: standard output),
    which may not be the set or one of the ``files`` the runs read; ``log`` says
    how many repeated items ``dedupe`` dropped; ``sources``: every item scored against its
    ``source`` (reference-free). Items, ``by`` field and output are checked, and every run built
    for its model, before anything is scored."""
    from ..config import plan_runs
    from ..textio import check_output, write_output

    names = ["A"] + (["B"] if len(specs) == 2 else [f"B{i}" for i in range(1, len(specs))])
    items = read_items(challenge_set)
    if sources:
        check_sources(items, challenge_set)
    if by is not None:  # every item has the field, with a usable value: checked before any work
        field_values(items, by, challenge_set)
    if output:  # before any work: the output must be writable and none of the inputs
        check_output(output, [challenge_set, *files])
    # every composition checked for its model (one that cannot be built fails before any warning),
    # one encoder per model
    scorers = plan_runs(specs, sources=sources).scorers()
    items, repeated = settle_repeats(items, dedupe)
    if dedupe and repeated and log is not None:
        log(f"--dedupe: dropped {repeated} item(s) that repeat an earlier one")
    groups = field_values(items, by, challenge_set) if by is not None else None
    check_sizes(items, groups=groups, by=by)
    results = run_challenge(scorers, items, names, bootstrap, seed, groups=groups, sources=sources)
    write_output(output, jsonl(results, by) if fmt == "jsonl" else
                 tsv(results, [f"# {len(items)} items of {challenge_set}{f', by {by}' if by else ''}"
                               f"{' against their sources' if sources else ''}; accuracy: good "
                               f"scores above bad (ties within {TIE_TOLERANCE:g} are misses); 95% bootstrap "
                               f"intervals and paired tests with {bootstrap} resamples, seed {seed}; delta = accuracy "
                               "- A's"], by))


__all__ = ["challenge_file", "columns", "jsonl", "rows", "tsv"]
