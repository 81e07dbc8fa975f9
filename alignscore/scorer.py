"""The scorer: encoder -> aggregator -> token filter -> weighting -> aligner, composed."""

from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import torch

from . import __version__
from .aggregators.base import Aggregator
from .aggregators.single import SingleLayer
from .aligners.base import Aligner
from .aligners.greedy import Greedy
from .encoders.base import Encoder
from .errors import ConfigError, InputError
from .filters.base import TokenFilter, check_special_policy, token_roles
from .pipeline import align_pairs, embed, empty_pairs, reduce_groups, unique_texts, unit
from .rescale import Baseline, rescale
from .tokens import TokenTable
from .weighting.base import WeightContext, Weighting
from .weighting.schemes import Uniform

if TYPE_CHECKING:
    from .cache import EmbeddingCache
    from .distributed import Shard
    from .explain import Explanation

MULTI_REF = ("max", "mean")


@dataclass
class Scores:
    """Scores per candidate, in input order, by metric name (``scores.f1``, ``scores["f1"]``).

    ``best_reference[i]`` is the index, among candidate i's references, of the one with the best
    primary score (F1 for greedy); ``empty`` marks candidates scored against an empty text;
    ``signature`` pins every setting that changes a number.
    """

    metrics: dict[str, torch.Tensor]
    best_reference: torch.Tensor
    empty: torch.Tensor
    signature: str

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.metrics[name]

    def __getattr__(self, name: str) -> torch.Tensor:
        metrics = self.__dict__.get("metrics", {})
        if name in metrics:
            return metrics[name]
        raise AttributeError(name)

    def __len__(self) -> int:
        return len(self.best_reference)

    def means(self) -> dict[str, float]:
        return {k: float(v.double().mean()) if len(v) else float("nan") for k, v in self.metrics.items()}


def _reference_groups(cands: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]]) -> list[list[str]]:
    if isinstance(cands, str) or isinstance(refs, str):
        raise InputError("candidates and references must be lists of texts, not a single string")
    if len(refs) != len(cands):
        raise InputError(f"{len(cands)} candidates but {len(refs)} references (or reference groups)")
    groups = [[r] if isinstance(r, str) else list(r) for r in refs]
    for i, g in enumerate(groups):
        if not g:
            raise InputError(f"candidate {i} has no reference")
        if not all(isinstance(t, str) for t in g):
            raise InputError(f"reference group {i} holds something that is not a text")
    return groups


@dataclass
class Scorer:
    """A metric composed of parts. BERTScore is the default composition.

    Args:
        encoder: the contextual encoder (e.g. ``HFEncoder("roberta-large")``).
        aggregator: layers -> token vectors (``SingleLayer()`` takes the model's default layer).
        filters: token filters applied to ordinary tokens, in addition to the special policy.
        special_tokens: ``"match-only"`` (bert_score), ``"drop"`` or ``"keep"`` (moverscore_v2).
        weighting: token masses (``Uniform()``, ``idf_s()``, ``idf_l(corpus)``).
        aligner: ``Greedy()`` or an optimal-transport aligner.
        multi_ref: ``"max"`` (per metric, as bert_score) or ``"mean"`` over a candidate's refs.
        baseline: rescale with this per-layer baseline (single-layer compositions only).
        batch_size: texts per encoder batch; never changes a score.
        token_budget: also at most this many padded tokens per encoder batch (bounds the
            encoder's memory on long texts); ``None``: batches of ``batch_size`` texts.
        progress: show progress bars on stderr.
        cache: a persistent :class:`~alignscore.cache.EmbeddingCache` of hidden states (or its
            directory): texts already encoded by this model skip the encoder.
        shard: this process's :class:`~alignscore.distributed.Shard` of a torch.distributed
            group: the ranks split the encoding and the alignment and all get every score.
    """

    encoder: Encoder
    aggregator: Aggregator = field(default_factory=SingleLayer)
    filters: tuple[TokenFilter, ...] = ()
    special_tokens: str = "match-only"
    weighting: Weighting = field(default_factory=Uniform)
    aligner: Aligner = field(default_factory=Greedy)
    multi_ref: str = "max"
    baseline: Baseline | None = None
    batch_size: int = 64
    progress: bool = False
    cache: EmbeddingCache | str | None = None
    shard: Shard | None = None
    token_budget: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.cache, (str, os.PathLike)):
            from .cache import EmbeddingCache

            self.cache = EmbeddingCache(self.cache)
        check_special_policy(self.special_tokens)
        self.filters = tuple(self.filters)
        if self.multi_ref not in MULTI_REF:
            raise ConfigError(f"multi_ref must be one of {MULTI_REF}, not {self.multi_ref!r}")
        if self.batch_size < 1:
            raise ConfigError("batch size must be at least 1")
        if self.token_budget is not None and self.token_budget < 1:
            raise ConfigError("the token budget must be at least 1")

    # -- configuration ---------------------------------------------------------------------------
    def _default_layer(self) -> int | None:
        """The model's default layer, asked for only when the aggregator needs it (so an unknown
        model raises the encoder's own error, which says to give a layer)."""
        if isinstance(self.aggregator, SingleLayer) and self.aggregator.layer is None:
            return self.encoder.default_layer()
        return None

    def layers(self) -> list[int]:
        """The encoder layers this composition reads."""
        return self.aggregator.layers(self.encoder.num_layers, self._default_layer())

    def _baseline_values(self) -> dict[str, float] | None:
        if self.baseline is None:
            return None
        if not isinstance(self.aggregator, SingleLayer):
            raise ConfigError("baseline rescaling reads one row per layer: it needs a single-layer aggregator")
        values = self.baseline.values(self.layers()[0])
        missing = [m for m in self.aligner.metrics if m not in values]
        if missing:  # rescaling only some metrics would report rescaled and raw scores side by side
            raise ConfigError(f"the baseline has no value for the metric(s) {', '.join(missing)} "
                              f"of {self.aligner.signature()}")
        return values

    def signature(self) -> str:
        """Everything that changes a number, sacreBLEU-style, e.g.
        ``model:roberta-large|layers:L17|tokens:special=match-only|w:none|align:greedy(cos)|...``."""
        enc = self.encoder
        parts = [
            f"model:{enc.signature()}",
            f"layers:{self.aggregator.signature(enc.num_layers, self._default_layer())}",
            "tokens:special=" + self.special_tokens + "".join("+" + f.signature() for f in self.filters),
            f"w:{self.weighting.signature()}",
            f"align:{self.aligner.signature()}",
            f"refs:{self.multi_ref}",
            f"rescale:{self.baseline.name if self.baseline else 'no'}",
            f"v:alignscore-{__version__},torch-{torch.__version__},transformers-{_transformers_version()}",
        ]
        return "|".join(parts)

    # -- scoring -----------------------------------------------------------------------------
    def score(self, cands: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]]) -> Scores:
        """Score each candidate against its reference(s).

        ``refs`` is one text per candidate, or one list of texts per candidate (several
        references). Empty or whitespace-only texts are valid: a pair with an empty side scores
        0 on every metric (bert_score's convention), with a warning; never NaN.
        """
        prepared = self.prepare(cands, refs)
        per_pair = align_pairs(self.aligner, prepared.vectors, prepared.table, prepared.ref_mass,
                               prepared.cand_mass, prepared.matchable, prepared.pair_ref,
                               prepared.pair_cand, progress=self.progress, shard=self.shard)
        return self.reduce(prepared, per_pair)

    def prepare(self, cands: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]]) -> Prepared:
        """Every step before the aligner: check the input, tokenize the unique texts, fit the
        weights, apply the token roles and embed. :meth:`score` aligns the result; ``explain``
        reuses it to inspect single pairs."""
        groups = _reference_groups(cands, refs)
        self._baseline_values()  # a composition that cannot be rescaled fails before encoding
        sizes = torch.tensor([len(g) for g in groups], dtype=torch.long)
        group_offsets = torch.zeros(len(groups) + 1, dtype=torch.long)
        group_offsets[1:] = sizes.cumsum(0)
        flat_refs = [t for g in groups for t in g]
        pair_cand_of = torch.repeat_interleave(torch.arange(len(cands)), sizes)

        texts, inverse = unique_texts(list(flat_refs) + list(cands))
        ref_text, cand_text = inverse[: len(flat_refs)], inverse[len(flat_refs):]
        pair_ref, pair_cand = ref_text, cand_text[pair_cand_of]

        tokenize = self.encoder.tokenize
        if self.cache is not None:
            from .cache import tokenize_cached

            tokenize = functools.partial(tokenize_cached, self.cache, self.encoder)
        table = TokenTable.from_tokenized(tokenize(texts))
        n = len(texts)
        ctx = WeightContext(
            table=table,
            ref_counts=torch.bincount(ref_text, minlength=n).double(),
            cand_counts=torch.bincount(cand_text, minlength=n).double(),
            vocab_size=self.encoder.vocab_size,
            tokenize=tokenize,
        )
        ref_w, cand_w = self.weighting.fit(ctx)
        carries, matchable = token_roles(table, self.filters, self.special_tokens)

        vectors = embed(self.encoder, table, self.layers(), self.aggregator, batch_size=self.batch_size,
                        progress=self.progress, cache=self.cache, shard=self.shard, token_budget=self.token_budget)
        unit(vectors, out=vectors)  # in place: embed's result is ours alone
        device = vectors.device
        return Prepared(
            texts=texts, table=table, vectors=vectors,
            ref_mass=(ref_w[table.ids] * carries).to(device),
            cand_mass=(cand_w[table.ids] * carries).to(device),
            matchable=matchable.to(device),
            pair_ref=pair_ref, pair_cand=pair_cand, group_offsets=group_offsets,
        )

    def reduce(self, prepared: Prepared, per_pair: dict[str, torch.Tensor]) -> Scores:
        """Per-pair scores ``{metric: [P]}`` -> per-candidate :class:`Scores`: warn about empty
        pairs, reduce several references (``multi_ref``), name the best one, rescale."""
        values = self._baseline_values()
        empty = empty_pairs(prepared.table, prepared.ref_mass, prepared.cand_mass,
                            prepared.pair_ref, prepared.pair_cand)
        if bool(empty.any()):
            warnings.warn(f"{int(empty.sum())} pair(s) have an empty text (nothing left to align); "
                          f"they score 0", stacklevel=3)
        offsets = prepared.group_offsets
        metrics, best = reduce_groups(per_pair, offsets, self.aligner.primary, self.multi_ref)
        empty_any = reduce_groups({"e": empty.float()}, offsets, "e", "max")[0]["e"] > 0
        if values is not None:
            metrics = rescale(metrics, values)
        return Scores(metrics, best, empty_any, self.signature())

    def explain(self, cand: str, refs: str | Sequence[str]) -> "Explanation":
        """Why one candidate scores what it does against its reference(s): tokens, masses, the
        similarity or cost matrix, matches or transport plan and per-token contributions (see
        :func:`alignscore.explain.explain`)."""
        from .explain import explain

        return explain(self, [cand], [[refs] if isinstance(refs, str) else list(refs)])[0]


@dataclass
class Prepared:
    """What :meth:`Scorer.prepare` computes for a list of candidates and reference groups.

    The unique ``texts`` are packed in ``table`` with unit token ``vectors [N, D]``; a token's
    mass is ``ref_mass`` / ``cand_mass [N]`` when its text is the reference / candidate, and
    ``matchable [N]`` says who may be aligned to. Pair k aligns text ``pair_ref[k]`` with text
    ``pair_cand[k]``; candidate i's pairs are ``group_offsets[i]:group_offsets[i+1]``.
    """

    texts: list[str]
    table: TokenTable
    vectors: torch.Tensor
    ref_mass: torch.Tensor
    cand_mass: torch.Tensor
    matchable: torch.Tensor
    pair_ref: torch.Tensor
    pair_cand: torch.Tensor
    group_offsets: torch.Tensor


def _transformers_version() -> str:
    try:
        import transformers

        return transformers.__version__
    except ImportError:  # pragma: no cover
        return "none"


