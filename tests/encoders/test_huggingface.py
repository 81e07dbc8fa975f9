"""The Hugging Face encoder's signature: a local folder is pinned by its files' fingerprint (other
weights saved in its place change it), at most one hashing per file and process; a hub id or a
packaged name is shown as it is."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

import alignscore
from alignscore.encoders import fingerprint
from alignscore.encoders.huggingface import HFEncoder
from alignscore.cli.options import FLAGS


def test_a_local_folders_signature_pins_its_weights(tiny_bert_dir: str, tmp_path: Path) -> None:
    from transformers import BertModel

    folder = shutil.copytree(tiny_bert_dir, tmp_path / "model")
    args = dict(cands=["a cat sat on the mat"], refs=["the cat sat"], model=str(folder), layer=2)
    before = alignscore.score(**args)
    digest = fingerprint.directory_fingerprint(folder)[:12]
    assert str(before.signature).startswith(f"model:{folder}#{digest}|layers:L2|")
    model = BertModel.from_pretrained(folder)
    with torch.no_grad():
        model.embeddings.word_embeddings.weight.mul_(-1.0)  # other weights saved in its place
    model.save_pretrained(folder)
    after = alignscore.score(**args)
    assert after.f1.tolist() != before.f1.tolist()
    a, b = after.signature.fields, before.signature.fields
    assert [k for k in a if a[k] != b[k]] == ["model"]


def test_the_digest_is_hashed_once_per_file_and_process(tiny_bert_dir: str) -> None:
    first = HFEncoder(tiny_bert_dir).signature()
    misses = fingerprint._hashed.cache_info().misses
    assert HFEncoder(tiny_bert_dir).signature() == first  # another encoder of the same folder
    assert fingerprint._hashed.cache_info().misses == misses


def test_a_hub_id_or_packaged_name_is_shown_as_it_is() -> None:
    assert HFEncoder("all-MiniLM-L6-v2").signature() == "all-MiniLM-L6-v2"
    assert HFEncoder("roberta-large", revision="abc").signature() == "roberta-large@abc"


def test_with_a_cache_a_rerun_hashes_nothing(tiny_bert_dir: str, tmp_path: Path) -> None:
    from alignscore.cache import EmbeddingCache
    from alignscore.encoders.cached import CachedEncoder

    folder = shutil.copytree(tiny_bert_dir, tmp_path / "model")
    (tmp_path / "cache").mkdir()  # as a run that encoded leaves it
    first = CachedEncoder(HFEncoder(str(folder)), EmbeddingCache(tmp_path / "cache")).signature()
    fingerprint._hashed.cache_clear()  # as a new process: only the cache's memo remembers
    again = CachedEncoder(HFEncoder(str(folder)), EmbeddingCache(tmp_path / "cache")).signature()
    assert again == first and fingerprint._hashed.cache_info().misses == 0


def test_truncation_names_long_texts_as_the_caller_does(tiny_bert_dir: str) -> None:
    long = " ".join(["word"] * 200)
    with pytest.warns(UserWarning, match=r"truncated to the model's limit \(long_texts= window encodes them whole\)"):
        HFEncoder(tiny_bert_dir).tokenize([long])
    from alignscore.config import compile_labelled, sources_of

    spec = compile_labelled(sources_of({"model": tiny_bert_dir, "layer": "2"}, FLAGS)).spec
    with pytest.warns(UserWarning, match=r"\(--long-texts window encodes them whole\)"):
        alignscore.build(spec).encoder.tokenize([long])  # a run from the command line
