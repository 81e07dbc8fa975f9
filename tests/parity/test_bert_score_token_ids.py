"""Fast tokenizers give exactly bert_score's token ids (its ``sent_encode``), on all of WMT16."""

from __future__ import annotations

import pytest

import alignscore
from helpers import needs

bert_score_utils = needs("bert_score.utils")

pytestmark = pytest.mark.reference


def _wmt_texts(wmt_data):
    texts = [t for lp in wmt_data.values() for kind in ("reference", "mt-system") for t in lp[kind]]
    return texts + ["  padded  ", "Ünïcödé — “quotes” and émojis 🙂", "tab\tseparated\twords"]


@pytest.mark.parametrize("use_fast", [False, True], ids=["bert_score-default", "bert_score-fast"])
def test_wordpiece_ids_equal_bert_score_sent_encode(wmt_data, minilm_dir, use_fast):
    texts = _wmt_texts(wmt_data)
    theirs_tok = bert_score_utils.get_tokenizer(minilm_dir, use_fast)
    ours = alignscore.HFEncoder(minilm_dir).tokenize(texts)
    theirs = [bert_score_utils.sent_encode(theirs_tok, t) for t in texts]
    mismatched = [i for i, (a, b) in enumerate(zip(ours.ids, theirs)) if a != b]
    assert not mismatched, f"{len(mismatched)} texts differ, e.g. {texts[mismatched[0]]!r}"


def test_byte_level_bpe_ids_have_bert_scores_prefix_space(wmt_data, tiny_roberta_dir):
    """bert_score encodes RoBERTa/GPT-2 input with ``add_prefix_space=True`` (the first word is
    tokenized like every other, "ĠThe"). transformers 5 ignores that argument of ``encode``, so
    bert_score 0.3.13 under transformers 5 loses the prefix space; we keep bert_score's
    intended ids: those of the text with a leading space, truncated to the model's limit."""
    texts = _wmt_texts(wmt_data)[::5]
    tok = bert_score_utils.get_tokenizer(tiny_roberta_dir, True)
    ours = alignscore.HFEncoder(tiny_roberta_dir).tokenize(texts)
    for text, ids in zip(texts, ours.ids):
        want = tok.encode(" " + text.strip(), add_special_tokens=True)
        if len(want) > tok.model_max_length:
            want = want[: tok.model_max_length - 1] + want[-1:]
        assert ids == want, text


def test_empty_text_is_the_special_tokens_alone(minilm_dir):
    """bert_score's ``sent_encode("")`` is ``build_inputs_with_special_tokens([])`` (which
    transformers 5's tokenizers no longer have): [CLS] [SEP]."""
    enc = alignscore.HFEncoder(minilm_dir)
    tok = enc.tokenize(["", "   "])
    assert tok.tokens == [["[CLS]", "[SEP]"]] * 2 and tok.special == [[True, True]] * 2
