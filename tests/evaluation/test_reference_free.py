"""``alignscore challenge --sources --remap``: a file, or a folder of ``<lang>.remap`` files
chosen by each item's ``lp``, as ``tune --sources --challenge`` takes it (the same functions):
each language's items score as a run of that language's items with its one file does; what
cannot serve is one error line naming ``--remap`` before any text is encoded, nothing written.
Tiny local model; 12 WMT16 items each of de-en and ru-en."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import alignscore
from alignscore.cli.options import FLAGS
from alignscore.config import compile_labelled, plan_runs, sources_of
from alignscore.encoders.huggingface import HFEncoder
from alignscore.evaluation.challenge import read_items
from alignscore.evaluation.challenge_report import remap_option
from alignscore.evaluation import reference_free
from alignscore.evaluation.reference_free import challenge_remaps, remapped_item_scores
from alignscore.remap import Remapping, model_digest, save_remapping
from cli_checks import assert_one_error, invoke
from helpers import SOURCE_LPS as LPS, counted_forward, source_challenge_set

OPTIONS = ("--sources", "--layer", 2, "--a", "--aligner greedy", "--b", "--aligner wmd --n-gram 1")


def _rows(path: Path, tiny_bert_dir: str, *options: object) -> dict[tuple[str, str], dict[str, object]]:
    """``challenge --sources`` rows (jsonl, by lp) keyed by composition and lp (``all``: every lp)."""
    code, stdout, err = invoke("challenge", path, "--model", tiny_bert_dir, *OPTIONS, "--format", "jsonl", "--by",
                               "lp", "-q", *options)
    assert code == 0, err
    return {(r["composition"], r["lp"]): r for r in map(json.loads, stdout.splitlines()) if r["category"] == "all"}


def test_a_folder_remaps_each_item_by_its_language(remaps: Path, tiny_bert_dir: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    both = source_challenge_set(tmp_path / "set.jsonl", LPS)
    rows = _rows(both, tiny_bert_dir, "--remap", remaps)
    digests = {lp[:2]: alignscore.remap.load_remapping(remaps / f"{lp[:2]}.remap").digest() for lp in LPS}
    for lp in LPS:  # each language's items: as challenge of those items alone with that language's file
        alone = _rows(source_challenge_set(tmp_path / f"{lp}.jsonl", (lp,)), tiny_bert_dir, "--remap",
                      remaps / f"{lp[:2]}.remap")
        for name in ("A", "B"):
            mine, theirs = rows[(name, lp)], alone[(name, lp)]
            assert (mine["correct"], mine["n"]) == (theirs["correct"], theirs["n"]) and mine["n"] == 12
            assert mine["accuracy"] == pytest.approx(theirs["accuracy"], abs=1e-12)
            assert f"remap:{digests[lp[:2]]}|" in theirs["signature"]
    # the signature says which remapping scored which language
    assert "remap:de={de},ru={ru}|".format(**digests) in rows[("A", LPS[0])]["signature"]
    # --dedupe drops a repeated item (its remapping with it): the same numbers
    repeated = tmp_path / "repeated.jsonl"
    lines = both.read_text(encoding="utf-8").splitlines(keepends=True)
    repeated.write_text("".join(lines[:13] + lines[12:13] + lines[13:]), encoding="utf-8")
    calls: list[int] = []
    real = reference_free.item_scores
    monkeypatch.setattr(reference_free, "item_scores", lambda scorers, *args: calls.append(len(scorers)) or real(
        scorers, *args))
    again = _rows(repeated, tiny_bert_dir, "--remap", remaps, "--dedupe")
    assert calls == [2]  # A and B, of one remapping option, still scored together
    assert all((again[k]["correct"], again[k]["n"]) == (rows[k]["correct"], rows[k]["n"]) for k in rows)
    # the remappings were applied: without them some count differs
    plain = _rows(both, tiny_bert_dir)
    assert any(plain[(n, lp)]["correct"] != rows[(n, lp)]["correct"] for n in ("A", "B") for lp in LPS)


def test_per_item_scores_are_each_languages_remapped_scores(remaps: Path, tiny_bert_dir: str,
                                                            tmp_path: Path) -> None:
    path = source_challenge_set(tmp_path / "set.jsonl", LPS)
    items = read_items(path)
    opts, remap = remap_option({"model": tiny_bert_dir, "layer": 2, "remap": str(remaps)}, True, FLAGS)
    runs = [compile_labelled(sources_of(opts, FLAGS))]
    chosen = challenge_remaps(runs, items, remap, str(path))
    assert remap is not None and remap[1] == "--remap" and chosen[0] is not None and len(chosen[0]) == len(items)
    ((signature, good, bad),) = remapped_item_scores(plan_runs(runs, sources=True).scorers(), items, True, chosen)
    assert "refs:source" in signature
    for lp in LPS:
        idx = [k for k, item in enumerate(items) if item.extra("lp") == lp]
        sources = [items[k].extra("source") for k in idx]
        for mine, side in ((good, "good"), (bad, "bad")):
            theirs = alignscore.score([getattr(items[k], side) for k in idx], sources=sources, model=tiny_bert_dir,
                                      layer=2, remap=str(remaps / f"{lp[:2]}.remap")).f1.double().numpy()
            np.testing.assert_allclose(mine[idx], theirs, atol=1e-6)


def _refused(tmp_path: Path, path: Path, *args: object) -> str:
    out = tmp_path / "out.tsv"
    with counted_forward() as calls:
        code, _, err = invoke("challenge", path, *OPTIONS, "-o", out, *args)
    assert calls["n"] == 0 and not out.exists()  # before any text is encoded; nothing written
    line = assert_one_error(code, err)
    assert "--remap" in line
    return line


def test_what_a_remapping_cannot_serve_is_one_line(remaps: Path, tiny_bert_dir: str, tmp_path: Path) -> None:
    both = source_challenge_set(tmp_path / "set.jsonl", LPS)
    model = ("--model", tiny_bert_dir)
    # an item without its language pair, with a folder: named by its file and line
    rows = [json.loads(line) for line in both.read_text(encoding="utf-8").splitlines()]
    del rows[4]["lp"]
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    line = _refused(tmp_path, bare, *model, "--remap", remaps)
    assert "bare.jsonl:5" in line and "'lp'" in line
    # a language without a file in the folder
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "de.remap").write_bytes((remaps / "de.remap").read_bytes())
    line = _refused(tmp_path, both, *model, "--remap", partial)
    assert "no remapping for source language ru" in line and "ru.remap" in line
    # one file learned for another language than some items'
    assert "learned for source language de, not ru" in _refused(tmp_path, both, *model, "--remap",
                                                                 remaps / "de.remap")
    # a remapping of another layer than the runs' (layer 2)
    other = tmp_path / "layer3"
    other.mkdir()
    for lang in ("de", "ru"):
        save_remapping(Remapping("umd", torch.eye(32, dtype=torch.float64)[0], tiny_bert_dir,
                                 model_digest(HFEncoder(tiny_bert_dir)), 3, lang, 10), other / f"{lang}.remap")
    assert "layer 3, not" in _refused(tmp_path, both, *model, "--remap", other)
    # an output that is one of the folder's remappings (an input): refused, the file untouched
    before = (remaps / "de.remap").read_bytes()
    code, _, err = invoke("challenge", both, *OPTIONS, *model, "--remap", remaps, "-o", remaps / "de.remap")
    assert_one_error(code, err) and (remaps / "de.remap").read_bytes() == before
    # no such file or folder
    assert "no such file or folder" in _refused(tmp_path, both, *model, "--remap", tmp_path / "nothing")
