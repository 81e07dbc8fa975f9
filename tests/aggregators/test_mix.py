"""The continuous settings a fit learns, each an ordinary setting: the layer mix, the soft greedy
match, the idf exponent (and F-beta); their limits, their gradients, every way in."""

from __future__ import annotations

import math

import pytest
import torch

import alignscore
from alignscore import LayerMix, run_spec
from alignscore.aggregators.mix import ONE_HOT, mix_layers
from alignscore.aligners.greedy import f_beta, match_similarities, soft_max
from alignscore.errors import ConfigError
from alignscore.weighting.schemes import idf_power
from cli_checks import assert_same_run_every_way_in

CANDS = ["the cat sat on the mat", "a dog ran in the park", "hello there, world", "no"]
REFS = ["a cat sat on a mat", "the dog was running in a park", "hello world", "yes indeed"]


@pytest.mark.parametrize("weights", [(-math.inf, math.inf, -math.inf), (0.0, ONE_HOT, 0.0), (0.0, math.inf, 3.0)])
def test_one_hot_mix_is_exactly_the_single_layer(tiny_bert_dir, weights) -> None:
    single = alignscore.score(CANDS, REFS, model=tiny_bert_dir, layer=2)
    mixed = alignscore.score(CANDS, REFS, model=tiny_bert_dir, aggregator="mix", layers=[1, 2, 3], mix_weights=weights)
    for metric in ("precision", "recall", "f1"):
        assert torch.equal(single[metric], mixed[metric]), metric


def test_mix_of_equal_weights_is_the_mean_and_differs_from_one_layer(tiny_bert_dir) -> None:
    states = torch.randn(3, 2, 4, 5)
    assert torch.allclose(mix_layers(states, torch.zeros(3)), states.mean(0), atol=1e-6)
    one = alignscore.score(CANDS, REFS, model=tiny_bert_dir, layer=2)["f1"]
    even = alignscore.score(CANDS, REFS, model=tiny_bert_dir, aggregator="mix", layers=[1, 2, 3])["f1"]
    assert not torch.allclose(one, even)


def test_mix_weights_every_way_in_and_in_the_signature(tiny_bert_dir, tmp_path) -> None:
    opts = {"model": tiny_bert_dir, "aggregator": "mix", "layers": [1, 3], "mix_weights": [0.25, -1.5]}
    spec = assert_same_run_every_way_in(opts, tmp_path)[0]["keyword"]
    sig = str(alignscore.build(spec).signature())
    other = str(alignscore.build(run_spec({**opts, "mix_weights": [0.25, -1.0]})).signature())
    assert "mix(L1,3;w=" in sig and sig != other


@pytest.mark.parametrize("opts, message", [
    ({"aggregator": "mix", "layers": [1, 2], "mix_weights": [0.0]}, "mix_weights=: 1 weight.*2 layer"),
    ({"aggregator": "mix", "layers": [1], "mix_weights": [-math.inf]}, "mix_weights=: every weight is -inf"),
    ({"aggregator": "mix", "mix_weights": [math.nan] * 5}, "mix_weights="),
    ({"aggregator": "single", "mix_weights": [0.0]}, "mix_weights=: applies to aggregator mix"),
    ({"temperature": -0.1}, "temperature=: expected a number >= 0"),
    ({"weighting": "idf-S", "idf_power": -1.0}, "idf_power=: expected a number >= 0"),
    ({"weighting": "none", "idf_power": 2.0}, "idf_power=: applies to weighting idf"),
])
def test_bad_values_are_one_clear_error(opts, message) -> None:
    with pytest.raises(ConfigError, match=message):
        run_spec({"model": "m", **opts})


def test_soft_greedy_tends_to_greedy_and_zero_is_exact(tiny_bert_dir) -> None:
    exact = alignscore.score(CANDS, REFS, model=tiny_bert_dir, layer=2)
    zero = alignscore.score(CANDS, REFS, model=tiny_bert_dir, layer=2, temperature=0.0)
    assert torch.equal(exact["f1"], zero["f1"])
    gaps = []
    for t in (0.1, 0.01, 1e-4):
        soft = alignscore.score(CANDS, REFS, model=tiny_bert_dir, layer=2, temperature=t)
        assert (soft["precision"] >= exact["precision"] - 1e-6).all()  # the soft maximum is never below it
        gaps.append(float((soft["f1"] - exact["f1"]).abs().max()))
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 1e-3


def test_soft_max_is_bounded_by_t_log_n_and_never_nan() -> None:
    sim = torch.tensor([[0.1, 0.5, 0.3, float("-inf")], [float("-inf")] * 4])
    t = torch.tensor(0.2, requires_grad=True)
    out = soft_max(sim, 1, t)
    assert 0.5 <= out[0].item() <= 0.5 + 0.2 * math.log(3) + 1e-6 and out[1].item() == -math.inf
    out[0].backward()
    assert torch.isfinite(t.grad)


def test_idf_power_one_is_idf_and_changes_the_scores(tiny_bert_dir) -> None:
    base = alignscore.score(CANDS, REFS, model=tiny_bert_dir, layer=2, weighting="idf-S")
    one = alignscore.score(CANDS, REFS, model=tiny_bert_dir, layer=2, weighting="idf-S", idf_power=1.0)
    two = alignscore.score(CANDS, REFS, model=tiny_bert_dir, layer=2, weighting="idf-S", idf_power=2.0)
    assert torch.equal(base["f1"], one["f1"]) and not torch.allclose(base["f1"], two["f1"])
    idf = torch.tensor([0.0, 0.5, 1.5])
    assert idf_power(idf, 0.0).tolist() == [0.0, 1.0, 1.0]


def test_gradients_match_finite_differences() -> None:
    torch.manual_seed(0)
    states = torch.randn(3, 2, 4, dtype=torch.float64, requires_grad=True)
    logits = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(mix_layers, (states, logits))

    sim = torch.rand(2, 3, 4, dtype=torch.float64, requires_grad=True)
    ref_mass = torch.rand(2, 4, dtype=torch.float64, requires_grad=True)
    cand_mass = torch.rand(2, 3, dtype=torch.float64, requires_grad=True)
    ref_ok = torch.tensor([[True, True, True, False], [True, True, False, False]])
    cand_ok = torch.tensor([[True, True, True], [True, True, False]])
    temperature = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)
    beta = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)

    def soft_f(sim, ref_mass, cand_mass, temperature, beta):  # noqa: ANN001, ANN202
        p, r, _, _ = match_similarities(sim, ref_mass * ref_ok, cand_mass * cand_ok, ref_ok, cand_ok, temperature)
        return f_beta(p, r, beta)

    assert torch.autograd.gradcheck(soft_f, (sim, ref_mass, cand_mass, temperature, beta))
    idf = torch.tensor([0.0, 0.3, 1.2, 2.5], dtype=torch.float64)
    power = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: idf_power(idf, a), (power,))
