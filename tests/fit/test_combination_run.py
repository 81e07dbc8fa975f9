"""``alignscore fit --from A --from B``: the combination it writes reproduces its scores through
``score --config``, its leaderboard names every part, and bad input is one line, nothing written."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from cli_checks import assert_one_error, invoke, write_toml
from helpers import write_daseg

PAIRS = ("cs-en", "de-en")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("data")
    return write_daseg(folder, PAIRS, 30)


@pytest.fixture(scope="module")
def starts(tiny_bert_dir, tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("starts")
    return [write_toml({"model": tiny_bert_dir, "layer": 2}, folder / "a.toml"),
            write_toml({"model": tiny_bert_dir, "layer": 1, "aligner": "wmd"}, folder / "b.toml")]


@pytest.fixture(scope="module")
def fitted(data, starts, tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("fit") / "out"
    code, stdout, stderr = invoke("fit", "--data", data, "--from", starts[0], "--from", starts[1], "-o", out, "-q",
                                  "--bootstrap", "200")
    assert code == 0, stderr
    return out, stdout


def test_fit_writes_a_combination_that_score_config_reproduces(fitted, data) -> None:
    out, stdout = fitted
    assert "weights: a.toml" in stdout and "nested estimate" in stdout
    for name in ("best.toml", "scores.csv", "folds.csv", "leaderboard.md", "leaderboard.csv", "weights.png"):
        assert (out / name).is_file(), name
    want: dict[str, list[float]] = {}
    with open(out / "scores.csv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            want.setdefault(row["lang_pair"], []).append(float(row["combined"]))
    for lp in PAIRS:
        code, stdout, stderr = invoke("score", "--config", out / "best.toml", "-c",
                                      data / f"DAseg.newstest2016.mt-system.{lp}",
                                      "-r", data / f"DAseg.newstest2016.reference.{lp}", "--format", "jsonl", "-q")
        assert code == 0, stderr
        got = [json.loads(line)["combined"] for line in stdout.splitlines() if line.strip()]
        assert np.allclose(got, want[lp], rtol=0, atol=1e-6), lp
    board = (out / "leaderboard.md").read_text(encoding="utf-8")
    assert "| a.toml |" in board and "| b.toml |" in board and "| combination |" in board
    with open(out / "folds.csv", encoding="utf-8") as fh:
        assert sorted(row["held_out"] for row in csv.DictReader(fh)) == list(PAIRS)


@pytest.mark.slow  # a whole fit: out of the edit loop's tier, in CI's
def test_the_python_call_gives_the_cli_weights(fitted, data, starts) -> None:
    from alignscore.fit.combination_run import fit_combination

    result = fit_combination(data, starts, resamples=200)
    written = (fitted[0] / "best.toml").read_text(encoding="utf-8")
    assert f"weight = {result.weights.weights[0]!r}" in written


@pytest.mark.parametrize("extra, needles", [
    (["--learn", "temperature"], ["--learn", "combination"]),
    (["--pull", "-1"], ["--pull", ">= 0"]),
])
def test_bad_options_are_one_line(data, starts, tmp_path, extra, needles) -> None:
    out = tmp_path / "out"
    code, _, stderr = invoke("fit", "--data", data, "--from", starts[0], "--from", starts[1], "-o", out, *extra)
    assert_one_error(code, stderr, *needles)
    assert not out.exists()


def test_a_bad_part_is_named_by_its_place_and_file(data, starts, tiny_bert_dir, tmp_path) -> None:
    bad = write_toml({"model": tiny_bert_dir, "aligner": "wmd", "n_gram": 0}, tmp_path / "bad.toml")
    out = tmp_path / "out"
    code, _, stderr = invoke("fit", "--data", data, "--from", starts[0], "--from", bad, "-o", out)
    assert_one_error(code, stderr, "(run 1)", "bad.toml:3: n_gram")
    assert not out.exists()
    combo = write_toml({"parts": [{"weight": 1.0, "location": 0.0, "scale": 1.0, "model": tiny_bert_dir}]},
                       tmp_path / "combo.toml")
    code, _, stderr = invoke("fit", "--data", data, "--from", starts[0], "--from", combo, "-o", out)
    assert_one_error(code, stderr, "combo.toml (run 1)", "a combination")
    code, _, stderr = invoke("fit", "--data", data, "--from", starts[0], "--pull", "0.5", "-o", out)
    assert_one_error(code, stderr, "--pull")
    assert not out.exists()


def test_a_part_on_the_other_side_is_refused_by_its_place(data, starts, tiny_bert_dir, tmp_path) -> None:
    lm = write_toml({"model": tiny_bert_dir, "layer": 2, "lm": tiny_bert_dir}, tmp_path / "lm.toml")
    out = tmp_path / "out"
    code, _, stderr = invoke("fit", "--data", data, "--from", starts[0], "--from", lm, "-o", out)
    assert_one_error(code, stderr, "lm.toml", "lm")
    assert not out.exists()
