"""Parity with the XMoverScore reference code (``word_mover_score`` in ``score_utils_2.py`` of
AIPHES/ACL20-Reference-Free-MT-Evaluation), whose scores on 20 WMT16 de-en pairs with the
packaged all-MiniLM-L6-v2 at layer 4 are in ``xmover_reference_scores.json`` (written by
``make_xmover_fixture.py``, which says how): alignscore's xmoverscore composition with the
same layer, n-gram order and flow dropout (n-gram vectors as means of the layer's states,
``1/(1+d)``) and remapping (none, CLP with a random orthogonal matrix, UMD with a random unit
vector) as :class:`~alignscore.remap.Remapping`.

Equal to 1e-5 per pair (measured: below 1e-6), on tokens and bigrams, with and without a
remapping and flow dropout: against the reference's output on every pair where its flow dropout
split no tie (below), and on every pair against the reference's own flows scored with ties kept
(``scores_ties_kept``). The remaining cause is in the reference: its dropout's threshold is
compared strictly (``flow < threshold``) in floating point. With uniform masses many flows are
equal in exact arithmetic (``1/n``, ``1/m``, their differences) and come out of the solver a
few ulps apart, so the reference drops some of the flows that equal its threshold and keeps
others, by rounding (``split_ties`` counts them per pair: a few pairs in each dropout run, whose
score moves by up to about 0.04). alignscore keeps every flow within 1e-12 of the threshold, the
rule in exact arithmetic.

The ``states=unit`` runs give the reference unit-length token states: alignscore's default
``ngram_mean="unit"`` (means of unit vectors, MoverScore v1's) equals it there.

The LM term: the reference's ``lm_perplexity`` with a tiny causal LM rebuilt here from its seed
(``byte_gpt2``), and XMoverScore whole, ``metric_combination(xmoverscores, lm_scores, [1, 0.1])``
of the paper's run, against ``--preset xmoverscore`` with the same remapping and ``lm`` (its
defaults: the reference's LM score, weight 0.1), to 1e-5 per pair (measured: below 1e-6; the
reference's loss is a float32 mean, alignscore's sum is float64 of float32 log-probabilities).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import alignscore
from alignscore.remap import Remapping, model_digest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_xmover_fixture import FIXTURE, byte_gpt2, clp_matrix, umd_vector  # noqa: E402

pytestmark = pytest.mark.slow  # loads the real model

TOL = 1e-5


@pytest.fixture(scope="module")
def fixture() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def ours(fixture: dict[str, Any]) -> Any:
    """``(mapping, n_gram, dropout, ngram_mean) -> scores``, one encoder for every run."""
    layer = fixture["layer"]
    base = alignscore.build(alignscore.run_spec(dict(preset="xmoverscore", model=fixture["model"], layer=layer)))
    encoder, digest = base.encoder, model_digest(base.encoder)

    def score(mapping: str, n_gram: int, dropout: float, mean: str = "states", **more: Any) -> np.ndarray:
        options: dict[str, Any] = dict(preset="xmoverscore", model=fixture["model"], layer=layer, n_gram=n_gram,
                                       flow_dropout=dropout, ngram_mean=mean, **more)
        if mapping != "none":
            dim = encoder.load_model().config.hidden_size
            weights = clp_matrix(dim, fixture["seed"]) if mapping == "CLP" else umd_vector(dim, fixture["seed"])
            options["remap"] = Remapping(mapping.lower(), torch.from_numpy(weights), encoder.name, digest, layer)
        scorer = alignscore.build(alignscore.run_spec(options), encoder=encoder)
        return np.array(scorer.score(fixture["translations"], sources=fixture["sources"])["score"].tolist())

    return score


def _run(fixture: dict[str, Any], mapping: str, n_gram: int, dropout: float, states: str) -> dict[str, Any]:
    return fixture["runs"][f"{mapping},n={n_gram},dropout={dropout},states={states}"]


def test_the_fixture_says_how_it_was_made(fixture: dict[str, Any]) -> None:
    made = fixture["produced_by"]
    assert len(made["reference_commit"]) == 40 and made["versions"]["pyemd"] and made["device"] == "cpu"
    assert len(fixture["sources"]) == len(fixture["translations"]) == 20
    # the preset's composition is the paper's: the settings the fixture was made with
    c = alignscore.run_spec({"preset": "xmoverscore"}).composition
    assert (c.aligner.n_gram, c.aligner.flow_dropout, c.aligner.score_form, c.aligner.ngram_mean) == (
        2, 0.3, "1/(1+d)", "states")


@pytest.mark.parametrize("n_gram, dropout", [(2, 0.3), (1, 0.3), (2, 0.0)])
@pytest.mark.parametrize("mapping", ["none", "CLP", "UMD"])
def test_scores_equal_the_reference(fixture: dict[str, Any], ours: Any, mapping: str, n_gram: int,
                                    dropout: float) -> None:
    run = _run(fixture, mapping, n_gram, dropout, "raw")
    got = ours(mapping, n_gram, dropout)
    np.testing.assert_allclose(got, run["scores_ties_kept"], rtol=0, atol=TOL)
    clean = np.array(run["split_ties"]) == 0
    assert clean.sum() >= 10 and (dropout > 0 or clean.all())  # most pairs: the reference's output as it is
    np.testing.assert_allclose(got[clean], np.array(run["scores"])[clean], rtol=0, atol=TOL)


@pytest.mark.parametrize("mapping", ["none", "CLP"])
@pytest.mark.parametrize("dropout", [0.3, 0.0])
def test_means_of_unit_vectors_equal_the_reference_given_unit_states(fixture: dict[str, Any], ours: Any,
                                                                     mapping: str, dropout: float) -> None:
    run = _run(fixture, mapping, 2, dropout, "unit")
    np.testing.assert_allclose(ours(mapping, 2, dropout, "unit"), run["scores_ties_kept"], rtol=0, atol=TOL)
    if mapping == "none":  # and differ from the reference's own (raw-state) bigrams
        assert np.abs(ours(mapping, 2, dropout, "unit") - _run(fixture, mapping, 2, dropout, "raw")["scores"]).max() > TOL


@pytest.fixture(scope="module")
def lm_dir(tmp_path_factory: pytest.TempPathFactory, fixture: dict[str, Any]) -> str:
    return byte_gpt2(tmp_path_factory.mktemp("byte-gpt2"), fixture["seed"])


def test_the_lm_score_equals_the_reference(fixture: dict[str, Any], lm_dir: str) -> None:
    from alignscore.lm import LMTerm

    got = LMTerm(lm_dir).scores(fixture["translations"]).numpy()
    np.testing.assert_allclose(got, fixture["lm"]["scores"], rtol=0, atol=TOL)
    assert np.ptp(got) > 0.01  # the model tells the texts apart: the check could fail


def test_xmoverscore_whole_equals_the_reference(fixture: dict[str, Any], ours: Any, lm_dir: str) -> None:
    lm = fixture["lm"]
    run = fixture["runs"][lm["combined_run"]]
    got = ours("CLP", run["n_gram"], run["dropout_rate"], lm=lm_dir)
    np.testing.assert_allclose(got, lm["combined_ties_kept"], rtol=0, atol=TOL)
    clean = np.array(run["split_ties"]) == 0
    np.testing.assert_allclose(got[clean], np.array(lm["combined"])[clean], rtol=0, atol=TOL)
    without = ours("CLP", run["n_gram"], run["dropout_rate"])
    np.testing.assert_allclose(got - without, lm["weight"] * np.array(lm["scores"]), rtol=0, atol=TOL)
