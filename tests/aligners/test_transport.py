"""The WMD aligner's flow dropout (XMoverScore): off by default (the scores of before, bit for
bit), the reference code's rule when on (ties kept), and every way in takes it by one name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import ot
import pytest
import torch

import alignscore
from alignscore.ablation import parse_grid
from alignscore.aligners import WMD
from alignscore.config import compile_run
from alignscore.tune.space import parse_space
from alignscore.aligners.transport import drop_flows, network_simplex, pairwise_cost
from alignscore.errors import ConfigError
from cli_checks import assert_one_error, invoke, write_toml
from fakes import make_batch, unit_rows


def _batch(seed: int = 3, sizes: tuple[tuple[int, int], ...] = ((5, 7), (9, 4), (6, 6), (3, 8))):
    gen = torch.Generator().manual_seed(seed)
    refs = [unit_rows(torch.randn(n, 8, generator=gen)) for n, _ in sizes]
    cands = [unit_rows(torch.randn(m, 8, generator=gen)) for _, m in sizes]
    return make_batch(refs, cands, [torch.ones(len(r)) for r in refs], [torch.ones(len(c)) for c in cands])


def _by_hand(x: torch.Tensor, y: torch.Tensor, share: float) -> float:
    """1 / (1 + sum T C) with T the exact plan of uniform masses, its flows below the
    max(int(q * share), 1)-th smallest nonzero one set to 0 (written out here, not drop_flows)."""
    c = pairwise_cost(x[None], y[None], "euclidean")[0].numpy()
    plan = ot.emd(np.full(len(x), 1 / len(x)), np.full(len(y), 1 / len(y)), c)
    flows = sorted(plan[plan > 0].tolist())
    threshold = flows[max(int(len(flows) * share), 1) - 1]
    return 1.0 / (1.0 + float((np.where(plan < threshold - 1e-12, 0.0, plan) * c).sum()))


def test_no_dropout_is_the_default_and_changes_nothing() -> None:
    batch = _batch()
    for n_gram in (1, 2):
        before = WMD(n_gram=n_gram)(batch)["score"]
        assert torch.equal(WMD(n_gram=n_gram, flow_dropout=0.0)(batch)["score"], before)
        assert WMD(n_gram=n_gram, flow_dropout=0).signature() == WMD(n_gram=n_gram).signature()
    assert "flow_dropout" not in WMD().signature() and WMD().flow_dropout == 0


@pytest.mark.parametrize("share", [0.1, 0.3, 0.6])
def test_dropout_scores_the_plan_without_its_smallest_flows(share: float) -> None:
    batch = _batch()
    got = WMD(flow_dropout=share, score_form="1/(1+d)")(batch)["score"]
    lengths = batch.ref_match.sum(1).tolist(), batch.cand_match.sum(1).tolist()
    want = [_by_hand(batch.ref[k, :n], batch.cand[k, :m], share) for k, (n, m) in enumerate(zip(*lengths))]
    assert got.tolist() == pytest.approx(want, abs=1e-12)
    # dropping flows drops cost: never a lower score than the whole plan's
    assert bool((got >= WMD(score_form="1/(1+d)")(batch)["score"] - 1e-12).all())
    assert WMD(flow_dropout=share).signature().endswith(f",flow_dropout={share})")


def test_the_alignment_shows_the_plan_after_dropout_and_its_shares_add_up() -> None:
    batch, aligner = _batch(), WMD(flow_dropout=0.3, n_gram=2, score_form="1/(1+d)")
    shown = aligner.alignment(batch)
    ref_share, cand_share = shown.contributions["score"]
    scores = aligner(batch)["score"].double()
    assert torch.allclose(ref_share.sum(1) + cand_share.sum(1), scores, atol=1e-9)
    assert torch.allclose(shown.scores["score"], scores, atol=1e-9)
    full = WMD(n_gram=2).alignment(batch).flows["transport"]
    assert int((shown.flows["transport"] > 0).sum()) < int((full > 0).sum())


def test_flows_equal_to_the_threshold_but_for_rounding_are_kept() -> None:
    third = 1 / 3
    plan = np.array([[0.1, third - 1e-16, 0.0], [third, 0.5, 0.6]])
    # five nonzero flows, share 0.6: k = 3, the threshold is the third smallest, a third; the flow a
    # rounding below it is equal to it (the strict rule, plan < threshold, would drop it too)
    assert ((plan > 0) & (plan < third)).sum() == 2
    kept = drop_flows(plan, 0.6)
    assert kept.tolist() == [[0.0, plan[0, 1], 0.0], [third, 0.5, 0.6]]
    assert drop_flows(plan, 0.0) is plan


def test_the_reference_rule_drops_k_minus_1_flows_when_none_tie() -> None:
    plan = np.arange(1, 11, dtype=np.float64).reshape(2, 5) / 55
    kept = drop_flows(plan, 0.3)  # k = int(10 * 0.3) = 3: the two smallest go
    assert int((kept == 0).sum()) == 2 and kept[0, 2] == plan[0, 2]
    assert int((drop_flows(plan, 0.05) == 0).sum()) == 0  # k = max(0, 1) = 1: nothing below the smallest


def test_the_solver_plan_sums_to_the_distance_it_reports() -> None:
    c = np.random.default_rng(0).random((4, 6))
    a, b = np.full(4, 0.25), np.full(6, 1 / 6)
    assert float((network_simplex(plans=True)(a, b, c) * c).sum()) == pytest.approx(network_simplex()(a, b, c))


def test_every_way_in_takes_flow_dropout(tmp_path: Path) -> None:
    assert alignscore.run_spec({"aligner": "wmd", "flow_dropout": 0.3}).composition.aligner.flow_dropout == 0.3
    assert alignscore.run_spec({"preset": "xmoverscore"}).composition.aligner.flow_dropout == 0.3
    run_file = write_toml({"aligner": "wmd", "n_gram": 2, "flow_dropout": 0.25}, tmp_path / "run.toml")
    assert alignscore.run_spec({"config": str(run_file)}).composition.aligner.flow_dropout == 0.25
    grid = parse_grid({"models": {"base": {"model": "m"}}, "columns": [{"name": "c", "aligner": "wmd"}],
                       "rows": [{"name": "r", "flow_dropout": 0.3}]})
    assert compile_run(grid.sources(grid.rows[0], grid.columns[0])).composition.aligner.flow_dropout == 0.3
    (candidate,) = parse_space({"aligner": ["wmd"], "flow_dropout": [0.3]}).candidates()
    assert candidate.spec.composition.aligner.flow_dropout == 0.3
    with pytest.raises(ConfigError, match="flow_dropout"):
        alignscore.run_spec({"aligner": "wmd", "flow_dropout": 1.0})
    with pytest.raises(ConfigError, match="flow_dropout"):
        alignscore.run_spec({"aligner": "greedy", "flow_dropout": 0.3})
    cands, refs = tmp_path / "c.txt", tmp_path / "r.txt"
    cands.write_text("a cat\n", encoding="utf-8")
    refs.write_text("a dog\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    code, _, err = invoke("score", "-c", cands, "-r", refs, "--aligner", "wmd", "--flow-dropout", "1.5", "-o", out)
    assert_one_error(code, err, "--flow-dropout")
    assert not out.exists()
    code, _, err = invoke("score", "-c", cands, "-r", refs, "--aligner", "wmd", "--flow-dropout", "-0.1", "-o", out)
    assert_one_error(code, err, "--flow-dropout")
