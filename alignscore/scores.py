"""Per-candidate scores: the reduction of per-pair scores over each candidate's references, the
rescaling, and the checks of what a caller passes as candidates and references."""

from __future__ import annotations

import dis
import sys
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

import torch

from .rescale import rescale
from .errors import ConfigError, InputError, describe
from .settings import keyword
from .signature import Signature
from .weighting.classes import TOKEN_CLASSES, TokenClassWeights
from .weighting import WEIGHTINGS
from .weighting.schemes import IdfL, IdfS, _Idf

if TYPE_CHECKING:
    from .composition import Composition
    from .engine import Pairs, PairScores

__all__ = ["PairwiseScores", "Scores", "check_idf", "check_references", "check_sides", "check_texts", "reduce",
           "reduce_groups", "why_empty"]


class _ByMetric:
    """Metrics by name (``scores.f1``, ``scores["f1"]``) and in order (``P, R, F = scores``,
    ``scores[0]``), from a ``metrics`` dict whose order is the aligner's
    (:attr:`~alignscore.aligners.base.Aligner.metrics`)."""

    metrics: dict[str, torch.Tensor]

    def __getitem__(self, key: str | int) -> torch.Tensor:
        """The metric named ``key``, or the ``key``-th metric in the aligner's order."""
        if isinstance(key, int) and not isinstance(key, bool):
            values = list(self.metrics.values())
            if not -len(values) <= key < len(values):
                raise IndexError(f"metric {key} of {len(values)} ({', '.join(self.metrics)})")
            return values[key]
        return self.metrics[key]

    def __iter__(self) -> Iterator[torch.Tensor]:
        """The metrics in the aligner's order, as bert_score returns them: ``P, R, F = scores``
        for greedy matching (precision, recall, F1, then F-beta when ``beta`` is set); one score
        for the optimal-transport aligners. Unpacked into another number of names
        (``P, R, F = scores`` of a WMD run), a ValueError says what the scores hold."""
        frame = sys._getframe(1)  # the caller's instruction: Python's own error would not name the metrics
        code, at = frame.f_code.co_code, frame.f_lasti
        names = len(self.metrics)
        if at + 1 < len(code) and dis.opname[code[at]] == "UNPACK_SEQUENCE" and code[at + 1] != names:
            raise ValueError(f"{code[at + 1]} names for {names} metric{'s' if names > 1 else ''}: these scores hold "
                             f"{', '.join(self.metrics)} (unpack {names} name{'s' if names > 1 else ''}, or read one "
                             f"by name: scores.{next(iter(self.metrics))})")
        return iter(self.metrics.values())

    def __getattr__(self, name: str) -> torch.Tensor:
        metrics = self.__dict__.get("metrics", {})
        if name in metrics:
            return metrics[name]
        raise AttributeError(name)


@dataclass
class Scores(_ByMetric):
    """Scores per candidate, in input order, by metric name (``scores.f1``, ``scores["f1"]``) and
    in the aligner's order of its metrics (``P, R, F = scores``, bert_score's habit; ``scores[2]``).

    ``len(scores)`` is the number of candidates; iterating gives the metrics (precision, recall
    and F1 for greedy matching, then F-beta when ``beta`` is set; one ``score`` for WMD, Sinkhorn
    and BaryScore).

    Parameters
    ----------
    metrics : dict of str to torch.Tensor
        ``{metric: [N]}``, in the aligner's order.
    best_reference : torch.Tensor
        ``[N]`` long: the index, among candidate i's references, of the one with the best
        primary score (F1 for greedy).
    empty : torch.Tensor
        ``[N]`` bool: candidates scored against an empty text (they score 0).
    signature : Signature
        Every setting that changes a number.

    Examples
    --------
    >>> import torch
    >>> from alignscore.signature import Signature
    >>> scores = Scores({"precision": torch.tensor([0.9, 0.5]), "recall": torch.tensor([0.8, 0.7]),
    ...                  "f1": torch.tensor([0.85, 0.6])}, torch.tensor([0, 0]), torch.tensor([False, False]),
    ...                 Signature.of({"align": "greedy(cos)"}))
    >>> P, R, F = scores
    >>> F.tolist() == scores.f1.tolist() == scores["f1"].tolist() == scores[2].tolist()
    True
    >>> len(scores), list(scores.metrics)
    (2, ['precision', 'recall', 'f1'])
    """

    metrics: dict[str, torch.Tensor]
    best_reference: torch.Tensor
    empty: torch.Tensor
    signature: Signature

    def __len__(self) -> int:
        return len(self.best_reference)

    def means(self) -> dict[str, float]:
        """Each metric's mean over the candidates. Raises :class:`InputError` when there are
        none: a mean of no scores is undefined (never NaN)."""
        if len(self) == 0:
            raise InputError("no candidates were scored: there is no mean score")
        return {k: float(v.double().mean()) for k, v in self.metrics.items()}


@dataclass
class PairwiseScores(_ByMetric):
    """Scores of every candidate against every reference: each metric an ``[N, M]`` matrix
    (``scores.f1[i, j]``: candidate i against reference j; ``P, R, F = scores`` as for
    :class:`Scores`); ``empty [N, M]`` marks pairs with a side that carries no mass (they score
    0); ``signature`` as for :class:`Scores`."""

    metrics: dict[str, torch.Tensor]
    empty: torch.Tensor
    signature: Signature

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.empty.shape)  # type: ignore[return-value]


def check_texts(items: Any, what: str) -> list[str]:
    """A list of texts (str), checked: any iterable but a single string (read once); raises
    InputError naming the position of what is not a text."""
    texts = _texts(items, what)
    for i, t in enumerate(texts):
        _check_text(t, f"{what[:-1]} {i}")
    return texts


def _texts(items: Any, what: str) -> list[Any]:
    """``items`` as a list, read once (any iterable but a single string, bytes or a mapping)."""
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise InputError(f"{what} must be a list of texts, not {describe(items)}")
    return list(items)


def _check_text(t: Any, where: str) -> None:
    if not isinstance(t, str):
        raise InputError(f"{where} is {describe(t)}, not a text (str)")
    try:
        t.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"{where} is not valid Unicode: character {exc.start} is a lone surrogate "
                         f"({t[exc.start]!r}), which no tokenizer can encode") from None


def check_references(cands: Any, refs: Any) -> tuple[list[str], list[list[str]]]:
    """The candidates and, per candidate, its references, checked: one text (str) or one
    iterable of texts per candidate; generators are read once. Raises InputError naming the
    position of what is wrong."""
    cands = _texts(cands, "candidates")
    refs = _texts(refs, "references")
    if len(refs) != len(cands):
        raise InputError(f"{len(cands)} candidates but {len(refs)} references (or reference groups)")
    groups = []
    for i, r in enumerate(refs):
        if not isinstance(r, str) and (isinstance(r, (bytes, Mapping)) or not isinstance(r, Iterable)):
            raise InputError(f"reference {i} is {describe(r)}, not a text (str) nor a list of texts")
        groups.append([r] if isinstance(r, str) else list(r))
    for i, c in enumerate(cands):
        _check_text(c, f"candidate {i}")
    for i, g in enumerate(groups):
        if not g:
            raise InputError(f"candidate {i} has no reference")
        for j, t in enumerate(g):
            _check_text(t, f"reference {i}" if isinstance(refs[i], str) else f"reference group {i}, item {j}")
    return cands, groups


def check_sides(cands: Any, refs: Any, sources: Any) -> tuple[list[str], list[list[str]]]:
    """:func:`check_references` of ``refs``, or of ``sources`` (one text in another language per
    candidate, which takes a reference's place): exactly one of the two is given."""
    if (refs is None) == (sources is None):
        raise InputError("give references or sources (reference-free scoring), one of the two"
                         if refs is None else "give references or sources, not both")
    if refs is not None:
        return check_references(cands, refs)
    cands, sources = check_texts(cands, "candidates"), check_texts(sources, "sources")
    if len(sources) != len(cands):
        raise InputError(f"{len(cands)} candidates but {len(sources)} sources")
    return cands, [[s] for s in sources]


def check_idf(composition: Composition, groups: Sequence[Sequence[str]]) -> None:
    """Refuse idf-S fitted on one reference text: every token is in every reference, so every
    idf is ``log(2/2) = 0`` and every score would be 0 (bert_score prints those zeros; a
    :class:`~alignscore.scorer.Scorer` scores them with a warning, the ``score`` command refuses
    them before the model loads). Raises :class:`~alignscore.errors.ConfigError` about the
    weighting (the caller names it as given).

    Examples
    --------
    >>> from alignscore.composition import Composition
    >>> check_idf(Composition(weighting=IdfS()), [["the cat"], ["the cat"]])
    Traceback (most recent call last):
    alignscore.errors.ConfigError: idf-S over one reference text ('the cat') weighs every token log(2/2) = 0, ...
    """
    distinct = {text for group in groups for text in group}
    if isinstance(composition.weighting, IdfS) and len(distinct) == 1:
        raise ConfigError(f"idf-S over one reference text ({next(iter(distinct))[:40]!r}) weighs every token "
                          "log(2/2) = 0, so every score would be 0; use idf-L with a larger corpus, or no idf",
                          (WEIGHTINGS.stage,))


def reduce(result: PairScores, pairs: Pairs, composition: Composition, signature: Signature,
           static: bool = False, name: Callable[[str], str] = keyword) -> Scores:
    """Per-pair scores -> per-candidate :class:`Scores`: warn about pairs with nothing to align
    (and why; ``static``: the encoder is a static table; ``name``: how the run's options are
    named, :meth:`Runtime.name <alignscore.runtime.Runtime.name>`), reduce several references
    (``composition.multi_ref``), name the best one by ``composition.metric``, rescale with its baseline."""
    if len(pairs.groups) == 1:  # no candidates: every metric is an empty tensor
        return Scores({m: torch.empty(0) for m in composition.metrics}, torch.empty(0, dtype=torch.long),
                      torch.empty(0, dtype=torch.bool), signature)
    for message in why_empty(result.reasons, pairs, composition, static, name):
        warnings.warn(message, stacklevel=4)
    reduced, best = reduce_groups(result.metrics, pairs.groups, composition.metric, composition.multi_ref)
    empty_any = reduce_groups({"e": result.empty.float()}, pairs.groups, "e", "max")[0]["e"] > 0
    baseline = composition.baseline_values()
    if baseline is not None:
        reduced = rescale(reduced, baseline)
    return Scores(reduced, best, empty_any, signature)


def why_empty(reasons: torch.Tensor, pairs: Pairs, composition: Composition, static: bool = False,
              name: Callable[[str], str] = keyword) -> list[str]:
    """One message per reason why pairs have a side without mass (``reasons [P, 2]``, see
    :data:`alignscore.engine.EMPTY_REASONS`): an empty text (``static``: of a static table, where
    a text whose every word is unknown has no token either), a text whose every token the token
    roles took out, or a text whose every token weighs 0 (idf); ``name`` names the options the
    advice mentions as the run's were given."""
    counts = {k: int((reasons == k).any(1).sum()) for k in (1, 2, 3)}
    w = composition.weighting
    corpus = getattr(w, "corpus", None)
    source = (f"the {len(corpus)} sentence(s) of its corpus" if corpus is not None
              else f"the {int(pairs.ref_counts.sum())} reference sentence(s) being scored")
    if isinstance(w, _Idf) and w.sep:
        source += f", candidate idf from the {len(pairs.groups) - 1} candidate(s)"
    messages = {
        1: ("{n} pair(s) have a text with no token in the static table (every word unknown, or an empty text); "
            "they score 0") if static else "{n} pair(s) have an empty text; they score 0",
        2: (f"{{n}} pair(s) have a text that the token roles ({composition.roles.signature()}) left empty "
            "(every token taken out); they score 0"),
        3: (f"{{n}} pair(s) have a text whose every token has idf 0 ({w.signature()}: idf from {source}; a "
            "token found in every one of those sentences gets idf 0, and from a single sentence every token "
            "does), so nothing carries mass and they score 0; use idf-L with a larger corpus "
            f"({name(WEIGHTINGS.stage)} idf-L {name(IdfL.corpus_setting())} FILE), or no idf"),
    }
    classed = getattr(w, "source", w)  # a streamed run's weighting, fitted beforehand: the one it was fitted from
    zeroed = [f"{name}_weight = 0" for name, weight in zip(TOKEN_CLASSES, classed.class_weights())
              if weight == 0] if isinstance(classed, TokenClassWeights) else []
    if zeroed:  # a class weight 0 is the likelier cause: name it first
        messages[3] = (f"{{n}} pair(s) have a text whose every token weighs 0 (token-class weights "
                       f"{', '.join(zeroed)}, weighting {w.signature()}), so nothing carries mass and they score 0")
    return [messages[k].format(n=n) for k, n in counts.items() if n]


def reduce_groups(values: dict[str, torch.Tensor], group_offsets: torch.Tensor, primary: str,
                  how: str) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Reduce per-reference scores to per-candidate scores.

    ``group_offsets [N+1]``: candidate i's pairs are ``group_offsets[i]:group_offsets[i+1]``.
    ``how = "max"`` takes each metric's maximum independently (bert_score); ``"mean"`` the
    average (MoverScore's examples). Also returns the index, within its group, of the reference
    with the best ``primary`` score.
    """
    sizes = group_offsets[1:] - group_offsets[:-1]
    width = int(sizes.max()) if len(sizes) else 0
    ar = torch.arange(width)
    valid = ar.unsqueeze(0) < sizes.unsqueeze(1)
    index = torch.where(valid, group_offsets[:-1].unsqueeze(1) + ar, torch.zeros((), dtype=torch.long))
    out = {}
    for name, v in values.items():
        grid = v[index]
        if how == "max":
            out[name] = grid.masked_fill(~valid, float("-inf")).amax(dim=1)
        else:
            out[name] = (grid * valid).sum(dim=1) / sizes
    best = values[primary][index].masked_fill(~valid, float("-inf")).argmax(dim=1)
    return out, best
