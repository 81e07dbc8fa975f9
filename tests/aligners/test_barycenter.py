"""BaryScore: the layer stack and its read-back, the free-support barycenter and the distance
between barycenters against POT's own solvers pair by pair, batch and padding invariance, the
aligner's settings, warnings and empty texts, and end to end (tiny BERT; all-MiniLM-L6-v2 on
WMT16 against a plainly written reference pipeline)."""

from __future__ import annotations

import math
import warnings
from collections import Counter

import numpy as np
import ot
import pytest
import torch

import alignscore
from alignscore import AGGREGATORS, ALIGNERS, Composition, Scorer
from alignscore.aggregators import LayerStack, PowerMeans, Routing, SingleLayer
from alignscore.aggregators.base import Vectors
from alignscore.aggregators.stack import stack_layers, unstack_layers
from alignscore.aligners import BaryScore, PairBatch
from alignscore.aligners.barycenter import barycenter_distances, free_support_barycenters
from alignscore.encoders import HFEncoder
from alignscore.errors import ConfigError
from alignscore._ops import unit
from alignscore.weighting import IdfS
from fakes import make_batch
from helpers import compose

L, D = 4, 6


def layered_text(gen: torch.Generator, n: int, layers: int = L, dim: int = D) -> torch.Tensor:
    """``[n, layers * dim]``: a text's stacked unit token vectors, layers close to each other,
    scaled as the scorer leaves them (unit length overall)."""
    base = torch.randn(n, 1, dim, generator=gen, dtype=torch.float64)
    states = base + 0.6 * torch.randn(n, layers, dim, generator=gen, dtype=torch.float64)
    return unit(stack_layers(states.permute(1, 0, 2).unsqueeze(1))[0])


def masses(gen: torch.Generator, n: int, zeros: int = 1) -> torch.Tensor:
    m = torch.rand(n, generator=gen, dtype=torch.float64) + 0.1
    m[:min(zeros, n - 1)] = 0.0  # the first tokens (like [CLS] under idf) take part without mass
    return m


def pair_batch_of(texts_r, texts_c, mass_r, mass_c) -> PairBatch:
    """A PairBatch where every real token is a member (matchable), zero-mass ones included."""
    return make_batch(texts_r, texts_c, mass_r, mass_c, [torch.ones(len(m), dtype=torch.bool) for m in mass_r],
                      [torch.ones(len(m), dtype=torch.bool) for m in mass_c])


def layers_of(stacked: torch.Tensor, layers: int = L) -> list[np.ndarray]:
    """Per-layer unit vectors of one text, as POT wants them: a list of ``[n, D]`` arrays."""
    parts = stacked.reshape(stacked.shape[0], layers, -1).double()
    parts = parts / parts.norm(dim=-1, keepdim=True)
    return [parts[:, l].numpy() for l in range(layers)]


def pot_barycenter(ys: list[np.ndarray], a: np.ndarray) -> np.ndarray:
    """POT's free-support barycenter, started where ours starts (each token's layer mean)."""
    n = ys[0].shape[0]
    return ot.lp.free_support_barycenter(ys, [a / a.sum()] * len(ys), np.mean(ys, axis=0), b=np.ones(n) / n,
                                         numItermax=1000, stopThr=1e-7)


def reference_score(xr: np.ndarray, xc: np.ndarray, reg: float) -> float:
    """``1 - d``: POT's distance between two barycenters with uniform masses (``ot.dist`` is the
    squared Euclidean distance, as in the authors' code)."""
    cost = ot.dist(xr, xc)
    a, b = np.ones(len(xr)) / len(xr), np.ones(len(xc)) / len(xc)
    if reg == 0:
        return 1.0 - float(ot.emd2(a, b, cost))
    return 1.0 - float(ot.sinkhorn2(a, b, cost, reg, method="sinkhorn_log", numItermax=100_000, stopThr=1e-13))


# -- the layer stack -------------------------------------------------------------------------------
def test_stack_places_unit_layers_side_by_side_and_survives_unit_normalisation():
    gen = torch.Generator().manual_seed(0)
    states = torch.randn(3, 2, 5, 4, generator=gen)  # [L, B, T, D]
    states[:, 1, 4] = 0.0  # a padding-like token: zero in every layer
    stacked = stack_layers(states)
    assert stacked.shape == (2, 5, 12)
    for layer in range(3):
        want = states[layer] / states[layer].norm(dim=-1, keepdim=True).clamp_min(1e-12)
        assert torch.allclose(stacked[..., layer * 4:(layer + 1) * 4], want, atol=1e-7)
    back = unstack_layers(unit(stacked.clone()), 3)  # after the scorer's unit(): the same directions
    assert back.shape == (2, 3, 5, 4)
    assert torch.allclose(back, stack_layers(states).reshape(2, 5, 3, 4).transpose(1, 2), atol=1e-6)
    assert float(back[1, :, 4].abs().sum()) == 0.0


def test_the_stack_size_comes_from_the_aggregator_never_from_the_vectors():
    assert Composition(LayerStack((-3, -2, -1)), aligner=BaryScore()).aligner.stack == 3
    assert Composition(SingleLayer(3), aligner=BaryScore()).aligner.stack == 1  # one layer: a stack of one
    for aggregator in (PowerMeans((-3, -2, -1)), Routing((-3, -2, -1))):
        with pytest.raises(ConfigError, match="reads a stack of layers"):
            Composition(aggregator, aligner=BaryScore())
    with pytest.raises(ConfigError, match="fit it to the aggregator"):
        BaryScore().stack
    stacked = unit(stack_layers(torch.randn(4, 2, 6, 6, generator=torch.Generator().manual_seed(1))))
    with pytest.raises(ValueError, match="cannot be a stack of 5 layers"):
        unstack_layers(stacked, 5)  # width 24
    assert unstack_layers(stacked, 4).shape == (2, 4, 6, 6)


def test_layer_stack_part():
    agg = AGGREGATORS.build("stack")
    assert agg == LayerStack((-5, -4, -3, -2, -1))
    assert agg.resolve(12).layers_read() == (8, 9, 10, 11, 12)  # bert-base: the authors' range(8, 13)
    assert agg.resolve(6).signature() == "stack(L2,3,4,5,6;norm)"
    assert LayerStack([-2, -1]).layers == (-2, -1)
    with pytest.raises(ConfigError, match="layers: needs at least one value"):
        LayerStack(())
    with pytest.raises(ConfigError, match="does not exist"):
        LayerStack((-9,)).resolve(6)


def bary(layers: int, **settings) -> BaryScore:
    """The aligner fitted to a stack of ``layers`` layers (as a composition fits it)."""
    return BaryScore(**settings).for_vectors(Vectors("stack", layers))


# -- the barycenter -----------------------------------------------------------------------------
def test_barycenter_equals_pot_free_support_barycenter_text_by_text():
    gen = torch.Generator().manual_seed(2)
    lengths = [1, 2, 5, 9, 13]
    texts = [layered_text(gen, n) for n in lengths]
    mass = [masses(gen, n) for n in lengths]
    batch = pair_batch_of(texts, texts, mass, mass)
    x, rounds, settled = free_support_barycenters(unstack_layers(batch.ref, L), batch.ref_mass, batch.ref_match)
    assert bool(settled.all()) and int(rounds.min()) >= 1
    for k, n in enumerate(lengths):
        want = pot_barycenter(layers_of(texts[k]), mass[k].numpy())
        np.testing.assert_allclose(x[k, :n].numpy(), want, rtol=0, atol=1e-10)
        assert float(x[k, n:].abs().sum()) == 0.0  # padding rows stay 0


def test_uniform_masses_and_one_layer():
    """With one layer and masses on every token, the barycenter is the measure itself: each
    support point stays on its token (X starts there and the identity plan is optimal)."""
    gen = torch.Generator().manual_seed(3)
    y = unstack_layers(layered_text(gen, 7, layers=1).unsqueeze(0), 1)
    x, rounds, settled = free_support_barycenters(y, torch.ones(1, 7), torch.ones(1, 7, dtype=torch.bool))
    assert torch.allclose(x[0], y[0, 0].double(), atol=1e-12) and int(rounds[0]) == 1 and bool(settled[0])


def test_barycenter_does_not_depend_on_the_rest_of_the_batch():
    gen = torch.Generator().manual_seed(4)
    texts = [layered_text(gen, n) for n in (8, 3, 11)]
    mass = [masses(gen, t.shape[0]) for t in texts]
    together = pair_batch_of(texts, texts, mass, mass)
    xs, rounds, _ = free_support_barycenters(unstack_layers(together.ref, L), together.ref_mass, together.ref_match)
    for k, t in enumerate(texts):
        alone = pair_batch_of([t], [t], [mass[k]], [mass[k]])
        x1, r1, _ = free_support_barycenters(unstack_layers(alone.ref, L), alone.ref_mass, alone.ref_match)
        assert int(r1[0]) == int(rounds[k])
        assert torch.allclose(x1[0], xs[k, :t.shape[0]], atol=1e-12, rtol=0)


def test_text_without_mass_or_members():
    y = torch.randn(2, L, 3, D, dtype=torch.float64)
    mass = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 0.0]], dtype=torch.float64)
    members = torch.tensor([[True, True, False], [False, False, False]])
    x, rounds, settled = free_support_barycenters(y, mass, members)
    assert float(x.abs().sum()) == 0.0 and rounds.tolist() == [0, 0] and bool(settled.all())


# -- the distance between barycenters ------------------------------------------------------------
@pytest.mark.parametrize("reg", [0.0, 0.1, 0.5, 1.0, 10.0])
def test_distance_equals_pot_pair_by_pair(reg):
    gen = torch.Generator().manual_seed(5)
    xr = [torch.randn(n, D, generator=gen, dtype=torch.float64) * 0.4 for n in (4, 1, 7)]
    xc = [torch.randn(n, D, generator=gen, dtype=torch.float64) * 0.4 for n in (6, 3, 2)]
    ones = [torch.ones(len(x), dtype=torch.bool) for x in xr], [torch.ones(len(x), dtype=torch.bool) for x in xc]
    batch = make_batch(xr, xc, [m.double() for m in ones[0]], [m.double() for m in ones[1]])
    d, converged = barycenter_distances(batch.ref, batch.ref_match, batch.cand, batch.cand_match, reg)
    assert bool(converged.all())
    for k in range(3):
        want = 1.0 - reference_score(xr[k].numpy(), xc[k].numpy(), reg)
        assert float(d[k]) == pytest.approx(want, abs=1e-9), (reg, k)


def test_entropic_distance_approaches_the_exact_one():
    gen = torch.Generator().manual_seed(6)
    xr, xc = torch.randn(1, 5, D, generator=gen, dtype=torch.float64), torch.randn(1, 4, D, generator=gen,
                                                                                  dtype=torch.float64)
    members_r, members_c = torch.ones(1, 5, dtype=torch.bool), torch.ones(1, 4, dtype=torch.bool)
    exact = float(barycenter_distances(xr, members_r, xc, members_c, 0.0)[0][0])
    gaps = [float(barycenter_distances(xr, members_r, xc, members_c, reg)[0][0]) - exact for reg in (1.0, 0.1, 0.01)]
    assert gaps[0] > gaps[1] > gaps[2] > -1e-8 and gaps[2] < 1e-3  # below only by the marginal error


# -- the aligner -------------------------------------------------------------------------------------
def synthetic_pairs(seed: int):
    gen = torch.Generator().manual_seed(seed)
    lr, lc = [5, 2, 9, 4], [3, 6, 8, 1]
    refs, cands = [layered_text(gen, n) for n in lr], [layered_text(gen, n) for n in lc]
    rm, cm = [masses(gen, n) for n in lr], [masses(gen, n) for n in lc]
    return refs, cands, rm, cm


@pytest.mark.parametrize("reg", [0.0, 0.5])
def test_aligner_equals_a_plain_pair_by_pair_computation(reg):
    refs, cands, rm, cm = synthetic_pairs(7)
    got = bary(L, reg=reg)(pair_batch_of(refs, cands, rm, cm))["score"]
    assert got.dtype == torch.float64
    for k in range(len(refs)):
        xr = pot_barycenter(layers_of(refs[k]), rm[k].numpy())
        xc = pot_barycenter(layers_of(cands[k]), cm[k].numpy())
        assert float(got[k]) == pytest.approx(reference_score(xr, xc, reg), abs=1e-9), k


def test_score_forms_and_a_text_against_itself():
    refs, _, rm, _ = synthetic_pairs(9)
    batch = pair_batch_of(refs, refs, rm, rm)
    exact = bary(L, reg=0.0)(batch)["score"]
    assert torch.allclose(exact, torch.ones_like(exact), atol=1e-12)  # d = 0
    d = 1 - bary(L, reg=0.5)(batch)["score"]
    inverse = bary(L, reg=0.5, score_form="1/(1+d)")(batch)["score"]
    assert torch.allclose(inverse, 1 / (1 + d), atol=1e-12)
    assert bool((d >= 0).all()) and float(d.max()) > 0  # the entropic plan spreads mass over distinct points


def test_solvers_that_stop_early_say_so_with_counts():
    refs, cands, rm, cm = synthetic_pairs(11)
    batch = pair_batch_of(refs, cands, rm, cm)
    with pytest.warns(UserWarning, match=r"Sinkhorn did not converge for [1-4] of 4 pairs in 3 iterations"):
        out = bary(L, reg=0.001, max_iter=3)(batch)["score"]
    assert bool(torch.isfinite(out).all())
    with pytest.warns(UserWarning, match=r"barycenter of \d+ of 8 texts was still moving after 1 rounds"):
        bary(L, reg=0.0, bary_iter=1)(batch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the defaults on these pairs: no warning
        bary(L, reg=0.5)(batch)


@pytest.mark.parametrize("kwargs, message", [
    ({"bary_iter": 0}, "bary_iter"), ({"max_iter": 2.0}, "max_iter"), ({"reg": -0.1}, "reg"),
    ({"reg": math.nan}, "reg"), ({"reg": math.inf}, "reg"), ({"tol": 0}, "tol"), ({"bary_tol": -1}, "bary_tol"),
    ({"max_iter": 0}, "max_iter"), ({"bary_iter": True}, "bary_iter"), ({"score_form": "-d"}, "score_form"),
])
def test_bad_settings_are_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        BaryScore(**kwargs)


def test_signature_registry_and_explanation():
    assert ALIGNERS.build("baryscore") == BaryScore()
    assert bary(5).signature() == "baryscore(L=5,sqeuclidean,1-d,reg=0.01,iter<=10000,tol=1e-09,bary<=1000,bary_tol=1e-07)"
    assert bary(5, reg=0).signature() != bary(5).signature()
    assert BaryScore().metrics == ("score",) and BaryScore().primary == "score"
    refs, cands, rm, cm = synthetic_pairs(12)
    with pytest.raises(ConfigError, match="no per-token explanation"):
        bary(L).alignment(pair_batch_of(refs, cands, rm, cm))


# -- end to end -------------------------------------------------------------------------------------
def test_scorer_end_to_end_with_a_tiny_bert(tiny_bert_dir):
    enc = HFEncoder(tiny_bert_dir)
    cands = ["the cat sat on the mat", "a dog barked", "the cat sat on the mat", ""]
    refs = ["the cat sat on the mat", "the dog was barking loudly at night", "a cat is sitting there", "x"]

    def scorer(**kw) -> Scorer:
        # uniform masses, the same on both sides; [CLS]/[SEP] take part without mass, so "" is empty
        return compose(encoder=enc, aggregator=LayerStack((-3, -2, -1)), special_tokens="match-only",
                      aligner=bary(3, reg=0.0), **kw)

    with pytest.warns(UserWarning, match="empty"):
        scores = scorer().score(cands, refs)
    assert float(scores.score[0]) == pytest.approx(1.0, abs=1e-9)  # the same text: d = 0
    assert float(scores.score[3]) == 0.0 and bool(torch.isfinite(scores.score).all())
    assert 1.0 > float(scores.score[2]) > float(scores.score[1])  # shares words with its reference
    assert "stack(L2,3,4;norm)" in str(scores.signature) and "baryscore(L=3," in str(scores.signature)
    with pytest.warns(UserWarning, match="empty"):
        small = scorer(batch_size=1).score(cands, refs)
    assert torch.allclose(small.score, scores.score, atol=1e-6, rtol=0)
    with pytest.raises(ConfigError, match="stack"):
        compose(encoder=enc, aggregator=PowerMeans((-3, -2, -1)), aligner=BaryScore())


def test_preset_composes_the_published_defaults():
    scorer = alignscore.baryscore(model="all-MiniLM-L6-v2")
    assert scorer.aggregator == LayerStack((-5, -4, -3, -2, -1)) and scorer.composition.roles.special == "keep"
    assert scorer.weighting.signature() == IdfS(sep=True).signature()
    assert scorer.aligner == bary(5, reg=0.01) and scorer.aligner.stack == 5


def _idf(texts: list[list[int]]) -> dict[int, float]:
    """The authors' idf: log((M + 1) / (df + 1)) over the M texts (df: texts containing the id)."""
    df = Counter(i for t in texts for i in set(t))
    return {i: math.log((len(texts) + 1) / (c + 1)) for i, c in df.items()}


@pytest.mark.slow
def test_minilm_on_wmt16_equals_a_plain_reference_pipeline(minilm_dir, wmt_data):
    """The preset's numbers against a pipeline written out plainly from the authors' description:
    each text encoded alone by transformers, the last five hidden states unit-normalised, idf
    masses (references' over the references, candidates' over the candidates), POT's
    free-support barycenter and ``ot.sinkhorn2`` (the authors' call, exp domain, reg = 0.01,
    10000 iterations) between the barycenters; score = 1 - d."""
    from transformers import AutoModel, AutoTokenizer

    data = wmt_data["de-en"]
    cands, refs = data["mt-system"][:6], data["reference"][:6]
    scorer = alignscore.baryscore(model=minilm_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Sinkhorn at reg = 0.01 may stop at 10000 iterations
        got = scorer.score(cands, refs).score

    tok, model = AutoTokenizer.from_pretrained(minilm_dir), AutoModel.from_pretrained(minilm_dir).eval()
    ids_r, ids_c = [tok(t)["input_ids"] for t in refs], [tok(t)["input_ids"] for t in cands]
    idf_r, idf_c = _idf(ids_r), _idf(ids_c)

    def barycenter(ids: list[int], idf: dict[int, float]) -> np.ndarray:
        with torch.no_grad():
            hidden = model(torch.tensor([ids]), output_hidden_states=True).hidden_states
        layers = [h[0].double() / h[0].double().norm(dim=-1, keepdim=True) for h in hidden[-5:]]
        return pot_barycenter([h.numpy() for h in layers], np.array([idf[i] for i in ids]))

    for k in range(len(cands)):
        xr, xc = barycenter(ids_r[k], idf_r), barycenter(ids_c[k], idf_c)
        cost = ot.dist(xr, xc)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = float(ot.sinkhorn2(np.ones(len(xr)) / len(xr), np.ones(len(xc)) / len(xc), cost, 0.01,
                                   numItermax=10000))
        # 1e-8 where both Sinkhorns converge; where both stop at 10000 iterations their last
        # iterates differ (log vs exp domain, row vs column updates first): 6e-6 on these pairs
        assert float(got[k]) == pytest.approx(1.0 - d, abs=2e-5), k
