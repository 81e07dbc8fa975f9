"""``alignscore compare``: the wiring of the statistics (values equal the stats functions on the
two compositions' scores), one encoding for both sides, --data over language pairs, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from alignscore import run_spec
from alignscore.encoders.huggingface import HFEncoder
from alignscore.evaluation.stats import (bootstrap_r_difference, correlation, permutation_r_difference,
                                         williams_test)
from alignscore.scorer import Scorer
from cli_checks import assert_one_error, invoke
from helpers import counted_forward, write_daseg, wmt16

N = 30


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_daseg(tmp_path_factory.mktemp("daseg"), ("de-en", "ru-en"), N)


def _files(data_dir: Path, lp: str) -> list[object]:
    return ["-r", data_dir / f"DAseg.newstest2016.reference.{lp}", "-c", data_dir / f"DAseg.newstest2016.mt-system.{lp}",
            "--human", data_dir / f"DAseg.newstest2016.human.{lp}"]


def _rows(stdout: str) -> list[list[str]]:
    lines = [ln for ln in stdout.splitlines() if not ln.startswith("#")]
    return [ln.split("\t") for ln in lines[1:]]


def test_compare_reports_the_statistics_of_both_compositions(data_dir: Path, tiny_bert_dir: str) -> None:
    with counted_forward() as calls:
        code, out, err = invoke("compare", *_files(data_dir, "de-en"), "--model", tiny_bert_dir, "--layer", 2,
                                "--batch-size", 8, "--a", "--aligner wmd --n-gram 2", "--b", "--layer 3",
                                "--bootstrap", 300, "--permutations", 500, "--seed", 3, "-q")
    assert code == 0, err
    texts = wmt16("de-en")
    assert calls["n"] == -(-len({t.strip() for t in texts["reference"][:N] + texts["mt-system"][:N]}) // 8)
    (row,) = _rows(out)
    encoder = HFEncoder(tiny_bert_dir)
    human = np.array([float(x) for x in texts["human"][:N]])
    a = Scorer(encoder, run_spec({"layer": 2, "aligner": {"name": "wmd", "n_gram": 2}}).composition).score(
        texts["mt-system"][:N], texts["reference"][:N]).score.double().numpy()
    b = Scorer(encoder, run_spec({"layer": 3}).composition).score(texts["mt-system"][:N], texts["reference"][:N]).f1.double().numpy()
    ra, rb, rab = correlation(a, human)[0], correlation(b, human)[0], correlation(a, b)[0]
    assert row[:2] == ["all", str(N)]
    assert float(row[2]) == pytest.approx(abs(ra), abs=1e-6) and float(row[3]) == pytest.approx(abs(rb), abs=1e-6)
    assert float(row[4]) == pytest.approx(abs(ra) - abs(rb), abs=1e-6)
    _, p = williams_test(abs(ra), abs(rb), rab * np.sign(ra) * np.sign(rb), N)
    assert float(row[5]) == pytest.approx(2 * min(p, 1 - p), rel=1e-3)
    boot = bootstrap_r_difference(a, b, human, resamples=300, seed=3)
    assert [float(row[6]), float(row[7])] == pytest.approx([boot.low, boot.high], abs=1e-6)
    assert float(row[8]) == pytest.approx(boot.p_value, rel=1e-3)
    assert float(row[9]) == pytest.approx(permutation_r_difference(a, b, human, resamples=500, seed=3).p_value,
                                          rel=1e-3)
    assert "# A: " in out and "wmd" in out.splitlines()[0] and "# B: " in out


def test_compare_over_a_daseg_folder(data_dir: Path, tiny_bert_dir: str) -> None:
    args = ["--model", tiny_bert_dir, "--layer", 2, "--a", "--aligner wmd", "--b", "bertscore", "--bootstrap", 100,
            "--permutations", 100, "-q"]
    code, out, err = invoke("compare", "--data", data_dir, *args)
    assert code == 0, err
    rows = _rows(out)
    assert [r[0] for r in rows] == ["de-en", "ru-en"]
    code, single, err = invoke("compare", *_files(data_dir, "ru-en"), *args)
    assert code == 0, err
    assert _rows(single)[0][1:] == rows[1][1:]


@pytest.mark.parametrize("args, needle", [
    ([], "either"),
    (["-c", "x.txt"], "-r REF"),
    (["--data", "DATA", "--human", "h.txt"], "no -r or --human"),
])
def test_compare_needs_one_kind_of_input(data_dir: Path, tiny_bert_dir: str, args: list[str], needle: str) -> None:
    args = [str(data_dir) if a == "DATA" else a for a in args]
    code, _, err = invoke("compare", *args, "--model", tiny_bert_dir, "--a", "bertscore", "--b", "--layer 2", "-q")
    assert_one_error(code, err, needle)


def test_compare_refuses_a_composition_with_constant_scores(tmp_path: Path, data_dir: Path, tiny_bert_dir: str) -> None:
    same = tmp_path / "same.txt"
    same.write_text("the cat\n" * N, encoding="utf-8")
    code, _, err = invoke("compare", "-r", same, "-c", same, "--human", data_dir / "DAseg.newstest2016.human.de-en",
                          "--model", tiny_bert_dir, "--layer", 2, "--a", "--aligner wmd", "--b", "--layer 3", "-q")
    assert_one_error(code, err, "composition A", "undefined")
