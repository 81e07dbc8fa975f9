"""Scores never depend on batch size, input order, duplicates or padding; scorers are grouped by their encoder."""

from __future__ import annotations

import pytest
import torch

import alignscore
from alignscore.scorer import Scorer, by_encoder
from alignscore.testing import WordEncoder

TOL = 1e-6  # different batch shapes change float summation order only


def _pairs(wmt_data, n=120):
    cands = wmt_data["de-en"]["mt-system"][:n] + ["", "   ", "ok"]
    refs = wmt_data["de-en"]["reference"][:n] + ["something", "", "ok ."]
    return cands, refs


@pytest.mark.parametrize("model", ["tiny", pytest.param("minilm", marks=pytest.mark.slow)])  # the real model: CI's
@pytest.mark.parametrize("idf", [False, True])
def test_batch_size_and_order(model, idf, wmt_data, tiny_bert_dir, minilm_dir):
    cands, refs = _pairs(wmt_data, 120 if model == "tiny" else 40)
    path = tiny_bert_dir if model == "tiny" else minilm_dir
    results = [alignscore.bertscore(path, layer=3, idf=idf, batch_size=bs).score(cands, refs) for bs in (1, 64)]
    perm = torch.randperm(len(cands), generator=torch.Generator().manual_seed(0))
    shuffled = alignscore.bertscore(path, layer=3, idf=idf, batch_size=7).score(
        [cands[i] for i in perm], [refs[i] for i in perm])
    for name in ("precision", "recall", "f1"):
        a, b = results[0][name], results[1][name]
        assert (a - b).abs().max() < TOL
        unshuffled = torch.empty_like(a)
        unshuffled[perm] = shuffled[name]
        assert (a - unshuffled).abs().max() < TOL
        assert torch.isfinite(a).all()


def test_duplicates_do_not_change_scores(wmt_data, tiny_bert_dir):
    """Without idf a pair's score is a function of the pair alone, however often texts repeat
    (with idf-S repeated references count as more documents, as in bert_score)."""
    cands, refs = _pairs(wmt_data, 40)
    scorer = alignscore.bertscore(tiny_bert_dir, layer=2)
    base = scorer.score(cands, refs)
    dup = scorer.score(cands + cands[:10] + [refs[0]], refs + refs[:10] + [refs[0]])
    for name in ("precision", "recall", "f1"):
        assert (base[name] - dup[name][: len(cands)]).abs().max() < TOL
        assert (base[name][:10] - dup[name][len(cands):len(cands) + 10]).abs().max() < TOL
    assert dup.f1[-1] == pytest.approx(1.0, abs=1e-5)  # a text against itself


def test_by_encoder_groups_the_chosen_positions():
    a, b = WordEncoder(), WordEncoder()
    scorers = [Scorer(a), Scorer(b), Scorer(a)]
    assert by_encoder(scorers) == [[0, 2], [1]] and by_encoder(scorers, {2, 1}) == [[1], [2]]
