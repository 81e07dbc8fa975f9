"""Word Rotator's Distance (Yokoi et al., 2020) as parts: the ``norm`` weighting with ``wmd`` on
the ``cos`` cost equals a direct NumPy/POT computation of WRD, with every aggregator, through
the cache, a streamed run, ``show`` and ``pairwise``, and beside other compositions in one call.

WRD, written out as the paper defines it for two texts with word vectors ``x_i`` and ``y_j``::

    a_i = |x_i| / sum_k |x_k|,   b_j = |y_j| / sum_k |y_k|,   C_ij = 1 - cos(x_i, y_j)
    WRD = min_T <C, T>  over  T >= 0, T 1 = a, T^T 1 = b       (ot.emd2)

and the score is ``1 - WRD`` (the aligner's default score form).
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch

import alignscore
from alignscore import Composition, Greedy, Norm, PowerMeans, Routing, Scorer, SingleLayer, Sinkhorn, WMD
from alignscore.aggregators.routing import route
from alignscore.aggregators.stack import LayerStack
from alignscore.engine import Pairs, score_many
from alignscore.testing import WordEncoder, tolerance
from alignscore.weighting import IdfS

ot = pytest.importorskip("ot")

EXACT = 1e-10  # float64 vectors: the engine and the direct computation differ by summation order only
WRD = Composition(weighting=Norm(), aligner=WMD(cost="cos"))
WORDS = ("the cat sat on mat a dog ran in park quickly slowly big small red blue house tree river "
         "alignment remarkable transformers , . !").split()


class RandomWords(WordEncoder):
    """:class:`WordEncoder` with float64 hidden states of widely varying lengths (each token's
    vector scaled by ``exp(u)``, ``u`` uniform in ``[-2, 2]``), so that norm masses are far from
    uniform."""

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, layers) -> torch.Tensor:
        gen = torch.Generator().manual_seed(1)
        shape = (self._num_layers + 1, self._vocab_size)
        table = torch.randn(*shape, self._dim, generator=gen, dtype=torch.float64)
        table = table * torch.exp(4 * torch.rand(*shape, 1, generator=gen, dtype=torch.float64) - 2)
        return table[list(layers)][:, input_ids]


def random_texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) for _ in range(n)]


def direct_wrd(x: np.ndarray, y: np.ndarray) -> float:
    """``1 - WRD`` of two texts' raw word vectors ``x [n, D]``, ``y [m, D]`` (0 when either is
    empty, alignscore's policy for a side without mass)."""
    if not len(x) or not len(y):
        return 0.0
    nx, ny = np.linalg.norm(x, axis=1), np.linalg.norm(y, axis=1)
    a, b = nx / nx.sum(), ny / ny.sum()
    cost = 1.0 - (x / nx[:, None]) @ (y / ny[:, None]).T
    return 1.0 - float(ot.emd2(a, b, cost))


def word_vectors(encoder: WordEncoder, text: str, vectors) -> np.ndarray:
    """The vectors of ``text``'s ordinary tokens (its [CLS] and [SEP] carry no mass under the
    default match-only policy), from ``vectors``: the ``[L, T, D]`` hidden states -> ``[T, D]``."""
    tok = encoder.tokenize([text])
    ids = torch.tensor(tok.ids[0]).unsqueeze(0)
    layers = tuple(range(encoder.num_layers + 1))
    states = encoder.forward(ids, torch.ones_like(ids), layers)[:, 0]  # [L + 1, T, D]
    out = vectors(states).numpy()
    return out[~np.array(tok.special[0])]


def unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True)


# aggregator -> what its output vector is, from all the hidden states [L + 1, T, D], written out
DIRECT = {
    "single layer": (SingleLayer(2), lambda s: s[2]),
    "pmeans, normalised layers": (PowerMeans(layers=(1, 2, 3)),
                                  lambda s: torch.cat([unit(s[1:4]).amin(0), unit(s[1:4]).mean(0),
                                                       unit(s[1:4]).amax(0)], -1)),
    "pmeans, raw layers": (PowerMeans(layers=(0, 3), powers=(1.0, math.inf), normalize=False),
                           lambda s: torch.cat([s[[0, 3]].mean(0), s[[0, 3]].amax(0)], -1)),
    "routing": (Routing(layers=(1, 2, 3)), lambda s: route(unit(s[1:4]))),
}


def engine_scores(encoder, compositions, refs, cands):
    resolved = [c.resolve(encoder) for c in compositions]
    return [r.metrics for r in score_many(encoder, Pairs.from_pairs(refs, cands), resolved)]


@pytest.mark.parametrize("aggregator", list(DIRECT), ids=str)
def test_wrd_parts_equal_a_direct_computation_on_random_vectors(aggregator: str) -> None:
    agg, vectors = DIRECT[aggregator]
    encoder = RandomWords(dim=16)
    refs, cands = random_texts(40, seed=1), random_texts(40, seed=2)
    refs[3], cands[5] = "", "the the the"  # an empty side scores 0; repeated words
    cands[7] = refs[7]  # a text against itself: WRD 0, score 1
    (got,) = engine_scores(encoder, [Composition(aggregator=agg, weighting=Norm(), aligner=WMD(cost="cos"))],
                           refs, cands)
    assert got["score"].dtype == torch.float64
    want = torch.tensor([direct_wrd(word_vectors(encoder, r, vectors), word_vectors(encoder, c, vectors))
                         for r, c in zip(refs, cands)], dtype=torch.float64)
    diff = (got["score"] - want).abs().max().item()
    print(f"WRD parity, {aggregator}: max |alignscore - direct| = {diff:.2e}")
    assert diff < EXACT
    assert got["score"][3] == 0 and abs(got["score"][7] - 1) < EXACT
    # the masses matter: uniform masses on the same cost give other scores
    (uniform,) = engine_scores(encoder, [Composition(aggregator=agg, aligner=WMD(cost="cos"))], refs, cands)
    assert (uniform["score"] - want).abs().max() > 1e-3


def test_norm_masses_on_a_stack_are_uniform() -> None:
    """Every token of a stack has norm sqrt(L): norm weighs as none does."""
    encoder = RandomWords()
    refs, cands = random_texts(20, seed=3), random_texts(20, seed=4)
    stack = LayerStack(layers=(1, 2, 3))
    norm, uniform = engine_scores(encoder, [Composition(aggregator=stack, weighting=Norm(), aligner=WMD(cost="cos")),
                                            Composition(aggregator=stack, aligner=WMD(cost="cos"))], refs, cands)
    assert (norm["score"] - uniform["score"]).abs().max() < EXACT


def test_cos_cost_is_half_the_squared_distance_on_unit_vectors() -> None:
    """On unit vectors 1 - cos = |x - y|^2 / 2: the cos scores follow from sqeuclidean's, for
    tokens and for n-gram windows, with the exact solver and with Sinkhorn."""
    encoder = RandomWords()
    refs, cands = random_texts(20, seed=5), random_texts(20, seed=6)
    for cos, sq in ((WMD(cost="cos"), WMD(cost="sqeuclidean")), (WMD(cost="cos", n_gram=2), WMD(cost="sqeuclidean", n_gram=2)),
                    (Sinkhorn(cost="cos", reg=0.01), Sinkhorn(cost="sqeuclidean", reg=0.02))):
        a, b = engine_scores(encoder, [Composition(weighting=Norm(), aligner=cos),
                                       Composition(weighting=Norm(), aligner=sq)], refs, cands)
        # score = 1 - d: d_cos = d_sq / 2 (Sinkhorn: reg scaled with the cost, the same plan)
        assert (1 - a["score"] - (1 - b["score"]) / 2).abs().max() < 1e-6, cos.signature()


def test_wrd_beside_other_compositions_in_one_call_scores_as_alone() -> None:
    """One encoding for all: a composition that keeps norms changes no other composition's
    scores, and each gets what it gets alone."""
    encoder = RandomWords()
    refs, cands = random_texts(30, seed=7), random_texts(30, seed=8)
    comps = [Composition(), WRD, Composition(aggregator=PowerMeans(layers=(1, 2, 3)), weighting=Norm(),
                                             aligner=WMD(cost="cos")),
             Composition(weighting=IdfS(sep=True), aligner=WMD()), Composition(weighting=Norm(), aligner=Greedy()),
             Composition(weighting=Norm(), aligner=Sinkhorn(cost="cos", reg=0.05))]
    together = engine_scores(encoder, comps, refs, cands)
    for comp, got in zip(comps, together):
        (alone,) = engine_scores(encoder, [comp], refs, cands)
        for name in alone:
            assert torch.equal(got[name], alone[name]), (comp.weighting.signature(), comp.aligner.signature(), name)


def test_show_and_pairwise_read_the_norms_too() -> None:
    encoder = RandomWords()
    scorer = Scorer(encoder, WRD)
    refs, cands = random_texts(6, seed=9), random_texts(6, seed=10)
    scores = scorer.score(cands, refs)["score"]
    for i in range(len(cands)):
        explained = scorer.explain(cands[i], refs[i])
        assert abs(explained.scores["score"] - float(scores[i])) < 1e-6
        x = word_vectors(encoder, refs[i], lambda s: s[encoder.num_layers])
        mass = explained.best.ref_mass[explained.best.ref_mass > 0].double().numpy()
        norms = np.linalg.norm(x, axis=1)
        assert np.allclose(mass / mass.sum(), norms / norms.sum(), atol=1e-6)  # the masses it shows are the norms
    matrix = scorer.pairwise(cands, refs).metrics["score"]
    assert (matrix.diagonal() - scores).abs().max() < 1e-6


@pytest.mark.filterwarnings("ignore:.*truncated")  # the tiny model reads 64 tokens: the same in every run
def test_wrd_through_the_cache_gives_the_same_scores(wmt_data, tiny_bert_dir, tmp_path) -> None:
    """The cache stores hidden states; the norms are taken after aggregating, as without it."""
    from alignscore.encoders.huggingface import HFEncoder

    cands, refs = wmt_data["de-en"]["mt-system"][:30], wmt_data["de-en"]["reference"][:30]
    wrd = Composition(aggregator=PowerMeans(layers=(-3, -2, -1)), weighting=Norm(), aligner=WMD(cost="cos"))
    plain = Scorer(HFEncoder(tiny_bert_dir), wrd).score(cands, refs)["score"]
    cold = Scorer(HFEncoder(tiny_bert_dir), wrd, cache=tmp_path / "c").score(cands, refs)["score"]
    warm_scorer = Scorer(HFEncoder(tiny_bert_dir), wrd, cache=tmp_path / "c")
    warm = warm_scorer.score(cands, refs)["score"]
    assert warm_scorer.encoder._model is None  # every state came from the cache
    assert torch.equal(cold, plain) and torch.equal(warm, cold)


def test_wrd_streamed_gives_the_rows_of_a_whole_run(wmt_data, tiny_bert_dir, tmp_path) -> None:
    from click.testing import CliRunner

    from alignscore.cli import main

    paths = {}
    for name, lines in (("c", wmt_data["de-en"]["mt-system"][:60]), ("r", wmt_data["de-en"]["reference"][:60])):
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    common = ["score", "-c", paths["c"], "-r", paths["r"], "--model", tiny_bert_dir, "--layer", "3", "--weighting", "norm",
              "--aligner", "wmd", "--cost", "cos", "-q"]
    for out, extra in (("whole.tsv", []), ("stream.tsv", ["--stream", "--chunk-size", "17"])):
        result = CliRunner().invoke(main, [str(a) for a in common + ["-o", tmp_path / out] + extra])
        assert result.exit_code == 0, result.output
    whole, stream = ((tmp_path / name).read_text().splitlines() for name in ("whole.tsv", "stream.tsv"))
    assert whole[0] == stream[0] and "|w:norm|align:wmd(cos,1-d,n=1)|" in whole[0]  # the signature
    w, s = (torch.tensor([float(line) for line in rows[3:]]) for rows in (whole, stream))
    assert len(w) == 60 and (w - s).abs().max() < 1e-6


@pytest.mark.slow  # the real model: out of the edit loop's tier, in CI's
def test_wrd_from_minilm_equals_a_direct_computation_from_its_hidden_states(wmt_data, minilm_dir) -> None:
    """The real model: WRD from all-MiniLM-L6-v2's layer-4 hidden states (each text alone, its
    [CLS] and [SEP] left out), in float64 from the float32 states."""
    from transformers import AutoModel, AutoTokenizer

    cands, refs = wmt_data["de-en"]["mt-system"][:25], wmt_data["de-en"]["reference"][:25]
    scores = alignscore.score(cands, refs, model=minilm_dir, layer=4, weighting="norm", aligner="wmd", cost="cos")
    assert scores.signature.fields["w"] == "norm" and scores.signature.fields["align"] == "wmd(cos,1-d,n=1)"
    tokenizer, model = AutoTokenizer.from_pretrained(minilm_dir), AutoModel.from_pretrained(minilm_dir).eval()

    def vectors(text: str) -> np.ndarray:
        with torch.no_grad():
            out = model(**tokenizer(text, return_tensors="pt"), output_hidden_states=True)
        return out.hidden_states[4][0, 1:-1].double().numpy()

    want = torch.tensor([direct_wrd(vectors(r), vectors(c)) for c, r in zip(cands, refs)], dtype=torch.float64)
    diff = (scores["score"] - want).abs().max().item()
    print(f"WRD parity, all-MiniLM-L6-v2 layer 4: max |alignscore - direct| = {diff:.2e}")
    # float32 states: the encoder's batches (padding, another kernel) and the float32 unit
    # scaling leave rounding of a few float32 ulps in the costs and masses
    assert diff < tolerance(torch.float32)
