"""Learning the LM term's fixed scale and weight (alignscore.fit.lm) from training data."""

from __future__ import annotations

import csv
import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from alignscore.errors import ConfigError
from alignscore.fit import fit
from alignscore.fit.lm import OUTPUTS, WEIGHT_GRID, learn_lm_weight, lm_scale_of
from cli_checks import assert_one_error, invoke, write_toml
from helpers import SOURCE_LPS as LPS, counted_forward, daseg_with_candidate, write_daseg


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
    return write_daseg(tmp_path_factory.mktemp("daseg-lm"), LPS, N, sources=True)


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

    def scored(run: str) -> np.ndarray:
        code, stdout, stderr = invoke("score", "--config", out / run, "--format", "jsonl", "-q",
                                      "--sources", source_data / f"DAseg.newstest2016.source.{lp}",
                                      "-c", source_data / f"DAseg.newstest2016.mt-system.{lp}")
        assert code == 0, stderr
        return np.array([json.loads(line)["f1"] for line in stdout.splitlines() if line.strip()])

    fitted = [float(r["score"]) for r in csv.DictReader(open(out / "scores.csv", encoding="utf-8"))
              if r["lang_pair"] == lp]
    assert len(fitted) == N and np.allclose(scored(f"best.{lp[:2]}.toml"), fitted, atol=1e-6, rtol=0)
    assert not np.allclose(scored("best.toml"), fitted, atol=1e-4)  # best.toml: the run without the remapping


def test_the_python_fit_is_the_commands(lm_fit: tuple[Path, str, str], source_data: Path, tiny_bert_dir: str,
                                        tiny_gpt2_dir: str, remaps: Path) -> None:
    out, _, _ = lm_fit
    result = fit(source_data, against_sources=True, model=tiny_bert_dir, layer=2, lm=tiny_gpt2_dir,
                 lm_score="mean-logprob", remap=str(remaps), bootstrap=100, holdout=source_data)
    assert result.holdout == pytest.approx(result.in_sample, abs=1e-12)  # the same pairs, held out
    best = tomllib.loads((out / "best.toml").read_text(encoding="utf-8"))
    assert (result.term.lm_weight, result.term.lm_location, result.term.lm_scale) == pytest.approx(
        (best["lm_weight"], best["lm_location"], best["lm_scale"]), abs=1e-12)
    # the weight is the grid's best on the training pairs, the term standardised on them
    assert result.tried[result.term.lm_weight] == max(result.tried.values())
    assert result.in_sample["fitted"] >= result.in_sample["alignment"] - 1e-12


@pytest.mark.parametrize("case", ["not causal", "gguf", "unreadable", "references", "no lm", "learn"])
def test_what_a_fit_of_the_lm_term_cannot_use_is_one_line_and_nothing_is_written(
        case: str, tiny_bert_dir: str, tiny_gpt2_dir: str, word_level_lm_dir: str,
        tmp_path: Path) -> None:
    """Each as the flag, the Python keyword and the run file's key (``--from``) names it, before any
    text is encoded."""
    data = daseg_with_candidate(tmp_path, LPS, N, "de-en", 5, "zebras gallop")
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    lm, needle, sources = {
        "not causal": (tiny_bert_dir, "is not a causal language model", True),
        "gguf": (str(gguf), "model.gguf is a GGUF file: convert it to a Hugging Face folder", True),
        "unreadable": (word_level_lm_dir, "cannot read 2 of the texts (text 5: only unknown tokens)", True),
        "references": (tiny_gpt2_dir, "defined for scoring against sources only", False),
        "no lm": (None, "learns the weight of the language-model term: give one", True),
        "learn": (tiny_gpt2_dir, "applies to a fit against references", True)}[case]
    side = ["--sources"] if sources else []
    more = ["--learn", "temperature"] if case == "learn" else []
    where = "de-en: " if case == "unreadable" else ""
    flag = {"no lm": "--sources: ", "learn": "--learn: "}.get(case, f"{where}--lm: ")
    out = tmp_path / "out"
    with counted_forward() as calls:
        code, _, err = invoke("fit", "--data", data, "--model", tiny_bert_dir, *side, *more, "-q", "-o", out,
                              *(["--lm", lm] if lm else []), "--from", write_toml({"layer": 2}, tmp_path / "l2.toml"))
        line = assert_one_error(code, err, needle)
        assert line.startswith(f"alignscore: error: {flag}"), line
        keyword = {"no lm": "against_sources=: ", "learn": "learn=: "}.get(case, f"{where}lm=: ")
        with pytest.raises(ConfigError, match="^" + re.escape(keyword)) as info:
            fit(data, model=tiny_bert_dir, layer=2, against_sources=sources, output=out,
                **({"lm": lm} if lm else {}), **({"learn": "temperature"} if more else {}))
        assert needle in str(info.value)
        if lm is not None:
            run = write_toml({"model": tiny_bert_dir, "layer": 2, "lm": lm}, tmp_path / "run.toml")
            code, _, err = invoke("fit", "--data", data, *side, *more, "-q", "-o", out, "--from", run)
            line = assert_one_error(code, err, needle)
            assert re.search(r"run\.toml:\d+: lm: " if case not in ("learn",) else "--learn: ", line), line
    assert calls["n"] == 0 and not out.exists()
