"""What a fit keeps from one encoding: for every pair, the dot products between each candidate
token's and each reference token's states in every two layers it mixes, beside each token's own
layer Gram matrix, masses and match targets; through n-gram windows, the products between each
text's own members a few ranks apart too (:func:`band_products`). A mix of layers is linear, so
its cosine similarity is a quadratic form in the mix's weights over these
(:func:`alignscore.fit.model.mixed_similarity`): a step of the fit never touches the hidden
states, which are dropped once each language pair's products are made."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import torch

from ..aggregators.base import Aggregator, Vectors, layer_list
from ..aligners.ngrams import window_size
from ..aligners.optimal import TransportAligner
from ..composition import Composition
from ..engine import Pairs, aligner_inputs, encode, merge_pairs
from ..evaluation.wmt import LangPair
from ..scorer import Scorer
from ..tokens import pad_gather
from ..settings import settings_of
from ..weighting.classes import TokenClassWeights
from ..weighting.schemes import _Idf
from ..errors import ConfigError


@dataclass(frozen=True)
class RawLayers(Aggregator):
    """The hidden states of ``layers`` side by side, unscaled (``[B, T, L * D]``): the engine
    scales each token's concatenation to unit length, by one factor for all its layers, which
    no softmax mix of them sees (the mix is scaled to unit length after). Not registered: the
    fit's view of an encoding, not a metric."""

    layers: tuple[int, ...]

    def resolve(self, num_layers: int, default_layer: int | None = None) -> "RawLayers":
        return self

    def layers_read(self) -> tuple[int, ...]:
        return self.layers

    def output(self) -> Vectors:
        return Vectors("mix", len(self.layers))

    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        return states.permute(1, 2, 0, 3).flatten(2)

    def signature(self) -> str:
        return f"raw(L{layer_list(self.layers)})"


#: the token-class weights' settings, in the order of TOKEN_CLASSES
CLASS_SETTINGS = tuple(s for s in settings_of(TokenClassWeights) if s.hint is float)
#: pairs per batch, in order of length (padding is the cost: one pad width for a whole language
#: pair would be its longest text's)
BATCH = 64


@dataclass
class Batch:
    """Some pairs of one language pair, right-padded: ``rows [B]`` (which pairs), ``cross [B, Tc,
    Tr, L * L]`` (candidate token i's layer l state . reference token j's layer m state, at
    ``l * L + m``), ``cand_gram [B, Tc, L * L]`` and ``ref_gram [B, Tr, L * L]`` (each token's
    own), the masses before the idf exponent and the class weights (0 on padding), who may be
    matched and each token's classes (:func:`~alignscore.weighting.token_classes`); through
    n-gram windows, ``cand_band [B, Pc, Kc - 1, L * L]`` and ``ref_band`` (:func:`band_products`;
    None over tokens)."""

    rows: torch.Tensor
    cross: torch.Tensor
    cand_gram: torch.Tensor
    ref_gram: torch.Tensor
    cand_mass: torch.Tensor
    ref_mass: torch.Tensor
    cand_match: torch.Tensor
    ref_match: torch.Tensor
    cand_classes: torch.Tensor
    ref_classes: torch.Tensor
    cand_band: torch.Tensor | None = None
    ref_band: torch.Tensor | None = None

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in vars(self).values() if t is not None)

    @property
    def band_bytes(self) -> int:
        """The bytes of the within-text products kept for n-gram windows (0 over tokens)."""
        return sum(t.numel() * t.element_size() for t in (self.cand_band, self.ref_band) if t is not None)


@dataclass
class PairFeatures:
    """One language pair: its ``batches`` and the ``human`` scores ``[P]``."""

    name: str
    human: torch.Tensor
    batches: list[Batch]

    def __len__(self) -> int:
        return len(self.human)

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.batches)

    @property
    def band_bytes(self) -> int:
        return sum(b.band_bytes for b in self.batches)


@dataclass
class Features:
    """What a fit keeps of ``layers``: one :class:`PairFeatures` per language pair, and the
    ``challenge`` items' pairs where the objective reads a challenge set."""

    layers: tuple[int, ...]
    pairs: list[PairFeatures]
    challenge: PairFeatures | None = None

    def _kept(self) -> list[PairFeatures]:
        return self.pairs + ([self.challenge] if self.challenge is not None else [])

    @property
    def nbytes(self) -> int:
        return sum(pf.nbytes for pf in self._kept())

    @property
    def band_bytes(self) -> int:
        """The part of :attr:`nbytes` that n-gram windows add (0 over tokens)."""
        return sum(pf.band_bytes for pf in self._kept())


def band_slots(n_gram: int | str | None, members: int) -> int:
    """How many products :func:`band_products` keeps per member of a batch side whose texts
    have at most ``members`` members: ``k - 1`` for windows of ``k`` members
    (:func:`~alignscore.aligners.ngrams.window_size`; all of them for ``"sentence"``), 0 over
    tokens (``n_gram`` None or 1).

    Examples
    --------
    >>> band_slots(2, 7), band_slots(3, 2), band_slots("sentence", 5), band_slots(None, 5), band_slots(2, 0)
    (1, 1, 4, 0, 0)
    """
    if n_gram is None or n_gram == 1:
        return 0
    return max(window_size(n_gram, members) - 1, 0)


def pair_bytes(lengths: torch.Tensor, ref: torch.Tensor, cand: torch.Tensor, layers: int, itemsize: int,
               members: torch.Tensor | None = None, n_gram: int | str | None = None) -> int:
    """The bytes :func:`products` keeps for the pairs ``ref``, ``cand`` (text indices, token
    counts ``lengths``; member counts ``members`` where ``n_gram`` is a window): known before
    any product is taken. Per batch of ``B`` pairs padded to ``Tc``, ``Tr`` tokens and ``Pc``,
    ``Pr`` members::

        itemsize * L^2 * B * (Tc Tr + Tc + Tr + Pc (Kc - 1) + Pr (Kr - 1))

    with ``K - 1`` from :func:`band_slots` (0 over tokens)."""
    order = torch.argsort(lengths[ref] + lengths[cand], descending=True, stable=True)
    total = 0
    for start in range(0, len(order), BATCH):
        rows = order[start:start + BATCH]
        tr, tc = int(lengths[ref[rows]].max()), int(lengths[cand[rows]].max())
        band = 0
        if members is not None:
            pr, pc = int(members[ref[rows]].max()), int(members[cand[rows]].max())
            band = pc * band_slots(n_gram, pc) + pr * band_slots(n_gram, pr)
        total += len(rows) * (tc * tr + tc + tr + band) * layers * layers * itemsize
    return total


def ranked(members: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The members of each text in rank order: ``members [B, T]`` (bool) -> ``pos [B, P]``, the
    positions of the members in order (then the other positions), and ``ok [B, P]``, whether
    rank ``r`` is a member; ``P`` is the most members of a text.

    Examples
    --------
    >>> pos, ok = ranked(torch.tensor([[False, True, True], [True, False, False]]))
    >>> pos.tolist(), ok.tolist()
    ([[1, 2], [0, 1]], [[True, True], [True, False]])
    """
    count = members.sum(-1)
    width = int(count.max()) if count.numel() else 0
    pos = torch.argsort((~members).to(torch.uint8), dim=1, stable=True)[:, :width]
    return pos, torch.arange(width).unsqueeze(0) < count.unsqueeze(1)


def band_products(states: torch.Tensor, index: torch.Tensor, members: torch.Tensor, n_gram: int | str,
                  dtype: torch.dtype) -> torch.Tensor:
    """``[B, P, K - 1, L * L]``: the products of the layer states of the members of rank ``r``
    and ``r + d`` of each text, ``d = 1 .. K - 1`` at ``[:, r, d - 1]`` (``l * L + m``: layer
    ``l`` of rank ``r``, layer ``m`` of rank ``r + d``; 0 past a text's last member), for the
    texts' tokens ``index [B, T]`` into ``states [N, L, D]`` and their ``members [B, T]``; ``K``
    as :func:`band_slots`. What the cosines within n-gram windows need besides each token's own
    Gram matrix: for ``"sentence"``, every two members of a text."""
    pos, ok = ranked(members)
    b, p = pos.shape
    layers = states.shape[1]
    slots = band_slots(n_gram, p)
    ranked_states = states[index.gather(1, pos)] * ok[..., None, None].to(states.dtype)  # [B, P, L, D]
    out = torch.zeros(b, p, slots, layers * layers, dtype=dtype)
    for d in range(1, slots + 1):
        near = torch.einsum("bpld,bpmd->bplm", ranked_states[:, :p - d], ranked_states[:, d:])
        out[:, :p - d, d - 1] = near.reshape(b, p - d, layers * layers).to(dtype)
    return out


def products(states: torch.Tensor, offsets: torch.Tensor, ref: torch.Tensor, cand: torch.Tensor,
             ref_mass: torch.Tensor, cand_mass: torch.Tensor, matchable: torch.Tensor, classes: torch.Tensor,
             dtype: torch.dtype, n_gram: int | str | None = None) -> list[Batch]:
    """The batches of the pairs ``ref``, ``cand`` (text indices into ``offsets``) from the
    token states ``[N, L, D]``, in batches of similar length (computed in float32, or in
    ``dtype`` where it is wider); for ``n_gram`` 2 or more or ``"sentence"``, each side's
    :func:`band_products` over its matchable tokens too."""
    states = states.to(torch.promote_types(states.dtype, dtype))
    n, layers, _ = states.shape
    gram = torch.bmm(states, states.transpose(1, 2)).reshape(n, layers * layers)
    lengths = offsets[1:] - offsets[:-1]
    order = torch.argsort(lengths[ref] + lengths[cand], descending=True, stable=True)
    out = []
    for start in range(0, len(order), BATCH):
        rows = order[start:start + BATCH]
        r_idx, r_ok = pad_gather(offsets, ref[rows])
        c_idx, c_ok = pad_gather(offsets, cand[rows])
        b, tr, tc = len(rows), r_idx.shape[1], c_idx.shape[1]
        r_states = (states[r_idx] * r_ok[..., None, None]).reshape(b, tr * layers, -1)
        c_states = (states[c_idx] * c_ok[..., None, None]).reshape(b, tc * layers, -1)
        cross = torch.bmm(c_states, r_states.transpose(1, 2)).reshape(b, tc, layers, tr, layers)
        c_match, r_match = matchable[c_idx] & c_ok, matchable[r_idx] & r_ok
        windows = n_gram is not None and n_gram != 1
        out.append(Batch(rows, cross.transpose(2, 3).reshape(b, tc, tr, layers * layers).to(dtype),
                         (gram[c_idx] * c_ok[..., None]).to(dtype), (gram[r_idx] * r_ok[..., None]).to(dtype),
                         cand_mass[c_idx] * c_ok, ref_mass[r_idx] * r_ok, c_match, r_match,
                         classes[c_idx] * c_ok, classes[r_idx] * r_ok,
                         band_products(states, c_idx, c_match, n_gram, dtype) if windows else None,
                         band_products(states, r_idx, r_match, n_gram, dtype) if windows else None))
    return out


def extract(scorer: Scorer, composition: Composition, lang_pairs: Sequence[LangPair], layers: Sequence[int],
            limit: int | None = None, dtype: torch.dtype = torch.float32, too_big: str = "memory",
            challenge: LangPair | None = None) -> Features:
    """Encode each language pair's texts once (the engine's encoding), keep ``layers``' states
    while its :func:`products` are made, then drop them.

    ``composition`` (resolved) gives the token roles and the weighting; an idf weighting is
    fitted per language pair, on its own references (as ``alignscore score`` on that pair's
    files does), with exponent 1 and every token-class weight 1: the model raises it to the
    learned power and multiplies each token's by its classes' learned weights. Where the aligner
    averages the windows' states (``ngram_mean = "states"``), which weighs each token by its mixed
    vector's length, the states are kept at their lengths (the encoding scales each token's
    concatenation of them to unit length, which no cosine sees but those lengths do). What is kept takes
    about ``itemsize x L^2 x (Tc Tr + Tc + Tr)`` bytes per pair (:attr:`Features.nbytes`), and
    through an optimal-transport aligner over n-gram windows ``itemsize x L^2 x (Pc (Kc - 1) +
    Pr (Kr - 1))`` more (:func:`pair_bytes`); past ``limit`` bytes, a
    :class:`~alignscore.errors.ConfigError` naming ``too_big`` before the products of the
    language pair that would cross it are made. ``challenge``: a challenge set's pairs
    (:func:`~alignscore.fit.goal.challenge_texts`), kept the same way, after the
    language pairs and within the same bound, as :attr:`Features.challenge`.
    """
    encoder = scorer.scoring_encoder()
    weighting = composition.weighting
    if isinstance(weighting, _Idf):
        weighting = replace(weighting, idf_power=1.0)
    weighting = replace(weighting, **{s.name: 1.0 for s in CLASS_SETTINGS})
    raw = RawLayers(tuple(layers))
    aligner = composition.aligner
    # the lengths a state mean of windows weighs by are the mix's, which the model makes
    aligner = replace(aligner, ngram_mean="unit") if aligner.reads_norms() else aligner
    comp = replace(composition, aggregator=raw, weighting=weighting, baseline=None, aligner=aligner)
    windowed = isinstance(aligner, TransportAligner) and aligner.n_gram != 1
    n_gram = aligner.n_gram if windowed else None  # the optimal-transport aligners' windows
    itemsize = torch.empty(0, dtype=dtype).element_size()
    out: list[PairFeatures] = []
    kept = 0
    for lp in [*lang_pairs, *([challenge] if challenge is not None else [])]:
        (pairs,) = merge_pairs([Pairs.from_pairs(lp.references, lp.candidates)])
        union = replace(pairs, ref=torch.empty(0, dtype=torch.long), cand=torch.empty(0, dtype=torch.long))
        # a state mean of windows weighs each token by its mixed vector's length: the states
        # themselves then, not the encoding's unit-length concatenation of them
        states_mean = composition.aligner.reads_norms()
        encoded = encode(encoder, union, [raw], scorer.runtime, norms={raw.signature()} if states_mean else ())
        offsets = encoded.table.offsets
        (setting,) = aligner_inputs(replace(encoded, pairs=pairs), [comp], encoder, None, {})
        matchable = setting.matchable.cpu()
        members = None
        if n_gram is not None:  # each text's matchable tokens: its windows' members
            counted = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(matchable.long(), 0)])
            members = counted[offsets[1:]] - counted[offsets[:-1]]
        kept += pair_bytes(offsets[1:] - offsets[:-1], pairs.ref, pairs.cand, len(layers), itemsize, members, n_gram)
        if limit is not None and kept > limit:
            windows = f" and n-gram windows of {n_gram}" if n_gram is not None else ""
            raise ConfigError(f"{too_big}: the fit would keep more than {limit / 2**30:.2f} GiB by {lp.name} "
                              f"({kept / 2**30:.2f} GiB for {len(layers)} layers{windows}); "
                              + ("mix fewer layers or allow more" if len(layers) > 1 else "allow more"))
        vectors = encoded.vectors[raw.signature()]
        if states_mean:
            vectors = vectors * encoded.norms[raw.signature()].unsqueeze(-1).to(vectors)
        states = vectors.reshape(len(vectors), len(layers), -1).float().cpu()
        out.append(PairFeatures(lp.name, torch.as_tensor(lp.human, dtype=torch.float64),
                                products(states, offsets, pairs.ref, pairs.cand, setting.ref_mass.float().cpu(),
                                         setting.cand_mass.float().cpu(), matchable,
                                         weighting.token_class_ids(encoded.table).cpu(), dtype, n_gram)))
        del encoded, vectors, states
    if challenge is not None:
        return Features(tuple(layers), out[:-1], out[-1])
    return Features(tuple(layers), out)
