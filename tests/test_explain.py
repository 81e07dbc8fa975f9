"""Explained alignments: per-token contributions sum to the scores `Scorer.score` reports, on
real sentences (all-MiniLM-L6-v2), and the renderings (text, PNG, SVG, HTML) show the tokens."""

from __future__ import annotations


import pytest
import torch

from alignscore import ALIGNERS, Scorer
from alignscore.aggregators import SingleLayer
from alignscore.encoders import HFEncoder
from alignscore.explain import explain, rescale_contributions, unit_masses
from alignscore.filters import FILTERS
from alignscore.render import html_report, save_figure, text_report
from alignscore.rescale import Baseline
from alignscore.weighting import IdfS
from helpers import PAPER_CAND, PAPER_REF, compose, svg_texts

TOL = 1e-5


@pytest.fixture(scope="module")
def encoder(minilm_encoder) -> HFEncoder:
    return minilm_encoder


@pytest.fixture(scope="module")
def pairs(wmt_data) -> tuple[list[str], list[str]]:
    data = wmt_data["de-en"]
    cands = data["mt-system"][:12] + [PAPER_CAND]
    refs = data["reference"][:12] + [PAPER_REF]
    return cands, refs


def _greedy(encoder, **kw) -> Scorer:
    return compose(encoder=encoder, aggregator=SingleLayer(4), **kw)


def assert_sums_to_scores(expls, scores, metrics):
    """Every pair's contributions sum to its score, and the explained scores are the reported ones."""
    for i, e in enumerate(expls):
        assert len(e.pairs) == 1
        pair = e.pairs[0]
        for m in metrics:
            ref_c, cand_c = pair.contributions[m]
            assert ref_c.shape == pair.ref_mass.shape and cand_c.shape == pair.cand_mass.shape
            total = float(ref_c.double().sum() + cand_c.double().sum())
            assert total == pytest.approx(pair.scores[m], abs=TOL), (i, m)
            assert pair.scores[m] == pytest.approx(float(scores[m][i]), abs=TOL), (i, m)
            assert e.scores[m] == pytest.approx(float(scores[m][i]), abs=TOL), (i, m)


GREEDY_COMPOSITIONS = {
    "vanilla": {},
    "idf-S": {"weighting": IdfS()},
    "idf-S+SEP+rm+drop": {"weighting": IdfS(sep=True), "special_tokens": "drop", "filters": ("rm",)},
    "idf-S+F2": {"weighting": IdfS(), "aligner": ALIGNERS.build("greedy", beta=2.0)},
}


@pytest.mark.parametrize("name", list(GREEDY_COMPOSITIONS))
def test_greedy_contributions_sum_to_reported_scores(encoder, pairs, name):
    kw = dict(GREEDY_COMPOSITIONS[name])
    kw["filters"] = tuple(FILTERS.build(f) for f in kw.get("filters", ()))
    scorer = _greedy(encoder, **kw)
    cands, refs = pairs
    scores = scorer.score(cands, refs)
    expls = explain(scorer, cands, refs, batch_size=5)  # batches differ from score's: no effect
    assert_sums_to_scores(expls, scores, scorer.aligner.metrics)
    for e in expls:
        p = e.pairs[0]
        for mass in (p.ref_mass, p.cand_mass):
            assert float(mass.sum()) == pytest.approx(1.0, abs=1e-6)
            assert bool((mass >= 0).all())
        # P only from candidate tokens, R only from reference tokens
        assert bool((p.contributions["precision"][0] == 0).all())
        assert bool((p.contributions["recall"][1] == 0).all())


def test_greedy_matches_are_the_row_and_column_maxima(encoder, pairs):
    scorer = _greedy(encoder)
    expls = explain(scorer, *pairs)
    for e in expls:
        p = e.pairs[0]
        sim = torch.nan_to_num(p.matrix, nan=float("-inf"))
        recall, precision = p.flows["recall"], p.flows["precision"]
        has_mass_r, has_mass_c = p.ref_mass > 0, p.cand_mass > 0
        # one match per reference token with mass, in the row's best column, carrying w_i * s_i
        assert torch.equal((recall != 0).sum(1), has_mass_r.long())
        rows = has_mass_r.nonzero().flatten()
        assert torch.equal(recall[rows].abs().argmax(1), sim[rows].argmax(1))
        assert torch.allclose(recall.sum(1), p.contributions["recall"][0])
        assert torch.equal((precision != 0).sum(0), has_mass_c.long())
        cols = has_mass_c.nonzero().flatten()
        assert torch.equal(precision[:, cols].abs().argmax(0), sim[:, cols].argmax(0))
        assert float(precision.sum()) == pytest.approx(p.scores["precision"], abs=TOL)


def test_paper_example_tokens_and_matches(encoder):
    e = _greedy(encoder).explain(PAPER_CAND, PAPER_REF)
    p = e.best
    assert p.ref_tokens == ["[CLS]", "people", "like", "foreign", "cars", "[SEP]"]
    assert p.cand_tokens == ["[CLS]", "consumers", "prefer", "imported", "cars", "[SEP]"]
    assert p.kind == "similarity" and p.matrix.shape == (6, 6)
    # special tokens: no mass (match-only policy) but still match targets
    assert p.ref_mass[0] == 0 and p.ref_mass[-1] == 0 and bool(p.ref_matchable.all())
    # the paper's Figure 2 alignment: each word matches its counterpart
    matched = {p.ref_tokens[i]: p.cand_tokens[j] for i, j in (p.flows["recall"] != 0).nonzero().tolist()}
    assert matched == {"people": "consumers", "like": "prefer", "foreign": "imported", "cars": "cars"}


@pytest.mark.slow  # the real model on several references: out of the edit loop's tier, in CI's
def test_multi_reference_explanation_names_the_best_reference(encoder, pairs):
    cands, refs = pairs
    groups = [[r, " ".join(c.split()[: max(1, len(c.split()) // 2)]), "completely unrelated words"]
              for c, r in zip(cands, refs)]
    for how in ("max", "mean"):
        scorer = _greedy(encoder, multi_ref=how)
        scores = scorer.score(cands, groups)
        expls = explain(scorer, cands, groups)
        for i, e in enumerate(expls):
            assert e.references == [t.strip() for t in groups[i]]
            assert e.best_reference == int(scores.best_reference[i])
            f1s = [p.scores["f1"] for p in e.pairs]
            assert e.best_reference == max(range(3), key=f1s.__getitem__)
            assert e.best is e.pairs[e.best_reference]
            for m in ("precision", "recall", "f1"):
                per_ref = [p.scores[m] for p in e.pairs]
                expected = max(per_ref) if how == "max" else sum(per_ref) / 3
                assert e.scores[m] == pytest.approx(expected, abs=TOL)
                assert e.scores[m] == pytest.approx(float(scores[m][i]), abs=TOL)
    assert any(e.best_reference == 1 for e in expls)  # the half-candidate reference wins sometimes


def test_rescaled_contributions_sum_to_rescaled_scores(encoder, pairs):
    baseline = Baseline({k: {"precision": 0.4, "recall": 0.35, "f1": 0.375} for k in range(7)}, name="made-up")
    scorer = _greedy(encoder, baseline=baseline)
    cands, refs = pairs
    scores = scorer.score(cands, refs)
    expls = explain(scorer, cands, refs)
    assert_sums_to_scores(expls, scores, ("precision", "recall", "f1"))
    p = expls[-1].pairs[0]
    assert p.raw_scores["precision"] != pytest.approx(p.scores["precision"])
    # a candidate token's share is w_j (s_j - b) / (1 - b): rescaled similarity times its mass
    best = torch.nan_to_num(p.matrix, nan=float("-inf")).amax(0)
    expected = torch.where(p.cand_mass > 0, p.cand_mass * (best - 0.4) / 0.6, torch.zeros(()))
    assert torch.allclose(p.contributions["precision"][1], expected, atol=1e-6)


def test_rescale_contributions_formula():
    torch.manual_seed(0)
    ref_w, cand_w = torch.rand(3, 5), torch.rand(3, 4)
    ref_w, cand_w = ref_w / ref_w.sum(-1, keepdim=True), cand_w / cand_w.sum(-1, keepdim=True)
    ref_c, cand_c = torch.rand(3, 5) * ref_w, torch.rand(3, 4) * cand_w
    x = ref_c.sum(-1) + cand_c.sum(-1)
    for share in (0.0, 0.5, 1.0):
        r, c = rescale_contributions(ref_c, cand_c, ref_w, cand_w, 0.3, torch.full((3,), share))
        assert torch.allclose(r.sum(-1) + c.sum(-1), (x - 0.3) / 0.7, atol=1e-6)
    r, c = rescale_contributions(ref_c, cand_c, ref_w, cand_w, 0.3, torch.zeros(3))
    assert torch.allclose(r, ref_c / 0.7)  # the reference side takes no offset when share = 0


def test_unit_masses_sum_window_tokens():
    mass = torch.tensor([[0.0, 1.0, 2.0, 1.0, 0.0]])
    units = torch.tensor([[[0, 1, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 0, 0, 0]]], dtype=torch.float)
    assert torch.allclose(unit_masses(mass, units), torch.tensor([[3.0, 3.0, 0.0]]) / 6)
    assert torch.allclose(unit_masses(mass, None), mass / 4)


def test_empty_candidate_explains_to_zero(encoder):
    scorer = _greedy(encoder)
    with pytest.warns(UserWarning, match="empty text"):
        e = scorer.explain("   ", PAPER_REF)
    p = e.best
    assert p.cand_tokens == ["[CLS]", "[SEP]"]
    assert all(v == 0 for v in p.scores.values()) and all(v == 0 for v in e.scores.values())
    for ref_c, cand_c in p.contributions.values():
        assert bool((ref_c == 0).all()) and bool((cand_c == 0).all())
    report = text_report(e)
    assert "[CLS]" in report and "nan" not in report.lower()  # renders the empty side without NaN


# -- optimal transport ---------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", ["wmd", "sinkhorn"])
@pytest.mark.parametrize("n_gram", [None, 2, "sentence"], ids=["1-gram", "2-gram", "smd"])
def test_ot_contributions_sum_to_reported_scores(encoder, pairs, name, n_gram):
    kwargs = {} if n_gram is None else {"n_gram": n_gram}
    scorer = compose(encoder=encoder, aggregator=SingleLayer(4), aligner=ALIGNERS.build(name, **kwargs),
                    special_tokens="drop", weighting=IdfS(sep=True))
    cands, refs = pairs
    scores = scorer.score(cands, refs)
    metrics = scorer.aligner.metrics
    expls = explain(scorer, cands, refs, batch_size=4)
    assert_sums_to_scores(expls, scores, metrics)
    for e in expls:
        p = e.pairs[0]
        assert p.kind == "cost" and "transport" in p.flows
        plan = p.flows["transport"].double()
        assert plan.shape == p.matrix.shape == (len(p.ref_mass), len(p.cand_mass))
        assert bool((plan >= -1e-12).all())
        # the plan moves each side's masses (exactly for wmd; Sinkhorn to its tolerance)
        tol = 1e-6 if name == "wmd" else 1e-3
        assert torch.allclose(plan.sum(1), p.ref_mass.double(), atol=tol)
        assert torch.allclose(plan.sum(0), p.cand_mass.double(), atol=tol)
        # the default score form is 1 - WMD, WMD the plan's total cost (NaN: units without mass)
        assert "1-d" in str(scorer.aligner.signature())
        wmd = float((plan * torch.nan_to_num(p.matrix.double(), nan=0.0)).sum())
        assert 1 - wmd == pytest.approx(p.scores[e.primary], abs=1e-6)
        if n_gram is not None:
            assert p.ref_units is not None and p.ref_units.shape[0] == len(p.ref_mass)
            assert len(p.ref_labels) == len(p.ref_mass)
        if n_gram == "sentence":
            assert p.matrix.shape == (1, 1)
            assert p.ref_labels[0].split()[:2] == [t for t in p.ref_tokens if t not in ("[CLS]", "[SEP]")][:2]


def test_ot_rendering_shows_flows(encoder, tmp_path):
    scorer = compose(encoder=encoder, aggregator=SingleLayer(4), aligner=ALIGNERS.build("wmd"))
    e = scorer.explain(PAPER_CAND, PAPER_REF)
    text = text_report(e)
    assert "cost matrix" in text and "sends mass to" in text
    svg = save_figure(e, tmp_path / "wmd.svg")
    assert {"people", "consumers", "cars"} <= svg_texts(svg)


def test_sinkhorn_marks_only_the_real_flows(encoder):
    """An entropic plan is positive everywhere: the renderings mark flows of at least 1/1000 of
    the largest, here the four word-to-word moves, not every cell."""
    scorer = compose(encoder=encoder, aggregator=SingleLayer(4), aligner=ALIGNERS.build("sinkhorn"))
    e = scorer.explain(PAPER_CAND, PAPER_REF)
    plan = e.best.flows["transport"]
    assert bool((plan[1:-1, 1:-1] > 0).all())  # every word pair gets some flow...
    matrix_rows = text_report(e).split("cost matrix")[1].splitlines()[2:]
    assert sum(row.count("*") for row in matrix_rows) == 4  # ...but four of them carry the mass
    assert html_report(e).count('class="hit"') == 4
