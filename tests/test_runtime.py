"""The GPU path's runtime, tested on the CPU: the encoder loop backs off on out-of-memory errors
(injected by a fake encoder) without changing a score, ``token_budget="auto"`` follows its
formula from the free memory (faked), and the engine copies scores to the host once, not per
batch (counted)."""

from __future__ import annotations

import warnings

import pytest
import torch

import alignscore
from alignscore import engine
from alignscore.encoders.huggingface import HFEncoder
from alignscore.runtime import AUTO_MEMORY_SHARE, Runtime, auto_token_budget
from alignscore.cli.options import FLAGS
from cli_checks import assert_one_error, invoke


class OutOfMemoryAbove(HFEncoder):
    """An encoder whose forward raises CUDA's out-of-memory error on batches of more than
    ``limit`` padded tokens (as a GPU would), counting the failures."""

    def __init__(self, model: str, limit: int) -> None:
        super().__init__(model, device_name="cpu")
        self.limit, self.failures = limit, 0

    def forward(self, input_ids, attention_mask, layers):
        if input_ids.numel() > self.limit:
            self.failures += 1
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return super().forward(input_ids, attention_mask, layers)


@pytest.fixture(scope="module")
def pairs(wmt_data):
    return wmt_data["de-en"]["mt-system"][:150], wmt_data["de-en"]["reference"][:150]


def test_out_of_memory_backs_off_with_the_same_scores(pairs, tiny_bert_dir):
    cands, refs = pairs
    want = alignscore.bertscore(layer=3, encoder=HFEncoder(tiny_bert_dir, device_name="cpu")).score(cands, refs)
    flaky = OutOfMemoryAbove(tiny_bert_dir, limit=600)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = alignscore.bertscore(layer=3, encoder=flaky, batch_size=64).score(cands, refs)
    assert torch.equal(got.f1, want.f1) and torch.equal(got.precision, want.precision)
    oom = [w for w in caught if "out of memory" in str(w.message)]
    assert len(oom) == 1 and "splitting batches" in str(oom[0].message)
    assert "set token_budget= or batch_size= lower" in str(oom[0].message)  # named as Python names them
    # later batches keep to the smaller size: a few failures, not one per batch
    assert 1 <= flaky.failures <= 4


def test_out_of_memory_on_one_text_is_one_clear_error(pairs, tiny_bert_dir):
    cands, refs = pairs
    with pytest.raises(alignscore.ConfigError, match="out of memory on a single text .* dtype= bfloat16"):
        alignscore.bertscore(layer=3, encoder=OutOfMemoryAbove(tiny_bert_dir, limit=2)).score(cands, refs)


def test_a_run_names_its_options_as_they_were_given() -> None:
    from alignscore.config import compile_labelled, sources_of
    flags = compile_labelled(sources_of({"model": "all-MiniLM-L6-v2", "batch_size": "8"}, FLAGS)).spec
    assert (flags.runtime.name("batch_size"), flags.runtime.name("dtype")) == ("--batch-size", "--dtype")
    assert alignscore.Runtime().name("batch_size") == "batch_size="


def test_other_errors_are_not_taken_for_out_of_memory(pairs, tiny_bert_dir):
    class Broken(HFEncoder):
        def forward(self, input_ids, attention_mask, layers):
            raise RuntimeError("shape mismatch")

    with pytest.raises(RuntimeError, match="shape mismatch"):
        alignscore.bertscore(layer=3, encoder=Broken(tiny_bert_dir, device_name="cpu")).score(*pairs)


def test_auto_token_budget(tiny_bert_dir, monkeypatch, pairs):
    cpu = HFEncoder(tiny_bert_dir, device_name="cpu")
    assert auto_token_budget(cpu, [3]) is None  # no budget on a CPU
    want = alignscore.bertscore(layer=3, encoder=cpu).score(*pairs).f1
    assert torch.equal(alignscore.bertscore(layer=3, encoder=cpu, token_budget="auto").score(*pairs).f1, want)

    gpu = HFEncoder(tiny_bert_dir, device_name="cuda", dtype="bfloat16")
    free = 8 * 2**30
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (free, 2 * free))
    c = gpu.config  # hidden 32, intermediate 64, 4 heads; limit 64 tokens; bfloat16: 2 bytes
    per_token = 2 * ((3 + 1) * 32 + 64 + 3 * 32 + 4 * gpu.model_max_length) + 4 * 32
    assert (c.hidden_size, c.intermediate_size, c.num_attention_heads) == (32, 64, 4)
    assert auto_token_budget(gpu, [1, 3]) == int(AUTO_MEMORY_SHARE * free / per_token)


def test_token_budget_option(tmp_path):
    assert Runtime(token_budget="auto").token_budget == "auto"
    with pytest.raises(alignscore.ConfigError, match="token_budget"):
        Runtime(token_budget="lots")
    (tmp_path / "r.txt").write_text("a cat\n")
    (tmp_path / "c.txt").write_text("a dog\n")
    code, _, err = invoke("score", "-r", tmp_path / "r.txt", "-c", tmp_path / "c.txt", "--token-budget", "0")
    assert_one_error(code, err, "--token-budget", "an integer >= 1 or one of auto, not 0")


def test_scores_come_to_the_host_once_not_per_batch(pairs, tiny_bert_dir, monkeypatch):
    """Counts ``Tensor.cpu`` calls (a host copy on a GPU) while aligning 150 pairs in batches of
    8: one per output, however many batches."""
    cands, refs = pairs
    scorer = alignscore.bertscore(layer=3, encoder=HFEncoder(tiny_bert_dir, device_name="cpu"))
    comp = scorer.resolved()
    encoded = engine.encode(scorer.encoder, engine.Pairs.from_pairs(refs, cands), [comp.aggregator])
    settings = engine.aligner_inputs(encoded, [comp], scorer.encoder)
    calls = []
    original = torch.Tensor.cpu

    def counted(self, *args, **kwargs):
        calls.append(tuple(self.shape))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "cpu", counted)
    (scores,) = engine.align(encoded, [comp], settings, Runtime(pair_batch_size=8))
    monkeypatch.undo()
    assert len(calls) == 3 and all(shape == (len(cands),) for shape in calls)  # precision, recall, f1
    assert set(scores) == {"precision", "recall", "f1"}
