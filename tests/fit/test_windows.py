"""``alignscore fit`` through the optimal-transport aligners over n-gram windows (WMD-n, SMD): the
differentiable window score is the aligners' own (bigrams, trigrams, the whole sentence, both
``ngram_mean`` modes, texts shorter than n and tokens that take no part), its gradients are right,
a fitted WMD-2 run file reproduces the fit, and the memory bound counts the within-text products
the windows need."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

import alignscore
from alignscore.aggregators.mix import layer_weights
from alignscore.aligners import PairBatch
from alignscore.aligners.optimal import WMD, Sinkhorn
from alignscore.config import compile_run, file_source, run_spec
from alignscore.errors import ConfigError
from alignscore.fit import Values, extract, scores_of
from alignscore.fit.features import PairFeatures, band_slots, products
from alignscore.fit.model import mix_terms, mixed_similarity, pair_scores, plain
from alignscore.fit.run import check_start
from alignscore.fit.transport import products_dtype
from alignscore.fit.windows import window_problem
from alignscore.evaluation.wmt import load_daseg
from alignscore.weighting.classes import token_class_multipliers
from alignscore.weighting.schemes import idf_power
from cli_checks import assert_one_error, assert_score_config_reproduces, invoke, write_toml
from helpers import write_daseg

PAIRS = ("cs-en", "de-en")  # the language pairs of the data fixture (conftest.py)
LOGITS = (0.3, -0.4, 0.8)
IDF_POWER = 0.7
CLASS_WEIGHTS = (0.5, 2.0, 1.5, 0.75)  # exact in float32, as the fit's class multipliers are
LENGTHS = (5, 7, 1, 3, 9, 4, 2, 6, 8, 8)  # texts 2k against 2k + 1


def _texts(seed: int = 0) -> tuple[torch.Tensor, ...]:
    """Random layer states ``[N, 3, 6]`` (float64) of the texts of :data:`LENGTHS`, masses, who
    takes part (about a quarter of the tokens not; text 2 none, text 3 only its first) and
    token classes."""
    g = torch.Generator().manual_seed(seed)
    n = sum(LENGTHS)
    states = torch.randn(n, len(LOGITS), 6, generator=g, dtype=torch.float64)
    offsets = torch.tensor((0,) + LENGTHS).cumsum(0)
    mass = torch.rand(n, generator=g, dtype=torch.float64) + 0.2
    match = torch.rand(n, generator=g) > 0.25
    match[offsets[2]:offsets[3]] = False
    match[offsets[3]:offsets[4]] = torch.tensor([True, False, False])
    classes = torch.randint(0, 16, (n,), generator=g)
    return states, offsets, mass, match, classes


def _engine(aligner, states, offsets, mass, match, classes, ref, cand) -> torch.Tensor:
    """The aligner's own scores of the mixed unit vectors (float64), masses ``idf^a`` times the
    class multipliers, the mixed vectors' lengths as the norms."""
    h = torch.einsum("l,nld->nd", layer_weights(torch.tensor(LOGITS, dtype=torch.float64)), states)
    norm = h.norm(dim=-1)
    x = h / norm.clamp_min(1e-12).unsqueeze(-1)
    m = idf_power(mass, IDF_POWER) * token_class_multipliers(classes, torch.tensor(CLASS_WEIGHTS, dtype=torch.float64))

    def pad(texts: torch.Tensor) -> tuple[torch.Tensor, ...]:
        width = int(max(offsets[t + 1] - offsets[t] for t in texts))
        out = (torch.zeros(len(texts), width, x.shape[1], dtype=torch.float64),
               torch.zeros(len(texts), width, dtype=torch.float64), torch.zeros(len(texts), width, dtype=torch.bool),
               torch.zeros(len(texts), width, dtype=torch.float64))
        for i, t in enumerate(texts.tolist()):
            s, e = offsets[t], offsets[t + 1]
            for o, v in zip(out, (x, m, match, norm)):
                o[i, :e - s] = v[s:e]
        return out

    (xr, mr, kr, nr), (xc, mc, kc, nc) = pad(ref), pad(cand)
    return aligner(PairBatch(xr, xc, mr, mc, kr, kc, ref_norm=nr, cand_norm=nc))["score"].double()


def _values(aligner) -> Values:
    return Values(LOGITS, idf_power=IDF_POWER, **dict(zip(("special_weight", "punct_weight", "stopword_weight",
                                                            "subword_weight"), CLASS_WEIGHTS)),
                  reg=getattr(aligner, "reg", 0.02), metric="score", aligner=aligner)


SINKHORN = dict(reg=0.1, tol=1e-13, max_iter=20000)


@pytest.mark.parametrize("aligner", [
    WMD(n_gram=2), WMD(n_gram=3, cost="sqeuclidean"), WMD(n_gram="sentence", cost="cos"),
    WMD(n_gram=2, ngram_mean="states", cost="sqeuclidean"), WMD(n_gram=3, ngram_mean="states", score_form="1/(1+d)"),
    WMD(n_gram="sentence", ngram_mean="states"), Sinkhorn(n_gram=2, **SINKHORN),
    Sinkhorn(n_gram=3, cost="sqeuclidean", **SINKHORN), Sinkhorn(n_gram="sentence", cost="cos", **SINKHORN)],
    ids=lambda a: a.signature())
def test_the_window_score_is_the_aligners(aligner) -> None:
    """Random mix, idf exponent 0.7 and class weights; texts shorter than n (1, 2 and 3 tokens),
    one without a member (its pair scores 0), one with a single member, members in between
    tokens that take no part; pairs in two batches of different widths."""
    states, offsets, mass, match, classes = _texts()
    ref, cand = torch.arange(0, len(LENGTHS), 2), torch.arange(1, len(LENGTHS), 2)
    batches = [b for rows in (slice(0, 2), slice(2, None)) for b in products(
        states, offsets, ref[rows], cand[rows], mass, mass, match, classes, torch.float64, aligner.n_gram)]
    batches[1].rows += 2
    got = pair_scores(PairFeatures("x", torch.zeros(len(ref)), batches), plain(_values(aligner)), "score")
    want = _engine(aligner, states, offsets, mass, match, classes, ref, cand)
    assert torch.allclose(got, want, rtol=0, atol=1e-10)
    assert got[1] == 0 and bool((got[[0, 2, 3, 4]] != 0).all())


@pytest.mark.parametrize("aligner", [WMD(n_gram=2), Sinkhorn(n_gram="sentence", **SINKHORN)],
                         ids=lambda a: a.signature())
def test_a_batch_whose_references_have_no_member_scores_0(aligner) -> None:
    states, offsets, mass, match, classes = _texts()
    b = products(states, offsets, torch.tensor([2, 2]), torch.tensor([1, 5]), mass, mass, match, classes,
                 torch.float64, aligner.n_gram)
    got = pair_scores(PairFeatures("x", torch.zeros(2), b), plain(_values(aligner)), "score")
    assert got.tolist() == [0.0, 0.0] and b[0].ref_band.shape[1:3] == (0, 0)


def _batch(aligner, seed: int = 3):
    states, offsets, mass, match, classes = _texts(seed)
    ref, cand = torch.tensor([0, 4, 9]), torch.tensor([1, 5, 8])
    (b,) = products(states, offsets, ref, cand, mass, mass, match, classes, torch.float64, aligner.n_gram)
    return b


@pytest.mark.parametrize("n_gram, states", [(2, False), (3, True), ("sentence", True)])
def test_window_cosines_and_masses_gradcheck(n_gram, states) -> None:
    """The windows' cosines and masses are smooth in the mix's logits and the tokens' masses."""
    aligner = WMD(n_gram=n_gram, ngram_mean="states" if states else "unit")
    b = _batch(aligner)
    logits = torch.tensor(LOGITS, dtype=torch.float64, requires_grad=True)
    ref_mass, cand_mass = b.ref_mass.clone().requires_grad_(True), b.cand_mass.clone().requires_grad_(True)

    def windows(logits, ref_mass, cand_mass):
        return window_problem(b, mixed_similarity(b, logits), mix_terms(b, logits), ref_mass, cand_mass, aligner)

    assert torch.autograd.gradcheck(windows, (logits, ref_mass, cand_mass), eps=1e-6, atol=1e-7)


@pytest.mark.parametrize("aligner", [WMD(n_gram=2), WMD(n_gram=3, ngram_mean="states", cost="sqeuclidean"),
                                     pytest.param(Sinkhorn(n_gram=2, reg=0.3, tol=1e-14, max_iter=20000),
                                                  marks=pytest.mark.slow),  # the dearest: CI's tier
                                     Sinkhorn(n_gram="sentence", reg=0.3, tol=1e-14, max_iter=20000)],
                         ids=lambda a: a.signature())
def test_window_transport_gradcheck(aligner) -> None:
    """The scores through the window costs and masses (the exact plan and potentials for WMD,
    the implicit derivative for Sinkhorn): finite differences in the logits, the idf exponent,
    the tokens' masses and reg."""
    b = _batch(aligner)
    logits = torch.tensor(LOGITS, dtype=torch.float64, requires_grad=True)
    power = torch.tensor(IDF_POWER, dtype=torch.float64, requires_grad=True)
    reg = torch.tensor(0.3, dtype=torch.float64, requires_grad=isinstance(aligner, Sinkhorn))
    ref_mass, cand_mass = b.ref_mass.clone().requires_grad_(True), b.cand_mass.clone().requires_grad_(True)
    fixed = {name: 1.0 for name in ("special_weight", "punct_weight", "stopword_weight", "subword_weight")}

    def scores(logits, power, ref_mass, cand_mass, reg):
        pf = PairFeatures("x", torch.zeros(3), [replace(b, ref_mass=ref_mass, cand_mass=cand_mass)])
        values = {"logits": logits, "idf_power": power, "temperature": 0.0, "beta": 1.0, "reg": reg,
                  "aligner": aligner, **fixed}
        return pair_scores(pf, values, "score")

    assert torch.autograd.gradcheck(scores, (logits, power, ref_mass, cand_mass, reg), eps=1e-7, atol=1e-5)
    (grad,) = torch.autograd.grad(scores(logits, power, ref_mass, cand_mass, reg).sum(), logits)
    assert bool((grad != 0).any())


def test_tunes_minilm_selection_is_a_start() -> None:
    """tune's selection for all-MiniLM-L6-v2 (wmd over bigrams, squared Euclidean cost, layer -3,
    special tokens kept, no weighting) and a MoverScore-style n-gram run are starts the fit follows."""
    check_start(run_spec({"model": "all-MiniLM-L6-v2", "aligner": "wmd", "n_gram": 2, "cost": "sqeuclidean",
                          "layer": -3, "special_tokens": "keep", "weighting": "none"}))
    check_start(run_spec({"model": "m", "aligner": "sinkhorn", "n_gram": "sentence", "weighting": "idf-S"}))
    check_start(run_spec({"model": "m", "aligner": "wmd", "n_gram": 3, "ngram_mean": "states"}))


@pytest.mark.slow  # a whole fit: out of the edit loop's tier, in CI's
def test_fit_from_wmd2_and_score_config_best_toml_reproduces_it(tiny_bert_dir, data, tmp_path) -> None:
    start = write_toml({"model": tiny_bert_dir, "layer": 2, "aligner": "wmd", "n_gram": 2, "cost": "sqeuclidean",
                        "special_tokens": "keep", "weighting": "none"}, tmp_path / "wmd2.toml")
    out = tmp_path / "out"
    code, stdout, stderr = invoke("fit", "--data", data, "--from", start, "--steps", "3", "-o", out)
    assert code == 0, stderr
    assert "within texts for n-gram windows" in stdout + stderr
    best = compile_run([file_source(out / "best.toml")])
    assert best.composition.aligner.name == "wmd" and best.composition.aligner.n_gram == 2
    assert_score_config_reproduces(out, data, PAIRS)


def test_the_memory_bound_counts_the_band(tiny_bert_dir, data, tmp_path) -> None:
    """The bound is exactly the bytes kept, the within-text products included: that many bytes
    pass, one less is refused; on the command line a bound the tokens' products alone would
    fit is refused in one line, nothing written."""
    options = {"model": tiny_bert_dir, "layer": 2, "aligner": "wmd", "n_gram": 3}
    scorer = alignscore.build(run_spec(options))
    composition, pairs = scorer.resolved(), load_daseg(data)
    full = extract(scorer, composition, pairs, (1, 2, 3), dtype=torch.float64)
    batches = [b for pf in full.pairs for b in pf.batches]
    tokens = sum(b.cross.nbytes + b.cand_gram.nbytes + b.ref_gram.nbytes for b in batches)
    band = sum(b.cand_band.nbytes + b.ref_band.nbytes for b in batches)
    assert band == full.band_bytes > 0
    assert all(b.cand_band.shape[2] == band_slots(3, b.cand_band.shape[1]) == 2 for b in batches)
    assert extract(scorer, composition, pairs, (1, 2, 3), tokens + band, torch.float64).nbytes == full.nbytes
    with pytest.raises(ConfigError, match="n-gram windows of 3"):
        extract(scorer, composition, pairs, (1, 2, 3), tokens + band - 1, torch.float64)
    start = write_toml(options, tmp_path / "start.toml")
    out = tmp_path / "out"
    between = (tokens + band / 2) / 2**30
    code, _, stderr = invoke("fit", "--data", data, "--from", start, "--layers", "1-3", "--max-memory", repr(between),
                             "-o", out, "-q")
    assert_one_error(code, stderr, "--max-memory", "would keep more than", "n-gram windows of 3")
    assert not out.exists()


@pytest.mark.slow
def test_real_model_minilm_bigrams_equal_the_engine(tmp_path) -> None:
    """all-MiniLM-L6-v2 under tune's selection (wmd over bigrams, squared Euclidean cost, layer
    -3, special tokens kept, no weighting), and the same over XMoverScore's state means: the
    fit's start and a mix score as the engine does on real segments."""
    data = write_daseg(tmp_path, ("de-en",), 60)
    (lp,) = load_daseg(data)
    for mean in ("unit", "states"):
        options = {"model": "all-MiniLM-L6-v2", "aligner": "wmd", "n_gram": 2, "cost": "sqeuclidean",
                   "special_tokens": "keep", "weighting": "none", "ngram_mean": mean}
        scorer = alignscore.build(run_spec({**options, "layer": -3}))
        composition = scorer.resolved()
        features = extract(scorer, composition, [lp], (3, 4, 5), dtype=products_dtype(composition.aligner))
        exact = scores_of(features, Values((-math.inf, math.inf, -math.inf), metric="score",
                                           aligner=composition.aligner))
        want = scorer.score(lp.candidates, lp.references)["score"].double()
        assert torch.allclose(exact[0], want, rtol=0, atol=1e-6), mean
        mixed = scores_of(features, Values((0.5, -0.5, 1.0), punct_weight=0.5, metric="score",
                                           aligner=composition.aligner))
        engine = alignscore.build(run_spec({**options, "aggregator": "mix", "layers": [3, 4, 5],
                                            "mix_weights": [0.5, -0.5, 1.0], "punct_weight": 0.5}))
        got = engine.score(lp.candidates, lp.references)["score"].double()
        assert torch.allclose(mixed[0], got, rtol=0, atol=1e-6), mean
