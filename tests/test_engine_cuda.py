"""On a CUDA device (marked ``cuda``: skipped without one; ``pytest -m cuda`` on a GPU machine):
float32 parity with bert_score 0.3.13 run on the same GPU, scores independent of batch size and
order, the same scores as on the CPU, token vectors that stay on the device, Sinkhorn on the
device. The models are the tiny random ones of conftest.py (the GPU machine has no weights)."""

from __future__ import annotations

import importlib.util

import pytest
import torch

import alignscore
from alignscore import engine
from alignscore.aligners.optimal import WMD, Sinkhorn
from alignscore.encoders.huggingface import HFEncoder

pytestmark = pytest.mark.cuda
TOL = 1e-5  # float32, as the CPU parity tests


@pytest.fixture(scope="module")
def pairs(wmt_data):
    cands = [c for lp in ("de-en", "ru-en") for c in wmt_data[lp]["mt-system"][:200]]
    refs = [r for lp in ("de-en", "ru-en") for r in wmt_data[lp]["reference"][:200]]
    return cands, refs


def bertscore(model_dir: str, device: str, **kw):
    return alignscore.bertscore(layer=3, encoder=HFEncoder(model_dir, device_name=device), **kw)


@pytest.mark.reference
@pytest.mark.parametrize("idf", [False, True], ids=["none", "idf-S"])
def test_parity_with_bert_score_on_cuda(pairs, tiny_bert_dir, idf):
    if importlib.util.find_spec("bert_score") is None:
        pytest.skip("needs bert_score")
    import bert_score

    cands, refs = pairs
    ours = bertscore(tiny_bert_dir, "cuda", idf=idf).score(cands, refs).metrics
    p, r, f = bert_score.score(cands, refs, model_type=tiny_bert_dir, num_layers=3, idf=idf, batch_size=64,
                               device="cuda", nthreads=1)
    for name, theirs in (("precision", p), ("recall", r), ("f1", f)):
        diff = (ours[name].double() - theirs.double().cpu()).abs().max().item()
        assert diff < TOL, f"{name}: max |diff| = {diff:.2e}"


def test_batch_size_order_and_device_invariance(pairs, tiny_bert_dir):
    cands, refs = pairs
    base = bertscore(tiny_bert_dir, "cuda").score(cands, refs).f1
    small = bertscore(tiny_bert_dir, "cuda", batch_size=7).score(cands, refs).f1
    perm = torch.randperm(len(cands), generator=torch.Generator().manual_seed(0)).tolist()
    shuffled = bertscore(tiny_bert_dir, "cuda").score([cands[i] for i in perm], [refs[i] for i in perm]).f1
    cpu = bertscore(tiny_bert_dir, "cpu").score(cands, refs).f1
    assert base.device.type == "cpu"  # results come back to the host
    assert (base - small).abs().max() < TOL
    assert (base[perm] - shuffled).abs().max() < TOL
    assert (base - cpu).abs().max() < TOL


def test_vectors_and_batches_stay_on_the_device(pairs, tiny_bert_dir):
    cands, refs = pairs
    scorer = bertscore(tiny_bert_dir, "cuda")
    comp = scorer.resolved()
    encoded = engine.encode(scorer.encoder, engine.Pairs.from_pairs(refs, cands), [comp.aggregator])
    (setting,) = engine.aligner_inputs(encoded, [comp], scorer.encoder)
    assert setting.vectors.device.type == "cuda" and setting.ref_mass.device.type == "cuda"
    _, batch = next(engine.pair_batches(encoded, setting))
    assert {t.device.type for t in (batch.ref, batch.cand, batch.ref_mass, batch.cand_match)} == {"cuda"}


@pytest.mark.parametrize("aligner", [Sinkhorn(), Sinkhorn(sinkhorn_dtype="float32", reg=0.05), WMD()], ids=str)
def test_transport_on_cuda_matches_cpu(pairs, tiny_bert_dir, aligner):
    cands, refs = pairs[0][:64], pairs[1][:64]
    scores = [alignscore.moverscore_v2(encoder=HFEncoder(tiny_bert_dir, device_name=device), aligner=aligner)
              .score(cands, refs).metrics["score"] for device in ("cuda", "cpu")]
    tol = 1e-4 if aligner.name == "sinkhorn" and aligner.dtype == "float32" else 1e-6
    assert (scores[0] - scores[1]).abs().max() < tol
