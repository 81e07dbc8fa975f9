"""``alignscore fit`` through the optimal-transport aligners: the differentiable WMD and Sinkhorn
scores are the aligners' own, their gradients are right (finite differences, and POT's for the
exact distance), a fitted WMD run file reproduces the fit, and what the fit cannot follow is
refused in one line with nothing written."""

from __future__ import annotations

import math

import pytest
import torch

import alignscore
from alignscore import LayerMix
from alignscore.aligners import PairBatch
from alignscore.aligners.optimal import WMD, Sinkhorn
from alignscore.config import compile_run, file_source, run_spec
from alignscore.fit import Values, extract, scores_of
from alignscore.fit.transport import exact_distances, products_dtype, sinkhorn_distances, transport_scores
from alignscore.evaluation.wmt import load_daseg
from cli_checks import assert_one_error, assert_score_config_reproduces, invoke, write_toml
from helpers import write_daseg

PAIRS = ("cs-en", "de-en")  # the language pairs of the data fixture (conftest.py)


def _problem(seed: int, b: int = 3, tr: int = 4, tc: int = 3, pad: bool = True) -> tuple[torch.Tensor, ...]:
    """Unit vectors and positive masses of random pairs (``pad``: the last pair's last token has
    no mass; a finite difference there would give it some, a jump)."""
    g = torch.Generator().manual_seed(seed)
    ref = torch.nn.functional.normalize(torch.randn(b, tr, 5, generator=g, dtype=torch.float64), dim=-1)
    cand = torch.nn.functional.normalize(torch.randn(b, tc, 5, generator=g, dtype=torch.float64), dim=-1)
    ref_mass = torch.rand(b, tr, generator=g, dtype=torch.float64) + 0.1
    cand_mass = torch.rand(b, tc, generator=g, dtype=torch.float64) + 0.1
    if pad:
        ref_mass[-1, -1] = 0.0
    return ref, cand, ref_mass, cand_mass


@pytest.mark.parametrize("aligner", [WMD(), WMD(cost="sqeuclidean", score_form="1/(1+d)"), WMD(cost="cos"),
                                     Sinkhorn(reg=0.05, tol=1e-12, max_iter=5000),
                                     Sinkhorn(cost="sqeuclidean", reg=0.2, tol=1e-12)])
def test_the_differentiable_score_is_the_aligners(aligner) -> None:
    ref, cand, ref_mass, cand_mass = _problem(0)
    match = torch.ones(ref.shape[:2], dtype=torch.bool), torch.ones(cand.shape[:2], dtype=torch.bool)
    want = aligner(PairBatch(ref, cand, ref_mass, cand_mass, *match))["score"]
    sim = cand @ ref.transpose(1, 2)  # [B, Tc, Tr], as mixed_similarity gives it
    got = transport_scores(sim, ref_mass, cand_mass, aligner)
    assert torch.allclose(got, want.double(), rtol=0, atol=1e-10)
    empty = transport_scores(sim, ref_mass * 0, cand_mass, aligner)
    assert empty.tolist() == [0.0] * len(empty)


def test_exact_gradients_are_pots_and_finite_differences() -> None:
    """Away from degenerate plans (random masses and costs) the exact distance is linear near
    the point: gradcheck; and the gradients are those ``ot.emd2`` gives on torch tensors."""
    import ot

    ref, cand, ref_mass, cand_mass = _problem(1, pad=False)
    cos = (ref @ cand.transpose(1, 2)).requires_grad_(True)
    a = (ref_mass / ref_mass.sum(-1, keepdim=True)).requires_grad_(True)
    b = (cand_mass / cand_mass.sum(-1, keepdim=True)).requires_grad_(True)

    def distance(cos: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        # renormalised so that a finite-difference step keeps each side summing to 1
        return exact_distances(2.0 - 2.0 * cos, a / a.sum(-1, keepdim=True), b / b.sum(-1, keepdim=True))

    assert torch.autograd.gradcheck(distance, (cos, a, b), eps=1e-7, atol=1e-5)
    cos.grad = a.grad = b.grad = None
    with torch.no_grad():
        a[-1, -1] = 0.0  # a token without mass takes no part, in POT as here
        a[-1] /= a[-1].sum()
    ours = exact_distances(2.0 - 2.0 * cos, a, b)
    ours[-1].backward()
    rows = a[-1].detach() > 0
    a0, b0 = a[-1].detach()[rows].clone().requires_grad_(True), b[-1].detach().clone().requires_grad_(True)
    c0 = (2.0 - 2.0 * cos[-1].detach()[rows]).requires_grad_(True)
    theirs = ot.emd2(a0, b0, c0)
    theirs.backward()
    assert math.isclose(theirs.item(), ours[-1].item(), abs_tol=1e-12)
    assert torch.allclose(cos.grad[-1][rows], -2.0 * c0.grad, atol=1e-12)
    # the masses' gradients are potentials: unique up to a constant, which normalised masses never see
    for mine, pot in ((a.grad[-1][rows], a0.grad), (b.grad[-1], b0.grad)):
        assert torch.allclose(mine - mine.mean(), pot - pot.mean(), atol=1e-10)


@pytest.mark.slow  # finite differences through Sinkhorn in float64: CI's tier
def test_sinkhorn_gradients_match_finite_differences() -> None:
    """The implicit derivative of the converged plan, in the costs, the masses and reg."""
    ref, cand, ref_mass, cand_mass = _problem(2, pad=False)
    aligner = Sinkhorn(reg=0.3, tol=1e-14, max_iter=20000)
    cost = (2.0 - 2.0 * ref @ cand.transpose(1, 2)).requires_grad_(True)
    a, b = ref_mass.clone().requires_grad_(True), cand_mass.clone().requires_grad_(True)
    reg = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)

    def distance(cost: torch.Tensor, a: torch.Tensor, b: torch.Tensor, reg: torch.Tensor) -> torch.Tensor:
        return sinkhorn_distances(cost, a / a.sum(-1, keepdim=True), b / b.sum(-1, keepdim=True), aligner, reg)

    assert torch.autograd.gradcheck(distance, (cost, a, b, reg), eps=1e-6, atol=1e-6)
    # the plan's own dependence matters: the gradient is not the plan (the envelope of <C, T> - reg H)
    d = distance(cost, a, b, reg).sum()
    (grad,) = torch.autograd.grad(d, cost)
    assert not torch.allclose(grad, torch.zeros_like(grad))


@pytest.mark.slow  # a fit through every transport aligner: CI's tier
@pytest.mark.parametrize("options", [
    {"aligner": "wmd", "weighting": "idf-S", "cost": "euclidean"},
    {"aligner": "sinkhorn", "reg": 0.1, "tol": 1e-10, "max_iter": 5000, "cost": "sqeuclidean", "score_form": "1/(1+d)"},
    {"aligner": "wmd", "n_gram": 2, "ngram_mean": "states", "weighting": "idf-S", "special_tokens": "keep"},
    {"aligner": "sinkhorn", "n_gram": "sentence", "reg": 0.1, "tol": 1e-10, "max_iter": 5000, "cost": "sqeuclidean"},
])
def test_fit_scores_equal_the_engine(tiny_bert_dir, data, options) -> None:
    """The fit's scores (mixed layers, idf exponent, class weights, Sinkhorn's reg; over tokens
    and n-gram windows) are the engine's for the same settings, and a one-hot mix is the
    single-layer run."""
    spec = run_spec({"model": tiny_bert_dir, "layer": 2, **options})
    scorer = alignscore.build(spec)
    aligner = scorer.resolved().aligner
    pairs = load_daseg(data)
    features = extract(scorer, scorer.resolved(), pairs, (1, 2, 3), dtype=products_dtype(aligner))
    assert (features.band_bytes > 0) == ("n_gram" in options)
    idf = options.get("weighting") == "idf-S"
    values = Values((0.3, -0.2, 0.5), idf_power=0.7 if idf else 1.0, punct_weight=0.5, subword_weight=2.0,
                    reg=0.15, metric="score", aligner=aligner)
    extra = {"idf_power": 0.7} if idf else {}
    extra.update({"reg": 0.15} if options["aligner"] == "sinkhorn" else {})
    engine = alignscore.build(run_spec({"model": tiny_bert_dir, **options, "aggregator": "mix", "layers": [1, 2, 3],
                                        "mix_weights": [0.3, -0.2, 0.5], "punct_weight": 0.5, "subword_weight": 2.0,
                                        **extra}))
    ours = scores_of(features, values)
    for lp, got in zip(pairs, ours):
        want = engine.score(lp.candidates, lp.references)["score"]
        assert torch.allclose(got, want.double(), rtol=0, atol=1e-6), lp.name
    exact = scores_of(features, Values((-math.inf, math.inf, -math.inf), metric="score", aligner=aligner,
                                       reg=getattr(aligner, "reg", 0.02)))
    single = scorer.score(pairs[0].candidates, pairs[0].references)["score"]
    assert torch.allclose(exact[0], single.double(), rtol=0, atol=1e-6)


@pytest.mark.slow  # a whole fit: out of the edit loop's tier, in CI's
def test_fit_from_wmd_and_score_config_best_toml_reproduces_it(tiny_bert_dir, data, tmp_path) -> None:
    start = write_toml({"model": tiny_bert_dir, "layer": 2, "aligner": "wmd", "weighting": "idf-S",
                        "special_tokens": "keep"}, tmp_path / "wmd.toml")
    out = tmp_path / "out"
    code, stdout, stderr = invoke("fit", "--data", data, "--from", start, "--steps", "4", "-o", out, "-q")
    assert code == 0, stderr
    assert "fitted: held-out mean |r|" in stdout and "wmd" in stdout
    best = compile_run([file_source(out / "best.toml")])
    assert best.composition.aligner.name == "wmd" and isinstance(best.composition.aggregator, LayerMix)
    assert_score_config_reproduces(out, data, PAIRS)


def test_fit_through_sinkhorn_learns_reg_and_is_never_worse_inside(tiny_bert_dir, tmp_path) -> None:
    data = write_daseg(tmp_path, ("cs-en",), 30)  # one pair (no folds): Sinkhorn on a CPU is the slow aligner
    start = write_toml({"model": tiny_bert_dir, "layer": 2, "aligner": "sinkhorn", "reg": 0.5},
                       tmp_path / "sinkhorn.toml")
    result = alignscore.fit(data, start=start, learn=["mix_weights", "reg"], steps=2, layers=[2, 3])
    assert result.final.inner_best >= result.final.inner_start and result.final.steps == 2
    assert result.spec.composition.aligner.name == "sinkhorn"
    assert result.spec.composition.aligner.reg == pytest.approx(result.values.reg, rel=1e-12)
    with pytest.raises(alignscore.ConfigError, match="^learn=: temperature: not a setting of the start's aligner"):
        alignscore.fit(data, start=start, learn=["temperature"])


@pytest.mark.parametrize("options, needles", [
    ({"aligner": "wmd", "flow_dropout": 0.3}, ["start.toml", "flow_dropout", "cannot follow"]),
    ({"aligner": "baryscore"}, ["start.toml", "aligner", "greedy, wmd or sinkhorn", "BaryScore"]),
    ({"aligner": "wmd", "learn": "beta"}, ["--learn: beta: ", "not a setting of the start's aligner wmd"]),
    ({"aligner": "wmd", "learn": "reg"}, ["--learn: reg: ", "aligner wmd"]),
])
def test_what_the_fit_cannot_follow_is_one_line_and_nothing_written(tiny_bert_dir, tmp_path, options, needles) -> None:
    data = write_daseg(tmp_path, PAIRS, 30)
    options = {"model": tiny_bert_dir, "layer": 2, **options}
    learn = options.pop("learn", None)
    start = write_toml(options, tmp_path / "start.toml")
    out = tmp_path / "out"
    extra = ["--learn", learn] if learn else []
    code, _, stderr = invoke("fit", "--data", data, "--from", start, "-o", out, "-q", *extra)
    assert_one_error(code, stderr, *needles)
    assert not out.exists()


def test_moverscore_preset_starts_a_fit(data) -> None:
    """The moverscore-v2 preset (with the installed small model) is a start the fit follows."""
    from alignscore.fit.run import check_start, start_values

    spec = run_spec({"preset": "moverscore-v2", "model": "all-MiniLM-L6-v2"})
    check_start(spec)
    resolved = spec.composition
    kept, exact, init = start_values(run_spec({"preset": "moverscore-v2", "model": "m", "layer": 6}), 6, None)
    assert kept == (1, 2, 3, 4, 5, 6) and exact.aligner is not None and exact.metric == "score"
    assert exact.logits[-1] == math.inf and init.logits[-1] > 0 and resolved.aligner.name == "wmd"


@pytest.mark.slow
def test_real_model_moverscore_start_equals_the_engine(tmp_path) -> None:
    """all-MiniLM-L6-v2 under the moverscore-v2 preset (WMD, Euclidean cost, idf-S, special
    tokens kept): the fit's start, and a mix, score as the engine does on real segments."""
    data = write_daseg(tmp_path, ("de-en",), 60)
    spec = run_spec({"preset": "moverscore-v2", "model": "all-MiniLM-L6-v2"})
    scorer = alignscore.build(spec)
    composition = scorer.resolved()
    (lp,) = load_daseg(data)
    features = extract(scorer, composition, [lp], (4, 5, 6), dtype=products_dtype(composition.aligner))
    exact = scores_of(features, Values((-math.inf, -math.inf, math.inf), metric="score", aligner=composition.aligner))
    want = scorer.score(lp.candidates, lp.references)["score"].double()
    assert torch.allclose(exact[0], want, rtol=0, atol=1e-6)
    mixed = scores_of(features, Values((0.5, -0.5, 1.0), idf_power=0.5, metric="score", aligner=composition.aligner))
    engine = alignscore.build(run_spec({"preset": "moverscore-v2", "model": "all-MiniLM-L6-v2", "aggregator": "mix",
                                        "layers": [4, 5, 6], "mix_weights": [0.5, -0.5, 1.0], "idf_power": 0.5}))
    assert torch.allclose(mixed[0], engine.score(lp.candidates, lp.references)["score"].double(), rtol=0, atol=1e-6)
