"""``alignscore tune``: search spaces (format, errors, size), the search through one engine call
(equal to scoring each composition alone), leave-one-language-pair-out cross-validation, the
outputs, and `score --config best.toml --human` reproducing the dev r. Also `score --human` and
`score --confidence`. Tiny local model, 2 language pairs x 30 WMT16 segments."""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import alignscore
from alignscore.config import compile_run, file_source, run_spec
from alignscore.config.compile import sources_of
from alignscore.errors import ConfigError
from alignscore.evaluation.search import aligner_runs, cross_validate, prepare, select, tune
from alignscore.evaluation.space import load_space, parse_space
from alignscore.evaluation.stats import bootstrap_mean, correlation
from alignscore.evaluation.wmt import load_daseg
from cli_checks import assert_one_error, fingerprint, invoke
from conftest import counted_forward, write_daseg

N = 30
LPS = ("de-en", "ru-en")

TINY_SPACE = """
layer = [-1, 2]
weighting = ["none", "idf-S"]

[[subspace]]
name = "greedy"
aligner = [{ name = "greedy", beta = 2.0 }]
metric = ["recall", "f1", "fbeta"]

[[subspace]]
name = "wmd"
aligner = [{ name = "wmd", n_gram = 2 }]
special_tokens = ["keep"]
filters = [[], ["rm"]]

[[exclude]]
aligner = { name = "wmd", n_gram = 2 }
weighting = "idf-S"
filters = ["rm"]
"""


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_daseg(tmp_path_factory.mktemp("daseg"), LPS, N)


@pytest.fixture(scope="module")
def space_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("space") / "tiny.toml"
    path.write_text(TINY_SPACE, encoding="utf-8")
    return path


def flags(tiny_bert_dir: str, **more: object) -> list:
    return sources_of({"model": tiny_bert_dir, "layer": 3, **more}, style="flag")


@pytest.fixture(scope="module")
def tuned(space_file: Path, data_dir: Path, tiny_bert_dir: str):
    base = flags(tiny_bert_dir, batch_size=7)
    pairs = load_daseg(data_dir)
    entries, ref, scorers = prepare(load_space(space_file).candidates(base), compile_run(base))
    with counted_forward() as calls:
        run = tune(entries, ref, scorers, pairs)
    # one encoding: every unique sentence of both language pairs once, for all 19 compositions
    unique = {t.strip() for lp in pairs for t in lp.references + lp.candidates}
    assert calls["n"] == -(-len(unique) // 7)
    return run, scorers, pairs


# -- spaces ---------------------------------------------------------------------------------------
def test_space_product_subspaces_and_exclusions(space_file: Path) -> None:
    space = load_space(space_file)
    specs = space.mappings()
    # greedy: 2 layers x 2 weightings x 3 metrics; wmd: 2 x 2 x 2 filter lists, minus idf-S + rm (2 layers)
    assert space.size() == 12 + 8
    assert len(specs) == 12 + 6
    assert not any(s.get("weighting") == "idf-S" and s.get("filters") == ["rm"] for _, s, _ in specs)
    assert {name for name, _, _ in specs} == {"greedy", "wmd"}
    candidates = space.candidates()
    assert all(c.spec.composition.metric == c.values.get("metric", "score") for c in candidates)


def test_default_space_builds_and_fits_the_budget() -> None:
    space = load_space()
    candidates = space.candidates()
    assert len(candidates) == 72
    metrics = {c.spec.composition.metric for c in candidates}
    assert metrics == {"precision", "recall", "f1", "fbeta", "score"}
    assert {c.values.get("weighting") for c in candidates} == {"none", "idf-S"}
    # all-MiniLM-L6-v2: 6 layers, default layer 4
    resolved = [replace(c, aggregator=c.aggregator.resolve(6, 4)) for c in (c.spec.composition for c in candidates)]
    assert len(aligner_runs(resolved)) == 48


@pytest.mark.parametrize("text, needles", [
    ("lyer = [3]", [":1: lyer[0]: no such option (did you mean layer?)"]),
    ("model = ['./no-such-model']", [":1: model[0]: no such model folder or file"]),
    ("layer = 3", [":1: layer: a non-empty list of choices"]),
    ("weighting = ['tfidf']", [":1: weighting[0]: no weighting 'tfidf'"]),
    ("[[subspace]]\nname = 'g'\naligner = [{ name = 'greedy', bta = 2.0 }]",
     [":3: subspace[0].aligner[0].bta: aligner greedy has no setting 'bta'"]),
    ("[[subspace]]\nname = 'g'\nmetric = ['fscore']", [":3: subspace[0].metric[0]: aligner greedy(cos) has no output 'fscore'"]),
    ("layer = [", ["TOML"]),
])
def test_bad_space_files_get_one_clear_error(tmp_path: Path, data_dir: Path, tiny_bert_dir: str, text: str,
                                             needles: list[str]) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text + "\n", encoding="utf-8")
    out = tmp_path / "out"
    code, _, err = invoke("tune", path, "--data", data_dir, "--model", tiny_bert_dir, "--layer", 3, "-o", out, "-q")
    assert_one_error(code, err, str(path), *needles)
    assert not out.exists() or not any(out.iterdir())


def test_a_layer_the_model_lacks_names_the_file(tmp_path: Path, data_dir: Path, tiny_bert_dir: str) -> None:
    path = tmp_path / "deep.toml"
    path.write_text("layer = [2, 9]\n", encoding="utf-8")
    code, _, err = invoke("tune", path, "--data", data_dir, "--model", tiny_bert_dir, "--layer", 3,
                          "-o", tmp_path / "out", "-q")
    assert_one_error(code, err, str(path), "9")


def test_too_large_space_is_refused_with_its_size(tmp_path: Path, space_file: Path, data_dir: Path,
                                                  tiny_bert_dir: str) -> None:
    out = tmp_path / "out"
    code, _, err = invoke("tune", space_file, "--data", data_dir, "--model", tiny_bert_dir, "--layer", 3,
                          "-o", out, "-q", "--budget", "0.001")
    assert_one_error(code, err, "too large", "19 compositions", "aligner runs", "measured on a sample")
    code, _, err = invoke("tune", space_file, "--data", data_dir, "--model", tiny_bert_dir, "--layer", 3,
                          "-o", out, "-q", "--max-compositions", "10")
    assert_one_error(code, err, "20 runs", "--max-compositions 10")
    assert not (out / "best.toml").exists()


# -- selection and cross-validation ----------------------------------------------------------------
def test_cross_validation_by_hand() -> None:
    r = np.array([[0.50, 0.60, 0.70],   # mean 0.600
                  [0.65, 0.40, 0.72],   # mean 0.590
                  [0.55, 0.62, 0.60],   # mean 0.590
                  [0.90, 0.90, 0.90]])  # the best, but not eligible (the reference outside the space)
    eligible = np.array([True, True, True, False])
    assert select(r, eligible) == 0
    folds = cross_validate(r, eligible)
    # leave out 0: means over 1, 2 -> 0.65, 0.56, 0.61 -> row 0, held out 0.50
    # leave out 1: means over 0, 2 -> 0.60, 0.685, 0.575 -> row 1, held out 0.40
    # leave out 2: means over 0, 1 -> 0.55, 0.525, 0.585 -> row 2, held out 0.60
    assert folds == [(0, 0.50), (1, 0.40), (2, 0.60)]
    assert math.isclose(np.mean([h for _, h in folds]), 0.5)
    with pytest.raises(ConfigError, match="two"):
        cross_validate(r[:, :1], eligible)
    undefined = r.copy()
    undefined[0, 2] = np.nan  # an undefined correlation is never selected
    assert select(undefined, eligible) == 1


def test_tune_equals_each_composition_scored_alone(tuned) -> None:
    run, _, pairs = tuned
    assert len(run.entries) == 18 + 1  # the reference (layer 3) is not in the space
    assert run.entries[run.reference].in_space is False
    for e in run.entries:
        for k, lp in enumerate(pairs):
            alone = alignscore.build(e.spec).score(lp.candidates, lp.references)
            values = alone[e.composition.metric].double().numpy()
            np.testing.assert_allclose(e.scores[k], values, atol=1e-6)
            r, _ = correlation(values, lp.human)
            assert abs(e.r[k] - r) < 1e-6


def test_tune_selection_and_folds(tuned) -> None:
    run, _, pairs = tuned
    means = np.array([e.average if e.in_space else -1 for e in run.entries])
    assert run.best == int(np.argmax(means))
    assert len(run.folds) == 2
    for f, other in zip(run.folds, reversed(range(2))):  # two pairs: each fold selects on the other one
        col = np.array([e.abs_r[other] if e.in_space else -1 for e in run.entries])
        assert f.selected == int(np.argmax(col))
        left = [lp.name for lp in pairs].index(f.lang_pair)
        assert f.heldout == run.entries[f.selected].abs_r[left]
        assert f.reference == run.entries[run.reference].abs_r[left]
        assert 0 < f.williams_p < 1
    assert run.estimate == pytest.approx(np.mean([f.heldout for f in run.folds]))


def test_one_language_pair_has_no_cross_validation(data_dir: Path, tiny_bert_dir: str) -> None:
    from alignscore.evaluation.leaderboard import markdown

    base = flags(tiny_bert_dir)
    space = parse_space({"layer": [2, 3], "aligner": ["greedy"]})
    run = tune(*prepare(space.candidates(base), compile_run(base)), load_daseg(data_dir, ["de-en"]))
    assert run.folds == [] and run.estimate is None
    assert run.reference == 1 and run.entries[run.reference].in_space  # layer 3, greedy F1 is in the space
    assert "No cross-validated estimate" in markdown(run, "data")


# -- the command, its outputs, and score --config best.toml --------------------------------------------
@pytest.fixture(scope="module")
def tune_out(tmp_path_factory: pytest.TempPathFactory, space_file: Path, data_dir: Path, tiny_bert_dir: str):
    out = tmp_path_factory.mktemp("tune") / "out"
    code, stdout, err = invoke("tune", space_file, "--data", data_dir, "--model", tiny_bert_dir, "--layer", 3,
                               "-o", out, "--holdout", data_dir, "--batch-size", 5)
    assert code == 0, err
    assert "[tune] scoring 19 composition(s)" in err and "encoding" in err  # stages and progress bars
    assert "Cross-validated estimate" in stdout
    return out


def test_tune_writes_its_outputs(tune_out: Path, tuned) -> None:
    run, _, _ = tuned
    assert sorted(p.name for p in tune_out.iterdir()) == ["best.toml", "chart.png", "folds.csv", "holdout.csv",
                                                         "leaderboard.csv", "leaderboard.md"]
    rows = list(csv.DictReader(open(tune_out / "leaderboard.csv", encoding="utf-8")))
    assert len(rows) == 19
    assert [r["selected"] for r in rows].count("true") == 1 and rows[0]["selected"] == "true"
    assert rows[0]["signature"] == run.entries[run.best].signature
    means = [float(r["mean"]) for r in rows]
    assert means == sorted(means, reverse=True)
    for r in rows:
        assert float(r["mean"]) == pytest.approx((float(r["de-en"]) + float(r["ru-en"])) / 2)
    folds = list(csv.DictReader(open(tune_out / "folds.csv", encoding="utf-8")))
    assert float(folds[-1]["heldout_abs_r"]) == pytest.approx(run.estimate)
    held = list(csv.DictReader(open(tune_out / "holdout.csv", encoding="utf-8")))
    # the held-out folder is the dev folder here: the same |r| as on the leaderboard
    assert [float(h["selected_abs_r"]) for h in held] == pytest.approx(list(run.entries[run.best].abs_r), abs=1e-6)
    table = (tune_out / "leaderboard.md").read_text(encoding="utf-8")
    assert "Cross-validation folds" in table and "Held-out data" in table and "nan" not in table
    assert (tune_out / "chart.png").read_bytes()[:4] == b"\x89PNG"


def test_best_toml_round_trips_and_reproduces_the_dev_r(tune_out: Path, data_dir: Path, tuned,
                                                         tiny_bert_dir: str) -> None:
    run, _, _ = tuned
    best = run.entries[run.best]
    spec = compile_run([file_source(tune_out / "best.toml")])
    assert spec.encoder.model == tiny_bert_dir and spec.composition.metric == best.composition.metric
    assert spec == best.spec.__class__(best.spec.encoder, best.spec.composition,
                                       run_spec({"model": tiny_bert_dir, "batch_size": 5}).runtime)
    assert str(alignscore.build(spec).signature()) == best.signature
    for k, lp in enumerate(LPS):
        code, _, err = invoke("score", "-r", data_dir / f"DAseg.newstest2016.reference.{lp}",
                              "-c", data_dir / f"DAseg.newstest2016.mt-system.{lp}", "--config", tune_out / "best.toml",
                              "--human", data_dir / f"DAseg.newstest2016.human.{lp}", "-q")
        assert code == 0, err
        line = next(ln for ln in err.splitlines() if ln.startswith("pearson r("))
        assert line.startswith(f"pearson r({best.composition.metric}, human) = ")
        assert abs(float(line.split("= ")[1].split()[0]) - best.r[k]) < 1e-6


def test_tune_never_overwrites_an_input(tmp_path: Path, data_dir: Path, tiny_bert_dir: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    space = out / "leaderboard.md"  # the space file sits where an output would go
    space.write_text("layer = [2]\n", encoding="utf-8")
    before = fingerprint(out)
    code, _, err = invoke("tune", space, "--data", data_dir, "--model", tiny_bert_dir, "--layer", 3, "-o", out, "-q")
    assert_one_error(code, err, "input")
    assert fingerprint(out) == before


# -- score --human and --confidence ----------------------------------------------------------------------
def test_score_human_refuses_bad_judgments(tmp_path: Path, data_dir: Path, tiny_bert_dir: str) -> None:
    ref, cand = data_dir / "DAseg.newstest2016.reference.de-en", data_dir / "DAseg.newstest2016.mt-system.de-en"
    short = tmp_path / "short.txt"
    short.write_text("1\n2\n3\n4\n", encoding="utf-8")
    flat = tmp_path / "flat.txt"
    flat.write_text("0.5\n" * N, encoding="utf-8")
    nan = tmp_path / "nan.txt"
    nan.write_text("nan\n" * N, encoding="utf-8")
    for path, needle in ((short, "4 human scores"), (flat, "every human score"), (nan, "not a finite number")):
        code, _, err = invoke("score", "-r", ref, "-c", cand, "--model", tiny_bert_dir, "--layer", 2, "--human", path,
                              "-q")
        assert_one_error(code, err, str(path), needle)
    same = tmp_path / "same.txt"
    same.write_text("the cat\n" * N, encoding="utf-8")
    code, _, err = invoke("score", "-r", same, "-c", same, "--model", tiny_bert_dir, "--layer", 2,
                          "--human", data_dir / "DAseg.newstest2016.human.de-en", "-q")
    assert_one_error(code, err, "f1", "undefined")
    code, _, err = invoke("score", "-r", ref, "-c", cand, "--model", tiny_bert_dir, "--layer", 2, "--confidence",
                          "--stream", "-o", tmp_path / "s.tsv", "-q")
    assert_one_error(code, err, "--stream")


def test_score_confidence_is_the_bootstrap_of_each_mean(tmp_path: Path, data_dir: Path, tiny_bert_dir: str) -> None:
    ref, cand = data_dir / "DAseg.newstest2016.reference.de-en", data_dir / "DAseg.newstest2016.mt-system.de-en"
    out = tmp_path / "scores.tsv"
    code, _, err = invoke("score", "-r", ref, "-c", cand, "--model", tiny_bert_dir, "--layer", 2, "--confidence",
                          "--bootstrap", 200, "--seed", 7, "-o", out, "-q")
    assert code == 0, err
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[2].startswith("# confidence ")
    columns = lines[3].split("\t")
    values = np.array([[float(x) for x in ln.split("\t")] for ln in lines[4:]])
    for j, name in enumerate(columns):
        b = bootstrap_mean(values[:, j], 200, 7)
        text = f"{name}={b.estimate:.6f} ±{b.half_width:.6f} [{b.low:.6f}, {b.high:.6f}]"
        assert text in lines[2] and text in err
    assert "200 resamples, seed 7" in lines[2]
