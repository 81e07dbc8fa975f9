"""The default CPU forward pass through a saved TorchScript trace: the same numbers as eager mode,
a later encoder runs the trace without building the transformers model, and anything that goes
wrong (a model the tracer cannot follow, a trace that differs, a damaged file, a folder that cannot
be written) falls back to eager mode."""

from __future__ import annotations

import pytest
import torch

import alignscore
from alignscore.encoders.forward import TorchForward
from alignscore.encoders.traced import REFUSED, TracedForward


def _states(path, export_dir, texts, layers, strategy=None):
    enc = alignscore.HFEncoder(path, device_name="cpu", export_dir=str(export_dir))
    if strategy is not None:
        enc._forward = strategy
    tok = enc.tokenize(texts)
    width = max(len(ids) for ids in tok.ids)
    ids = torch.tensor([row + [enc.pad_id] * (width - len(row)) for row in tok.ids])
    mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in tok.ids])
    return enc, enc.forward(ids, mask, layers), mask


@pytest.mark.parametrize("model", ["bert", "roberta"])
@pytest.mark.parametrize("layers", [[0], [2], [1, 3]])
def test_the_trace_gives_eager_numbers_and_is_reused_without_the_model(model, layers, wmt_data, tiny_bert_dir,
                                                                        tiny_roberta_dir, tmp_path):
    path = {"bert": tiny_bert_dir, "roberta": tiny_roberta_dir}[model]
    refs = wmt_data["de-en"]["reference"]
    for texts in (refs[:7], refs[7:8], [refs[9]] * 3):  # padded, a single text, no padding
        first, traced, mask = _states(path, tmp_path, texts, layers)
        assert isinstance(first._forward, TracedForward)
        assert first._forward.module(first, layers) is not None
        _, eager, _ = _states(path, tmp_path, texts, layers, TorchForward())
        valid = mask.bool()[None, :, :, None]
        assert torch.equal(traced * valid, eager * valid)
        later, again, _ = _states(path, tmp_path, texts, layers)
        assert later._model is None  # read from the folder: the transformers model was never built
        assert torch.equal(again, traced)
    assert len(list(tmp_path.glob("*.pt"))) == 1


def test_scores_equal_eager_mode(wmt_data, tiny_bert_dir, tmp_path):
    cands, refs = wmt_data["ro-en"]["mt-system"][:40], wmt_data["ro-en"]["reference"][:40]
    traced = alignscore.bertscore(tiny_bert_dir, layer=3, batch_size=8)
    traced.encoder = alignscore.HFEncoder(tiny_bert_dir, device_name="cpu", export_dir=str(tmp_path))
    eager = alignscore.bertscore(tiny_bert_dir, layer=3, batch_size=5)
    eager.encoder = alignscore.HFEncoder(tiny_bert_dir, device_name="cpu", export_dir=str(tmp_path))
    eager.encoder._forward = TorchForward()
    a, b = traced.score(cands, refs), eager.score(cands, refs)
    assert isinstance(traced.encoder._forward, TracedForward)
    for name in ("precision", "recall", "f1"):
        assert torch.allclose(a[name], b[name], atol=1e-6, rtol=0)


def test_a_model_the_tracer_cannot_follow_runs_eagerly_and_later_runs_do_not_retry(
        wmt_data, tiny_bert_dir, tmp_path, monkeypatch):
    texts = wmt_data["de-en"]["reference"][:4]

    def refuse(*args, **kwargs):  # noqa: ANN002, ANN003
        raise RuntimeError("cannot trace this")

    monkeypatch.setattr(torch.jit, "trace", refuse)
    enc, states, _ = _states(tiny_bert_dir, tmp_path, texts, [2])
    assert enc._forward.module(enc, [2]) is None
    _, eager, _ = _states(tiny_bert_dir, tmp_path, texts, [2], TorchForward())
    assert torch.equal(states, eager)
    assert [p.name.endswith(REFUSED) for p in tmp_path.glob("*.pt*")] == [True]
    calls = []
    monkeypatch.setattr(torch.jit, "trace", lambda *a, **k: calls.append(1))
    _states(tiny_bert_dir, tmp_path, texts, [2])
    assert calls == []  # the marker file says so: no second attempt


def test_a_trace_that_differs_from_eager_mode_is_refused(wmt_data, tiny_bert_dir, tmp_path, monkeypatch):
    texts = wmt_data["de-en"]["reference"][:4]
    real_trace = torch.jit.trace

    def off_by_a_little(module, example, **kwargs):  # noqa: ANN001, ANN003
        traced = real_trace(module, example, **kwargs)
        return lambda ids, mask: traced(ids, mask) + 1e-3

    monkeypatch.setattr(torch.jit, "trace", off_by_a_little)
    enc, states, _ = _states(tiny_bert_dir, tmp_path, texts, [1])
    _, eager, _ = _states(tiny_bert_dir, tmp_path, texts, [1], TorchForward())
    assert torch.equal(states, eager)
    assert not list(tmp_path.glob("*.pt")) and list(tmp_path.glob("*" + REFUSED))


def test_a_damaged_trace_is_made_again(wmt_data, tiny_bert_dir, tmp_path):
    texts = wmt_data["de-en"]["reference"][:4]
    _, want, _ = _states(tiny_bert_dir, tmp_path, texts, [2])
    (graph,) = tmp_path.glob("*.pt")
    graph.write_bytes(b"not a TorchScript archive")
    enc, got, _ = _states(tiny_bert_dir, tmp_path, texts, [2])
    assert torch.equal(got, want)
    assert enc._forward.module(enc, [2]) is not None and graph.stat().st_size > 100


def test_a_folder_that_cannot_be_written_still_scores(wmt_data, tiny_bert_dir, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the export folder would be")
    texts = wmt_data["de-en"]["reference"][:4]
    enc, got, _ = _states(tiny_bert_dir, blocker / "exports", texts, [2])
    _, want, _ = _states(tiny_bert_dir, tmp_path / "other", texts, [2], TorchForward())
    assert torch.equal(got, want)


def test_other_precisions_and_backends_do_not_trace(tiny_bert_dir, tmp_path):
    assert isinstance(alignscore.HFEncoder(tiny_bert_dir, device_name="cpu", dtype="int8")._strategy(),
                      TorchForward)
    assert isinstance(alignscore.HFEncoder(tiny_bert_dir, device_name="cpu", dtype="bfloat16")._strategy(),
                      TorchForward)
    assert isinstance(alignscore.HFEncoder(tiny_bert_dir, device_name="cuda")._strategy(), TorchForward)
