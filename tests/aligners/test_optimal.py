"""Optimal-transport aligners on synthetic batches: exactness, n-gram units, Sinkhorn, the
alignment contract, and properties (hypothesis) that hold for every input."""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np
import ot
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from alignscore.aligners import ALIGNERS, WMD, Greedy, PairBatch, Sinkhorn, greedy_match
from alignscore.aligners.ngrams import ngram_units, pool_ngrams, sliding_sums, window_inner, window_sqnorms
from alignscore._ops import normalise_mass
from alignscore.aligners.transport import exact_plans, network_simplex, pairwise_cost, sinkhorn_plans
from alignscore.aligners.optimal import PAIRS_PER_BLOCK
from alignscore.errors import ConfigError
from fakes import make_batch, unit_rows

DIM = 6


@st.composite
def texts(draw: st.DrawFn, min_len: int = 0, max_len: int = 7) -> tuple[torch.Tensor, torch.Tensor]:
    """A text: unit vectors (from a few distinct directions, so ties happen) and masses, some 0."""
    n = draw(st.integers(min_len, max_len))
    seeds = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    gen = torch.Generator().manual_seed(7)
    basis = unit_rows(torch.randn(6, DIM, generator=gen))
    noise = draw(st.lists(st.floats(-0.3, 0.3), min_size=n * DIM, max_size=n * DIM))
    vec = basis[seeds] + torch.tensor(noise, dtype=torch.float32).reshape(n, DIM) if n else torch.zeros(0, DIM)
    mass = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.7]), min_size=n, max_size=n))
    return unit_rows(vec), torch.tensor(mass, dtype=torch.float32)


# -- exactness ---------------------------------------------------------------------------------
def square_union_wmd(x: np.ndarray, y: np.ndarray, a: np.ndarray, b: np.ndarray, squared: bool) -> float:
    """MoverScore's construction: one square problem over [ref units; cand units], the
    reference masses on the first block, the candidate masses on the second."""
    z = np.concatenate([x, y]).astype(np.float64)
    d = ((z[:, None, :] - z[None, :, :]) ** 2).sum(-1)
    d = d if squared else np.sqrt(d)
    c1 = np.concatenate([a, np.zeros(len(y))]) / a.sum()
    c2 = np.concatenate([np.zeros(len(x)), b]) / b.sum()
    return float(ot.emd2(c1, c2, d))


@pytest.mark.parametrize("cost", ["euclidean", "sqeuclidean"])
def test_exact_wmd_equals_the_square_union_problem(cost: str) -> None:
    gen = torch.Generator().manual_seed(1)
    refs = [unit_rows(torch.randn(n, DIM, generator=gen)) for n in (5, 3, 8)]
    cands = [unit_rows(torch.randn(n, DIM, generator=gen)) for n in (4, 6, 2)]
    rmass = [torch.rand(r.shape[0], generator=gen) + 0.1 for r in refs]
    cmass = [torch.rand(c.shape[0], generator=gen) + 0.1 for c in cands]
    rmass[0][1] = 0.0  # a filtered token
    got = WMD(cost=cost)(make_batch(refs, cands, rmass, cmass))["score"]
    for k in range(3):
        keep_r, keep_c = rmass[k] > 0, cmass[k] > 0
        want = 1 - square_union_wmd(refs[k][keep_r].numpy(), cands[k][keep_c].numpy(),
                                    rmass[k][keep_r].double().numpy(), cmass[k][keep_c].double().numpy(),
                                    squared=cost == "sqeuclidean")
        assert got[k].item() == pytest.approx(want, abs=1e-9)  # both exact LPs in float64


def test_score_forms_and_signature() -> None:
    gen = torch.Generator().manual_seed(2)
    batch = make_batch([unit_rows(torch.randn(4, DIM, generator=gen))],
                       [unit_rows(torch.randn(3, DIM, generator=gen))], [torch.ones(4)], [torch.ones(3)])
    one_minus = WMD(score_form="1-d")(batch)["score"]
    inverse = WMD(score_form="1/(1+d)")(batch)["score"]
    wmd = 1 - one_minus
    assert inverse.item() == pytest.approx(1 / (1 + wmd.item()), abs=1e-12)
    assert "1-d" in WMD().signature() and "euclidean" in WMD().signature()
    assert "1/(1+d)" in WMD(score_form="1/(1+d)").signature() and "sqeuclidean" in WMD(cost="sqeuclidean").signature()
    assert "reg=0.05" in Sinkhorn(reg=0.05).signature()


def test_bad_configurations_are_config_errors() -> None:
    for bad in (dict(cost="cosine"), dict(score_form="exp(-d)"), dict(n_gram=0), dict(n_gram="2"), dict(n_gram=True)):
        with pytest.raises(ConfigError):
            WMD(**bad)
    with pytest.raises(ConfigError):
        Sinkhorn(reg=0.0)
    with pytest.raises(ConfigError, match="no setting 'n_gram'"):
        ALIGNERS.build("greedy", n_gram=2)
    assert {"greedy", "wmd", "sinkhorn"} <= set(ALIGNERS.names())
    assert ALIGNERS.build("wmd", n_gram="sentence").n_gram == "sentence"


# -- n-gram units --------------------------------------------------------------------------------
def test_ngram_windows_slide_over_members_only() -> None:
    members = torch.tensor([[True, False, True, True, True], [True, True, False, False, False],
                            [False] * 5])
    u = ngram_units(members, 2)
    assert u.shape == (3, 4, 5)
    assert u[0].tolist()[:3] == [[1, 0, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 0, 1, 1]]
    assert u[0, 3].sum() == 0
    assert u[1].tolist()[0] == [1, 1, 0, 0, 0] and u[1, 1:].sum() == 0  # m = n: one window
    assert u[2].sum() == 0  # no members, no window
    short = ngram_units(torch.tensor([[True, True, False]]), 5)  # shorter than n: one window
    assert short.tolist() == [[[1, 1, 0]]]
    sentence = ngram_units(members, "sentence")
    assert sentence.shape[1] == 1 and torch.equal(sentence[:, 0], members.float())


def test_sentence_level_is_the_distance_between_mean_vectors() -> None:
    """SMD: one unit per text, so WMD is the cost between the two mass-weighted mean vectors."""
    gen = torch.Generator().manual_seed(3)
    x, y = unit_rows(torch.randn(5, DIM, generator=gen)), unit_rows(torch.randn(4, DIM, generator=gen))
    mx, my = torch.rand(5, generator=gen) + 0.1, torch.rand(4, generator=gen) + 0.1
    got = WMD(n_gram="sentence")(make_batch([x], [y], [mx], [my]))["score"].item()
    u = unit_rows((mx[:, None] * x).sum(0).double())
    v = unit_rows((my[:, None] * y).sum(0).double())
    assert got == pytest.approx(1 - (u - v).norm().item(), abs=1e-6)


def test_pool_ngrams_weights_by_mass() -> None:
    x = torch.eye(3)[None]  # three orthogonal unit vectors
    mass = torch.tensor([[1.0, 3.0, 0.0]])
    vec, m = pool_ngrams(x, mass, torch.tensor([[True, True, True]]), 2)
    assert m.tolist() == [[4.0, 3.0]]
    assert torch.allclose(vec[0, 0], unit_rows(torch.tensor([1.0, 3.0, 0.0])))
    assert torch.allclose(vec[0, 1], torch.tensor([0.0, 1.0, 0.0]))  # the massless token adds nothing


@pytest.mark.parametrize("n_gram", [1, 2, 3, 7, "sentence"])
def test_pool_ngrams_equals_the_dense_window_formula(n_gram) -> None:
    """Pooling by shifted slices = ``U diag(m) X`` with the dense windows U of ``ngram_units``."""
    gen = torch.Generator().manual_seed(5)
    x = unit_rows(torch.randn(4, 9, DIM, generator=gen))
    mass = torch.rand(4, 9, generator=gen) * (torch.rand(4, 9, generator=gen) > 0.2)
    members = torch.rand(4, 9, generator=gen) > 0.3
    members[2] = False  # a text with no members
    members[3, 4:] = False  # padding-like tail
    vec, m = pool_ngrams(x, mass, members, n_gram)
    u = ngram_units(members, n_gram)
    want = torch.bmm(u * mass.unsqueeze(1), x)
    assert torch.allclose(m, (u * mass.unsqueeze(1)).sum(-1), atol=1e-6)
    assert torch.allclose(vec, want / want.norm(dim=-1, keepdim=True).clamp_min(1e-12), atol=1e-6)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 9])
def test_window_sums_equal_explicitly_pooled_windows(k: int) -> None:
    """The exact aligner's n-gram costs come from window sums of inner products; they equal the
    norms and inner products of the windows pooled explicitly (k > 4: cumulative sums)."""
    rng = np.random.default_rng(k)
    x, y = rng.standard_normal((9, DIM)), rng.standard_normal((11, DIM))
    wr, wc = rng.random((3, 9)) * (rng.random((3, 9)) > 0.2), rng.random((3, 11))

    def pooled(v: np.ndarray, w: np.ndarray) -> np.ndarray:  # [V, W, D]
        return np.stack([[(w[i, s:s + k, None] * v[s:s + k]).sum(0) for s in range(len(v) - k + 1)]
                         for i in range(len(w))])

    p, q = pooled(x, wr), pooled(y, wc)
    bands = [(x[:len(x) - d] * x[d:]).sum(-1) for d in range(k)]
    np.testing.assert_allclose(window_sqnorms(bands, wr, k), (p * p).sum(-1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(window_inner(x @ y.T, wr, wc, k, k), np.einsum("vsd,vtd->vst", p, q),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sliding_sums(wr, k), np.stack([wr[:, s:s + k].sum(1) for s in range(10 - k)], 1),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n_gram", [1, 2, 3, "sentence"])
@pytest.mark.parametrize("cost", ["euclidean", "sqeuclidean"])
def test_wmd_pair_by_pair_equals_the_padded_plans(n_gram, cost) -> None:
    """``WMD.__call__`` (NumPy, blocks of pairs; n-gram costs from window sums of inner products) =
    the padded batch path of ``alignment`` (torch pooling, :func:`pairwise_cost`,
    :func:`exact_plans`), members with zero mass included."""
    gen = torch.Generator().manual_seed(6)
    lengths = [(7, 5), (1, 9), (4, 4), (0, 3), (12, 2)]
    refs = [unit_rows(torch.randn(n, DIM, generator=gen)) for n, _ in lengths]
    cands = [unit_rows(torch.randn(m, DIM, generator=gen)) for _, m in lengths]
    mr = [torch.rand(n, generator=gen) * (torch.rand(n, generator=gen) > 0.25) for n, _ in lengths]
    mc = [torch.rand(m, generator=gen) * (torch.rand(m, generator=gen) > 0.25) for _, m in lengths]
    match_r = [torch.rand(n, generator=gen) > 0.1 for n, _ in lengths]
    match_c = [torch.rand(m, generator=gen) > 0.1 for _, m in lengths]
    batch = make_batch(refs, cands, mr, mc, match_r, match_c)
    aligner = WMD(n_gram=n_gram, cost=cost)
    got = aligner(batch)["score"]
    want = aligner.alignment(batch).scores["score"]
    assert got.dtype == torch.float64 and got[3] == 0  # an empty side scores 0
    assert torch.allclose(got, want, atol=1e-6), (got, want)


def test_network_simplex_entry_point_equals_pot_emd2() -> None:
    """The solver WMD calls (POT's C entry point when this POT has the expected one) gives
    ``ot.emd2``'s optimal value, zero masses and masses of unequal rounding included."""
    solve = network_simplex()
    rng = np.random.default_rng(3)
    for _ in range(50):
        n, m = rng.integers(1, 40, size=2)
        a, b = rng.random(n) + 1e-3, rng.random(m) + 1e-3
        a[rng.random(n) < 0.2], b[rng.random(m) < 0.2] = 0.0, 0.0  # units without mass take no part
        a[0], b[-1] = 1.0, 1.0
        a, b = a / a.sum(), b / b.sum() * (1 + 1e-15)
        c = rng.random((n, m)) * 2
        assert solve(a, b, c) == pytest.approx(ot.emd2(a, b, c, numItermax=10**7), abs=1e-12)


def test_network_simplex_plans_equal_pot_emd() -> None:
    """The plan solver (exact plans, BaryScore's barycenters) gives ``ot.emd``'s plan."""
    solve = network_simplex(plans=True)
    rng = np.random.default_rng(4)
    for _ in range(30):
        n, m = rng.integers(1, 30, size=2)
        a, b = rng.random(n) + 1e-3, rng.random(m) + 1e-3
        a[rng.random(n) < 0.2] = 0.0
        a[0] = 1.0
        a, b = a / a.sum(), b / b.sum()
        c = rng.random((n, m))
        np.testing.assert_allclose(solve(a, b, c), ot.emd(a, b, c, numItermax=10**7), rtol=0, atol=1e-15)


def test_network_simplex_falls_back_to_emd2_without_the_c_entry_point(monkeypatch) -> None:
    """A POT without ``ot.lp.emd_wrap.emd_c`` (another version) gets ``ot.emd2``, same values."""
    monkeypatch.setitem(sys.modules, "ot.lp.emd_wrap", None)  # importing it now fails
    solve = network_simplex.__wrapped__()
    assert solve.__name__ == "public"
    a, b, c = np.array([0.25, 0.75, 0.0]), np.array([0.5, 0.5]), np.array([[0.0, 1.0], [2.0, 0.5], [9.0, 9.0]])
    assert solve(a, b, c) == pytest.approx(0.75, abs=1e-12)
    plans = network_simplex.__wrapped__(plans=True)
    assert plans.__name__ == "public"
    np.testing.assert_allclose(plans(a, b, c), [[0.25, 0.0], [0.25, 0.5], [0.0, 0.0]], atol=1e-15)


VARIANT_ALIGNERS = [WMD(), WMD(cost="sqeuclidean", n_gram=2), WMD(n_gram="sentence"), Greedy()]


def variant_batches(seed: int) -> list[PairBatch]:
    """Batches over the same vectors with other masses and members: uniform, then three with
    random masses and some tokens filtered out (no mass, not matchable)."""
    gen = torch.Generator().manual_seed(seed)
    lengths = [(7, 5), (1, 9), (4, 4), (0, 3), (12, 2), (6, 8)]
    refs = [unit_rows(torch.randn(n, DIM, generator=gen)) for n, _ in lengths]
    cands = [unit_rows(torch.randn(m, DIM, generator=gen)) for _, m in lengths]
    base = make_batch(refs, cands, [torch.ones(n) for n, _ in lengths], [torch.ones(m) for _, m in lengths])
    batches = [base]
    for _ in range(3):
        keep_r = torch.rand(base.ref_mass.shape, generator=gen) > 0.3
        keep_c = torch.rand(base.cand_mass.shape, generator=gen) > 0.3
        batches.append(replace(base, ref_mass=torch.rand(base.ref_mass.shape, generator=gen) * keep_r * base.ref_match,
                               cand_mass=torch.rand(base.cand_mass.shape, generator=gen) * keep_c * base.cand_match,
                               ref_match=base.ref_match & keep_r, cand_match=base.cand_match & keep_c))
    return batches


@pytest.mark.parametrize("cls", [WMD, Greedy], ids=lambda c: c.__name__)
def test_aligners_of_a_class_scored_together_equal_each_alone(cls) -> None:
    """``score_together`` (the engine's call for all aligners of one class over a batch: WMD on
    tokens and n-grams share one Gram matrix, token-level costs their squared distances) gives
    each aligner exactly its own scores."""
    batches = variant_batches(13)
    extra = [WMD(n_gram=3, score_form="1/(1+d)"), WMD(cost="sqeuclidean")] if cls is WMD else [Greedy()]
    aligners = [a for a in VARIANT_ALIGNERS if type(a) is cls] + extra
    jobs = [(a, batches[i % 2:]) for i, a in enumerate(aligners)]
    together = cls.score_together(jobs)
    assert len(together) == len(jobs)
    for (aligner, job_batches), got in zip(jobs, together):
        for batch, scores in zip(job_batches, got, strict=True):
            alone = aligner(batch)
            # bit for bit: sharing reuses the same block's matrices (same shapes, same kernels)
            assert all(torch.equal(scores[name], alone[name]) for name in alone), aligner.signature()


# -- Sinkhorn --------------------------------------------------------------------------------------
def test_sinkhorn_approaches_exact_as_reg_shrinks() -> None:
    gen = torch.Generator().manual_seed(4)
    refs = [unit_rows(torch.randn(n, DIM, generator=gen)) for n in (6, 9, 3, 7)]
    cands = [unit_rows(torch.randn(n, DIM, generator=gen)) for n in (5, 4, 8, 7)]
    ones = [torch.rand(t.shape[0], generator=gen) + 0.2 for t in refs]
    ones_c = [torch.rand(t.shape[0], generator=gen) + 0.2 for t in cands]
    batch = make_batch(refs, cands, ones, ones_c)
    exact = WMD()(batch)["score"]
    errs = [(Sinkhorn(reg=r)(batch)["score"] - exact).abs().max().item() for r in (0.1, 0.02, 0.005)]
    assert errs[0] > errs[1] > errs[2]
    assert errs[2] < 5e-3
    # the entropic plan is feasible, so its cost is never below the exact optimum (score never above)
    assert (Sinkhorn(reg=0.05)(batch)["score"] <= exact + 1e-7).all()


def test_sinkhorn_does_not_depend_on_the_rest_of_the_batch() -> None:
    gen = torch.Generator().manual_seed(5)
    refs = [unit_rows(torch.randn(n, DIM, generator=gen)) for n in (6, 2, 9)]
    cands = [unit_rows(torch.randn(n, DIM, generator=gen)) for n in (3, 8, 4)]
    rm = [torch.rand(t.shape[0], generator=gen) + 0.1 for t in refs]
    cm = [torch.rand(t.shape[0], generator=gen) + 0.1 for t in cands]
    aligner = Sinkhorn(reg=0.02)
    together = aligner(make_batch(refs, cands, rm, cm))["score"]
    alone = torch.cat([aligner(make_batch([refs[k]], [cands[k]], [rm[k]], [cm[k]]))["score"] for k in range(3)])
    assert torch.allclose(together, alone, atol=1e-12, rtol=0)


@pytest.mark.cuda
def test_sinkhorn_on_gpu_matches_cpu() -> None:
    gen = torch.Generator().manual_seed(6)
    batch = make_batch([unit_rows(torch.randn(7, DIM, generator=gen))], [unit_rows(torch.randn(5, DIM, generator=gen))],
                       [torch.ones(7)], [torch.ones(5)])
    gpu = PairBatch(*(getattr(batch, f).cuda() for f in ("ref", "cand", "ref_mass", "cand_mass", "ref_match",
                                                         "cand_match")))
    out = Sinkhorn()(gpu)["score"]
    assert out.device.type == "cuda"
    assert torch.allclose(out.cpu(), Sinkhorn()(batch)["score"], atol=1e-9)


# -- alignment contract ----------------------------------------------------------------------------
@pytest.mark.parametrize("aligner", [WMD(), WMD(score_form="1/(1+d)"), WMD(cost="sqeuclidean", n_gram=2),
                                     WMD(n_gram="sentence"), Sinkhorn(reg=0.05), Sinkhorn(n_gram=3)])
def test_alignment_contributions_sum_to_the_score(aligner) -> None:
    gen = torch.Generator().manual_seed(8)
    refs = [unit_rows(torch.randn(n, DIM, generator=gen)) for n in (6, 4, 3)]
    cands = [unit_rows(torch.randn(n, DIM, generator=gen)) for n in (5, 7, 2)]
    rm = [torch.rand(t.shape[0], generator=gen) + 0.1 for t in refs]
    cm = [torch.rand(t.shape[0], generator=gen) + 0.1 for t in cands]
    rm[1][2] = 0.0
    cm[2] = torch.zeros(2)  # an empty side
    batch = make_batch(refs, cands, rm, cm)
    al = aligner.alignment(batch)
    assert al.kind == "cost" and set(al.flows) == {"transport"} and set(al.contributions) == {"score"}
    ref_share, cand_share = al.contributions["score"]
    assert torch.allclose(ref_share.sum(-1) + cand_share.sum(-1), al.scores["score"], atol=1e-12)
    assert torch.allclose(al.scores["score"], aligner(batch)["score"], atol=1e-12)  # wmd scores off the padded path
    plan = al.flows["transport"]
    assert plan.shape == al.matrix.shape == (3, ref_share.shape[1], cand_share.shape[1])
    assert al.scores["score"][2] == 0 and plan[2].sum() == 0 and ref_share[2].abs().sum() == 0
    if aligner.n_gram == 1:
        assert al.ref_units is None and torch.isnan(al.matrix[1, 2]).all()  # the massless token
    else:
        assert al.ref_units.shape[0] == 3 and al.ref_units.shape[2] == batch.ref.shape[1]


# -- properties (hypothesis) ------------------------------------------------------------------------
PROPS = settings(max_examples=40, deadline=None)


def _problem(r, c) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The euclidean cost of a drawn reference and candidate, and their normalised masses."""
    (x, mx), (y, my) = r, c
    batch = make_batch([x], [y], [mx], [my])
    a, b = normalise_mass(batch.ref_mass.double()), normalise_mass(batch.cand_mass.double())
    return pairwise_cost(batch.ref, batch.cand, "euclidean"), a, b


@PROPS
@given(texts(1), texts(1))
def test_exact_plans_keep_both_marginals(r, c) -> None:
    cost, a, b = _problem(r, c)
    plan = exact_plans(cost, a, b)
    if a.sum() > 0 and b.sum() > 0:
        assert torch.allclose(plan.sum(2), a, atol=1e-12) and torch.allclose(plan.sum(1), b, atol=1e-12)
        assert (plan >= 0).all()
    else:
        assert plan.sum() == 0


@pytest.mark.slow  # Sinkhorn to 1e-9 on 40 drawn problems: CI's tier
@PROPS
@given(texts(1), texts(1))
def test_sinkhorn_plans_keep_both_marginals(r, c) -> None:
    cost, a, b = _problem(r, c)
    plan, iters, _, _ = sinkhorn_plans(cost, a, b, reg=0.05, tol=1e-9, max_iter=5000)
    if a.sum() > 0 and b.sum() > 0:
        assert torch.allclose(plan.sum(1), b, atol=1e-12)  # exact after each column update
        row_err = (plan.sum(2) - a).abs().sum()
        assert row_err < (1e-9 if iters < 5000 else 1e-4)  # the stopping tolerance once converged
    else:
        assert plan.sum() == 0


@PROPS
@given(texts(1), texts(1), st.sampled_from([WMD(), WMD(score_form="1/(1+d)"), WMD(n_gram=2), WMD(n_gram="sentence"),
                                           WMD(cost="sqeuclidean", n_gram=3)]))
def test_a_text_against_itself_gets_the_best_score(r, other, aligner) -> None:
    """Exact OT only: the entropic plan spreads mass, so Sinkhorn's self-score is just below 1."""
    (x, mx), (y, my) = r, other
    if mx.sum() == 0:
        mx = torch.ones_like(mx)
    own = aligner(make_batch([x], [x], [mx], [mx]))["score"].item()
    assert own == pytest.approx(1.0, abs=1e-6)  # zero cost: the best either score form gives
    assert aligner(make_batch([x], [y], [mx], [my]))["score"].item() <= own + 1e-6


@PROPS
@given(texts(1), texts(1))
def test_greedy_precision_is_recall_swapped(r, c) -> None:
    (x, mx), (y, my) = r, c
    fwd = make_batch([x], [y], [mx], [my])
    p, r_, f, _ = greedy_match(fwd.ref, fwd.cand, fwd.ref_mass, fwd.cand_mass, fwd.ref_match, fwd.cand_match)
    p2, r2, f2, _ = greedy_match(fwd.cand, fwd.ref, fwd.cand_mass, fwd.ref_mass, fwd.cand_match, fwd.ref_match)
    assert torch.allclose(p, r2, atol=1e-6) and torch.allclose(r_, p2, atol=1e-6) and torch.allclose(f, f2, atol=1e-6)


@PROPS
@given(texts(0), texts(0), texts(0, 4), st.integers(0, 7), st.booleans(),
       st.sampled_from([WMD(), WMD(n_gram=2), WMD(n_gram="sentence"), Sinkhorn(reg=0.05), Greedy()]))
def test_tokens_that_take_no_part_never_change_a_score(r, c, extra, at, on_ref, aligner) -> None:
    """Insert massless, unmatchable tokens (filtered out) anywhere in either text."""
    (x, mx), (y, my), (z, _) = r, c, extra
    target_x, target_m = (x, mx) if on_ref else (y, my)
    k = min(at, target_x.shape[0])
    bigger_x = torch.cat([target_x[:k], z, target_x[k:]])
    bigger_m = torch.cat([target_m[:k], torch.zeros(z.shape[0]), target_m[k:]])
    base = aligner(make_batch([x], [y], [mx], [my]))
    if on_ref:
        other = aligner(make_batch([bigger_x], [y], [bigger_m], [my]))
    else:
        other = aligner(make_batch([x], [bigger_x], [mx], [bigger_m]))
    for name in base:
        assert torch.allclose(base[name].double(), other[name].double(), atol=1e-7), name


@PROPS
@given(texts(1), texts(1), st.integers(1, 3))
def test_zero_mass_tokens_that_may_match_do_not_change_token_level_ot(r, c, n_extra) -> None:
    """Under the ``match-only`` policy special tokens are matchable with mass 0: no flow reaches them."""
    (x, mx), (y, my) = r, c
    gen = torch.Generator().manual_seed(n_extra)
    z = unit_rows(torch.randn(n_extra, DIM, generator=gen))
    base = WMD()(make_batch([x], [y], [mx], [my]))["score"]
    xm = torch.cat([x, z])
    mm = torch.cat([mx, torch.zeros(n_extra)])
    other = WMD()(make_batch([xm], [y], [mm], [my], [torch.cat([mx > 0, torch.ones(n_extra, dtype=torch.bool)])]))
    assert torch.allclose(base, other["score"], atol=1e-9)


@PROPS
@given(st.lists(st.tuples(texts(0, 5), texts(0, 5)), min_size=1, max_size=4),
       st.sampled_from([WMD(), WMD(score_form="1/(1+d)", cost="sqeuclidean"), WMD(n_gram=3), WMD(n_gram="sentence"),
                        Sinkhorn(reg=0.01), Sinkhorn(n_gram=2, sinkhorn_dtype="float32"), Greedy()]))
def test_scores_are_finite_for_every_input(pairs, aligner) -> None:
    """Empty texts, one-token texts, all-massless texts and ties, batched together."""
    batch = make_batch([p[0][0] for p in pairs], [p[1][0] for p in pairs],
                       [p[0][1] for p in pairs], [p[1][1] for p in pairs])
    out = aligner(batch)
    for name, v in out.items():
        assert v.shape == (len(pairs),) and torch.isfinite(v).all(), name
        empty = (batch.ref_mass.sum(-1) == 0) | (batch.cand_mass.sum(-1) == 0)
        assert (v[empty] == 0).all()
    if not isinstance(aligner, Greedy):
        al = aligner.alignment(batch)
        assert all(torch.isfinite(t).all() for t in al.contributions["score"])
        assert torch.isfinite(al.flows["transport"]).all()


@pytest.mark.parametrize("aligner", VARIANT_ALIGNERS[:3], ids=lambda a: a.signature())
def test_exact_wmd_of_a_pair_does_not_depend_on_its_block(aligner) -> None:
    """The exact aligner costs blocks of pairs at once (padded to the block's longest text):
    each pair's score is the one it gets alone, to float64 rounding, whatever its neighbours. Every
    third pair has mass on all its tokens (alone, its n-gram members are its first tokens: the
    corner of the Gram matrix, not a gather)."""
    gen = torch.Generator().manual_seed(12)
    lengths = [(int(n), int(m)) for n, m in torch.randint(0, 40, (2 * PAIRS_PER_BLOCK + 5, 2), generator=gen)]
    refs = [unit_rows(torch.randn(n, DIM, generator=gen)) for n, _ in lengths]
    cands = [unit_rows(torch.randn(m, DIM, generator=gen)) for _, m in lengths]
    mr = [torch.rand(n, generator=gen) * (torch.rand(n, generator=gen) > 0.2 * (i % 3 > 0))
          for i, (n, _) in enumerate(lengths)]
    mc = [torch.rand(m, generator=gen) * (torch.rand(m, generator=gen) > 0.2 * (i % 3 > 0))
          for i, (_, m) in enumerate(lengths)]
    match_r, match_c = [w > 0 for w in mr], [w > 0 for w in mc]
    together = aligner(make_batch(refs, cands, mr, mc, match_r, match_c))["score"]
    for i in range(len(lengths)):
        alone = aligner(make_batch(refs[i:i + 1], cands[i:i + 1], mr[i:i + 1], mc[i:i + 1],
                                   match_r[i:i + 1], match_c[i:i + 1]))["score"]
        # a padded block's Gram matrix may take another BLAS kernel than the pair's alone (shape,
        # AVX2 vs AVX-512): a few float64 ulps, never more
        assert together[i].item() == pytest.approx(alone.item(), rel=1e-12, abs=1e-14), (i, lengths[i])
    assert (together != 0).sum() > len(lengths) // 2  # most pairs have both sides
