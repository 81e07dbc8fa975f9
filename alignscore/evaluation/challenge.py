"""Challenge sets: does a metric score a correct candidate above an incorrect one?

A challenge set holds items of one reference (or several), a ``good`` candidate and a ``bad``
one that differs from it by one error of a named ``category`` (Hanna & Bojar, 2021, "A
Fine-Grained Analysis of BERTScore"; the ACES and DEMETR sets of the WMT metrics task). A
metric's accuracy on a category is the share of its items where the metric's primary score of
``good`` is above that of ``bad``; a tie is a miss, counted apart. Items marked ``control``
change the candidate in a way that should not matter (casing, spacing): for them the mean
score change ``bad - good`` is reported instead (0 is ideal).

Against sources (reference-free, ``alignscore challenge --sources``), each item also has a
``source``: the text its candidates translate; ``good`` and ``bad`` are scored against it.

The format, one JSON object a line (blank lines are skipped)::

    {"ref": "The cat sat.", "good": "The cat sat.", "bad": "The cat sat not.", "category": "negation", "id": "7"}

``refs`` (a list) may stand in for ``ref``; ``id`` and ``control`` (a boolean) are optional.
Any other field (a language pair ``lp``, a ``system``, ...) is kept with the item, and results
may be broken down by it (:func:`field_values`, ``alignscore challenge --by lp``).

Every line is checked as it is read (:func:`parse_item`, :func:`read_items`); an item given
twice counts twice, or its repeats are dropped (:func:`settle_repeats`). Every composition
scores the distinct ``(candidate, references)`` pairs of all items, good and bad candidates
together, in one engine call, as ``alignscore score`` of those pairs would: a good and a bad
candidate get the same weights (idf), and each distinct text is encoded once.
"""

from __future__ import annotations

import json
import math
import unicodedata
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import numpy as np

from ..errors import InputError
from ..scorer import Scorer, score_together
from ..textio import iter_lines
from .stats import SACREBLEU_SEED, DifferenceTest, bootstrap_mean, bootstrap_mean_difference

if TYPE_CHECKING:
    from ..remap import Remapping

ALL = "all"
MIN_ITEMS = 10  # below this many items a category's accuracy says little: a warning names its n
# Two scores closer than this are a tie: the same text layout encoded in batches of different
# padding may differ by float32 rounding (a few units of 1e-7 for scores near 1).
TIE_TOLERANCE = 1e-6


#: The extra field of an item scored against its source (the text its candidates translate).
SOURCE = "source"
#: The fields an item has of its own; any other field is kept as it is (:attr:`Item.fields`).
ITEM_FIELDS = ("ref", "refs", "good", "bad", "category", "id", "control")
#: Unicode categories refused in a category or a breakdown value: control characters (a tab,
#: a line break), formatting characters (a zero-width space, a byte-order mark) and line or
#: paragraph separators. Each would split a TSV row or show as something it is not.
UNPRINTABLE = ("Cc", "Cf", "Zl", "Zp")


@dataclass(frozen=True)
class Item:
    """One challenge item: the reference(s), the correct and the incorrect candidate; any
    other fields of its line as ``(name, JSON value)`` pairs, in the line's order; the line
    it was read from (not part of what the item is)."""

    refs: tuple[str, ...]
    good: str
    bad: str
    category: str
    id: str | None = None
    control: bool = False
    fields: tuple[tuple[str, Any], ...] = ()
    line: int | None = field(default=None, compare=False)

    def extra(self, name: str) -> Any:
        """The value of the extra field ``name``, or None where the item has none."""
        return next((value for key, value in self.fields if key == name), None)


def unprintable(text: str) -> str | None:
    """The first character of ``text`` that may not stand in a one-line label (:data:`UNPRINTABLE`),
    or None.

    >>> unprintable("negation"), unprintable("neg\\tation")
    (None, '\\t')
    """
    return next((ch for ch in text if unicodedata.category(ch) in UNPRINTABLE), None)


def _text(obj: dict[str, Any], key: str, path: str, line: int) -> str:
    value = obj[key]
    if not isinstance(value, str):
        raise InputError(f"'{key}' must be a string, not {type(value).__name__}", path, line)
    if not value.strip():
        raise InputError(f"'{key}' is empty", path, line)
    return value


def parse_item(obj: Any, path: str = "<items>", line: int = 1) -> Item:
    """One line of a challenge set, checked: an object with ``ref`` or ``refs``, ``good``,
    ``bad`` and ``category``, no empty text, ``good`` different from ``bad``.

    Example:
        >>> parse_item({"ref": "a b", "good": "a b", "bad": "b a", "category": "swap"}).refs
        ('a b',)

    Raises:
        InputError: what is wrong, with ``path`` and ``line``.
    """
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, not {type(obj).__name__}", path, line)
    missing = [k for k in ("good", "bad", "category") if k not in obj]
    if ("ref" in obj) == ("refs" in obj):
        missing.insert(0, "ref" if "ref" not in obj else "ref or refs, not both")
    if missing:
        raise InputError(f"missing field(s): {', '.join(missing)}", path, line)
    if "refs" in obj:
        refs = obj["refs"]
        if not isinstance(refs, list) or not refs:
            raise InputError("'refs' must be a non-empty list of strings", path, line)
        if not all(isinstance(r, str) and r.strip() for r in refs):
            raise InputError("'refs' holds an empty text or one that is not a string", path, line)
        refs = tuple(refs)
    else:
        refs = (_text(obj, "ref", path, line),)
    good, bad, category = (_text(obj, k, path, line) for k in ("good", "bad", "category"))
    if good.strip() == bad.strip():
        raise InputError("'good' and 'bad' are the same text: no metric can rank them", path, line)
    item_id = obj.get("id")
    if item_id is not None and not isinstance(item_id, (str, int)):
        raise InputError(f"'id' must be a string or a number, not {type(item_id).__name__}", path, line)
    control = obj.get("control", False)
    if not isinstance(control, bool):
        raise InputError("'control' must be true or false", path, line)
    category = category.strip()  # surrounding spaces are no part of a name
    if (bad_char := unprintable(category)) is not None:
        raise InputError(f"'category' {category!r} holds {bad_char!r}, a control or formatting character: a "
                         "category is one line of plain text", path, line)
    if category == ALL:
        raise InputError(f"category {ALL!r} is the name of the total: name the category otherwise", path, line)
    extra = tuple((k, v) for k, v in obj.items() if k not in ITEM_FIELDS)
    return Item(refs, good, bad, category, None if item_id is None else str(item_id), control, extra, line)


def read_items(path: str | Path) -> list[Item]:
    """Every item of a challenge set file (JSON lines, UTF-8), each checked by :func:`parse_item`.
    A control category may not share its name with a scored one, and an ``id`` names one item
    (the same item given again may repeat it: see :func:`settle_repeats`).

    Raises:
        InputError: the first bad line (file and line), or a file with no item.
    """
    items: list[Item] = []
    where: dict[str, tuple[bool, int]] = {}
    ids: dict[str, tuple[str, int]] = {}
    for number, text in enumerate(iter_lines(path), start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg} at column {exc.colno})", str(path), number) from None
        item = parse_item(obj, str(path), number)
        kind, first = where.setdefault(item.category, (item.control, number))
        if kind != item.control:
            raise InputError(f"category {item.category!r} is a control here but not on line {first} (or the "
                             "other way round): a category is one or the other", str(path), number)
        if item.id is not None:
            key, first = ids.setdefault(item.id, (identity(item), number))
            if key != identity(item):
                raise InputError(f"id {item.id!r} is also the id of line {first}, a different item: an id names one "
                                 "item", str(path), number)
        items.append(item)
    if not items:
        raise InputError("holds no challenge item", str(path))
    return items


def identity(item: Item) -> str:
    """What an item is, its id and line aside: two items with the same identity are the same
    item given twice."""
    return json.dumps([item.refs, item.good, item.bad, item.category, item.control, dict(item.fields)],
                      ensure_ascii=False, sort_keys=True)  # sorted: the order of a line's fields is no part of it


def repeats(items: Sequence[Item]) -> list[tuple[int, int]]:
    """``(k, first)`` for each item ``k`` that repeats an earlier item ``first`` (positions in
    ``items``; :func:`identity`)."""
    seen: dict[str, int] = {}
    return [(k, first) for k, item in enumerate(items) if (first := seen.setdefault(identity(item), k)) != k]


def settle_repeats(items: Sequence[Item], dedupe: bool = False, label: str = "dedupe=",
                   say: Callable[[str], None] | None = None) -> tuple[list[Item], int]:
    """The items and how many of them repeat an earlier one: with ``dedupe``, without the
    repeats (the first of each is kept; ``say`` is told how many were dropped); without, all of
    them and a warning that names the count and the first repeat (a repeat counts as often as it
    appears, in n and accuracy). ``label``: the option ``dedupe`` as the caller names it.

    >>> one = Item(("a",), "b", "c", "x", line=1)
    >>> settle_repeats([one, replace(one, line=2)], True, say=print)[1]
    dedupe=: dropped 1 item(s) that repeat an earlier one
    1
    """
    found = repeats(items)
    if not found or dedupe:
        dropped = {k for k, _ in found}
        if found and say is not None:
            say(f"{label}: dropped {len(found)} item(s) that repeat an earlier one")
        return [item for k, item in enumerate(items) if k not in dropped], len(found)
    k, first = found[0]
    where = (f"line {items[k].line} repeats line {items[first].line}" if items[k].line and items[first].line
             else f"item {k + 1} repeats item {first + 1}")
    warnings.warn(f"{len(found)} item(s) repeat an earlier one ({where}, the id aside): each counts as often as it "
                  f"appears; {label} drops the repeats", stacklevel=2)
    return list(items), len(found)


def field_values(items: Sequence[Item], name: str, path: str = "<items>", label: str = "by=") -> list[str]:
    """Each item's value of the extra field ``name``, as text (a string stripped of surrounding
    spaces, a number or boolean as JSON writes it): what ``by`` (``label``: as the caller names
    it) breaks the results down by.

    Raises:
        InputError: ``name`` is an item's own field or holds a control character; an item has
            no such field (the first is named by its line, with their count), or a value that is
            not a non-empty one-line string, a number or a boolean.
    """
    if name in ITEM_FIELDS:
        raise InputError(f"{label} {name}: {name!r} is a field of every item; break down by another field of the "
                         "items (e.g. lp)")
    if not name.strip() or unprintable(name) is not None:
        raise InputError(f"{label} {name!r}: a field name is one line of plain text")
    if name in OUTPUT_NAMES:
        raise InputError(f"{label} {name}: the results have a column of that name; break down by another field")
    out, missing = [], []
    for k, item in enumerate(items):
        value = item.extra(name)
        where = item.line if item.line is not None else k + 1
        if value is None:
            missing.append(where)
            continue
        if isinstance(value, (bool, int, float)) and math.isfinite(value):
            out.append(json.dumps(value))  # true, false, 3, 0.5
        elif isinstance(value, str) and value.strip() and unprintable(value.strip()) is None:
            out.append(value.strip())
        else:
            raise InputError(f"{label} {name}: the value {value!r} is not a one-line text, a number or a boolean",
                             path, where)
    if missing:
        raise InputError(f"{label} {name}: {len(missing)} item(s) have no {name!r} (the first on line {missing[0]}): "
                         "give every item the field", path)
    return out


def check_sizes(items: Sequence[Item], minimum: int = MIN_ITEMS, groups: Sequence[str] | None = None,
                by: str | None = None) -> list[str]:
    """A warning for each category with fewer than ``minimum`` items (its n), also issued; with
    ``groups`` (a value per item, of the field ``by``), for each category within each value."""
    counts = Counter((groups[k] if groups is not None else None, item.category) for k, item in enumerate(items))
    messages = [(f"{by} {g!r}: " if g is not None else "") + f"category {c!r} has only {n} item(s): its accuracy "
                "is uncertain" for (g, c), n in counts.items() if n < minimum]
    for message in messages:
        warnings.warn(message, stacklevel=2)
    return messages


def categories(items: Iterable[Item]) -> list[str]:
    """The categories in first-seen order."""
    return list(dict.fromkeys(item.category for item in items))


@dataclass(frozen=True)
class CategoryResult:
    """One composition on one category. For a scored category: ``accuracy`` (share of items
    whose good candidate scores above the bad one), ``correct``, ``ties`` (a tie is a miss)
    and the bootstrap interval ``low`` .. ``high`` of the accuracy; with a ``test`` against the
    composition it is compared with (``against``; a paired bootstrap of the accuracy difference,
    this one's minus that one's). For a control: ``mean_change`` (mean of bad - good) with its
    interval in ``low`` .. ``high``. ``group``: the value of the field the results are broken
    down by (None: all items)."""

    category: str
    n: int
    control: bool
    accuracy: float | None
    correct: int
    ties: int
    low: float
    high: float
    mean_change: float | None = None
    test: DifferenceTest | None = None
    against: str | None = None
    group: str | None = None


@dataclass
class CompositionResult:
    """A composition's scores of the good and bad candidates and its per-category results."""

    name: str
    signature: str
    good: np.ndarray
    bad: np.ndarray
    categories: list[CategoryResult] = field(default_factory=list)

    def category(self, name: str, group: str | None = None) -> CategoryResult:
        return next(c for c in self.categories if c.category == name and c.group == group)


def judge(good: np.ndarray, bad: np.ndarray, tolerance: float = TIE_TOLERANCE) -> tuple[np.ndarray, np.ndarray]:
    """``(correct, tie)`` per item: ``good - bad > tolerance``, and ``|good - bad| <= tolerance``.

    Example:
        >>> judge(np.array([0.9, 0.5, 0.4]), np.array([0.8, 0.5, 0.6]))
        (array([ True, False, False]), array([False,  True, False]))
    """
    d = np.asarray(good, dtype=np.float64) - np.asarray(bad, dtype=np.float64)
    return d > tolerance, np.abs(d) <= tolerance


def _results(items: Sequence[Item], good: np.ndarray, bad: np.ndarray, other: tuple[str, np.ndarray] | None,
             resamples: int, seed: int) -> list[CategoryResult]:
    """Each scored category (then ``all``): the accuracy, tested against ``other``'s (its name,
    and whether it was right on each item); each control: the mean change ``bad - good``."""
    out = []
    correct, tie = judge(good, bad)
    cats = categories(items)
    controls = [c for c in cats if next(i for i in items if i.category == c).control]
    scored = [c for c in cats if c not in controls]
    members = {c: np.array([k for k, i in enumerate(items) if i.category == c]) for c in cats}
    members[ALL] = np.array([k for k, i in enumerate(items) if not i.control], dtype=np.int64)
    for name in scored + ([ALL] if scored else []) + controls:
        idx, control = members[name], name in controls
        values = bad[idx] - good[idx] if control else correct[idx].astype(np.float64)
        interval = bootstrap_mean(values, resamples, seed)
        test = against = None
        if other is not None and not control:
            test, against = bootstrap_mean_difference(values, other[1][idx], resamples, seed), other[0]
        mean = float(values.mean())
        out.append(CategoryResult(name, len(idx), control, None if control else mean, int(correct[idx].sum()),
                                  int(tie[idx].sum()), interval.low, interval.high, mean if control else None,
                                  test, against))
    return out


def evaluate_scores(items: Sequence[Item], scores: Sequence[tuple[str, str, np.ndarray, np.ndarray]],
                    resamples: int = 1000, seed: int = SACREBLEU_SEED,
                    against: Sequence[int | None] | None = None,
                    groups: Sequence[str] | None = None) -> list[CompositionResult]:
    """Per-category results of compositions given their scores: ``(name, signature, good,
    bad)`` each, ``good[k]`` and ``bad[k]`` the scores of item k's candidates. Composition i is
    tested against composition ``against[i]`` (None: no test); by default every composition
    after the first against the first. With ``groups`` (a value per item, :func:`field_values`),
    the results are per value (in first-seen order), per category within it (and ``all``)."""
    against = [None] + [0] * (len(scores) - 1) if against is None else against
    out = [CompositionResult(name, signature, np.asarray(good, dtype=np.float64), np.asarray(bad, dtype=np.float64))
           for name, signature, good, bad in scores]
    for r in out:
        if not (np.isfinite(r.good).all() and np.isfinite(r.bad).all()):
            raise InputError(f"composition {r.name}: a score is not finite")
    for result, other in zip(out, against):
        partner = out[other] if other is not None and out[other] is not result else None
        right = judge(partner.good, partner.bad)[0].astype(np.float64) if partner is not None else None
        for value in dict.fromkeys(groups) if groups is not None else [None]:  # None: every item
            idx = np.array([k for k in range(len(items)) if groups is None or groups[k] == value], dtype=np.int64)
            theirs = (partner.name, right[idx]) if partner is not None and right is not None else None
            result.categories += [replace(c, group=value) for c in _results(
                [items[k] for k in idx], result.good[idx], result.bad[idx], theirs, resamples, seed)]
    return out


def side(item: Item, sources: bool = False) -> tuple[str, ...]:
    """What the item's candidates are scored against: its references, or (``sources``) its source."""
    return (str(item.extra(SOURCE)),) if sources else item.refs


def check_sources(items: Sequence[Item], path: str = "<items>", label: str = "against_sources=") -> None:
    """Refuse items scored against sources without a ``source`` text (the first named by its
    line; ``label``: how the user asked for sources)."""
    for k, item in enumerate(items):
        value = item.extra(SOURCE)
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{label}: the item has no {SOURCE!r} text (the text its candidates translate, which "
                             "they are scored against)", path, item.line if item.line is not None else k + 1)


def challenge_pairs(items: Sequence[Item], sources: bool = False) -> list[tuple[str, tuple[str, ...]]]:
    """The distinct ``(candidate, references)`` pairs of the items (``sources``: ``(candidate,
    (source,))``), good and bad candidates together, in first-seen order: what
    :func:`run_challenge` scores, once each."""
    return list(dict.fromkeys((text, side(item, sources)) for item in items for text in (item.good, item.bad)))


def run_challenge(scorers: Sequence[Scorer], items: Sequence[Item], names: Sequence[str] | None = None,
                  resamples: int = 1000, seed: int = SACREBLEU_SEED,
                  against: Sequence[int | None] | None = None,
                  groups: Sequence[str] | None = None, sources: bool = False) -> list[CompositionResult]:
    """Score every item with every scorer (its primary metric, :func:`item_scores`; ``sources``:
    against each item's source) and evaluate per category (:func:`evaluate_scores`, which takes
    ``resamples``, ``seed``, ``against`` and ``groups``); ``names``: a label per scorer (default
    ``A``, ``B``, ...). Scorers that share an encoder (:func:`alignscore.config.plan_runs` gives
    equal encoder specs one) encode each distinct text once for all of them. Returns one
    :class:`CompositionResult` per scorer, in order."""
    names = list(names) if names is not None else [chr(ord("A") + i) for i in range(len(scorers))]
    scores = [(name, *scored) for name, scored in zip(names, item_scores(scorers, items, sources))]
    return evaluate_scores(items, scores, resamples, seed, against, groups)


def item_scores(scorers: Sequence[Scorer], items: Sequence[Item], sources: bool = False,
                remaps: Sequence[Remapping | None] | None = None) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Per scorer: its signature and every item's good and bad candidate's primary score, the
    distinct pairs (:func:`challenge_pairs`) scored once, as ``scorer.score`` of them would
    (:func:`~alignscore.scorer.score_together`: a good and a bad candidate get the same idf
    weights), against each item's source with ``sources``. ``remaps``: item k's remapping (a
    search's, by source language): each remapping's items scored together, every composition
    given it (the signature is the first items')."""
    chosen = list(remaps) if remaps is not None else [None] * len(items)
    keys = [id(r) for r in chosen]
    good, bad = np.zeros((2, len(scorers), len(items)))
    signatures: list[str] = []
    for key in dict.fromkeys(keys or [id(None)]):
        idx = np.array([k for k, other in enumerate(keys) if other == key], dtype=np.int64)
        remap = next((r for r in chosen if id(r) == key), None)
        runs = scorers if remap is None else [replace(s, composition=replace(s.composition, remap=remap))
                                              for s in scorers]
        group = [items[k] for k in idx]
        pairs = challenge_pairs(group, sources)
        where = {pair: k for k, pair in enumerate(pairs)}
        g, b = np.array([(where[(i.good, side(i, sources))], where[(i.bad, side(i, sources))]) for i in group],
                        dtype=np.int64).reshape(-1, 2).T
        results = score_together(runs, [c for c, _ in pairs], [list(r) for _, r in pairs], sources)
        for s, (run, r) in enumerate(zip(runs, results)):
            values = r[run.composition.metric].double().numpy()
            good[s, idx], bad[s, idx] = values[g], values[b]
        signatures = signatures or [str(r.signature) for r in results]
    return [(sig, good[s], bad[s]) for s, sig in enumerate(signatures)]


COLUMNS = ("composition", "category", "n", "accuracy", "correct", "ties", "low", "high", "mean_change",
           "against", "delta", "delta_low", "delta_high", "p_value")
#: Every key of a result row (:func:`rows`): a field the results are broken down by may not be one.
OUTPUT_NAMES = frozenset(COLUMNS) | {"kind", "signature"}


__all__ = ["ALL", "COLUMNS", "CategoryResult", "CompositionResult", "ITEM_FIELDS", "Item", "MIN_ITEMS",
           "OUTPUT_NAMES", "SOURCE", "TIE_TOLERANCE", "UNPRINTABLE", "categories", "challenge_pairs", "check_sizes",
           "check_sources", "evaluate_scores", "field_values", "identity", "item_scores", "judge", "parse_item",
           "read_items", "repeats", "run_challenge", "settle_repeats", "side", "unprintable"]
