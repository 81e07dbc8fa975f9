"""Learning the LM term's fixed scale and weight (alignscore.fit.lm) from training data."""

from __future__ import annotations

import csv
import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from alignscore.errors import ConfigError
from alignscore.fit import fit
from alignscore.fit.lm import OUTPUTS, WEIGHT_GRID, learn_lm_weight, lm_scale_of
from cli_checks import invoke, write_toml
from helpers import SOURCE_LPS as LPS, wmt16


def test_the_scale_is_the_pooled_training_candidates_mean_and_deviation() -> None:
    a, b = np.array([-5.0, -3.0, -4.0]), np.array([-2.0, -6.0])
    loc, scale = lm_scale_of([a, b])
    pooled = np.concatenate([a, b])
    assert (loc, scale) == pytest.approx((pooled.mean(), pooled.std()))
    with pytest.raises(ConfigError, match="at least two finite, different"):
        lm_scale_of([np.array([-3.0, -3.0])])


def test_the_weight_recovers_a_mix_and_prefers_the_smallest_of_ties() -> None:
    rng = np.random.default_rng(0)
    aligned = [rng.normal(0.5, 0.05, 200) for _ in range(3)]
    terms = [rng.normal(0, 1, 200) for _ in range(3)]
    human = [x + 0.04 * t + rng.normal(0, 0.01, 200) for x, t in zip(aligned, terms)]
    w, tried = learn_lm_weight(aligned, terms, human)
    assert abs(w - 0.04) <= 0.01 and tried[w] == max(tried.values()) and set(tried) == set(WEIGHT_GRID)
    # a constant term changes no |r|: every weight ties, the smallest (0) is kept
    assert learn_lm_weight(aligned, [np.ones(200)] * 3, human)[0] == 0.0
    with pytest.raises(ConfigError, match="the same language pairs"):
        learn_lm_weight(aligned, terms[:2], human)


# -- fit --sources --lm: the weight learned, the composition and its remapping fixed ---------------
N = 30


@pytest.fixture(scope="module")
def source_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DAseg folder of the source language pairs, 30 WMT16 segments each, with their sources."""
    folder = tmp_path_factory.mktemp("daseg-lm")
    for lp in LPS:
        files = wmt16(lp)
        for kind in ("reference", "mt-system", "human", "source"):
            (folder / f"DAseg.newstest2016.{kind}.{lp}").write_text("\n".join(files[kind][:N]) + "\n",
                                                                   encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def lm_fit(source_data: Path, tiny_bert_dir: str, tiny_gpt2_dir: str, remaps: Path,
           tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """``alignscore fit --sources --lm`` on the two pairs with a remapping per language: the output
    folder, stdout and stderr."""
    out = tmp_path_factory.mktemp("lm-fit") / "out"
    start = write_toml({"model": tiny_bert_dir, "layer": 2, "lm_score": "mean-logprob", "lm": tiny_gpt2_dir},
                       out.parent / "start.toml")
    code, stdout, stderr = invoke("fit", "--data", source_data, "--sources", "--from", start, "--remap", remaps,
                                  "--bootstrap", 100, "-q", "-o", out)
    assert code == 0, stderr
    return out, stdout, stderr


def test_fit_against_sources_learns_the_weight_and_writes_what_other_fits_write(lm_fit: tuple[Path, str, str]
                                                                              ) -> None:
    out, stdout, _ = lm_fit
    assert sorted(p.name for p in out.iterdir()) == sorted([*OUTPUTS, "best.de.toml", "best.ru.toml"])
    assert "fitted: held-out mean |r|" in stdout and "gain over alignment" in stdout
    best = tomllib.loads((out / "best.toml").read_text(encoding="utf-8"))
    assert "remap" not in best and best["lm_score"] == "mean-logprob" and best["lm_weight"] in WEIGHT_GRID
    folds = list(csv.DictReader(open(out / "folds.csv", encoding="utf-8")))
    assert [f["held_out"] for f in folds] == list(LPS)
    rows = list(csv.DictReader(open(out / "scores.csv", encoding="utf-8")))
    # each fold's location and scale are its training pair's candidates' (never the held-out pair's)
    for fold in folds:
        train = np.array([float(r["fluency"]) for r in rows if r["lang_pair"] != fold["held_out"] and r["fluency"]])
        assert (float(fold["lm_location"]), float(fold["lm_scale"])) == pytest.approx((train.mean(), train.std()))
    every = np.array([float(r["fluency"]) for r in rows if r["fluency"]])
    assert (best["lm_location"], best["lm_scale"]) == pytest.approx((every.mean(), every.std()))


@pytest.mark.parametrize("lp", LPS)
def test_score_with_the_written_run_file_gives_the_fits_scores(lm_fit: tuple[Path, str, str], source_data: Path,
                                                               lp: str) -> None:
    out, _, _ = lm_fit
    code, stdout, stderr = invoke("score", "--config", out / f"best.{lp[:2]}.toml", "--format", "jsonl", "-q",
                                  "--sources", source_data / f"DAseg.newstest2016.source.{lp}",
                                  "-c", source_data / f"DAseg.newstest2016.mt-system.{lp}")
    assert code == 0, stderr
    scored = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    fitted = [float(r["score"]) for r in csv.DictReader(open(out / "scores.csv", encoding="utf-8"))
              if r["lang_pair"] == lp]
    assert len(scored) == len(fitted) == N
    assert np.allclose([s["f1"] for s in scored], fitted, atol=1e-6, rtol=0)


def test_the_python_fit_is_the_commands(lm_fit: tuple[Path, str, str], source_data: Path, tiny_bert_dir: str,
                                        tiny_gpt2_dir: str, remaps: Path) -> None:
    out, _, _ = lm_fit
    result = fit(source_data, against_sources=True, model=tiny_bert_dir, layer=2, lm=tiny_gpt2_dir,
                 lm_score="mean-logprob", remap=str(remaps), bootstrap=100)
    best = tomllib.loads((out / "best.toml").read_text(encoding="utf-8"))
    assert (result.term.lm_weight, result.term.lm_location, result.term.lm_scale) == pytest.approx(
        (best["lm_weight"], best["lm_location"], best["lm_scale"]), abs=1e-12)
    # the weight is the grid's best on the training pairs, the term standardised on them
    assert result.tried[result.term.lm_weight] == max(result.tried.values())
    assert result.in_sample["fitted"] >= result.in_sample["alignment"] - 1e-12
