"""The promises of the weighting and token-filter stages, checked on a part
(:func:`check_weighting`, :func:`check_filter`) over a few texts tokenized by
:class:`WordEncoder`, a tiny word-level encoder that needs no model."""

from __future__ import annotations

import re
import zlib
from typing import Sequence

import torch

from ..composition import Composition
from ..encoders.base import Encoder
from ..filters.base import TokenFilter, TokenRoles
from ..tokens import Tokenized, TokenTable
from ..weighting import WEIGHTINGS
from ..weighting.base import WeightState, Weighting
from .promises import call, check_signature, fail, round_trip, tolerance


class WordEncoder(Encoder):
    """A tiny encoder for tests of weightings and token filters: words and punctuation marks are
    tokens, a word longer than 5 letters is split into WordPiece-style pieces (``"alig"``,
    ``"##nme"``, ``"##nt"``), texts are framed by ``[CLS]`` and ``[SEP]``, and a token's id is a
    hash of its string (stable across runs). Its hidden states are seeded from the ids (no
    context), so it also serves as the encoder of a :class:`~alignscore.scorer.Scorer` in tests.

    >>> enc = WordEncoder()
    >>> enc.tokenize(["Alignment, done."]).tokens
    [['[CLS]', 'alig', '##nme', '##nt', ',', 'done', '.', '[SEP]']]
    """

    SPECIAL = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2}

    def __init__(self, vocab_size: int = 211, num_layers: int = 3, dim: int = 8) -> None:
        self._vocab_size, self._num_layers, self._dim = vocab_size, num_layers, dim

    name = property(lambda self: "words")  # type: ignore[assignment]
    num_layers = property(lambda self: self._num_layers)  # type: ignore[assignment]
    vocab_size = property(lambda self: self._vocab_size)  # type: ignore[assignment]
    pad_id = property(lambda self: 0)  # type: ignore[assignment]
    model_max_length = property(lambda self: 512)  # type: ignore[assignment]
    device = property(lambda self: torch.device("cpu"))  # type: ignore[assignment]

    def default_layer(self) -> int | None:
        return self._num_layers

    def signature(self) -> str:
        return f"words(V={self._vocab_size})"

    def _id(self, token: str) -> int:
        return self.SPECIAL.get(token, len(self.SPECIAL) + zlib.crc32(token.encode()) % (self._vocab_size - len(self.SPECIAL)))

    def tokenize(self, texts: Sequence[str]) -> Tokenized:
        out = Tokenized([], [], [], [], [], [])
        for text in texts:
            tokens, surface, starts = ["[CLS]"], [""], [False]
            for word in re.findall(r"\w+|[^\w\s]", text.strip().lower()):
                pieces = [word] if len(word) <= 5 else [word[:4]] + [word[k:k + 3] for k in range(4, len(word), 3)]
                for k, piece in enumerate(pieces):
                    tokens.append(piece if k == 0 else "##" + piece)
                    surface.append(piece)
                    starts.append(k == 0)
            tokens.append("[SEP]")
            surface.append("")
            starts.append(False)
            out.ids.append([self._id(tok) for tok in tokens])
            out.special.append([tok in self.SPECIAL for tok in tokens])
            out.word_start.append(starts)
            out.tokens.append(tokens)
            out.surface.append(surface)
        return out

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, layers: Sequence[int]) -> torch.Tensor:
        table = torch.randn(self._num_layers + 1, self._vocab_size, self._dim,
                            generator=torch.Generator().manual_seed(0))
        return table[list(layers)][:, input_ids]


_TEXTS = (
    "The cat sat on the mat.",
    "A remarkable alignment of transformers, isn't it?",
    "the the the",
    "",
    "Unbelievable!",
    "Scores never depend on the other texts.",
    "The cat sat on the mat.",
)


def _table(encoder: Encoder, texts: Sequence[str]) -> TokenTable:
    return TokenTable.from_tokenized(encoder.tokenize(list(texts)))


def check_weighting(weighting: Weighting, *, encoder: Encoder | None = None, texts: Sequence[str] = _TEXTS,
                    seed: int = 0) -> None:
    """Check the promises of a weighting (:class:`~alignscore.weighting.base.Weighting`).

    Over a few texts, some repeated, each counted a random number of times as a reference and as
    a candidate: ``compute`` gives two *finite, non-negative* ``[V]`` tables; *one pass equals a
    chunked pass* (the texts counted in two chunks into one state) and *merged states*
    (two processes' counts added, :meth:`WeightState.merge`); the weights *do not depend on
    the order* of the texts; a weighting whose :meth:`~Weighting.depends_on_texts` is False gives
    the same weights whatever the texts; *spec round trip* and a *stable signature*. Through the
    engine (the encoder's default layer, bert_score's token roles), the *engine's masses* are
    ``weight[id] * role``, times the norm of the token's vector before unit normalisation for a
    weighting whose :meth:`~Weighting.reads_norms` is True (which must be a bool), each text's
    masses the same as when that text is encoded alone.

    Parameters
    ----------
    weighting : Weighting
        The part to check.
    encoder : Encoder, optional
        Tokenizes the texts (and an idf-L corpus); default :class:`WordEncoder`.
    texts : sequence of str
        The texts counted.
    seed : int
        Seed of the random counts.

    Returns
    -------
    None
        Or an :class:`AssertionError` naming the weighting's broken promise (as
        :func:`~alignscore.testing.check_aligner` raises them).

    Examples
    --------
    >>> from alignscore.weighting import IdfS
    >>> check_weighting(IdfS(sep=True))
    """
    encoder = encoder or WordEncoder()
    table = _table(encoder, texts)
    gen = torch.Generator().manual_seed(seed)
    ref_counts = torch.randint(0, 3, (len(table),), generator=gen).double()
    cand_counts = torch.randint(0, 3, (len(table),), generator=gen).double()
    weights = call("outputs", "token_weights() over the texts", weighting.token_weights, table, ref_counts, cand_counts, encoder)
    if not isinstance(weights, tuple) or len(weights) != 2:
        raise fail("outputs", f"compute returned {type(weights).__name__}, not (ref_weights, cand_weights)")
    for side, w in zip(("reference", "candidate"), weights):
        if not isinstance(w, torch.Tensor) or w.shape != (encoder.vocab_size,) or not w.is_floating_point():
            raise fail("outputs", f"the {side} weights are {getattr(w, 'shape', type(w))}, not a float tensor "
                                   f"[{encoder.vocab_size}] (one weight per token id)")
        if not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
            wrong = w[~(torch.isfinite(w) & (w >= 0))]
            raise fail("finite, non-negative weights", f"the {side} weights hold {wrong[:3].tolist()}")

    def same(promise: str, got: tuple[torch.Tensor, torch.Tensor], what: str) -> None:
        if not isinstance(got, tuple) or len(got) != 2 or not all(isinstance(w, torch.Tensor) for w in got):
            raise fail(promise, f"{type(got).__name__} instead of (ref_weights, cand_weights) {what}")
        for side, a, b in zip(("reference", "candidate"), got, weights):
            tol = tolerance(b.dtype)
            diff = (a.double() - b.double()).abs()
            if a.shape != b.shape or not bool((diff <= tol * b.double().abs().clamp_min(1.0)).all()):
                worst = float(diff.max()) if a.shape == b.shape else float("nan")
                raise fail(promise, f"a {side} weight changed by {worst:.2g} {what}")

    half = len(table) // 2
    chunks = [torch.arange(half), torch.arange(half, len(table))]
    state = WeightState.empty(encoder.vocab_size)
    for rows in chunks:
        sub, _ = table.select(rows)
        call("one pass equals a chunked pass", "update() of a chunk", weighting.update, state, sub, ref_counts[rows],
             cand_counts[rows])
    same("one pass equals a chunked pass", call("one pass equals a chunked pass", "compute() after two chunks",
                                                weighting.compute, state, encoder), "when counted in two chunks")
    states = []
    for rows in chunks:
        sub, _ = table.select(rows)
        states.append(WeightState.empty(encoder.vocab_size))
        call("merged states equal one pass", "update() of one process's chunk", weighting.update, states[-1], sub,
             ref_counts[rows], cand_counts[rows])
    states[0].merge(states[1])
    same("merged states equal one pass", call("merged states equal one pass", "compute() of merged states",
                                              weighting.compute, states[0], encoder), "when two processes' counts merge")
    perm = torch.randperm(len(table), generator=gen)
    sub, _ = table.select(perm)
    same("weights independent of the order of the texts",
         call("weights independent of the order of the texts", "token_weights() over the texts reordered", weighting.token_weights, sub,
              ref_counts[perm], cand_counts[perm], encoder), "when the texts are reordered")
    if not call("depends_on_texts", "depends_on_texts()", weighting.depends_on_texts):
        few = _table(encoder, ["something else entirely"])
        same("depends_on_texts is False but the weights depend on the texts",
             call("depends_on_texts", "token_weights() over other texts", weighting.token_weights, few, torch.ones(1, dtype=torch.float64),
                  torch.ones(1, dtype=torch.float64), encoder),
             "over other texts")

    _check_engine_masses(weighting, encoder, texts, weights)
    rebuilt = round_trip(Composition(weighting=weighting), WEIGHTINGS.stage).weighting
    check_signature(weighting, rebuilt)
    same("spec round trip", call("spec round trip", "token_weights() of the rebuilt weighting", rebuilt.token_weights, table, ref_counts,
                                 cand_counts, encoder),
         "from the weighting built from its run file")


def _check_engine_masses(weighting: Weighting, encoder: Encoder, texts: Sequence[str],
                         weights: tuple[torch.Tensor, torch.Tensor]) -> None:
    """The masses the engine gives each token from ``weights`` (fitted already): the weight of
    its id times its role, times its vector's norm before unit normalisation where the weighting
    reads norms; computed here from each text encoded alone."""
    from ..engine import Pairs, aligner_inputs, encode, norms_read  # the engine imports this module's neighbours

    reads = call("reads_norms", "reads_norms()", weighting.reads_norms)
    if not isinstance(reads, bool):
        raise fail("reads_norms", f"reads_norms() returned {reads!r}, not True or False")
    composition = Composition(weighting=weighting).resolve(encoder)
    pairs = Pairs.from_pairs(list(texts), list(texts))
    encoded = encode(encoder, pairs, [composition.aggregator], norms=norms_read([composition]))
    (inputs,) = aligner_inputs(encoded, [composition], encoder, {weighting.signature(): weights})
    table, agg = encoded.table, composition.aggregator
    carries, _ = composition.roles(table)
    norms = []
    for i in range(len(table)):  # each text alone: no batch, no padding, no other text
        ids = table.ids[int(table.offsets[i]):int(table.offsets[i + 1])].unsqueeze(0)
        h = agg(encoder.forward(ids, torch.ones_like(ids), agg.layers_read()))[0]
        norms.append(h.norm(dim=-1) if reads else torch.ones(len(h), dtype=h.dtype))
    norm = torch.cat(norms) if norms else torch.zeros(0)
    multipliers = call("token_multipliers", "token_multipliers()", weighting.token_multipliers, table)
    if multipliers is not None:
        if not isinstance(multipliers, torch.Tensor) or multipliers.shape != table.ids.shape:
            raise fail("token_multipliers", f"token_multipliers() returned {getattr(multipliers, 'shape', multipliers)}"
                                            f", not None or one factor per token [{len(table.ids)}]")
        norm = norm * multipliers
    for side, w, got in (("reference", weights[0], inputs.ref_mass), ("candidate", weights[1], inputs.cand_mass)):
        want = (w[table.ids] * carries * norm).double()
        got = got.detach().double().cpu()
        diff = (got - want).abs()
        if got.shape != want.shape or not bool((diff <= tolerance(torch.float32) * want.clamp_min(1.0)).all()):
            worst = float(diff.max()) if got.shape == want.shape else float("nan")
            what = "weight[id] * role" + (" * |vector|" if reads else "") + (" * multiplier" if multipliers is not None
                                                                             else "")
            raise fail("engine's masses", f"a {side} token's mass differs from {what} by {worst:.2g} "
                                           f"(reads_norms() is {reads})")


def check_filter(token_filter: TokenFilter, *, encoder: Encoder | None = None, texts: Sequence[str] = _TEXTS) -> None:
    """Check the promises of a token filter (:class:`~alignscore.filters.base.TokenFilter`).

    ``keep`` gives one bool per packed token; *a text's tokens are kept independently of the
    other texts* of the table (each text alone, and the texts in another order, give the same
    answer); *spec round trip* and a *stable signature*.

    Parameters
    ----------
    token_filter : TokenFilter
        The part to check.
    encoder : Encoder, optional
        Tokenizes the texts; default :class:`WordEncoder` (WordPiece-style pieces, punctuation).
    texts : sequence of str
        The texts whose tokens it filters.

    Returns
    -------
    None
        Or an :class:`AssertionError` naming the filter's broken promise.

    Examples
    --------
    >>> from alignscore.filters import RemoveSubwordsPunct
    >>> check_filter(RemoveSubwordsPunct())
    """
    encoder = encoder or WordEncoder()
    table = _table(encoder, texts)
    keep = call("outputs", "keep() over the texts", token_filter.keep, table)
    if not isinstance(keep, torch.Tensor) or keep.dtype != torch.bool or keep.shape != table.ids.shape:
        raise fail("outputs", f"keep returned {getattr(keep, 'dtype', type(keep))} "
                               f"{tuple(getattr(keep, 'shape', ()))}, not bool [{len(table.ids)}] (one per token)")

    def same(promise: str, got: torch.Tensor, want: torch.Tensor, rows: torch.Tensor, what: str) -> None:
        ordinary = ~table.special[rows]  # special tokens follow the policy, whatever a filter says
        if not isinstance(got, torch.Tensor) or got.dtype != torch.bool:
            raise fail(promise, f"keep() gave {getattr(got, 'dtype', type(got).__name__)}, not bool, {what}")
        if got.shape != want.shape or not torch.equal(got[ordinary], want[ordinary]):
            raise fail(promise, f"the ordinary tokens kept changed {what}")

    for i in range(len(table)):
        sub, rows = table.select(torch.tensor([i]))
        got = call("tokens kept independently of the other texts", f"keep() of text {i} alone", token_filter.keep, sub)
        same("tokens kept independently of the other texts", got, keep[rows], rows,
             f"for text {i} ({texts[i]!r}) filtered alone")
    perm = torch.arange(len(table) - 1, -1, -1)
    sub, rows = table.select(perm)
    got = call("tokens kept independently of the other texts", "keep() of the texts reordered", token_filter.keep, sub)
    same("tokens kept independently of the other texts", got, keep[rows], rows,
         "when the texts are reordered")

    rebuilt = round_trip(Composition(roles=TokenRoles(filters=(token_filter,))), "token filter").roles.filters[0]
    check_signature(token_filter, rebuilt)
    same("spec round trip", call("spec round trip", "keep() of the rebuilt filter", rebuilt.keep, table), keep,
         torch.arange(len(keep)),
         "by the filter built from its run file")

