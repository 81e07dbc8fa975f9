"""The tokenizer saved in the export folder: it splits every text as transformers' tokenizer does,
a later process scores without importing transformers, and a damaged, stale or unfaithful file is
never used."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import warnings

import pytest

import alignscore
from alignscore.encoders import fingerprint as fingerprint_module
from alignscore.encoders import saved_tokenizer
from alignscore.encoders.saved_tokenizer import CHECK_TEXTS

ODD_TEXTS = ["", "   ", "A" * 300, "Ünïcödé ÀÉÎ ß ﬁ ligature", "x\u200by zero width", "中文字符和日本語", "a\u00a0b"]


def _model(name, tiny_bert_dir, tiny_roberta_dir, minilm_dir):
    return {"bert": tiny_bert_dir, "roberta": tiny_roberta_dir, "minilm": minilm_dir}[name]


def _fields(tok):
    return tok.ids, tok.special, tok.word_start, tok.tokens, tok.surface, tok.truncated


@pytest.mark.parametrize("name", ["bert", "roberta", "minilm"])
def test_the_saved_tokenizer_splits_every_text_as_transformers_does(name, wmt_data, tiny_bert_dir, tiny_roberta_dir,
                                                                      minilm_dir, tmp_path):
    path = _model(name, tiny_bert_dir, tiny_roberta_dir, minilm_dir)
    texts = wmt_data["de-en"]["reference"][:50] + wmt_data["ru-en"]["mt-system"][:50] + list(CHECK_TEXTS) + ODD_TEXTS
    built = alignscore.HFEncoder(path, export_dir=str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tiny models' limit truncates some texts (compared below)
        want = built.tokenize(texts)  # through transformers; saved
    assert built._tok is not None and len(list(tmp_path.glob("*.tokenizer.json"))) == 1
    read = alignscore.HFEncoder(path, export_dir=str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = read.tokenize(texts)
    assert read._tok is None  # transformers' tokenizer was never built
    assert _fields(got) == _fields(want)
    facts = ("num_layers", "vocab_size", "pad_id", "model_max_length")
    assert [getattr(read, f) for f in facts] == [getattr(built, f) for f in facts]
    assert read._special_ends() == built._special_ends()
    capped = alignscore.HFEncoder(path, export_dir=str(tmp_path), max_length=20)
    assert capped.model_max_length == 20 and capped._tok is None  # the user's limit applies to the saved one


@pytest.mark.parametrize("name", ["bert", "roberta"])
def test_a_warm_process_never_imports_transformers(name, wmt_data, tiny_bert_dir, tiny_roberta_dir, tmp_path):
    """The first process saves the trace and the tokenizer; the next one scores with neither the
    transformers model nor its tokenizer, so transformers is never imported, and gets the same
    numbers."""
    path = _model(name, tiny_bert_dir, tiny_roberta_dir, None)
    cands, refs = wmt_data["de-en"]["mt-system"][:12], wmt_data["de-en"]["reference"][:12]
    env = {**os.environ, "ALIGNSCORE_EXPORT_DIR": str(tmp_path)}
    script = (
        "import json, sys, warnings, alignscore\n"
        "warnings.simplefilter('ignore')\n"
        f"s = alignscore.bertscore({path!r}, layer=2)\n"
        f"f1 = s.score({cands!r}, {refs!r})['f1'].tolist()\n"
        "print(json.dumps({'f1': f1, 'transformers': 'transformers' in sys.modules}))\n")
    first, second = (json.loads(subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                                               text=True, check=True).stdout) for _ in range(2))
    assert first["transformers"] is True and second["transformers"] is False
    assert second["f1"] == first["f1"]


@pytest.mark.parametrize("damage", ["garbage", "other transformers", "other format", "empty"])
def test_a_damaged_or_stale_file_is_made_again(damage, tiny_bert_dir, tmp_path):
    text = "Unbelievable; it's a test."
    want = alignscore.HFEncoder(tiny_bert_dir, export_dir=str(tmp_path)).tokenize([text])
    (saved,) = tmp_path.glob("*.tokenizer.json")
    data = json.loads(saved.read_text(encoding="utf-8"))
    if damage == "garbage":
        saved.write_bytes(b"\x00not json")
    elif damage == "empty":
        saved.write_text("", encoding="utf-8")
    elif damage == "other transformers":
        saved.write_text(json.dumps({**data, "versions": {**data["versions"], "transformers": "0.0.1"}}),
                         encoding="utf-8")
    else:
        saved.write_text(json.dumps({**data, "format": 999}), encoding="utf-8")
    again = alignscore.HFEncoder(tiny_bert_dir, export_dir=str(tmp_path))
    assert _fields(again.tokenize([text])) == _fields(want)
    assert again._tok is not None  # built through transformers, and saved afresh
    assert json.loads(saved.read_text(encoding="utf-8")) == data


def test_a_tokenizer_that_does_not_read_back_the_same_is_not_saved(tiny_bert_dir, tmp_path, monkeypatch):
    calls = iter(range(100))
    monkeypatch.setattr(saved_tokenizer, "_splits", lambda backend: next(calls))  # never equal twice
    enc = alignscore.HFEncoder(tiny_bert_dir, export_dir=str(tmp_path))
    assert enc.tokenize(["a test"]).ids
    assert not list(tmp_path.glob("*.tokenizer.json"))
    assert alignscore.HFEncoder(tiny_bert_dir, export_dir=str(tmp_path)).tokenize(["a test"]).ids == enc.tokenize(
        ["a test"]).ids


def test_changed_tokenizer_files_are_not_read_from_an_old_save(tiny_bert_dir, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(tiny_bert_dir, model)
    exports = tmp_path / "exports"
    lower = alignscore.HFEncoder(str(model), export_dir=str(exports)).tokenize(["HELLO World"]).tokens
    spec = json.loads((model / "tokenizer.json").read_text(encoding="utf-8"))
    spec["normalizer"]["lowercase"] = False
    (model / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    cased = alignscore.HFEncoder(str(model), export_dir=str(exports)).tokenize(["HELLO World"]).tokens
    assert lower == [["[CLS]", "hel", "##lo", "world", "[SEP]"]] and cased != lower  # upper case: unknown now
    assert len(list(exports.glob("*.tokenizer.json"))) == 2


def test_model_file_digests_are_remembered_in_the_export_folder(tiny_bert_dir, tmp_path, monkeypatch):
    model = tmp_path / "model"
    shutil.copytree(tiny_bert_dir, model)
    hashed = []
    real = hashlib.sha256

    class Counting:
        @staticmethod
        def sha256(*args):
            hashed.append(1)
            return real(*args)

    monkeypatch.setattr(fingerprint_module, "hashlib", Counting)
    first = alignscore.HFEncoder(str(model), export_dir=str(tmp_path / "x")).fingerprint()
    files = sum(1 for p in model.iterdir() if p.is_file())
    assert len(hashed) == files + 1  # every file, then the directory
    hashed.clear()
    assert alignscore.HFEncoder(str(model), export_dir=str(tmp_path / "x")).fingerprint() == first
    assert len(hashed) == 1  # only the directory digest: the files' digests were remembered
    with open(model / "config.json", "a", encoding="utf-8") as fh:
        fh.write("\n")
    hashed.clear()
    assert alignscore.HFEncoder(str(model), export_dir=str(tmp_path / "x")).fingerprint() != first
    assert len(hashed) == 2  # the changed file again, and the directory
