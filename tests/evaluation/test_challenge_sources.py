"""``alignscore challenge --sources``: each item's good and bad candidates scored against its
``source`` field (reference-free), as ``alignscore.score(..., sources=...)`` scores them; items
without a source and compositions that need a reference refused in one line, nothing written."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

import alignscore
from cli_checks import assert_one_error, invoke
from helpers import wmt16

N = 12


@pytest.fixture(scope="module")
def items() -> list[dict[str, str]]:
    data = wmt16("de-en")
    out = []
    for k in range(N):  # good: the reference; bad: the MT output (a different translation of the source)
        good, bad = data["reference"][k], data["mt-system"][k]
        out.append({"ref": good, "good": good, "bad": bad, "category": "mt" if k % 2 else "other",
                    "source": data["source"][k], "lp": "de-en"})
    return out


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_items_are_scored_against_their_sources(items: list[dict[str, str]], tiny_bert_dir: str,
                                                tmp_path: Path) -> None:
    path = _write(tmp_path / "set.jsonl", items)
    out = tmp_path / "out.tsv"
    code, _, err = invoke("challenge", path, "--sources", "--model", tiny_bert_dir, "--layer", 2, "-o", out, "-q")
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    assert "refs:source" in text and "against their sources" in text
    rows = {r["category"]: r for r in csv.DictReader((ln for ln in text.splitlines() if not ln.startswith("#")),
                                                     delimiter="\t")}
    # every pair scored at once, as the set scores them (the same idf: here none)
    sources = [i["source"] for i in items]
    good = alignscore.score([i["good"] for i in items], sources=sources, model=tiny_bert_dir, layer=2).f1.numpy()
    bad = alignscore.score([i["bad"] for i in items], sources=sources, model=tiny_bert_dir, layer=2).f1.numpy()
    wins = good > bad + 1e-6
    assert (int(rows["all"]["n"]), int(rows["all"]["correct"])) == (N, int(wins.sum()))
    odd = np.arange(N) % 2 == 1
    assert int(rows["mt"]["correct"]) == int(wins[odd].sum()) and 0 < wins.sum() < N
    # against the references the numbers differ: the sources were scored
    code, _, err = invoke("challenge", path, "--model", tiny_bert_dir, "--layer", 2, "-o", tmp_path / "refs.tsv", "-q")
    assert code == 0, err
    assert "refs:source" not in (tmp_path / "refs.tsv").read_text(encoding="utf-8")


def test_what_cannot_be_scored_against_sources_is_one_line(items: list[dict[str, str]], tiny_bert_dir: str,
                                                           tmp_path: Path) -> None:
    out = tmp_path / "out.tsv"
    no_source = [dict(i) for i in items]
    del no_source[3]["source"]
    path = _write(tmp_path / "missing.jsonl", no_source)
    assert_one_error(*invoke("challenge", path, "--sources", "--model", tiny_bert_dir, "-o", out)[::2],
                     "missing.jsonl:4", "--sources", "no 'source' text")
    baseline = tmp_path / "b.csv"
    baseline.write_text("LAYER,P,R,F\n2,0.5,0.5,0.5\n", encoding="utf-8")
    path = _write(tmp_path / "set.jsonl", items)
    assert_one_error(*invoke("challenge", path, "--sources", "--model", tiny_bert_dir, "--layer", 2, "--baseline",
                             baseline, "-o", out)[::2], "--baseline", "not against sources")
    assert not out.exists()
