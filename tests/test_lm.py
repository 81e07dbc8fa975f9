"""The target-side language-model term (alignscore.lm): the reference's score of a text, computed
from a tiny random GPT-2 built here, checked against the model's own loss and logits; batching
changes nothing; texts the LM's tokenizer cannot read are one clear error."""

from __future__ import annotations

import math
import pytest
import torch

from alignscore.errors import ConfigError, ModelLoadError
from alignscore.lm import CausalLM, reference_score
from tiny_lm import LM_TEXTS

TEXTS = LM_TEXTS[:6]


def _direct(lm_dir: str, text: str) -> tuple[float, float, int]:
    """(the reference's own computation from the model's loss, the summed log-probability from the
    logits one token at a time, the number of tokens) of one text, unbatched."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(lm_dir)
    model = AutoModelForCausalLM.from_pretrained(lm_dir).eval()
    ids = tok(text.strip(), add_special_tokens=False)["input_ids"][:24]
    if len(ids) <= 1:
        return 0.0, 0.0, len(ids)
    input_ids = torch.tensor([ids])
    with torch.no_grad():
        out = model(input_ids, labels=input_ids)
    reference = (1 / math.exp(out.loss.item())) ** (1 / input_ids.shape[1])  # score_utils_2.lm_perplexity
    logp = torch.log_softmax(out.logits[0].double(), -1)
    total = sum(float(logp[t, ids[t + 1]]) for t in range(len(ids) - 1))
    return reference, total, len(ids)


def test_the_score_is_the_reference_computation(tiny_gpt2_dir):
    lm = CausalLM(tiny_gpt2_dir, device_name="cpu", batch_size=4)
    scores = lm.score(TEXTS)
    sums, lengths = lm.log_likelihoods(TEXTS)
    assert scores.dtype == torch.float64 and scores.shape == (len(TEXTS),)
    for i, text in enumerate(TEXTS):
        reference, total, n = _direct(tiny_gpt2_dir, text)
        assert int(lengths[i]) == n
        assert float(scores[i]) == pytest.approx(reference, abs=1e-6), text
        if n >= 2:
            assert float(sums[i]) == pytest.approx(total, abs=1e-4)
            assert 0 < float(scores[i]) <= 1
    assert float(scores[3]) == 0.0  # the empty text: 0, as in the reference
    assert lengths[-1] == 24  # the longest text cut to the model's context (its first tokens)


def test_batching_changes_nothing_and_runs_are_deterministic(tiny_gpt2_dir):
    one = CausalLM(tiny_gpt2_dir, device_name="cpu", batch_size=1).score(TEXTS)
    many = CausalLM(tiny_gpt2_dir, device_name="cpu", batch_size=8)
    assert torch.allclose(one, many.score(TEXTS), atol=1e-6)
    assert torch.equal(many.score(TEXTS), many.score(TEXTS))
    assert torch.allclose(many.score(TEXTS[::-1]), many.score(TEXTS).flip(0), atol=1e-6)


def test_reference_score_formula():
    assert reference_score(-6.0, 4) == pytest.approx(math.exp(-2.0 / 4))
    assert reference_score(-1.0, 1) == 0.0 and reference_score(0.0, 0) == 0.0


@pytest.mark.parametrize("text, needle", [("zebras gallop", "text 2: only unknown tokens"),
                                          ("\x07\x08", "text 2: no tokens")])
def test_texts_the_tokenizer_cannot_read_are_one_clear_error(word_level_lm_dir, text, needle):
    lm = CausalLM(word_level_lm_dir, device_name="cpu")
    assert lm.score(["the people like cars .", ""]).shape == (2,)  # readable, and empty: fine
    with pytest.raises(ConfigError, match="cannot read 1 of the texts") as info:
        lm.score(["the people like cars", text])
    assert needle in str(info.value) and "\n" not in str(info.value) and info.value.options == ("lm",)


def test_a_model_that_cannot_be_loaded_is_one_clear_error(tmp_path):
    with pytest.raises(ModelLoadError, match="cannot load the language model"):
        CausalLM(str(tmp_path), device_name="cpu").score(["a text"])
    with pytest.raises(ConfigError, match="lm must name"):
        CausalLM(" ")
    with pytest.raises(ConfigError, match="batch_size"):
        CausalLM("gpt2", batch_size=0)
