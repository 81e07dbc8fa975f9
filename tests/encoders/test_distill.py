"""Distilling a contextual model into a static table (alignscore.encoders.distill, `alignscore distill`):
the table is the SIF-weighted principal components of the model's vocabulary, model2vec's own loader
reads the folder, placeholders stay out of the fit, and a folder with files or too many dimensions is
refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import alignscore
from alignscore.encoders.static import StaticEncoder
from cli_checks import assert_one_error, invoke
from helpers import needs


@pytest.fixture(scope="module")
def distilled(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: str) -> Path:
    from alignscore.encoders.distill import distill

    return distill(tiny_bert_dir, tmp_path_factory.mktemp("distilled") / "static", dims=8)


@pytest.mark.slow
def test_distill_tiny_bert(distilled: Path) -> None:
    from alignscore.encoders.distill import sif_weights

    enc = StaticEncoder(str(distilled))
    table = enc.table.numpy().astype(np.float64)
    assert table.shape[1] == 8
    # undoing the Zipf weights leaves principal components: centred, orthogonal, variance decreasing
    unweighted = table / sif_weights(len(table))[:, None]
    centred = unweighted - unweighted.mean(0)
    gram = centred.T @ centred
    assert np.abs(unweighted.mean(0)).max() < 1e-4
    assert np.abs(gram - np.diag(np.diag(gram))).max() < 1e-3 * np.diag(gram).max()
    assert np.all(np.diff(np.diag(gram)) <= 1e-6)
    config = json.loads((distilled / "config.json").read_text(encoding="utf-8"))
    assert config["model_type"] == "model2vec" and config["hidden_dim"] == 8
    scores = alignscore.score(["the cat sat on the mat"], ["a dog sat on a rug"], model=str(distilled))
    assert 0 < float(scores.f1[0]) < 1


@pytest.mark.slow
@pytest.mark.reference
def test_distilled_model_loads_in_model2vec(distilled: Path) -> None:
    model2vec = needs("model2vec")  # the oracle: model2vec's own loader reads the folder
    enc = StaticEncoder(str(distilled))
    loaded = model2vec.StaticModel.from_pretrained(str(distilled))
    assert np.array_equal(np.asarray(loaded.embedding), enc.table.numpy())
    text = "The cat sat on the mat."
    assert loaded.tokenize([text])[0] == enc.tokenize([text]).ids[0]


def test_placeholders_left_out_of_the_fit() -> None:
    from alignscore.encoders.distill import PLACEHOLDER

    assert PLACEHOLDER.fullmatch("[unused12]") and not PLACEHOLDER.fullmatch("[UNK]")


def test_distill_refuses_a_folder_with_files(tmp_path: Path, tiny_bert_dir: str) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine", encoding="utf-8")
    code, _, err = invoke("distill", "--model", tiny_bert_dir, "-o", tmp_path / "full", "-q")
    assert_one_error(code, err, "is not an empty folder")
    assert (tmp_path / "full" / "keep.txt").read_text(encoding="utf-8") == "mine"
    code, _, err = invoke("distill", "--model", tiny_bert_dir, "-o", tmp_path / "new", "--dims", "64", "-q")
    assert_one_error(code, err, "dims 64 is more than the model's 32 dimensions")
    assert not (tmp_path / "new").exists()
