"""The ONNX Runtime backend gives the torch backend's (and bert_score's) scores to 1e-5, and
keeps its exported graphs per model and layer set.

Skipped only when onnxruntime (the ``onnx`` extra) is not installed.
"""

from __future__ import annotations

import pytest
import torch

import alignscore
from alignscore.encoders.onnx import OnnxForward

pytest.importorskip("onnxruntime")

TOL = 1e-5


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("onnx"))


def _scorer(path, backend, export_dir, layer, idf=False):
    enc = alignscore.HFEncoder(path, backend=backend, export_dir=export_dir)
    return alignscore.Scorer(encoder=enc, aggregator=alignscore.SingleLayer(layer),
                             weighting=alignscore.idf_s() if idf else alignscore.Uniform())


@pytest.mark.parametrize("model", ["bert", "roberta"])
def test_onnx_matches_torch(model, wmt_data, tiny_bert_dir, tiny_roberta_dir, export_dir):
    path = tiny_bert_dir if model == "bert" else tiny_roberta_dir
    cands = wmt_data["de-en"]["mt-system"][:80] + ["", "ok"]
    refs = wmt_data["de-en"]["reference"][:80] + ["something", "ok ."]
    for layer, idf in ((2, False), (-1, True)):
        ours = _scorer(path, "onnx", export_dir, layer, idf).score(cands, refs)
        want = _scorer(path, "torch", export_dir, layer, idf).score(cands, refs)
        for name in ("precision", "recall", "f1"):
            assert (ours[name] - want[name]).abs().max() < TOL
    assert "+onnx" in ours.signature


def test_several_layers_in_one_graph(wmt_data, tiny_bert_dir, export_dir):
    enc = alignscore.HFEncoder(tiny_bert_dir, backend="onnx", export_dir=export_dir)
    ref = alignscore.HFEncoder(tiny_bert_dir)
    tok = ref.tokenize(wmt_data["de-en"]["reference"][:5])
    width = max(map(len, tok.ids))
    ids = torch.tensor([row + [0] * (width - len(row)) for row in tok.ids])
    mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in tok.ids])
    got, want = enc.forward(ids, mask, [0, 2, 3]), ref.forward(ids, mask, [0, 2, 3])
    assert got.shape == want.shape == (3, 5, width, 32)
    valid = mask.bool()[None, :, :, None]
    assert float(((got - want).abs() * valid).max()) < 1e-4


def test_exports_are_kept_per_model_and_layers(wmt_data, tiny_bert_dir, tiny_roberta_dir, tmp_path, monkeypatch):
    cands, refs = wmt_data["de-en"]["mt-system"][:5], wmt_data["de-en"]["reference"][:5]
    first = _scorer(tiny_bert_dir, "onnx", str(tmp_path), 2).score(cands, refs)
    assert len(list(tmp_path.glob("*.onnx"))) == 1

    def no_export(*args, **kwargs):
        raise AssertionError("exported again")

    with monkeypatch.context() as m:
        m.setattr(OnnxForward, "_export", no_export)
        again = _scorer(tiny_bert_dir, "onnx", str(tmp_path), 2).score(cands, refs)  # a new process would do this
    assert torch.equal(first.f1, again.f1)
    _scorer(tiny_bert_dir, "onnx", str(tmp_path), 3).score(cands, refs)
    _scorer(tiny_roberta_dir, "onnx", str(tmp_path), 2).score(cands, refs)
    assert len(list(tmp_path.glob("*.onnx"))) == 3
    assert not list(tmp_path.glob("*.tmp"))


def test_a_damaged_export_is_replaced(wmt_data, tiny_bert_dir, tmp_path):
    cands, refs = wmt_data["de-en"]["mt-system"][:5], wmt_data["de-en"]["reference"][:5]
    want = _scorer(tiny_bert_dir, "onnx", str(tmp_path), 2).score(cands, refs)
    (graph,) = tmp_path.glob("*.onnx")
    graph.write_bytes(b"not a graph")
    got = _scorer(tiny_bert_dir, "onnx", str(tmp_path), 2).score(cands, refs)
    assert torch.equal(got.f1, want.f1)


def test_backend_and_dtype_are_checked(tiny_bert_dir):
    with pytest.raises(alignscore.ConfigError, match="backend"):
        alignscore.HFEncoder(tiny_bert_dir, backend="tvm")
    with pytest.raises(alignscore.ConfigError, match="float32"):
        alignscore.HFEncoder(tiny_bert_dir, backend="onnx", dtype="bfloat16")
    with pytest.raises(alignscore.ConfigError, match="dtype"):
        alignscore.HFEncoder(tiny_bert_dir, dtype="float8")


@pytest.mark.slow
@pytest.mark.reference
def test_onnx_matches_bert_score_on_wmt16(wmt_data, minilm_dir, export_dir):
    bert_score = pytest.importorskip("bert_score")
    cands, refs = wmt_data["ru-en"]["mt-system"], wmt_data["ru-en"]["reference"]
    ours = _scorer("all-MiniLM-L6-v2", "onnx", export_dir, 4).score(cands, refs)
    p, r, f = bert_score.score(cands, refs, model_type=minilm_dir, num_layers=4, batch_size=64, device="cpu")
    for name, theirs in (("precision", p), ("recall", r), ("f1", f)):
        assert (ours[name].double() - theirs.double()).abs().max() < TOL


def _float32_and(wmt_data, tiny_bert_dir, dtype):  # noqa: ANN001, ANN202
    """Scores of 40 de-en pairs in float32 and in ``dtype`` (layer 3), and the ``dtype`` encoder."""
    cands, refs = wmt_data["de-en"]["mt-system"][:40], wmt_data["de-en"]["reference"][:40]
    full = _scorer(tiny_bert_dir, "torch", None, 3).score(cands, refs)
    enc = alignscore.HFEncoder(tiny_bert_dir, dtype=dtype)
    return full, alignscore.Scorer(encoder=enc, aggregator=alignscore.SingleLayer(3)).score(cands, refs), enc


def test_bfloat16_stays_close(wmt_data, tiny_bert_dir):
    """Mixed precision is an option for GPUs: scores move, but only a little."""
    full, half, _ = _float32_and(wmt_data, tiny_bert_dir, "bfloat16")
    diff = float((half.f1 - full.f1).abs().max())
    assert 0 < diff < 0.05
    assert half.f1.dtype == torch.float32 and "+bfloat16" in half.signature


def test_int8_is_an_approximate_cpu_mode(wmt_data, tiny_bert_dir):
    """int8 quantises the linear layers: scores move a little, the signature says so, and it
    runs on the CPU only (and not through ONNX Runtime)."""
    full, quant, enc = _float32_and(wmt_data, tiny_bert_dir, "int8")
    diff = float((quant.f1 - full.f1).abs().max())
    assert 0 < diff < 0.1
    assert bool(torch.isfinite(quant.f1).all()) and "+int8" in quant.signature
    assert any(type(m).__module__.startswith("torch.ao.nn.quantized") for m in enc.load_model().modules())
    for device in ("cuda", "cuda:1", "nonsense"):  # never torch's parser error: one ConfigError
        with pytest.raises(alignscore.ConfigError, match="CPU only"):
            alignscore.HFEncoder(tiny_bert_dir, dtype="int8", device_name=device)
    with pytest.raises(alignscore.ConfigError, match="float32"):
        alignscore.HFEncoder(tiny_bert_dir, backend="onnx", dtype="int8")
