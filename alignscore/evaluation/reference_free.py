"""Meta-evaluation against sources (reference-free): each MT output of a DAseg folder scored
against its source (``DAseg.*.source.*``) instead of its reference, through the same engine
path as ``alignscore score --sources``, with one remapping per source language.

The remapping option (``--remap``, ``remap=``) names one file (data of one source language) or a
folder of ``<lang>.remap`` files, one per source language; it is taken out of the options every
run compiles from and given to each language pair (:attr:`LangPair.remap
<alignscore.evaluation.wmt.LangPair.remap>`), where the search applies it to that pair's sources.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from ..config import Compiled, Source
from ..config.schema import OPTION
from ..errors import ConfigError, InputError
from ..remap import Remapping, load_remapping, model_digest
from ..scorer import Scorer
from .challenge import Item, item_scores
from .wmt import LangPair

if TYPE_CHECKING:
    from ..config import RunSpec

#: the file name of a source language's remapping in a folder of them
REMAP_FILE = "{lang}.remap"
#: the run file of a fit or search with one source language's remapping, beside best.toml
BEST_FOR = "best.{lang}.toml"
#: a challenge item's field that names its language pair (``de-en``), whose source language chooses its remapping
LANG_PAIR = "lp"


def split_remap(sources: Sequence[Source]) -> tuple[list[Source], tuple[str, str] | None]:
    """The ``sources`` without the remapping option, and the option's value and label (as the
    user wrote it) from the highest source that gives it (None: none does).

    Parameters
    ----------
    sources : sequence of Source
        Options, lowest first (a run file or preset a source names keeps its own).

    Returns
    -------
    tuple of (list of Source, (str, str) or None)

    Examples
    --------
    >>> from alignscore.config import sources_of
    >>> rest, given = split_remap(sources_of({"remap": "remaps", "layer": 3}))
    >>> dict(rest[0].values), given[1], Path(given[0]).name
    ({'layer': 3}, 'remap=', 'remaps')
    """
    name, given, out = OPTION.remap.name, None, []
    for source in sources:
        if name in source.values:
            given = (str(source.values[name]), source.labels.get(name, name))
            source = replace(source, values={k: v for k, v in source.values.items() if k != name},
                             labels={k: v for k, v in source.labels.items() if k != name})
        out.append(source)
    return out, given


def remaps_for(value: str, label: str, languages: Iterable[str | None]) -> dict[str | None, Remapping]:
    """The remapping of each source language: ``value`` is a folder of ``<lang>.remap`` files,
    or one remapping file for every language (it must not state another language).

    Parameters
    ----------
    value : str
        The folder or the file.
    label : str
        The option as the user wrote it (``--remap``), for errors.
    languages : iterable of str or None
        The source languages of the data (one None: a file whatever its language).

    Returns
    -------
    dict of str (or None) to Remapping

    Raises
    ------
    ConfigError
        A language without a remapping, or a file that is not a remapping (one line).

    Examples
    --------
    >>> remaps_for("no-such-folder", "--remap", ["de"])
    Traceback (most recent call last):
    alignscore.errors.ConfigError: --remap no-such-folder: no such file or folder of <lang>.remap files
    """
    path, wanted = Path(value), sorted(set(languages))
    if path.is_dir():
        missing = [lang for lang in wanted if not (path / REMAP_FILE.format(lang=lang)).is_file()]
        if missing:
            raise ConfigError(f"{label} {value}: no remapping for source language {', '.join(missing)} (no "
                              f"{', '.join(REMAP_FILE.format(lang=m) for m in missing)} there): give one per "
                              "language of the data", (OPTION.remap.name,))
        files = {lang: path / REMAP_FILE.format(lang=lang) for lang in wanted}
    elif path.is_file():
        files = {lang: path for lang in wanted}
    else:
        raise ConfigError(f"{label} {value}: no such file or folder of <lang>.remap files", (OPTION.remap.name,))
    read: dict[Path, Remapping] = {}
    out = {}
    for lang, file in files.items():
        try:
            remap = read[file] if file in read else read.setdefault(file, load_remapping(file))
        except ConfigError as exc:
            raise ConfigError(f"{label} {file}: {exc}", (OPTION.remap.name,)) from None
        if remap.lang is not None and lang is not None and remap.lang != lang:
            raise ConfigError(f"{label} {file}: learned for source language {remap.lang}, not {lang}: the data has "
                              f"no remapping for {lang} (give a folder of <lang>.remap files)", (OPTION.remap.name,))
        out[lang] = remap
    return out


def against_sources(pairs: Sequence[LangPair], remaps: dict[str, Remapping] | None = None,
                    label: str = "against_sources=", keep_corpus: bool = False) -> list[LangPair]:
    """The language pairs with each MT output's source in place of its reference (and the
    pair's source language's remapping, if any), to be scored as ``score --sources`` does.

    Parameters
    ----------
    pairs : sequence of LangPair
        As :func:`~alignscore.evaluation.wmt.load_daseg` reads them.
    remaps : dict of str to Remapping, optional
        By source language.
    label : str
        How the user asked for sources, for errors.
    keep_corpus : bool
        Keep each pair's idf-L corpus (one the user named); else it is dropped (the official
        reference file is in the target language, not the sources').

    Returns
    -------
    list of LangPair

    Raises
    ------
    ConfigError
        A language pair without its source file.

    Examples
    --------
    >>> import numpy as np
    >>> lp = LangPair("2016", "de", "en", ["a cat"], ["the cat"], np.zeros(1), sources=["eine Katze"])
    >>> against_sources([lp])[0].references
    ['eine Katze']
    """
    missing = [lp.name for lp in pairs if lp.sources is None]
    if missing:
        lp = next(p for p in pairs if p.sources is None)
        raise ConfigError(f"{label}: no DAseg.newstest{lp.year}.source.<lp> file for {', '.join(missing)}: scoring "
                          "against sources needs each language pair's sources")
    out = [replace(lp, references=list(lp.sources or ()), remap=(remaps or {}).get(lp.src, lp.remap)) for lp in pairs]
    return out if keep_corpus else [replace(lp, idf_corpus=None, idf_corpus_path=None) for lp in out]


def check_remaps(compositions: Sequence[object], scorers: Sequence[Scorer], remappings: Iterable[Remapping | None],
                 label: str) -> None:
    """Refuse, before anything is encoded, a language pair's remapping that a run cannot apply
    (learned for another model or layer, or a run that reads several layers).

    Parameters
    ----------
    compositions : sequence of Composition
        Each run's composition, resolved for its model.
    scorers : sequence of Scorer
        Each run's scorer.
    remappings : iterable of Remapping or None
        The language pairs' (and challenge items') remappings.
    label : str
        The option as the user wrote it.

    Raises
    ------
    ConfigError
        One line, naming the option and the file.
    """
    remaps = list({id(r): r for r in remappings if r is not None}.values())
    for comp, scorer in zip(compositions, scorers):
        for remap in remaps:
            try:
                moved = replace(comp, remap=remap)  # type: ignore[type-var]
                remap.check(model_digest(scorer.encoder), moved.aggregator.layers_read()[0], model=scorer.encoder.name)
            except ConfigError as exc:
                raise ConfigError(f"{label} {remap.source or remap.digest()}: {exc}", (OPTION.remap.name,)) from None


def item_remaps(items: Sequence[Item], value: str, label: str, path: str = "<items>") -> list[Remapping]:
    """Each challenge item's remapping against its source: the one file for every item, or from a
    folder of ``<lang>.remap`` files its source language's, read from its field ``lp``
    (``de-en``: ``de``); a file learned for another language than an item's ``lp`` is refused.

    Parameters
    ----------
    items : sequence of Item
        The challenge items.
    value, label : str
        The remapping option's value (a file or a folder) and the option as the user wrote it.
    path : str
        The challenge set, for errors.

    Returns
    -------
    list of Remapping
        One per item (the same object for the items of one language).

    Raises
    ------
    InputError
        With a folder, an item without a language pair (its file and line).
    ConfigError
        A language without a remapping, or a file that is not one.

    Examples
    --------
    >>> from alignscore.evaluation.challenge import Item
    >>> item_remaps([Item(("a",), "b", "c", "x", line=3)], "remaps", "--remap", "set.jsonl")
    Traceback (most recent call last):
    alignscore.errors.ConfigError: --remap remaps: no such file or folder of <lang>.remap files
    """
    langs = item_languages(items)
    if Path(value).is_dir():
        for k, (item, lang) in enumerate(zip(items, langs)):
            if lang is None:
                raise InputError(f"{label} {value}: a folder of <lang>.remap files needs each challenge item's "
                                 f"language pair (its field {LANG_PAIR!r}, e.g. de-en), to choose its remapping",
                                 path, item.line if item.line is not None else k + 1)
    given = remaps_for(value, label, [lang for lang in langs if lang is not None] or [None])
    one = next(iter(given.values()))
    return [given.get(lang, one) for lang in langs]


def item_languages(items: Sequence[Item]) -> list[str | None]:
    """Each item's source language, from its field ``lp`` (``de-en``: ``de``; None without one).

    Examples
    --------
    >>> item_languages([Item(("a",), "b", "c", "x", fields=(("lp", "de-en"),)), Item(("a",), "b", "c", "x")])
    ['de', None]
    """
    values = [item.extra(LANG_PAIR) for item in items]
    return [v.split("-")[0] if isinstance(v, str) and "-" in v else None for v in values]


def challenge_remaps(runs: Sequence[RunSpec | Compiled], items: Sequence[Item], remap: tuple[str, str] | None,
                     path: str = "<items>") -> list[list[Remapping] | None]:
    """Each run's remapping of each challenge item: the remapping option ``remap`` (value and
    label, :func:`~alignscore.evaluation.challenge_report.remap_option`) resolved by
    :func:`item_remaps` (a file, or a folder of ``<lang>.remap`` chosen by each item's ``lp``),
    as ``tune --sources --challenge`` resolves it, for every run without a remapping of its own
    (a run that names one keeps it).

    Parameters
    ----------
    runs : sequence of RunSpec or Compiled
        The compositions.
    items : sequence of Item
        The challenge items.
    remap : (str, str) or None
        The option's value and the option as the user wrote it.
    path : str
        The challenge set, for errors.

    Returns
    -------
    list
        Per run, each item's remapping (None: the run's own, if any, applies to every item).

    Raises
    ------
    InputError
        With a folder, an item without ``lp`` (its file and line).
    ConfigError
        A language without a remapping, a file that is not one or learned for another language.

    Examples
    --------
    >>> from alignscore.config import run_spec
    >>> challenge_remaps([run_spec({"layer": 2})], [Item(("a",), "b", "c", "x")], None)
    [None]
    """
    chosen = item_remaps(items, *remap, path) if remap is not None else None
    return [chosen if (run.spec if isinstance(run, Compiled) else run).composition.remap is None else None
            for run in runs]


def remap_summary(items: Sequence[Item], remaps: Sequence[Remapping]) -> str:
    """Which remapping scored which items' language: ``de=<digest>,ru=<digest>`` (by the items'
    ``lp``), or the one remapping's digest when every item has the same.

    Examples
    --------
    >>> import torch
    >>> r = Remapping("umd", torch.ones(2) / 2 ** 0.5, "m", "0" * 12, 2, "de", 1)
    >>> remap_summary([Item(("a",), "b", "c", "x")], [r]) == r.digest()
    True
    """
    chosen = {id(r): r for r in remaps}
    if len(chosen) == 1:
        return next(iter(chosen.values())).digest()
    return ",".join(dict.fromkeys(f"{lang}={r.digest()}" for lang, r in zip(item_languages(items), remaps)))


def remapped_item_scores(scorers: Sequence[Scorer], items: Sequence[Item], sources: bool,
                         remaps: Sequence[Sequence[Remapping] | None]) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """:func:`~alignscore.evaluation.challenge.item_scores` of the scorers, each with its items'
    remappings (:func:`challenge_remaps`): the scorers of one remapping option scored together;
    each signature's ``remap`` field says which remapping scored which language
    (:func:`remap_summary`). Check them against their runs first (:func:`check_remaps`).

    Parameters
    ----------
    scorers : sequence of Scorer
        The runs, built.
    items : sequence of Item
        The challenge items.
    sources : bool
        Score against each item's source.
    remaps : sequence
        Per scorer, each item's remapping (or None).

    Returns
    -------
    list of (str, ndarray, ndarray)
        Per scorer: its signature, the good and the bad candidates' scores.
    """
    keys = [id(r) if r is not None else None for r in remaps]
    out: list[tuple[str, np.ndarray, np.ndarray]] = [("", np.zeros(0), np.zeros(0))] * len(scorers)
    for key in dict.fromkeys(keys):
        idx = [k for k, other in enumerate(keys) if other == key]
        chosen = remaps[idx[0]]
        for k, (signature, good, bad) in zip(idx, item_scores([scorers[k] for k in idx], items, sources, chosen)):
            if chosen:  # the first items' remapping is in the signature: name every language's
                signature = signature.replace(f"remap:{chosen[0].digest()}", f"remap:{remap_summary(items, chosen)}")
            out[k] = (signature, good, bad)
    return out


__all__ = ["BEST_FOR", "LANG_PAIR", "REMAP_FILE", "against_sources", "challenge_remaps", "check_remaps",
           "item_languages", "item_remaps", "remap_summary", "remaps_for", "remapped_item_scores", "split_remap"]
