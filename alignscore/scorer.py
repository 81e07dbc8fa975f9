"""The scorer: an encoder, a composition and how to run them; :meth:`Scorer.score` is the engine
with one composition plus the reduction over each candidate's references."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Sequence

import torch

from .aggregators.base import Aggregator
from .aligners.base import Aligner
from .rescale import rescale
from .composition import MULTI_REF, Composition
from .encoders.base import Encoder
from .blocks import score_blocks
from .engine import PairScores, score_many
from .pairs import Blocks, Pairs
from .errors import ConfigError, NonFiniteError, describe
from .runtime import Runtime
from .scores import PairwiseScores, Scores, check_references, check_sides, check_texts, reduce, why_empty
from .signature import Signature
from .weighting.base import Weighting

if TYPE_CHECKING:
    from .cache import EmbeddingCache
    from .encoders.cached import CachedEncoder
    from .explain import Explanation

__all__ = ["MULTI_REF", "Scorer", "Scores", "by_encoder", "composition_signature", "score_together"]


@dataclass
class Scorer:
    """A metric composed of parts, and how to run it: an encoder, a :class:`Composition` (the
    parts after the encoder; BERTScore's by default), a :class:`Runtime` and an optional
    persistent cache. :func:`alignscore.config.build` makes one from a run spec; the parts are read
    through the composition (``scorer.aligner`` is ``scorer.composition.aligner``).

    Parameters
    ----------
    encoder : Encoder
        The contextual encoder (e.g. ``HFEncoder("roberta-large")``).
    composition : Composition
        Aggregator, token roles, weighting, aligner, metric, reference reduction and baseline
        (see :class:`~alignscore.composition.Composition`); BERTScore's by default.
    runtime : Runtime
        Batching, token budget, device, shard, progress (see
        :class:`~alignscore.runtime.Runtime`); changes a score by float rounding at most.
    cache : EmbeddingCache or str, optional
        A persistent :class:`~alignscore.cache.EmbeddingCache` of hidden states (or its
        directory): texts already encoded by this model skip the encoder.

    Examples
    --------
    With the kit's tiny word-level encoder (no model to load); the second candidate has two
    references, and the second is its best:

    >>> from alignscore.testing import WordEncoder
    >>> scorer = Scorer(WordEncoder())
    >>> scores = scorer.score(["the cat sat", "a dog"], ["the cat sat down", ["the dog", "a dog ran"]])
    >>> P, R, F = scores
    >>> [round(f, 4) for f in F.tolist()], scores.best_reference.tolist()
    ([0.8649, 0.8793], [0, 1])
    >>> scorer.signature()["align"], scorer.layers()
    ('greedy(cos)', [3])
    """

    encoder: Encoder
    composition: Composition = field(default_factory=Composition)
    runtime: Runtime = field(default_factory=Runtime)
    cache: EmbeddingCache | str | None = None
    _cached: CachedEncoder | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.cache, (str, os.PathLike)):
            from .cache import EmbeddingCache

            self.cache = EmbeddingCache(self.cache)
        if not isinstance(self.encoder, Encoder):
            raise ConfigError(f"encoder must be an instance of Encoder (e.g. HFEncoder(...)), not "
                              f"{describe(self.encoder)}")
        for name, kind in (("composition", Composition), ("runtime", Runtime)):
            if not isinstance(getattr(self, name), kind):
                raise ConfigError(f"{name} must be a {kind.__name__}, not {describe(getattr(self, name))}")

    @property
    def aggregator(self) -> Aggregator:
        return self.composition.aggregator

    @property
    def weighting(self) -> Weighting:
        return self.composition.weighting

    @property
    def aligner(self) -> Aligner:
        return self.composition.aligner

    def resolved(self) -> Composition:
        """The composition for this encoder's model (its layers resolved; ConfigError if it
        cannot be built for it).

        Returns
        -------
        Composition
            ``composition`` with absolute layers, as the engine runs it.

        Examples
        --------
        >>> from alignscore import SingleLayer
        >>> from alignscore.testing import WordEncoder   # a model of three layers
        >>> Scorer(WordEncoder(), Composition(SingleLayer(-2))).resolved().aggregator
        SingleLayer(layer=2)
        """
        return self.composition.resolve(self.scoring_encoder())

    def scoring_encoder(self) -> Encoder:
        """The encoder the engine runs: the scorer's own, through the cache when there is one
        (one wrapper per encoder and cache, so the model's facts are read once).

        Returns
        -------
        Encoder
            ``encoder``, or a :class:`~alignscore.encoders.cached.CachedEncoder` around it.

        Examples
        --------
        >>> import tempfile
        >>> from alignscore.testing import WordEncoder
        >>> scorer = Scorer(WordEncoder(), cache=tempfile.mkdtemp())
        >>> type(scorer.scoring_encoder()).__name__, scorer.scoring_encoder() is scorer.scoring_encoder()
        ('CachedEncoder', True)
        """
        if self.cache is None:
            return self.encoder
        if self._cached is None or self._cached.inner is not self.encoder or self._cached.cache is not self.cache:
            from .encoders.cached import CachedEncoder

            self._cached = CachedEncoder(self.encoder, self.cache)
        return self._cached

    def layers(self) -> list[int]:
        """The encoder layers this composition reads.

        Returns
        -------
        list of int
            Absolute layers (0: the embeddings), in the order the aggregator reads them.

        Examples
        --------
        >>> from alignscore import LayerMix
        >>> from alignscore.testing import WordEncoder
        >>> Scorer(WordEncoder()).layers(), Scorer(WordEncoder(), Composition(LayerMix((1, 3)))).layers()
        ([3], [1, 3])
        """
        return list(self.resolved().aggregator.layers_read())

    def signature(self, sources: bool = False) -> Signature:
        """Everything that changes a number, sacreBLEU-style, e.g.
        ``model:roberta-large|layers:L17|tokens:special=match-only|w:none|align:greedy(cos)|...``
        (``sources``: of scores against sources, ``refs:source``).

        Parameters
        ----------
        sources : bool
            The signature of scores against sources rather than references.

        Returns
        -------
        Signature
            Its fields in order; ``str()`` gives the text.

        Examples
        --------
        >>> from alignscore.testing import WordEncoder
        >>> sig = Scorer(WordEncoder()).signature()
        >>> sig["layers"], sig["align"], sig["refs"], Scorer(WordEncoder()).signature(sources=True)["refs"]
        ('L3', 'greedy(cos)', 'max', 'source')
        """
        return composition_signature(self.resolved(), self.encoder, sources)

    # -- scoring -----------------------------------------------------------------------------
    def score(self, cands: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]] | None = None, *,
              sources: Sequence[str] | None = None) -> Scores:
        """Score each candidate against its reference(s), or against its source (reference-free).

        Empty or whitespace-only texts are valid: a pair with an empty side scores 0 on every
        metric (bert_score's convention), with a warning; never NaN.

        Parameters
        ----------
        cands : sequence of str
            The candidates.
        refs : sequence of str, or of sequences of str
            One text per candidate, or one list of texts per candidate (several references,
            reduced by the composition's ``multi_ref``).
        sources : sequence of str, optional
            Instead of ``refs``: the text each candidate translates, in another language, aligned
            with it by a multilingual encoder (XMoverScore), remapped where the composition has
            a ``remap``. Weightings fit on the sources where they would on the references; the
            signature says ``refs:source``. With the composition's language-model term
            (``lm``), each score becomes ``score + lm_weight * (lm_score - lm_location) / lm_scale``
            (:mod:`alignscore.lm`).

        Returns
        -------
        Scores
            Per candidate, each metric (``scores.f1``; ``P, R, F = scores``), the best reference
            and the signature. Raises :class:`~alignscore.errors.InputError` for what is not a
            text, and :class:`~alignscore.errors.ConfigError` when the composition cannot be
            built for this encoder's model (before any text is encoded).

        Examples
        --------
        >>> from alignscore.testing import WordEncoder
        >>> scores = Scorer(WordEncoder()).score(["the cat sat", "a dog"], ["the cat", ["the dog", "a dog ran"]])
        >>> list(scores.metrics), scores.best_reference.tolist()
        (['precision', 'recall', 'f1'], [0, 1])
        """
        cands, groups = check_sides(cands, refs, sources)
        composition = self.resolved()  # a composition that cannot be built fails before encoding
        composition.check_side(sources is not None, self.runtime.name)
        fluency = self.lm_scores(composition, cands)  # first: an LM that cannot read them fails before encoding
        pairs = Pairs.from_groups(cands, groups)
        (result,) = score_many(self.scoring_encoder(), pairs, [composition], self.runtime)
        return self.reduce(composition, pairs, result, sources is not None, fluency)

    def lm_scores(self, composition: Composition, cands: Sequence[str]) -> torch.Tensor | None:
        """``[N]`` float64: the composition's language model's score of each candidate (see
        :mod:`alignscore.lm`), on the runtime's device and in its batches; None without an LM
        term. Raises :class:`~alignscore.lm.UnreadableTexts` for candidates its tokenizer cannot
        read and :class:`~alignscore.errors.NonFiniteError` for a score that is not finite.

        Parameters
        ----------
        composition : Composition
            Resolved (:meth:`resolved`); its ``lm`` term, if any, is read.
        cands : sequence of str
            The candidates.

        Returns
        -------
        torch.Tensor or None
            ``[N]`` float64, or None.

        Examples
        --------
        >>> from alignscore.testing import WordEncoder
        >>> scorer = Scorer(WordEncoder())
        >>> scorer.lm_scores(scorer.resolved(), ["a cat"]) is None   # no language-model term
        True
        """
        if composition.lm is None or not cands:
            return None
        values = composition.lm.scores(cands, self.runtime.device, self.runtime.batch_size)
        if not torch.isfinite(values).all():
            raise NonFiniteError(f"the language model {composition.lm.lm!r} gave a score that is not finite")
        return values

    def pairwise(self, cands: Sequence[str], refs: Sequence[str], max_pairs: int = 1 << 16) -> PairwiseScores:
        """Every candidate against every reference: each metric as an ``[N, M]`` matrix
        (``[i, j]``: candidate i against reference j), equal to :meth:`score` of that one pair
        with the same weights.

        Each unique text is encoded once; the ``N x M`` pairs are aligned in chunks of about
        ``max_pairs`` pairs (whole rows), so memory beyond the matrices stays bounded.
        Weightings are fitted on the two lists, not on the pairs: idf-S on the M references,
        each counted once (as if each were scored once); with SEP, the candidates' idf on the N
        candidates, each once; idf-L on its corpus. Pairs with an empty side score 0, with a
        warning, as in :meth:`score`; a baseline rescales every matrix.

        Parameters
        ----------
        cands, refs : sequence of str
            The ``N`` candidates and the ``M`` references.
        max_pairs : int
            About how many pairs are aligned at a time.

        Returns
        -------
        PairwiseScores
            Each metric an ``[N, M]`` matrix, the ``empty [N, M]`` mask and the signature.

        Examples
        --------
        >>> from alignscore.testing import WordEncoder
        >>> matrix = Scorer(WordEncoder()).pairwise(["the cat"], ["a cat", "the dog"])
        >>> matrix.shape, [round(f, 4) for f in matrix.f1[0].tolist()]
        ((1, 2), [0.6136, 0.6865])
        """
        cands, refs = check_texts(cands, "candidates"), check_texts(refs, "references")
        composition = self.resolved()
        composition.check_side(False, self.runtime.name)
        signature = composition_signature(composition, self.encoder)
        if not cands or not refs:
            shape = (len(cands), len(refs))
            return PairwiseScores({m: torch.zeros(shape) for m in composition.metrics},
                                  torch.zeros(shape, dtype=torch.bool), signature)
        blocks = Blocks.of([(cands, refs)])
        (result,) = next(score_blocks(self.scoring_encoder(), blocks, [composition], self.runtime, max_pairs))
        static = not self.encoder.has_layers
        for message in why_empty(result.reasons.reshape(-1, 2), blocks.pairs, composition, static,
                                 self.runtime.name):
            warnings.warn(message, stacklevel=2)
        baseline = composition.baseline_values()
        metrics = rescale(result.metrics, baseline) if baseline is not None else result.metrics
        return PairwiseScores(metrics, result.empty, signature)

    def reduce(self, composition: Composition, pairs: Pairs, result: PairScores, sources: bool = False,
               fluency: torch.Tensor | None = None) -> Scores:
        """Per-pair scores -> per-candidate :class:`Scores` (see :func:`alignscore.scores.reduce`),
        with the language-model term mixed in where the composition has one.

        Parameters
        ----------
        composition : Composition
            Resolved; its ``multi_ref`` reduction and baseline apply.
        pairs : Pairs
            The pairs scored, grouped by candidate.
        result : PairScores
            The engine's scores of ``pairs`` under ``composition``.
        sources : bool
            Scored against sources (the signature says ``refs:source``).
        fluency : torch.Tensor, optional
            ``[N]`` the LM's score of each candidate (:meth:`lm_scores`); None: no LM term.

        Returns
        -------
        Scores
            One score per candidate and metric, the best reference and the signature.

        Examples
        --------
        >>> from alignscore.testing import WordEncoder
        >>> scorer = Scorer(WordEncoder())
        >>> pairs = Pairs.from_groups(["a dog"], [["the dog", "a dog ran"]])
        >>> (result,) = score_many(scorer.encoder, pairs, [scorer.resolved()])
        >>> scorer.reduce(scorer.resolved(), pairs, result).best_reference.tolist()   # the better of two
        [1]
        """
        scores = reduce(result, pairs, composition, composition_signature(composition, self.encoder, sources),
                        not self.encoder.has_layers, self.runtime.name)
        if fluency is not None and composition.lm is not None:
            scores.metrics = {m: composition.lm.mix(v, fluency) for m, v in scores.metrics.items()}
        return scores

    def explain(self, cand: str, refs: str | Sequence[str]) -> "Explanation":
        """Why one candidate scores what it does against its reference(s): tokens, masses, the
        similarity or cost matrix, matches or transport plan and per-token contributions (see
        :func:`alignscore.explain.explain`).

        Parameters
        ----------
        cand : str
            The candidate.
        refs : str or sequence of str
            Its reference, or its references.

        Returns
        -------
        Explanation
            One alignment per reference, the scores and the best reference.

        Examples
        --------
        >>> from alignscore.testing import WordEncoder
        >>> why = Scorer(WordEncoder()).explain("the cat", ["a cat", "the dog"])
        >>> why.best_reference, why.best.ref_tokens, why.best.kind
        (1, ['[CLS]', 'the', 'dog', '[SEP]'], 'similarity')
        """
        from .explain import explain

        self.composition.check_side(False, self.runtime.name)
        return explain(self, [cand], [[refs] if isinstance(refs, str) else list(refs)])[0]


def composition_signature(composition: Composition, encoder: Encoder, sources: bool = False) -> Signature:
    """Everything that changes a number of a (resolved) composition on ``encoder``, e.g.
    ``model:roberta-large|layers:L17|tokens:special=match-only|w:none|align:greedy(cos)|...``;
    ``sources``: scored against sources (``refs:source``, reference-free; then ``lm:`` names the
    language-model term, or says ``none``). Each part says its own; the versions close it."""
    from ._version import __version__, installed_version
    import torch

    c = composition
    fields = {
        "model": encoder.signature(),
        "layers": c.aggregator.signature() + (f"(default of {c.default_of})" if c.default_of else ""),
        "tokens": c.roles.signature(),
        "w": c.weighting.signature(),
        "align": c.aligner.signature(),
        "metric": c.metric if c.metric != c.aligner.primary else None,
        "remap": c.remap.digest() if c.remap is not None else None,
        "refs": "source" if sources else c.multi_ref,
        **({"lm": c.lm.signature() if c.lm is not None else "none"} if sources else {}),
        "rescale": c.baseline.signature() if c.baseline else "no",
        "v": f"alignscore-{__version__},torch-{torch.__version__},transformers-{installed_version('transformers')}",
    }
    return Signature.of({k: v for k, v in fields.items() if v is not None})


def score_together(scorers: Sequence[Scorer], cands: Sequence[str],
                   refs: Sequence[str] | Sequence[Sequence[str]], sources: bool = False) -> list[Scores]:
    """Each scorer's :meth:`Scorer.score` of the same pairs (``sources``: ``refs`` holds each
    candidate's source, as :meth:`Scorer.score` with ``sources=``). Scorers that share their encoder
    (the same object: :func:`alignscore.config.build_all` gives scorers of equal encoder specs
    one) and cache share one engine call: each text is encoded once for all of them (with the
    first one's runtime); caches are compared by directory.

    Parameters
    ----------
    scorers : sequence of Scorer
        The scorers, each against references (or sources).
    cands : sequence of str
        The candidates.
    refs : sequence of str, or of sequences of str
        Each candidate's reference, or list of references.

    Returns
    -------
    list of Scores
        One per scorer, in order.

    Examples
    --------
    >>> from alignscore import WMD
    >>> from alignscore.testing import WordEncoder
    >>> encoder = WordEncoder()   # one encoder object: one encoding for both
    >>> both = score_together([Scorer(encoder), Scorer(encoder, Composition(aligner=WMD()))], ["a dog"], ["the dog"])
    >>> [list(s.metrics) for s in both]
    [['precision', 'recall', 'f1'], ['score']]
    """
    cands, groups = check_references(cands, refs)
    for s in scorers:  # what cannot score this side is refused before encoding
        s.composition.check_side(sources, s.runtime.name)
    # an LM that cannot read the candidates fails before encoding, as in Scorer.score
    fluency = [s.lm_scores(s.resolved(), cands) if sources else None for s in scorers]
    pairs = Pairs.from_groups(cands, groups)
    out: list[Scores | None] = [None] * len(scorers)
    shared: dict[tuple[int, str | None], list[int]] = {}
    for i, s in enumerate(scorers):
        cache = str(s.cache.directory) if s.cache is not None else None
        shared.setdefault((id(s.encoder), cache), []).append(i)
    for members in shared.values():
        first = scorers[members[0]]
        compositions = [scorers[i].resolved() for i in members]
        results = score_many(first.scoring_encoder(), pairs, compositions, first.runtime)
        for i, composition, result in zip(members, compositions, results):
            out[i] = scorers[i].reduce(composition, pairs, result, sources, fluency[i])
    return [s for s in out if s is not None]


def by_encoder(scorers: Sequence[Scorer], chosen: Iterable[int] | None = None) -> list[list[int]]:
    """The positions of ``scorers`` (those ``chosen``, default all) grouped by encoder object,
    each group in order, the groups in the order of their first member.

    Example:
        >>> from alignscore.encoders.huggingface import HFEncoder
        >>> a, b = HFEncoder("all-MiniLM-L6-v2"), HFEncoder("all-MiniLM-L6-v2")  # nothing is loaded yet
        >>> by_encoder([Scorer(a), Scorer(b), Scorer(a)])
        [[0, 2], [1]]
    """
    groups: dict[int, list[int]] = {}
    for i in sorted(range(len(scorers)) if chosen is None else set(chosen)):
        groups.setdefault(id(scorers[i].encoder), []).append(i)
    return list(groups.values())
