"""``alignscore fit`` with a static table (word vectors, a model2vec model): no layers to mix, so the
fit learns what applies (the idf exponent, the token-class weights, the soft greedy temperature,
F-beta); its run file reproduces its scores, its differentiable score at the start is the
engine's, a layer setting is refused in one line, and the idf exponent is learned where it
matters."""

from __future__ import annotations

import csv
import json
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
import torch

import alignscore
from alignscore.config import compile_run, file_source, run_compiled, run_spec
from alignscore.encoders.static import StaticEncoder, split_words
from alignscore.errors import ConfigError
from alignscore.fit import Values, extract, scores_of
from alignscore.fit.model import Model, pair_scores
from alignscore.fit.run import fitted_spec, learned, start_values
from alignscore.evaluation.wmt import load_daseg
from cli_checks import assert_one_error, invoke, write_toml

PAIRS = ("cs-en", "de-en")  # the language pairs of the data fixture (conftest.py)


def write_vectors(path: Path, rows: dict[str, list[float]]) -> str:
    """A word2vec text file of ``rows``."""
    dims = len(next(iter(rows.values())))
    path.write_text(f"{len(rows)} {dims}\n" + "".join(f"{w} {' '.join(f'{x:.6f}' for x in v)}\n"
                                                      for w, v in rows.items()), encoding="utf-8")
    return str(path)


@pytest.fixture
def vectors(data, tmp_path) -> str:
    """Random 8-dimensional vectors (seeded) for every word of ``data``'s texts but a few, so
    some words are unknown (dropped), as in a real table."""
    words: set[str] = set()
    for path in data.iterdir():
        if ".human." not in path.name:
            for line in path.read_text(encoding="utf-8").splitlines():
                words.update(w for w, _, _ in split_words(line))
    rng = np.random.default_rng(0)
    kept = sorted(words)[5:]
    return write_vectors(tmp_path / "table.vec", {w: rng.normal(size=8).tolist() for w in kept})


@pytest.fixture(scope="module")
def model2vec(tmp_path_factory, tiny_bert_dir) -> str:
    from alignscore.encoders.distill import distill

    return str(distill(tiny_bert_dir, tmp_path_factory.mktemp("m2v") / "static", dims=8))


@pytest.fixture(params=["vectors", "model2vec"])
def table(request) -> str:
    return request.getfixturevalue(request.param)


def _scores_csv(path: Path) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    with open(path, encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            out.setdefault(row["lang_pair"], []).append(float(row["score"]))
    return out


@pytest.mark.slow  # whole fits with nested cross-validation: out of the edit loop's tier, in CI's
def test_a_static_fit_end_to_end_reproduces_through_score_config(table, data, tmp_path, monkeypatch) -> None:
    start = write_toml({"model": table, "weighting": "idf-S", "temperature": 0.05}, tmp_path / "start.toml")
    out = tmp_path / "out"
    from matplotlib.figure import Figure

    bars: list[list[str]] = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: bars.extend(
        [t.get_text() for t in ax.get_xticklabels()] for ax in fig.axes))
    code, stdout, stderr = invoke("fit", "--data", data, "--from", start, "--steps", "6", "-o", out, "-q")
    assert code == 0, stderr
    words = compile_run([file_source(start)]).encoder.static == "vectors"
    assert bars == [["punct", "stopword"] + ([] if words else ["subword"])]  # the classes it learned, no 'special'
    assert "static table: no layers" in stdout and "fitted: held-out mean |r|" in stdout
    written = tomllib.loads((out / "best.toml").read_text(encoding="utf-8"))
    assert written.get("aggregator", "single") == "single" and not {"layers", "layer", "mix_weights"} & set(written)
    assert written["temperature"] != 0.05  # the fit moved: the reproduction below is not the start's
    spec = compile_run([file_source(out / "best.toml")])
    assert spec.encoder.static is not None and spec.composition.weighting.idf_power > 0
    assert "static table: no layers" in (out / "leaderboard.md").read_text(encoding="utf-8")
    with open(out / "folds.csv", encoding="utf-8") as fh:
        assert [row["layer_weights"] for row in csv.DictReader(fh)] == ["", ""]
    fitted = _scores_csv(out / "scores.csv")
    for lp in PAIRS:
        code, stdout, stderr = invoke("score", "--config", out / "best.toml", "-c", data / f"DAseg.newstest2016.mt-system.{lp}",
                                      "-r", data / f"DAseg.newstest2016.reference.{lp}", "--format", "jsonl", "-q")
        assert code == 0, stderr
        got = [json.loads(line)[spec.composition.metric] for line in stdout.splitlines() if line.strip()]
        assert np.allclose(got, fitted[lp], rtol=0, atol=1e-6), lp


def test_the_default_learn_set_is_what_applies(vectors, model2vec) -> None:
    words = learned(run_spec({"model": vectors, "weighting": "idf-S", "special_tokens": "keep"}), None)
    assert words == ["temperature", "idf_power", "beta", "punct_weight", "stopword_weight"]
    assert learned(run_spec({"model": model2vec}), None) == ["temperature", "beta", "punct_weight", "stopword_weight",
                                                             "subword_weight"]


@pytest.mark.parametrize("weighting", ["none", "idf-S", "idf-L"])
def test_the_differentiable_score_at_the_start_is_the_engines(table, data, weighting) -> None:
    """At the start (every learnable value where the start has it, as tensors), the fit's
    differentiable score is the ordinary scorer's on the static composition; at other values,
    the fitted run's (:func:`fitted_spec`) engine score."""
    options = {"model": table, "weighting": weighting, "temperature": 0.05, "beta": 2.0, "metric": "fbeta"}
    if weighting != "none":
        options["idf_power"] = 0.5
    if weighting == "idf-L":
        options["idf_corpus"] = str(data / "DAseg.newstest2016.reference.de-en")
    spec, _ = run_compiled(options)
    scorer = alignscore.build(spec)
    pairs = load_daseg(data)
    kept, exact, init = start_values(spec, scorer.encoder.num_layers, None)
    assert kept == (0,) and exact == init
    features = extract(scorer, scorer.resolved(), pairs, kept)
    names = learned(spec, None)
    model = Model(exact, names)
    for lp, pf in zip(pairs, features.pairs):
        ours = pair_scores(pf, model.current(), exact.metric)
        want = scorer.score(lp.candidates, lp.references)["fbeta"]
        assert torch.allclose(ours.detach(), want.double(), rtol=0, atol=1e-6), lp.name
        ours.sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    moved = Values((math.inf,), temperature=0.02, idf_power=2.0 if weighting != "none" else 1.0, beta=0.5,
                   punct_weight=0.5, stopword_weight=0.25, subword_weight=2.0, metric="fbeta")
    engine = alignscore.build(fitted_spec(spec, moved, kept, names))
    for lp, ours in zip(pairs, scores_of(features, moved)):
        assert torch.allclose(ours, engine.score(lp.candidates, lp.references)["fbeta"].double(), atol=1e-6)


@pytest.mark.parametrize("extra, needles", [
    (["--learn", "mix_weights"], ["--learn: mix_weights: ", "a static table has no layers to mix"]),
    (["--learn", "temperature,mix_weights"], ["--learn: mix_weights: ", "no layers"]),
    (["--layers", "1-2"], ["--layers", "a static table has no layers"]),
    (["--learn", "special_weight"], ["--learn: special_weight: ", "no special tokens"]),
    (["--learn", "subword_weight"], ["--learn: subword_weight: ", "word vectors have no subword"]),
])
def test_a_layer_setting_is_refused_before_the_table_loads(vectors, data, tmp_path, monkeypatch, extra,
                                                           needles) -> None:
    def no_load(self):  # noqa: ANN001, ANN202
        raise AssertionError("the table was loaded")

    monkeypatch.setattr(StaticEncoder, "_load", no_load)
    out = tmp_path / "out"
    code, _, stderr = invoke("fit", "--data", data, "--model", vectors, "-o", out, "-q", *extra)
    assert_one_error(code, stderr, *needles)
    assert not out.exists()
    with pytest.raises(ConfigError, match="^learn=: mix_weights: a static table"):
        alignscore.fit(data, model=vectors, learn="mix_weights", output=out)
    assert not out.exists()


def _idf_data(folder: Path, lang_pairs: tuple[str, ...], n: int = 40) -> tuple[Path, str]:
    """Segments whose judgment is the share of their rare words a candidate keeps, where
    words of middling frequency are dropped at random: with one-hot vectors, recall is the
    idf mass of the reference's words kept, and a larger idf exponent weighs the rare words
    more against the middling ones' noise. Returns the folder and its table."""
    rng = np.random.default_rng(1)
    common, middling = ["aa", "bb", "cc"], [f"mid{k}" for k in range(8)]
    words = set(common + middling)
    for lp in lang_pairs:
        refs, cands, human = [], [], []
        for i in range(n):
            rare = [f"{lp[:2]}rare{i}x{k}" for k in range(4)]
            mid = list(rng.choice(middling, 4, replace=False))
            keep = int(rng.integers(0, 5))
            refs.append(" ".join(common + mid + rare))
            cands.append(" ".join(common + [w for w in mid if rng.random() < 0.5] + rare[:keep]))
            human.append(f"{keep / 4 + rng.normal(scale=0.05):.6f}")
            words.update(rare)
        for kind, lines in (("reference", refs), ("mt-system", cands), ("human", human)):
            (folder / f"DAseg.newstest2016.{kind}.{lp}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    order = sorted(words)
    table = write_vectors(folder.parent / "onehot.vec", {w: np.eye(len(order))[i].tolist() for i, w in enumerate(order)})
    return folder, table


def test_the_fit_learns_the_idf_exponent_where_it_matters(tmp_path, monkeypatch) -> None:
    (tmp_path / "idf").mkdir()
    data, table = _idf_data(tmp_path / "idf", PAIRS)
    start = write_toml({"model": table, "weighting": "idf-S"}, tmp_path / "start.toml")
    panels: list[list[str]] = []
    from matplotlib.figure import Figure

    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: panels.append([ax.get_title() for ax in fig.axes]))
    result = alignscore.fit(data, start=start, learn="idf_power", steps=40, output=tmp_path / "out")
    assert result.values.idf_power > 1.5
    assert result.in_sample["fitted"] > result.in_sample["start"] + 0.005
    assert result.final.inner_best > result.final.inner_start
    assert result.estimate is not None and result.intervals["gain"].estimate > 0
    assert panels == [["learned token-class weights\n(static: no layers; cs-en, de-en)"]]
