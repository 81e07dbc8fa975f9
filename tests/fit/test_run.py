"""``alignscore fit`` and ``alignscore.fit``: a fitted run file reproduces the fit's scores, the
fit is deterministic and never worse on its inner fold than its start, the differentiable path
equals the engine, and bad input is one line with nothing written."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
import torch

import alignscore
from alignscore.config import run_spec
from alignscore.errors import ConfigError, InputError
from alignscore.fit import FitOptions, Values, extract, scores_of
from alignscore.evaluation.wmt import load_daseg
from cli_checks import assert_one_error, assert_score_config_reproduces, invoke, write_toml
from helpers import write_daseg

PAIRS = ("cs-en", "de-en")  # the language pairs of the data fixture (conftest.py)


@pytest.mark.slow  # whole fits with nested cross-validation: out of the edit loop's tier, in CI's
def test_score_config_best_toml_reproduces_the_fit(start, data, tmp_path) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = invoke("fit", "--data", data, "--from", start, "--steps", "4", "-o", out, "-q")
    assert code == 0, stderr
    assert "fitted: held-out mean |r|" in stdout and "start: held-out mean |r|" in stdout
    for name in ("best.toml", "scores.csv", "folds.csv", "leaderboard.md", "leaderboard.csv", "layer_weights.png"):
        assert (out / name).is_file(), name
    with open(out / "folds.csv", encoding="utf-8") as fh:
        assert sorted(row["held_out"] for row in csv.DictReader(fh)) == list(PAIRS)
    assert_score_config_reproduces(out, data, PAIRS)


@pytest.mark.slow  # whole fits with nested cross-validation: out of the edit loop's tier, in CI's
def test_fit_is_deterministic_and_never_worse_inside_than_its_start(start, data) -> None:
    one = alignscore.fit(data, start=start, steps=6, seed=3)
    two = alignscore.fit(data, start=start, steps=6, seed=3)
    assert one.values == two.values
    assert one.final.inner_best >= one.final.inner_start
    assert one.estimate is not None and set(one.intervals) == {"fitted", "start", "gain"}
    for i in one.intervals.values():
        assert i.low <= i.estimate <= i.high or math.isclose(i.low, i.high)
    assert one.spec.composition.aggregator.layers == one.layers


def test_differentiable_scores_equal_the_engine(tiny_bert_dir, data) -> None:
    spec = run_spec({"model": tiny_bert_dir, "layer": 2, "weighting": "idf-S"})
    scorer = alignscore.build(spec)
    pairs = load_daseg(data)
    features = extract(scorer, scorer.resolved(), pairs, (1, 2, 3))
    values = Values((0.3, -0.2, 0.5), temperature=0.05, idf_power=0.7, beta=2.0, punct_weight=0.5,
                    stopword_weight=0.25, subword_weight=2.0, metric="fbeta")
    ours = scores_of(features, values)
    engine = alignscore.build(run_spec({"model": tiny_bert_dir, "aggregator": "mix", "layers": [1, 2, 3],
                                        "mix_weights": [0.3, -0.2, 0.5], "temperature": 0.05, "weighting": "idf-S",
                                        "idf_power": 0.7, "beta": 2.0, "metric": "fbeta", "punct_weight": 0.5,
                                        "stopword_weight": 0.25, "subword_weight": 2.0}))
    for lp, got in zip(pairs, ours):
        want = engine.score(lp.candidates, lp.references)["fbeta"]
        assert torch.allclose(got, want.double(), atol=1e-6)
    exact = scores_of(features, Values((-math.inf, math.inf, -math.inf)))
    single = scorer.score(pairs[0].candidates, pairs[0].references)["f1"]
    assert torch.allclose(exact[0], single.double(), atol=1e-6)


def test_one_language_pair_fits_but_refuses_the_estimate(start, tmp_path) -> None:
    data = write_daseg(tmp_path, ("cs-en",), 30)
    out = tmp_path / "out"
    code, stdout, stderr = invoke("fit", "--data", data, "--from", start, "--steps", "2", "-o", out, "-q")
    assert code == 0, stderr
    assert "no cross-validation" in stderr and "no estimate" in stderr and "held-out" not in stdout
    assert (out / "best.toml").is_file()


def _edit(data: Path, kind: str, lp: str, lines: list[str]) -> None:
    (data / f"DAseg.newstest2016.{kind}.{lp}").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("case, needles", [
    ("constant", ["every human score is"]),
    ("nan", ["not a finite number"]),
    ("few", ["29 segments", "at least 30"]),
    ("lines", ["lines but the reference file has"]),
    ("from-pmeans", ["start.toml", "aggregator", "single or mix"]),
    ("from-baryscore", ["aligner", "greedy, wmd or sinkhorn"]),
    ("learn-unknown", ["--learn: layer: not a setting the fit learns"]),
    ("learn-idf", ["--learn: idf_power: ", "idf-S or idf-L"]),
    ("learn-special", ["--learn: special_weight: ", "special_tokens keep"]),
    ("empty-reference", ["DAseg.newstest2016.reference.cs-en:5: ", "an empty reference"]),
    ("pairs-twice", ["--lang-pairs: de-en is named twice"]),
    ("steps", ["--steps: expected an integer >= 1, not 0"]),
    ("memory", ["--max-memory", "more than 0.00 GiB", "mix fewer layers"]),
    ("from-classes", ["weighting", "token-class weights"]),
])
def test_bad_input_is_one_line_and_nothing_written(tiny_bert_dir, tmp_path, case, needles) -> None:
    data = write_daseg(tmp_path, PAIRS, 30)
    human = (data / "DAseg.newstest2016.human.cs-en").read_text(encoding="utf-8").splitlines()
    options = {"model": tiny_bert_dir, "layer": 2}
    extra: list[str] = []
    if case == "constant":
        _edit(data, "human", "cs-en", ["0.5"] * len(human))
    elif case == "nan":
        _edit(data, "human", "cs-en", human[:-1] + ["nan"])
    elif case == "few":
        for kind in ("reference", "mt-system", "human"):
            path = data / f"DAseg.newstest2016.{kind}.de-en"
            _edit(data, kind, "de-en", path.read_text(encoding="utf-8").splitlines()[:29])
    elif case == "lines":
        _edit(data, "human", "cs-en", human[:-1])
    elif case == "empty-reference":
        refs = (data / "DAseg.newstest2016.reference.cs-en").read_text(encoding="utf-8").splitlines()
        _edit(data, "reference", "cs-en", refs[:4] + [" "] + refs[5:])
    elif case == "pairs-twice":
        extra = ["--lang-pairs", "de-en,de-en"]
    elif case == "steps":
        extra = ["--steps", "0"]
    elif case == "from-pmeans":
        options = {"model": tiny_bert_dir, "aggregator": "pmeans", "layers": [1, 2]}
    elif case == "from-baryscore":
        options = {"model": tiny_bert_dir, "layer": 2, "aligner": "baryscore"}
    elif case == "learn-unknown":
        extra = ["--learn", "layer"]
    elif case == "learn-idf":
        extra = ["--learn", "idf_power"]
    elif case == "learn-special":
        extra = ["--learn", "special_weight"]
    elif case == "from-classes":
        options = {"model": tiny_bert_dir, "layer": 2, "punct_weight": 0.5}
    elif case == "memory":
        extra = ["--max-memory", "0.000001"]
    start = write_toml(options, tmp_path / "start.toml")
    out = tmp_path / "out"
    code, _, stderr = invoke("fit", "--data", data, "--from", start, "-o", out, "-q", *extra)
    assert_one_error(code, stderr, *needles)
    assert not out.exists()


def test_python_errors_are_config_or_input_errors(start, tmp_path) -> None:
    data = write_daseg(tmp_path, PAIRS, 30)
    with pytest.raises(ConfigError, match="not a setting the fit learns"):
        alignscore.fit(data, start=start, learn=["nope"])
    (tmp_path / "few").mkdir()
    with pytest.raises(InputError, match="at least 30"):
        alignscore.fit(write_daseg(tmp_path / "few", PAIRS, 10), start=start)
    with pytest.raises(ConfigError, match="max_memory=: the fit would keep more than"):
        alignscore.fit(data, start=start, max_memory=1e-6)
    with pytest.raises(ConfigError, match="^lang_pairs=: cs-en is named twice"):
        alignscore.fit(data, start=start, lang_pairs=["cs-en", "de-en", "cs-en"])
    with pytest.raises(ConfigError, match="^layers=: the start's layer 2 is not among"):
        alignscore.fit(data, start=start, layers=[3, 4])
    with pytest.raises(ConfigError, match="^resamples=: no such option"):
        alignscore.fit(data, start=start, resamples=200)  # one name per thing: bootstrap, as tune's
    with pytest.raises(ConfigError, match="^steps=: given beside a FitOptions"):
        alignscore.fit(FitOptions.given({"data": data, "start": start}), steps=3)


def test_the_memory_bound_is_what_is_kept(tiny_bert_dir, data) -> None:
    """The bound is checked from the token counts before the products are made, and that
    estimate is exactly the bytes of the products then kept: a limit of that many bytes passes,
    one byte less is refused."""
    scorer = alignscore.build(run_spec({"model": tiny_bert_dir, "layer": 2}))
    pairs = load_daseg(data)
    full = extract(scorer, scorer.resolved(), pairs, (1, 2, 3))
    need = sum(b.cross.nbytes + b.cand_gram.nbytes + b.ref_gram.nbytes for pf in full.pairs for b in pf.batches)
    assert extract(scorer, scorer.resolved(), pairs, (1, 2, 3), limit=need).nbytes == full.nbytes
    with pytest.raises(ConfigError, match="would keep more than"):
        extract(scorer, scorer.resolved(), pairs, (1, 2, 3), limit=need - 1)


@pytest.mark.parametrize("kwargs, needle", [({"budget": 0}, "budget=: expected a number > 0"),
                                            ({"budget": math.nan}, "budget="), ({"steps": 0}, "steps="),
                                            ({"steps": 2.5}, "steps="), ({"bootstrap": 5}, "bootstrap="),
                                            ({"max_memory": -1.0}, "max_memory=")])
def test_numbers_are_checked_before_anything_loads(kwargs, needle, tmp_path) -> None:
    data = write_daseg(tmp_path, PAIRS, 30)
    with pytest.raises(ConfigError, match=needle):
        alignscore.fit(data, model="no-such-org/no-such-model", **kwargs)


def test_no_output_replaces_a_file_the_start_names(tiny_bert_dir, data, tmp_path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "scores.csv").write_text("the\n", encoding="utf-8")  # stop words, where the fit writes its scores
    start = write_toml({"model": tiny_bert_dir, "layer": 2, "stopwords": str(out / "scores.csv")}, tmp_path / "s.toml")
    code, _, err = invoke("fit", "--data", data, "--from", start, "-o", out, "-q")
    assert_one_error(code, err, "scores.csv", "is also an input")
    assert (out / "scores.csv").read_text(encoding="utf-8") == "the\n"


def test_a_preset_by_name_is_a_start(tmp_path) -> None:
    few = write_daseg(tmp_path, PAIRS, 5)  # the preset compiles; the data is what is refused
    code, _, err = invoke("fit", "--data", few, "--from", "moverscore-v2", "--model", "all-MiniLM-L6-v2",
                          "-o", tmp_path / "out", "-q")
    assert_one_error(code, err, "5 segments; a fit needs at least 30")
