"""Tiny randomly initialised causal language models, built here (no download): a one-block GPT-2
with a byte-level BPE vocabulary trained on :data:`LM_TEXTS`, and the same kind of model with a
word-level vocabulary of a few English words (for texts its tokenizer cannot read). The fixtures
are the suite's (tests/conftest.py imports them)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

#: what the tiny LM's vocabulary is trained on (the tests' candidates among them)
LM_TEXTS = ["The people like foreign cars.", "Hello, world!", "a", "", "  it is a test  ",
            "Unbelievable; it's a test of the language model with a longer sentence than the others.",
            "the cat sat on the mat", "a dog ran in the park", "birds sing at dawn"]


def save_lm(out: Path, tokenizer, vocab_size: int) -> str:
    """A one-block GPT-2 (24 positions) of ``vocab_size`` tokens, seeded, saved with ``tokenizer``."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer.save_pretrained(out)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=vocab_size, n_layer=1, n_embd=32, n_head=2, n_positions=24, n_inner=64,
                        bos_token_id=0, eos_token_id=0)
    GPT2LMHeadModel(config).eval().save_pretrained(out)
    return str(out)


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A randomly initialised one-block GPT-2 with a byte-level BPE vocabulary trained here."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(LM_TEXTS * 3, trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", unk_token="<|endoftext|>")
    return save_lm(tmp_path_factory.mktemp("tiny-gpt2"), fast, tok.get_vocab_size())


@pytest.fixture(scope="session")
def word_level_lm_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The same kind of model with a word-level vocabulary of a few English words (and [UNK]),
    whose normaliser drops control characters."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["[UNK]", "[PAD]", "the", "people", "like", "cars", "."]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False,
                                                lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]")
    return save_lm(tmp_path_factory.mktemp("word-lm"), fast, len(words))
