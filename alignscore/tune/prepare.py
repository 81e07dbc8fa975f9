"""The entries of a search: one per distinct run of the space, labelled, each checked against
its model before anything is encoded; and their accuracy on a challenge set."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

from ..aggregators.single import SingleLayer
from ..composition import Composition
from ..config import Compiled, RunSpec, plan_runs
from ..remap import Remapping
from ..scorer import Scorer, composition_signature
from ..settings import settings_of
from ..evaluation.challenge import Item, item_scores
from .space import Candidate
from .book import Entry
from ..evaluation.objective import Objective, accuracy


def labels(candidates: Sequence[Candidate], resolved: Sequence[Composition]) -> list[str]:
    """A short label per candidate: its values of the options whose value varies in the space
    (a single layer's setting as resolved for the model: ``layer=-3`` of a 6-layer model is ``layer=4``).

    Parameters
    ----------
    candidates : sequence of Candidate
    resolved : sequence of Composition
        Each candidate's composition resolved for its model.

    Returns
    -------
    list of str
    """
    single = [s.name for s in settings_of(SingleLayer)]
    values = [{**c.values, **{k: getattr(r.aggregator, k) for k in single if k in c.values}}
              for c, r in zip(candidates, resolved)]
    keys = [k for k in dict.fromkeys(k for v in values for k in v) if len({_text(v.get(k)) for v in values}) > 1]
    return [" ".join(f"{k}={_text(v[k])}" for k in keys if k in v) or c.subspace for c, v in zip(candidates, values)]


def _text(value: Any) -> str:
    if isinstance(value, dict):
        name = value.get("name", "")
        rest = ",".join(f"{k}={_text(v)}" for k, v in value.items() if k != "name")
        return f"{name}({rest})" if rest else str(name)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_text(v) for v in value) + "]"
    return str(value)


def prepare(candidates: Sequence[Candidate], published: Mapping[str, RunSpec] = {}, sources: bool = False
            ) -> tuple[list[Entry], list[Scorer]]:
    """The entries of the search and a scorer per entry (one encoder per encoder spec).

    One entry per distinct signature in space order; a published configuration the space does
    not hold is added at the end, one it holds is marked. Every run is checked against its model
    here, before any encoding.

    Parameters
    ----------
    candidates : sequence of Candidate
        The runs of the space (:meth:`~alignscore.tune.space.Space.candidates`).
    published : mapping of str to RunSpec
        The published configurations by name.
    sources : bool
        The runs score against sources (reference-free): each is checked for that side and
        its signature says so.

    Returns
    -------
    tuple of (list of Entry, list of Scorer)
    """
    names = list(published)
    scorers = plan_runs([Compiled(c.spec, c.provenance) for c in candidates] + [published[n] for n in names],
                        sources=sources).scorers()
    resolved = [s.resolved() for s in scorers]
    entries: list[Entry] = []
    kept: list[Scorer] = []
    seen: dict[str, int] = {}
    items = [(c.values, c.subspace, c.spec) for c in candidates] + [({}, "published", published[n]) for n in names]
    shown = labels(candidates, resolved[:len(candidates)]) + names
    for k, ((values, subspace, spec), scorer, comp, label) in enumerate(zip(items, scorers, resolved, shown)):
        # the same numbers: a default layer and the same layer given are one run
        sig = str(composition_signature(replace(comp, default_of=None), scorer.encoder, sources))
        if sig not in seen:
            seen[sig] = len(entries)
            entries.append(Entry(f"c{len(entries) + 1:03d}", label, subspace, dict(values), spec, comp, sig))
            kept.append(scorer)
        if k >= len(candidates):
            entries[seen[sig]].published.append(names[k - len(candidates)])
    return entries, kept


def challenge_accuracy(entries: Sequence[Entry], scorers: Sequence[Scorer], items: Sequence[Item],
                       category: str, sources: bool = False, remaps: Sequence[Remapping] | None = None) -> None:
    """Set each entry's ``accuracy`` on the challenge items of ``category``: its primary metric
    as ``alignscore challenge`` scores it (:func:`~alignscore.evaluation.challenge.item_scores`:
    every distinct pair scored once, one engine call per encoder).

    Parameters
    ----------
    entries, scorers : sequence
        The runs and their scorers.
    items : sequence of Item
        The challenge set.
    category : str
        One of its categories, or ``all``.
    sources : bool
        Score each item against its ``source`` (the search is reference-free).
    remaps : sequence of Remapping, optional
        Each item's remapping (:func:`~alignscore.evaluation.reference_free.item_remaps`).

    Raises
    ------
    ConfigError
        A category the set does not have.
    """
    Objective(category).check_category(items)
    for entry, (_, good, bad) in zip(entries, item_scores(scorers, items, sources, remaps)):
        entry.accuracy = accuracy(items, good, bad, category)


__all__ = ["challenge_accuracy", "labels", "prepare"]
