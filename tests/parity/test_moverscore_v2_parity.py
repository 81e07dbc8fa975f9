"""Parity with the moverscore 1.0.3 package: the ``moverscore-v2`` preset against
``moverscore_v2.word_mover_score`` on a whole WMT16 language pair (560 pairs), its model
redirected to the local all-MiniLM-L6-v2 (see tests/moverscore_ref.py for exactly what is
patched: model loading, device, numpy 2 / transformers 5 compatibility; nothing that computes). Its
forward pass runs over length-sorted chunks of each of its batches (:func:`by_length`).

Tolerance: 1e-5 absolute per pair. Both sides encode in float32; alignscore computes costs in
float64 and solves with POT, moverscore_v2 computes costs in float32 and solves with pyemd.

One known exception, checked separately: a pair whose candidate is the reference itself (the
same tokens; de-en has such pairs). Its
distances between a token and its own twin are 0 in exact arithmetic; moverscore_v2 computes
``sqrt(|x|^2 + |y|^2 - 2 x.y)`` in float32, which turns rounding noise of ~1e-7 into distances of
~3e-4, so its score lands ~3e-4 below alignscore's (which is 1 under uniform weights).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable

import numpy as np
import pytest
import torch
from moverscore_ref import load_moverscore_v2

from alignscore import build, moverscore_v2, run_spec
from alignscore.cli.options import FLAGS
from helpers import ids_key, memoise, memoised_forward, needs

pytestmark = [pytest.mark.slow, pytest.mark.reference]
needs("moverscore_v2", load=False)
needs("pyemd")

LP = "de-en"
TOL = 1e-5
STOP = ["the", "a", "of", "to", "and", "in", "is", "that"]


def by_length(encode: Callable[..., tuple], chunk: int = 64) -> Callable[..., tuple]:
    """moverscore_v2's ``bert_encode`` run over length-sorted chunks of its batch. It pads a batch of 256
    texts to the longest, so most of its pass is padding; under the attention mask a text's hidden
    states are the model's for its own tokens whatever shares its batch (to float rounding, far below
    TOL). Positions past a chunk's longest text stay 0: moverscore_v2 gives padding no mass."""
    def run(model: Any, x: torch.Tensor, attention_mask: torch.Tensor) -> tuple:
        lengths = attention_mask.sum(1)
        out: list[torch.Tensor] = []
        for rows in torch.argsort(lengths, stable=True).split(chunk):
            width = int(lengths[rows].max())
            states = encode(model, x[rows, :width], attention_mask[rows, :width])
            out = out or [s.new_zeros(*x.shape, s.shape[-1]) for s in states]
            for whole, part in zip(out, states):
                whole[rows, :width] = part
        return tuple(out)

    return run


@pytest.fixture(scope="module")
def ms2(minilm_dir: str):
    module = load_moverscore_v2(minilm_dir)
    encode = by_length(module.bert_encode)
    module.bert_encode = memoise(encode, lambda model, x, attention_mask: ids_key(x, attention_mask))
    return module


@pytest.fixture(scope="module")
def pairs(wmt_data) -> tuple[list[str], list[str]]:
    return wmt_data[LP]["reference"], wmt_data[LP]["mt-system"]


@pytest.fixture(scope="module")
def shared_encoder(minilm_dir: str):
    """One encoder for the three compositions below, its forward pass memoised per batch."""
    return memoised_forward(moverscore_v2(model=minilm_dir).encoder)


@pytest.fixture(scope="module")
def theirs_uniform(ms2, pairs) -> np.ndarray:
    """moverscore_v2's scores with uniform weights, no stop words (two tests compare with them)."""
    refs, cands = pairs
    uniform = defaultdict(lambda: 1.0)
    return np.array(ms2.word_mover_score(refs, cands, uniform, uniform, stop_words=[], n_gram=1,
                                         remove_subwords=True, device="cpu"))


def ours(encoder, refs: list[str], cands: list[str], **kwargs: Any) -> np.ndarray:
    return moverscore_v2(encoder=encoder, **kwargs).score(cands, refs)["score"].numpy()


@pytest.fixture(scope="module")
def ours_uniform(shared_encoder, pairs) -> np.ndarray:
    """The ``moverscore-v2`` preset's scores with uniform weights, no stop words."""
    refs, cands = pairs
    return ours(shared_encoder, refs, cands, idf=False)


def same_tokens(ms2, refs: list[str], cands: list[str]) -> np.ndarray:
    """Pairs whose two texts tokenize identically (the same text, up to case for an uncased model)."""
    return np.array([ms2.tokenizer.tokenize(r) == ms2.tokenizer.tokenize(c) for r, c in zip(refs, cands)])


def check(ms2, theirs: np.ndarray, mine: np.ndarray, refs: list[str], cands: list[str]) -> None:
    same = same_tokens(ms2, refs, cands)
    diff = np.abs(theirs - mine)
    assert len(theirs) == len(mine) == len(refs)
    assert diff[~same].max() < TOL, (diff[~same].max(), int(np.argmax(np.where(same, 0, diff))))
    # identical pairs: only moverscore_v2's float32 sqrt noise (see the module docstring)
    assert (diff[same] < 1e-3).all() and (mine[same] >= theirs[same] - 1e-7).all()


def test_uniform_weights(ms2, pairs, ours_uniform, theirs_uniform) -> None:
    refs, cands = pairs
    mine = ours_uniform
    check(ms2, theirs_uniform, mine, refs, cands)
    same = same_tokens(ms2, refs, cands)
    assert same.sum() >= 1 and np.allclose(mine[same], 1.0, atol=1e-6)  # a text against itself, uniform weights


def test_uniform_weights_as_the_command_line_says_them(ms2, pairs, shared_encoder, theirs_uniform) -> None:
    """``--preset moverscore-v2 --weighting none``: SEP served idf-S and goes with it, so the
    options compile to moverscore_v2 with uniform weights, the way its README uses it."""
    refs, cands = pairs
    spec = run_spec({"preset": "moverscore-v2", "model": shared_encoder.model, "weighting": "none"}, FLAGS)
    mine = build(spec, encoder=shared_encoder).score(cands, refs)["score"].numpy()
    check(ms2, theirs_uniform, mine, refs, cands)


def test_idf_reference_and_candidate_dictionaries(ms2, pairs, shared_encoder) -> None:
    refs, cands = pairs
    theirs = np.array(ms2.word_mover_score(refs, cands, ms2.get_idf_dict(refs), ms2.get_idf_dict(cands),
                                           stop_words=[], n_gram=1, remove_subwords=True, device="cpu"))
    mine = ours(shared_encoder, refs, cands, idf=True)
    check(ms2, theirs, mine, refs, cands)


def test_stop_words(ms2, pairs, shared_encoder, ours_uniform) -> None:
    refs, cands = pairs
    uniform = defaultdict(lambda: 1.0)
    theirs = np.array(ms2.word_mover_score(refs, cands, uniform, uniform, stop_words=STOP, n_gram=1,
                                           remove_subwords=True, device="cpu"))
    mine = ours(shared_encoder, refs, cands, idf=False, stop_words=STOP)
    check(ms2, theirs, mine, refs, cands)
    assert np.abs(mine - ours_uniform).mean() > 1e-3  # the stop words did change the scores
