"""The Hugging Face ``evaluate`` module: ``evaluate.load(folder)`` offline, and the same numbers
as the Python API for the same composition."""

from __future__ import annotations

import pytest
import torch

from alignscore import WMD, HFEncoder, IdfS, MoverScoreV2Strings, SingleLayer, bertscore
from alignscore.errors import ConfigError
from alignscore.integrations.hf_evaluate import EVALUATE_MODULE
from helpers import compose, needs, wmt16

pytestmark = pytest.mark.slow  # importing evaluate (and datasets) takes seconds: CI's tier, imported by the tests only

TOL = 1e-6


@pytest.fixture(scope="module")
def evaluate():
    return needs("evaluate")


@pytest.fixture(scope="module")
def module(evaluate, tmp_path_factory):
    evaluate.config.HF_EVALUATE_OFFLINE = True  # a local folder needs nothing from the hub
    modules = evaluate.config.HF_MODULES_CACHE
    evaluate.config.HF_MODULES_CACHE = str(tmp_path_factory.mktemp("modules"))  # not the user's ~/.cache
    try:
        yield evaluate.load(str(EVALUATE_MODULE), cache_dir=str(tmp_path_factory.mktemp("evaluate")),
                            keep_in_memory=True)
    finally:
        evaluate.config.HF_MODULES_CACHE = modules


def _data(n=12):
    data = wmt16("de-en")
    return data["mt-system"][:n], data["reference"][:n]


def _same(got: dict, want, names) -> None:
    assert sorted(got) == sorted([*names, "signature"])
    assert got["signature"] == str(want.signature)
    for name in names:
        assert torch.allclose(torch.tensor(got[name], dtype=torch.float64), want[name].double(), atol=TOL, rtol=0)


def test_the_folder_loads_as_a_metric(module, evaluate):
    assert module.name == "alignscore" and isinstance(module, evaluate.Metric)
    assert "BERTScore" in module.citation and "predictions" in module.inputs_description


def test_bertscore_equals_the_api(module, tiny_bert_dir):
    cands, refs = _data()
    got = module.compute(predictions=cands, references=refs, model=tiny_bert_dir, layer=2)
    _same(got, compose(HFEncoder(tiny_bert_dir), SingleLayer(2)).score(cands, refs), ("precision", "recall", "f1"))
    # idf=True is idf-S; several references per prediction
    groups = [[r, cands[(i + 1) % len(cands)]] for i, r in enumerate(refs)]
    got = module.compute(predictions=cands, references=groups, model=tiny_bert_dir, layer=2, idf=True)
    _same(got, compose(HFEncoder(tiny_bert_dir), SingleLayer(2), weighting=IdfS()).score(cands, groups),
          ("precision", "recall", "f1"))


def test_a_preset_and_options_equal_the_api(module, tiny_bert_dir):
    cands, refs = _data()
    got = module.compute(predictions=cands, references=refs, model=tiny_bert_dir, preset="moverscore-v2", layer=3)
    want = compose(HFEncoder(tiny_bert_dir), SingleLayer(3), special_tokens="keep",
                  filters=(MoverScoreV2Strings(),), weighting=IdfS(sep=True),
                  aligner=WMD(), multi_ref="mean").score(cands, refs)
    _same(got, want, ("score",))


def test_the_real_model(module, minilm_dir):
    cands, refs = _data(4)
    got = module.compute(predictions=cands, references=refs, model="all-MiniLM-L6-v2")
    _same(got, bertscore("all-MiniLM-L6-v2").score(cands, refs), ("precision", "recall", "f1"))


def test_bad_options(module, tiny_bert_dir):
    with pytest.raises(ConfigError, match="num_layers=: bert_score.s num_layers is layer= here"):
        module.compute(predictions=["a"], references=["b"], num_layers=3)
    with pytest.raises(ConfigError, match="idf= means weighting idf-S"):
        module.compute(predictions=["a"], references=["b"], model=tiny_bert_dir, idf=True, weighting="none")
