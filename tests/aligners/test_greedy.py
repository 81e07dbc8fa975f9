"""F-beta for greedy matching: the formula, the metric it adds (P, R, F1 unchanged to the bit),
its settings, the per-token contributions that `alignscore show` draws, and end to end."""

from __future__ import annotations

import math

import pytest
import torch

from alignscore import Scorer
from alignscore.ablation import parse_grid
from alignscore.config import compile_run
from alignscore.aggregators import SingleLayer
from alignscore.aligners import ALIGNERS, Greedy
from alignscore.aligners.greedy import f_beta
from alignscore.encoders import HFEncoder
from alignscore.errors import ConfigError
from alignscore.rescale import Baseline
from fakes import make_batch, unit_rows
from helpers import compose


def random_batch(seed: int = 0, pairs: int = 6):
    """Pairs of random unit vectors with random masses; the last pair has an empty candidate."""
    g = torch.Generator().manual_seed(seed)
    refs, cands, rm, cm = [], [], [], []
    for k in range(pairs):
        n, m = int(torch.randint(1, 7, (1,), generator=g)), int(torch.randint(1, 7, (1,), generator=g))
        m = 0 if k == pairs - 1 else m
        refs.append(unit_rows(torch.randn(n, 5, generator=g)))
        cands.append(unit_rows(torch.randn(m, 5, generator=g)))
        rm.append(torch.rand(n, generator=g) + 0.1)
        cm.append(torch.rand(m, generator=g) + 0.1)
    return make_batch(refs, cands, rm, cm)


def test_f_beta_closed_form_values():
    p, r = torch.tensor([0.5, 1.0, 0.8, 0.0, 0.3]), torch.tensor([1.0, 0.5, 0.8, 0.0, -0.3])
    f2 = f_beta(p, r, 2.0)
    # (1 + 4) P R / (4 P + R): 2.5 / 3, 2.5 / 4.5, P = R gives P; 0 / 0 and 4P + R = 0.9 - 0.3
    expected = [2.5 / 3, 2.5 / 4.5, 0.8, 0.0, 5 * 0.3 * -0.3 / (1.2 - 0.3)]
    assert f2.tolist() == pytest.approx(expected, abs=1e-7)
    assert f_beta(torch.tensor([0.25]), torch.tensor([-1.0]), 2.0).item() == 0.0  # 4P + R = 0: 0, not inf
    # beta -> 0 is precision, beta -> inf is recall
    assert f_beta(p[:3], r[:3], 1e-4).tolist() == pytest.approx(p[:3].tolist(), abs=1e-6)
    assert f_beta(p[:3], r[:3], 1e4).tolist() == pytest.approx(r[:3].tolist(), abs=1e-6)


def test_f_beta_one_is_f1_to_the_bit():
    batch = random_batch(1)
    out = Greedy(beta=1)(batch)
    assert torch.equal(out["fbeta"], out["f1"])  # beta = 1: F1's own operations, in the same order


def test_fbeta_adds_a_metric_and_leaves_p_r_f1_unchanged():
    batch = random_batch(2)
    plain, weighted = Greedy()(batch), Greedy(beta=2.0)(batch)
    assert list(plain) == ["precision", "recall", "f1"] == list(Greedy().metrics)
    assert list(weighted) == ["precision", "recall", "f1", "fbeta"] == list(Greedy(beta=2.0).metrics)
    for m in plain:
        assert torch.equal(plain[m], weighted[m]), m  # the same batch through the same kernels
    for k in range(len(batch.ref)):  # a plain loop over the pair's P and R
        p, r = float(plain["precision"][k]), float(plain["recall"][k])
        expected = 5 * p * r / (4 * p + r) if 4 * p + r != 0 else 0.0
        assert float(weighted["fbeta"][k]) == pytest.approx(expected, abs=1e-6)
    assert float(weighted["fbeta"][-1]) == 0.0  # empty candidate: 0, not NaN
    assert bool(torch.isfinite(weighted["fbeta"]).all())
    assert Greedy(beta=2.0).primary == "f1"


def test_score_variants_equal_scoring_each_alone():
    batch = random_batch(3)
    other = make_batch([batch.ref[k] for k in range(len(batch.ref))], [batch.cand[k] for k in range(len(batch.ref))],
                       [torch.ones_like(m) * (m > 0) for m in batch.ref_mass],
                       [torch.ones_like(m) * (m > 0) for m in batch.cand_mass])
    other.ref, other.cand = batch.ref, batch.cand
    aligner = Greedy(beta=3.0)
    for variant, alone in zip(aligner.score_variants([batch, other]), (aligner(batch), aligner(other))):
        assert list(variant) == list(alone)
        for m in alone:
            assert torch.equal(variant[m], alone[m]), m  # one similarity matrix of the same shape


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, -math.inf, "2", True, None])
def test_bad_beta_is_a_config_error(bad):
    if bad is None:  # None is the default: no fbeta metric
        assert "fbeta" not in Greedy(beta=None).metrics
        return
    with pytest.raises(ConfigError, match="beta"):
        Greedy(beta=bad)


def test_signature_pins_beta_only_when_given():
    assert Greedy().signature() == "greedy(cos)"
    assert Greedy(beta=2).signature() == "greedy(cos,beta=2)" == Greedy(beta=2.0).signature()
    assert Greedy(beta=0.5).signature() == "greedy(cos,beta=0.5)"
    assert Greedy(beta=2.0000001).signature() != Greedy(beta=2).signature()
    assert Greedy(beta=2) == Greedy(beta=2.0) and ALIGNERS.build("greedy", beta=2.0) == Greedy(beta=2)
    with pytest.raises(ConfigError, match="no setting 'n_gram'"):
        ALIGNERS.build("greedy", n_gram=2)


@pytest.mark.parametrize("beta", [1.0, 2.0, 0.5])
def test_contributions_sum_to_fbeta_in_the_harmonic_weights(beta):
    batch = random_batch(4)
    a = Greedy(beta=beta).alignment(batch)
    ref_c, cand_c = a.contributions["fbeta"]
    ref_total, cand_total = ref_c.double().sum(-1), cand_c.double().sum(-1)
    fb = a.scores["fbeta"].double()
    assert torch.allclose(ref_total + cand_total, fb, atol=1e-6, rtol=0)
    # the reference side carries beta^2 / (1 + beta^2) of the score, the candidate side 1 / (1 + beta^2)
    w_r = beta * beta / (1 + beta * beta)
    assert torch.allclose(ref_total, w_r * fb, atol=1e-6, rtol=0)
    assert torch.allclose(cand_total, (1 - w_r) * fb, atol=1e-6, rtol=0)
    # each side's shares are its recall / precision shares scaled by one factor per pair
    r_share, c_share = a.contributions["recall"][0], a.contributions["precision"][1]
    for k in range(len(fb) - 1):
        if float(a.scores["recall"][k]) != 0:
            factor = w_r * fb[k] / a.scores["recall"][k].double()
            assert torch.allclose(ref_c[k].double(), r_share[k].double() * factor, atol=1e-6)
    if beta == 1.0:
        for side in range(2):
            assert torch.equal(a.contributions["fbeta"][side], a.contributions["f1"][side])
    assert float(ref_c[-1].abs().sum() + cand_c[-1].abs().sum()) == 0.0  # empty pair: all 0


def test_alignment_keeps_f1_contributions_and_scores():
    batch = random_batch(5)
    plain, weighted = Greedy().alignment(batch), Greedy(beta=2.0).alignment(batch)
    for m in ("precision", "recall", "f1"):
        assert torch.equal(plain.scores[m], weighted.scores[m])
        for side in range(2):
            assert torch.equal(plain.contributions[m][side], weighted.contributions[m][side])
    assert set(weighted.contributions) == set(weighted.scores) == set(Greedy(beta=2.0).metrics)


def test_scorer_reports_fbeta_and_picks_the_best_reference_by_f1(tiny_bert_dir):
    enc = HFEncoder(tiny_bert_dir)
    cands = ["the cat sat on the mat", "a dog barked loudly at night", ""]
    refs = [["the cat sat", "a cat was sitting on the mat today"], ["dogs bark"], ["nothing"]]
    with pytest.warns(UserWarning, match="empty"):
        plain = compose(encoder=enc, aggregator=SingleLayer(3)).score(cands, refs)
    with pytest.warns(UserWarning, match="empty"):
        weighted = compose(encoder=enc, aggregator=SingleLayer(3), aligner=Greedy(beta=2.0)).score(cands, refs)
    for m in ("precision", "recall", "f1"):
        assert torch.equal(plain[m], weighted[m])
    assert torch.equal(plain.best_reference, weighted.best_reference)
    assert "greedy(cos,beta=2)" in str(weighted.signature)
    assert float(weighted.fbeta[2]) == 0.0
    baseline = Baseline({k: {"precision": 0.5, "recall": 0.5, "f1": 0.5} for k in range(5)})
    rescaled = compose(encoder=enc, aggregator=SingleLayer(3), aligner=Greedy(beta=2.0), baseline=baseline)
    with pytest.raises(ConfigError, match="no value for the output.*fbeta"):
        rescaled.score(cands[:1], refs[:1])


def test_grid_column_may_report_fbeta():
    def grid(aligner: object, metric: str) -> dict:
        return {"models": {"base": {"model": "m"}}, "rows": [{"name": "Vanilla"}],
                "columns": [{"name": "F2", "aligner": aligner, "metric": metric}]}

    def cell(table: dict):
        parsed = parse_grid(table)
        return compile_run(parsed.sources(parsed.rows[0], parsed.columns[0])).composition

    assert cell(grid({"name": "greedy", "beta": 2.0}, "fbeta")).metric == "fbeta"
    with pytest.raises(ConfigError, match="no output 'fbeta'"):
        cell(grid("greedy", "fbeta"))
    with pytest.raises(ConfigError, match="columns\\[0\\].aligner.beta: expected a number >= 1e-06"):
        cell(grid({"name": "greedy", "beta": -1.0}, "fbeta"))
