"""Token-budget batching: batch bounds, and scores that do not depend on them."""

from __future__ import annotations

import pytest
import torch

import alignscore
from alignscore.runtime import plan_batches


def test_plan_batches_respects_count_and_budget():
    lengths = torch.tensor([300, 200, 100, 50, 50, 10, 10, 10])
    assert plan_batches(lengths, 3) == [(0, 3), (3, 6), (6, 8)]
    bounds = plan_batches(lengths, 3, token_budget=250)
    assert bounds == [(0, 1), (1, 2), (2, 4), (4, 7), (7, 8)]  # 300 alone: over budget but never split
    for start, end in bounds:
        assert end - start <= 3
        assert end - start == 1 or (end - start) * int(lengths[start]) <= 250
    assert [i for s, e in bounds for i in range(s, e)] == list(range(len(lengths)))


@pytest.mark.parametrize("budget", [pytest.param(1, marks=pytest.mark.slow), 200, 5000])  # 1: a batch per text
def test_token_budget_never_changes_scores(wmt_data, tiny_bert_dir, budget):
    cands, refs = wmt_data["fi-en"]["mt-system"][:60], wmt_data["fi-en"]["reference"][:60]
    want = alignscore.bertscore(tiny_bert_dir, layer=3).score(cands, refs)
    got = alignscore.bertscore(tiny_bert_dir, layer=3, token_budget=budget).score(cands, refs)
    assert (got.f1 - want.f1).abs().max() < 1e-6


def test_token_budget_must_be_positive(tiny_bert_dir):
    with pytest.raises(alignscore.ConfigError):
        alignscore.bertscore(tiny_bert_dir, layer=3, token_budget=0)
