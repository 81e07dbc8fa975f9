"""The scorer: encoder -> aggregator -> token filter -> weighting -> aligner, composed."""

from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass, field
from numbers import Integral
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

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
        """Each metric's mean over the candidates. Raises :class:`InputError` when there are
        none: a mean of no scores is undefined (never NaN)."""
        if len(self) == 0:
            raise InputError("no candidates were scored: there is no mean score")
        return {k: float(v.double().mean()) for k, v in self.metrics.items()}


def _texts(items: Any, what: str) -> list[Any]:
    """``items`` as a list, read once (any iterable but a single string, bytes or a mapping)."""
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise InputError(f"{what} must be a list of texts, not {_describe(items)}")
    return list(items)


def _describe(x: Any) -> str:
    text = repr(x)
    return f"{type(x).__name__} {text if len(text) <= 40 else text[:39] + '…'}"


def _check_text(t: Any, where: str) -> None:
    if not isinstance(t, str):
        raise InputError(f"{where} is {_describe(t)}, not a text (str)")
    try:
        t.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"{where} is not valid Unicode: character {exc.start} is a lone surrogate "
                         f"({t[exc.start]!r}), which no tokenizer can encode") from None


def _reference_groups(cands: Any, refs: Any) -> tuple[list[str], list[list[str]]]:
    """The candidates and, per candidate, its references, checked: one text (str) or one
    iterable of texts per candidate; generators are read once."""
    cands = _texts(cands, "candidates")
    refs = _texts(refs, "references")
    if len(refs) != len(cands):
        raise InputError(f"{len(cands)} candidates but {len(refs)} references (or reference groups)")
    groups = []
    for i, r in enumerate(refs):
        if not isinstance(r, str) and (isinstance(r, (bytes, Mapping)) or not isinstance(r, Iterable)):
            raise InputError(f"reference {i} is {_describe(r)}, not a text (str) nor a list of texts")
        groups.append([r] if isinstance(r, str) else list(r))
    for i, c in enumerate(cands):
        _check_text(c, f"candidate {i}")
    for i, g in enumerate(groups):
        if not g:
            raise InputError(f"candidate {i} has no reference")
        for j, t in enumerate(g):
            _check_text(t, f"reference {i}" if isinstance(refs[i], str) else f"reference group {i}, item {j}")
    return cands, groups


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
        for name, kind in (("encoder", Encoder), ("aggregator", Aggregator), ("weighting", Weighting),
                           ("aligner", Aligner)):
            part = getattr(self, name)
            if not isinstance(part, kind):
                raise ConfigError(f"{name} must be an instance of {kind.__name__}, not {_describe(part)}")
        if not isinstance(self.filters, Iterable) or not all(isinstance(f, TokenFilter) for f in self.filters):
            raise ConfigError(f"filters must be a list of TokenFilter, not {_describe(self.filters)}")
        self.filters = tuple(self.filters)
        if self.baseline is not None and not isinstance(self.baseline, Baseline):
            raise ConfigError(f"baseline must be a Baseline (Baseline.read(path)), not {_describe(self.baseline)}")
        if self.multi_ref not in MULTI_REF:
            raise ConfigError(f"multi_ref must be one of {MULTI_REF}, not {self.multi_ref!r}")
        for name in ("batch_size",) + (("token_budget",) if self.token_budget is not None else ()):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
                raise ConfigError(f"{name} must be an integer >= 1, not {_describe(value)}")

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
        if not set(values) & set(self.aligner.metrics):
            raise ConfigError(f"the baseline has no value for the metrics {self.aligner.metrics}")
        return values

    def _roles_signature(self) -> str:
        return "special=" + self.special_tokens + "".join("+" + f.signature() for f in self.filters)

    def signature(self) -> str:
        """Everything that changes a number, sacreBLEU-style, e.g.
        ``model:roberta-large|layers:L17|tokens:special=match-only|w:none|align:greedy(cos)|...``;
        a default layer taken from a known model that a local directory copies reads
        ``layers:L17(default of roberta-large)``."""
        enc = self.encoder
        layers = self.aggregator.signature(enc.num_layers, self._default_layer())
        origin = enc.default_layer_origin() if self._default_layer() is not None else None
        parts = [
            f"model:{enc.signature()}",
            f"layers:{layers}" + (f"(default of {origin})" if origin else ""),
            f"tokens:{self._roles_signature()}",
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
        cands, groups = _reference_groups(cands, refs)
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
            matchable=matchable.to(device), carries=carries,
            pair_ref=pair_ref, pair_cand=pair_cand, group_offsets=group_offsets,
        )

    def reduce(self, prepared: Prepared, per_pair: dict[str, torch.Tensor]) -> Scores:
        """Per-pair scores ``{metric: [P]}`` -> per-candidate :class:`Scores`: warn about empty
        pairs, reduce several references (``multi_ref``), name the best one, rescale."""
        values = self._baseline_values()
        if len(prepared.group_offsets) == 1:  # no candidates: every metric is an empty tensor
            return Scores({m: torch.empty(0) for m in self.aligner.metrics}, torch.empty(0, dtype=torch.long),
                          torch.empty(0, dtype=torch.bool), self.signature())
        empty = empty_pairs(prepared.table, prepared.ref_mass, prepared.cand_mass,
                            prepared.pair_ref, prepared.pair_cand)
        if bool(empty.any()):
            for message in self._why_empty(prepared):
                warnings.warn(message, stacklevel=3)
        offsets = prepared.group_offsets
        metrics, best = reduce_groups(per_pair, offsets, self.aligner.primary, self.multi_ref)
        empty_any = reduce_groups({"e": empty.float()}, offsets, "e", "max")[0]["e"] > 0
        if values is not None:
            metrics = rescale(metrics, values)
        return Scores(metrics, best, empty_any, self.signature())

    def _why_empty(self, prepared: Prepared) -> list[str]:
        """One message per reason why pairs have a side without mass: an empty text, a text whose
        every token the token roles took out, or a text whose every token weighs 0 (idf)."""
        table = prepared.table
        text = table.text_index()

        def per_text(x: torch.Tensor) -> torch.Tensor:
            return torch.zeros(len(table), dtype=torch.float64).index_add_(0, text, x.detach().double().cpu())

        words, carrying = per_text(~table.special), per_text(prepared.carries)

        def cause(side: torch.Tensor, mass: torch.Tensor) -> torch.Tensor:  # 0: has mass, 1, 2, 3: why not
            lacking = per_text(mass)[side] <= 0
            return lacking * torch.where(words[side] == 0, 1, torch.where(carrying[side] == 0, 2, 3))

        ref, cand = cause(prepared.pair_ref, prepared.ref_mass), cause(prepared.pair_cand, prepared.cand_mass)
        counts = {k: int(((ref == k) | (cand == k)).sum()) for k in (1, 2, 3)}
        corpus = getattr(self.weighting, "corpus", None)
        source = (f"the {len(corpus)} sentence(s) of its corpus" if corpus is not None
                  else f"the {len(prepared.pair_ref)} reference sentence(s) being scored")
        if getattr(self.weighting, "sep", False):
            source += f", candidate idf from the {len(prepared.group_offsets) - 1} candidate(s)"
        messages = {
            1: "{n} pair(s) have an empty text; they score 0",
            2: (f"{{n}} pair(s) have a text that the token roles ({self._roles_signature()}) left empty (every "
                "token taken out); they score 0"),
            3: (f"{{n}} pair(s) have a text whose every token has idf 0 ({self.weighting.signature()}: idf "
                f"from {source}; a token found in every one of those sentences gets idf 0, and from a single "
                "sentence every token does), so nothing carries mass and they score 0; use idf-L with a larger "
                "corpus (--weighting idf-L --idf-corpus FILE), or no idf"),
        }
        return [messages[k].format(n=n) for k, n in counts.items() if n]

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
    mass is ``ref_mass`` / ``cand_mass [N]`` when its text is the reference / candidate,
    ``matchable [N]`` says who may be aligned to and ``carries [N]`` (on the CPU) who the token
    roles let carry mass. Pair k aligns text ``pair_ref[k]`` with text
    ``pair_cand[k]``; candidate i's pairs are ``group_offsets[i]:group_offsets[i+1]``.
    """

    texts: list[str]
    table: TokenTable
    vectors: torch.Tensor
    ref_mass: torch.Tensor
    cand_mass: torch.Tensor
    matchable: torch.Tensor
    carries: torch.Tensor
    pair_ref: torch.Tensor
    pair_cand: torch.Tensor
    group_offsets: torch.Tensor


def _transformers_version() -> str:
    try:
        import transformers

        return transformers.__version__
    except ImportError:  # pragma: no cover
        return "none"


