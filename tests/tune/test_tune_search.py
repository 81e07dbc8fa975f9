"""``alignscore tune``: search spaces (format, errors, published configurations), successive
halving (the schedules, the nested samples, what each level keeps), nested cross-validation with
intervals, the objective on a challenge set, the outputs, and `score --config best.toml --human`
reproducing the dev r. Also `score --human` and `score --confidence`. Tiny local model, 3 language
pairs x 40 WMT16 segments."""

from __future__ import annotations

import csv
import json
import re
from types import SimpleNamespace
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import alignscore
from alignscore.cli.options import FLAGS
from alignscore.config import compile_run, file_source
from alignscore.config.compile import sources_of
from alignscore.errors import ConfigError
from alignscore.encoders.static import split_words
from alignscore.evaluation.challenge import Item
from alignscore.tune import (MIN_SEGMENTS, Book, Cost, Objective, Schedule, published,
                                          challenge_accuracy, halve, plan_search, prepare, samples, search)
from alignscore.tune.space import load_space, parse_space
from alignscore.evaluation.stats import bootstrap_mean, correlation
from alignscore.evaluation.wmt import LangPair, load_daseg
from cli_checks import assert_one_error, fingerprint, invoke
from helpers import counted_forward, write_daseg

N = 40
LPS = ("de-en", "ru-en", "cs-en")

TINY_SPACE = """
layer = [1, 2, 3, 4]
weighting = ["none", "idf-S"]

[[subspace]]
name = "greedy"
aligner = ["greedy"]
metric = ["recall", "f1"]

[[subspace]]
name = "greedy F2"
aligner = [{ name = "greedy", beta = 2.0 }]
metric = ["fbeta"]

[[subspace]]
name = "wmd"
aligner = [{ name = "wmd", n_gram = 2 }]
special_tokens = ["keep"]
filters = [[], ["rm"]]

[[exclude]]
aligner = { name = "wmd", n_gram = 2 }
weighting = "idf-S"
filters = ["rm"]

[[published]]
name = "Plain"
layer = 3

[[published]]
name = "Tiny: greedy idf"
layer = 2
weighting = "idf-S"

[[published]]
name = "Tiny: transport"
layer = 2
aligner = { name = "wmd", n_gram = 1 }
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
    return sources_of({"model": tiny_bert_dir, "layer": 3, **more}, FLAGS)


@pytest.fixture(scope="module")
def prepared(space_file: Path, tiny_bert_dir: str):
    base = flags(tiny_bert_dir, batch_size=7)
    space = load_space(space_file)
    return prepare(space.candidates(base), space.published_runs(base))


@pytest.fixture(scope="module")
def tuned(prepared, data_dir: Path):
    entries, scorers = prepared
    pairs = load_daseg(data_dir)
    with counted_forward() as calls:
        run = search(entries, scorers, pairs, Schedule.halving(3, 2), resamples=200)
    return run, pairs, calls["n"]


# -- spaces ---------------------------------------------------------------------------------------
def test_space_product_subspaces_exclusions_and_published_runs(space_file: Path, prepared) -> None:
    space = load_space(space_file)
    specs = space.mappings()
    # greedy: 4 layers x 2 weightings x 3 metrics; wmd: 4 x 2 x 2 filter lists, minus idf-S + rm (4 layers)
    assert space.size() == 24 + 16 and len(specs) == 24 + 12
    assert not any(s.get("weighting") == "idf-S" and s.get("filters") == ["rm"] for _, s, _ in specs)
    assert [n for n, _ in space.published] == ["Plain", "Tiny: greedy idf", "Tiny: transport"]
    entries, _ = prepared
    assert len(entries) == 36 + 1  # "Plain" and "Tiny: greedy idf" are in the space; the transport is added
    marked = {name: e.id for e in entries for name in e.published}
    assert set(marked) == {"Plain", "Tiny: greedy idf", "Tiny: transport"}
    plain = next(e for e in entries if "Plain" in e.published)
    assert (plain.values, plain.composition.metric) == ({"layer": 3, "weighting": "none", "aligner": "greedy",
                                                        "metric": "f1"}, "f1")
    groups = {b.name: b for b in published(entries)}
    assert set(groups) == {"Plain", "Tiny"} and len(groups["Tiny"].members) == 2 and not groups["Plain"].group


@pytest.mark.slow  # parses and expands the packaged space: CI's tier
def test_the_packaged_space_holds_every_published_configuration(minilm_dir: str) -> None:
    space = load_space()
    base = sources_of({"model": minilm_dir}, FLAGS)
    corpus = {"idf_corpus": ("a corpus sentence", "another one")}
    published = space.published_runs(base, corpus)
    names = list(published)
    assert {"BERTScore", "BERTScore (idf)", "MoverScore v1", "MoverScore v2", "BaryScore", "WRD"} <= set(names)
    assert sum(n.startswith("Table 9: ") for n in names) == 18 and sum(n.startswith("Table 6: ") for n in names) == 7
    v2 = published["MoverScore v2"].composition
    preset = alignscore.run_spec({"preset": "moverscore-v2", "model": minilm_dir, "multi_ref": "max"}).composition
    assert v2 == preset  # the preset's composition on the command's model
    entries, _ = prepare(space.candidates(base, data=corpus), published)
    assert len(entries) > 1000
    inside = {n for e in entries if e.subspace != "published" for n in e.published}
    assert {"BERTScore", "MoverScore v2", "Table 9: IDF-L + SEP + PMEANS, WMD2"} <= inside
    kinds = {type(e.composition.aligner).__name__ for e in entries}
    assert kinds == {"Greedy", "WMD", "Sinkhorn", "BaryScore"}  # BaryScore: its published configuration
    assert {e.composition.weighting.signature().split("(")[0] for e in entries} >= {"none", "idf-S", "idf-S+sep",
                                                                                   "idf-L", "norm"}


def test_the_packaged_published_configurations_are_those_it_spelled_out(minilm_dir: str) -> None:
    """The packaged space names presets and grid cells instead of restating them: the runs are
    the 35 it spelled out by hand before (their signatures, in tests/tune/published-signatures.json;
    MoverScore Table 6's cells now named by the grid's rows)."""
    before = json.loads((Path(__file__).parent / "published-signatures.json").read_text(encoding="utf-8"))
    published = load_space().published_runs(sources_of({"model": "all-MiniLM-L6-v2"}, FLAGS),
                                            {"idf_corpus": ("a corpus sentence", "another one")})
    now = {name: str(scorer.signature()).split("|v:")[0]
           for name, scorer in zip(published, alignscore.build_all(list(published.values())))}
    assert sorted(now.values()) == sorted(before.values()) and len(now) == 35
    assert {n: s for n, s in now.items() if not n.startswith("Table 6")} == {
        n: s for n, s in before.items() if not n.startswith("Table 6")}
    assert now["Table 6: Layer -5, WMD-1"] == before["Table 6: layer -5, WMD-1"]
    assert now["Table 6: PMeans, WMD-1"] == before["Table 6: power means, WMD-1"]


def test_published_tables_name_presets_and_grid_cells(tmp_path: Path, tiny_bert_dir: str) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text("[models.base]\nmodel = 'bert-base-uncased'\nlayer = 9\n[defaults]\nweighting = 'idf-S'\n"
                    "[[columns]]\nname = 'G'\naligner = 'greedy'\n[[columns]]\nname = 'W'\naligner = 'wmd'\n"
                    "[[rows]]\nname = 'Layer {layer}'\nlayer = 2\n[[rows]]\nname = 'Plain'\n", encoding="utf-8")
    text = ("layer = [1]\n[[published]]\nname = 'v2'\npreset = 'moverscore-v2'\n"
            "[[published]]\nname = 'T'\ngrid = 'grid.toml'\nrows = ['Layer 2']\n"
            "[[published]]\nname = 'one'\ngrid = 'grid.toml'\nrow = 'Plain'\ncolumn = 'W'\nlayer = 3\n")
    (tmp_path / "space.toml").write_text(text, encoding="utf-8")
    flags = sources_of({"model": tiny_bert_dir}, FLAGS)
    runs = load_space(tmp_path / "space.toml").published_runs(flags)
    assert list(runs) == ["v2", "T: Layer 2, G", "T: Layer 2, W", "one"]
    preset = alignscore.run_spec({"preset": "moverscore-v2", "model": tiny_bert_dir}).composition
    assert runs["v2"].encoder.model == tiny_bert_dir and runs["v2"].composition == preset  # the command's model
    cell = runs["T: Layer 2, W"]
    assert cell.encoder.model == tiny_bert_dir and type(cell.composition.aligner).__name__ == "WMD"
    assert cell.composition.aggregator.layer == 2 and cell.composition.weighting.signature() == "idf-S"
    assert runs["one"].composition.aggregator.layer == 3  # the table's own options above the cell's
    # a run of the space may build on a preset too, its own options above it
    space = parse_space({"preset": ["moverscore-v2"], "layer": [1, 2]})
    made = [c.spec for c in space.candidates(flags)]
    assert [m.composition.aggregator.layer for m in made] == [1, 2] and all(m.encoder.model == tiny_bert_dir
                                                                            for m in made)
    assert made[1].composition == replace(preset, aggregator=made[1].composition.aggregator)
    for bad, needle in (("preset = 'nope'", ":4: published[0].preset: no preset 'nope'"),
                        ("grid = 'grid.toml'\nrow = 'Plain'", "published[0].column: a cell needs a row and a column"),
                        ("grid = 'grid.toml'\nrows = ['Nope']", ":5: published[0].rows: no 'Nope' in the grid"),
                        ("row = 'Plain'", ":4: published[0].row: names a cell of a grid")):
        (tmp_path / "bad.toml").write_text(f"layer = [1]\n[[published]]\nname = 'x'\n{bad}\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=re.escape(needle)):
            load_space(tmp_path / "bad.toml")


@pytest.mark.parametrize("text, needles", [
    ("lyer = [3]", [":1: lyer[0]: no such option (did you mean layer?)"]),
    ("model = ['./no-such-model']", [":1: model[0]: no such model folder or file"]),
    ("layer = 3", [":1: layer: a non-empty list of choices"]),
    ("weighting = ['tfidf']", [":1: weighting[0]: no weighting 'tfidf'"]),
    ("[[subspace]]\nname = 'g'\naligner = [{ name = 'greedy', bta = 2.0 }]",
     [":3: subspace[0].aligner[0].bta: aligner greedy has no setting 'bta'"]),
    ("[[subspace]]\nname = 'g'\nmetric = ['fscore']", [":3: subspace[0].metric[0]: aligner greedy(cos) has no output 'fscore'"]),
    ("[[published]]\nlayer = 2", [":1: published[0]: a published configuration needs a `name`"]),
    ("layer = [2]\n[[published]]\nname = 'x'\nlayers = [1]", [":4: published[0].layers: applies to aggregator"]),
    ("layer = [", ["TOML"]),
])
def test_bad_space_files_get_one_clear_error(tmp_path: Path, data_dir: Path, tiny_bert_dir: str, text: str,
                                             needles: list[str]) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text + "\n", encoding="utf-8")
    out = tmp_path / "out"
    code, _, err = invoke("tune", path, "--data", data_dir, "--model", tiny_bert_dir, "--layer", 3, "-o", out, "-q")
    assert_one_error(code, err, str(path), *needles)
    assert not out.exists()


def test_a_layer_the_model_lacks_names_the_file(tmp_path: Path, data_dir: Path, tiny_bert_dir: str) -> None:
    path = tmp_path / "deep.toml"
    path.write_text("layer = [2, 9]\n", encoding="utf-8")
    code, _, err = invoke("tune", path, "--data", data_dir, "--model", tiny_bert_dir, "-o", tmp_path / "out", "-q")
    assert_one_error(code, err, f"{path}:1: layer[1]: layer 9 does not exist")


# -- the schedule ---------------------------------------------------------------------------------
def test_schedules_and_nested_samples() -> None:
    assert Schedule.halving(4, 2).fractions == (0.25, 1.0) and Schedule.halving(4, 2).keep == 0.25
    assert Schedule.halving(3, 3).fractions == pytest.approx((1 / 9, 1 / 3, 1.0))
    assert Schedule.halving(3, 3).survivors(100) == [100, 34, 12] and Schedule((1.0,)).survivors(7) == [7]
    assert Schedule.halving(4, 2).survivors(10) == [10, 4]  # at least min_keep
    small, mid, full = samples(300, (1 / 9, 1 / 3, 1.0), seed=5)
    assert set(small) <= set(mid) <= set(full) and list(full) == list(range(300))
    assert len(small) == 34 and len(mid) == 100 and list(small) == sorted(small)
    assert [list(s) for s in samples(300, (1 / 9, 1 / 3, 1.0), seed=5)] == [list(small), list(mid), list(full)]
    assert len(samples(50, (0.1, 1.0), seed=0)[0]) == MIN_SEGMENTS
    cost = Cost(per_text=0.01, per_score=(0.001,) * 99 + (0.1,), always=(99,))  # one slow published run
    # encoding both texts at each level; the screen (0.199 s a segment on 200); the dearest 51 (34 x 1.5) runs
    # that fit the screen's 39.8 s on 600 segments (not the slow one: 60 s alone); the slow one on every segment
    assert cost.seconds([300, 300], Schedule.halving(3, 2)) == pytest.approx(
        0.01 * 2 * (200 + 600) + 0.199 * 200 + 51 * 0.001 * 600 + 0.1 * 600)
    # promotion costs at most 1.5 screens: here 40 runs of 0.01 s a segment would take 240 s on 600 segments
    dear = Cost(per_text=0.0, per_score=(0.01,) * 40)
    assert dear.seconds([300, 300], Schedule.halving(3, 2)) == pytest.approx(0.4 * 200 + 1.5 * 0.4 * 200)
    assert cost.seconds([300, 300], Schedule((1.0,))) == pytest.approx(0.01 * 2 * 600 + 0.199 * 600)
    # a fixed cost per run and language-pair call: once per pair at every level a run is scored on
    called = Cost(per_text=0.0, per_score=(0.001,) * 2, per_call=(0.5, 0.0))
    assert called.seconds([300, 300], Schedule((1.0,))) == pytest.approx(0.002 * 600 + 0.5 * 2)
    full = plan_search(cost, [300, 300], 1e9)
    assert (full.schedule, full.seconds) == (Schedule((1.0,)), cost.seconds([300, 300], Schedule((1.0,))))
    assert plan_search(cost, [300, 300], 130).schedule == Schedule.halving(4, 2)  # the first that fits
    with pytest.raises(ConfigError, match="does not fit --budget 0.01 min: 100 runs"):
        plan_search(cost, [300, 300], 0.6, label="--budget")


@pytest.mark.parametrize("text, want", [
    ("correlation", Objective()),
    ("correlation + 0.5 * accuracy[drop-function]", Objective("drop-function", 0.5)),
    ("correlation + accuracy[all]", Objective("all", 1.0)),
    ("correlation, accuracy[all] >= 0.8", Objective("all", 0.0, 0.8)),
])
def test_objectives_read_as_written(text: str, want: Objective) -> None:
    assert Objective.parse(text) == want and Objective.parse(str(want)) == want


@pytest.mark.parametrize("text", ["accuracy[all]", "correlation, accuracy[all]", "correlation + accuracy[a] >= 0.5",
                                  "correlation, accuracy[all] >= 2", "correlation - accuracy[all]"])
def test_bad_objectives_are_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="^objective: "):
        Objective.parse(text)


# -- the search -----------------------------------------------------------------------------------
def scored_book(noise: list[float], published: set[int] = frozenset(), fractions=(0.5, 1.0), n: int = 200,
                seed: int = 3) -> Book:
    """A book whose scores are given, not computed: run k scores ``human + noise[k] * z_k`` on
    two language pairs (a larger noise, a lower |r|; ``z_k`` each run's own)."""
    rng = np.random.default_rng(seed)
    pairs = [LangPair("2016", src, "en", ["r"] * n, ["c"] * n, rng.normal(size=n)) for src in ("cs", "de")]
    entries = [SimpleNamespace(published=["Paper"] if k in published else [], accuracy=None) for k in range(len(noise))]
    book = Book(entries, [], pairs, Schedule(tuple(fractions), keep=0.5, min_keep=1))
    for l, pair in enumerate(pairs):
        z = rng.normal(size=(len(noise), n))
        for level in range(len(fractions)):
            idx = book.sample(l, level)
            for k, s in enumerate(noise):
                book.scores[(k, l, level)] = (pair.human + s * z[k])[idx]
    return book


def test_a_level_promotes_within_what_the_screen_cost() -> None:
    book = scored_book([0.3 * 1.3 ** k for k in range(12)])
    plain = halve(book, range(12), [0, 1])
    assert sorted(e for e, level in plain.reached.items() if level == 1) == [0, 1, 2, 3, 4, 5]
    # run 1 costs a second a segment: on all 400 segments it would take longer than the whole screen took
    cost = [0.001] * 12
    cost[1] = 1.0
    budgeted = halve(book, range(12), [0, 1], cost=cost)
    assert sorted(e for e, level in budgeted.reached.items() if level == 1) == [0, 2, 3, 4, 5]
    cost[0] = 1.0  # the best goes on whatever it costs
    assert 0 in {e for e, level in halve(book, range(12), [0, 1], cost=cost).reached.items() if level == 1}


def test_a_published_configuration_within_a_standard_error_is_selected() -> None:
    # two runs alike but for their noise; run 1 published: where run 0 is ahead by 0.06 standard errors of
    # the difference it gives way to it, by 2.2 it does not
    close = halve(scored_book([0.5, 0.5, 0.9], published={1}, seed=10), range(3), [0, 1])
    assert close.ranking[:2] == [0, 1] and close.selected == 1
    far = halve(scored_book([0.5, 0.5, 0.9], published={1}, seed=7), range(3), [0, 1])
    assert far.ranking[:2] == [0, 1] and far.selected == 0
    assert halve(scored_book([0.5, 0.5, 0.9], published={0}, seed=10), range(3), [0, 1]).selected == 0


def test_the_screen_encodes_each_text_once_and_halving_keeps_the_best(tuned, prepared) -> None:
    run, pairs, forward_calls = tuned
    entries, _ = prepared
    final = run.final
    # level 1 of 2: every run on 24 of the 40 segments; level 2: the best third on all of them
    assert Schedule.halving(3, 2).survivors(len(entries)) == [37, 13]
    assert sum(1 for e in final.reached.values() if e == 1) == 13
    best_mean = max(run.mean_abs_r[e] for e in final.ranking)
    assert run.mean_abs_r[final.ranking[0]] == best_mean and run.best == final.selected
    # the selection is the best, or a published configuration (within a standard error of it)
    assert final.selected == final.ranking[0] or entries[final.selected].published
    # every text of a level encoded once for all its runs, the published ones included: the forward
    # passes of the whole search are those of one run scored on the same samples
    entries, scorers = prepared
    one = Book(entries, scorers, pairs, Schedule.halving(3, 2))
    with counted_forward() as calls:
        one.need((0, l, level) for l in range(len(pairs)) for level in (0, 1))
    assert forward_calls == calls["n"] > 0


def test_final_scores_equal_each_run_scored_alone(tuned) -> None:
    run, pairs, _ = tuned
    for e in run.final.ranking[:3]:
        entry = run.entries[e]
        for k, lp in enumerate(pairs):
            alone = alignscore.build(entry.spec).score(lp.candidates, lp.references)
            r, _ = correlation(alone[entry.composition.metric].double().numpy(), lp.human)
            assert abs(run.per_pair[e][k] - abs(r)) < 1e-6


@pytest.mark.slow  # a whole nested cross-validation: out of the edit loop's tier, in CI's
def test_nested_cross_validation_and_its_intervals(tuned, prepared) -> None:
    run, pairs, _ = tuned
    entries, scorers = prepared
    assert [f.held_out for f in run.folds] == [lp.name for lp in pairs]
    book = Book(entries, scorers, pairs, Schedule.halving(3, 2))
    for k, fold in enumerate(run.folds):
        train = [m for m in range(len(pairs)) if m != k]
        selected = fold.chosen["selected"]
        assert selected == halve(book, range(len(entries)), train).selected  # the search without that pair
        alone = alignscore.build(entries[selected].spec).score(pairs[k].candidates, pairs[k].references)
        r, _ = correlation(alone[entries[selected].composition.metric].double().numpy(), pairs[k].human)
        assert abs(fold.abs_r["selected"] - abs(r)) < 1e-6
        assert set(fold.abs_r) == {"selected", "Plain", "Tiny"} and fold.chosen["Plain"] == next(
            i for i, e in enumerate(entries) if "Plain" in e.published)
    for name, interval in run.estimates.items():
        assert interval.estimate == pytest.approx(np.mean([f.abs_r[name] for f in run.folds]))
        assert interval.low <= interval.estimate <= interval.high
    for name, gain in run.gains.items():
        assert gain.estimate == pytest.approx(run.estimates["selected"].estimate - run.estimates[name].estimate)


def test_the_full_grid_scores_everything_and_selects_the_best(prepared, data_dir: Path) -> None:
    entries, scorers = prepared
    pairs = load_daseg(data_dir, ["de-en", "ru-en"])
    run = search(entries, scorers, pairs, Schedule((1.0,)), resamples=100)
    assert set(run.final.reached.values()) == {0} and len(run.final.ranking) == len(entries)
    means = [run.mean_abs_r[e] for e in range(len(entries))]
    assert run.best == int(np.nanargmax(means))


def test_an_accuracy_constraint_changes_the_selection_where_it_binds(tmp_path: Path) -> None:
    """Two runs over static word vectors: with [RM] and without. The human scores are the [RM]
    run's own scores, so the correlation selects it; but [RM] cannot tell a text from itself
    without its final full stop (the same word vectors: a tie, a miss), and the constraint on
    that category selects the other run."""
    data = write_daseg(tmp_path, LPS, N)
    pairs = load_daseg(data)
    words = sorted({w for lp in pairs for t in lp.references + lp.candidates for w, _, _ in split_words(t, True)})
    gen = np.random.default_rng(0)
    vec = tmp_path / "words.vec"
    vec.write_text("".join(f"{w} {' '.join(f'{x:.4f}' for x in gen.normal(size=8))}\n" for w in words),
                   encoding="utf-8")
    space = parse_space({"filters": [["rm"], []]})
    entries, scorers = prepare(space.candidates(sources_of({"model": str(vec), "lowercase": True}, FLAGS)))
    rm = next(i for i, e in enumerate(entries) if e.values["filters"] == ["rm"])
    for lp in pairs:  # human scores: the [RM] run's scores
        lp.human[:] = alignscore.build(entries[rm].spec).score(lp.candidates, lp.references).f1.double().numpy()
    items = [Item((f"the {w} sat on the mat .",), f"the {w} sat on the mat .", f"the {w} sat on the mat",
                  "final stop") for w in ("cat", "dog", "bird", "man", "child", "horse", "fox", "cow", "pig", "hen")]
    objective = Objective.parse("correlation, accuracy[final stop] >= 0.5")
    challenge_accuracy(entries, scorers, items, "final stop")
    assert entries[rm].accuracy == 0.0 and entries[1 - rm].accuracy == 1.0
    assert search(entries, scorers, pairs, Schedule((1.0,)), resamples=100).best == rm
    constrained = search(entries, scorers, pairs, Schedule((1.0,)), objective, resamples=100)
    assert constrained.best == 1 - rm and all(f.chosen["selected"] == 1 - rm for f in constrained.folds)
    weighted = search(entries, scorers, pairs, Schedule((1.0,)), Objective.parse("correlation + 2 * accuracy[all]"),
                      resamples=100)
    assert weighted.best == 1 - rm


@pytest.mark.slow  # a whole tune: out of the edit loop's tier, in CI's
def test_the_command_reports_the_objective_on_the_challenge_set(tmp_path: Path, data_dir: Path,
                                                                tiny_bert_dir: str) -> None:
    space = tmp_path / "two.toml"
    space.write_text("layer = [2]\nfilters = [[], ['rm']]\n", encoding="utf-8")
    items = tmp_path / "set.jsonl"
    items.write_text("".join(json.dumps({"refs": [f"the {w} sat ."], "good": f"the {w} sat .", "bad": f"a {w} ran",
                                         "category": "swap"}) + "\n" for w in ("cat", "dog", "man", "fox", "cow")),
                     encoding="utf-8")
    out = tmp_path / "out"
    code, stdout, err = invoke("tune", space, "--data", data_dir, "--model", tiny_bert_dir, "-o", out, "-q",
                               "--challenge", items, "--objective", "correlation, accuracy[swap] >= 0.5",
                               "--bootstrap", 100)
    assert code == 0, err
    assert "accuracy[swap]" in stdout
    table = (out / "leaderboard.md").read_text(encoding="utf-8")
    assert "objective correlation, accuracy[swap] >= 0.5" in table and "| accuracy |" in table
    rows = list(csv.DictReader(open(out / "leaderboard.csv", encoding="utf-8")))
    assert all(0.0 <= float(r["accuracy"]) <= 1.0 for r in rows)
    # best.toml's comment carries the selection's accuracy, as the leaderboard has it (docs/tune-compare.md)
    selected = next(r for r in rows if r["selected"] == "true")
    comments = [ln for ln in (out / "best.toml").read_text(encoding="utf-8").splitlines() if ln.startswith("#")]
    line = next(ln for ln in comments if "accuracy[swap]" in ln)
    assert "objective correlation, accuracy[swap] >= 0.5" in line
    assert float(line.rsplit(" ", 1)[1]) == pytest.approx(float(selected["accuracy"]))


# -- the command, its outputs, and score --config best.toml --------------------------------------------
@pytest.fixture(scope="module")
def tune_out(tmp_path_factory: pytest.TempPathFactory, space_file: Path, data_dir: Path, tiny_bert_dir: str):
    out = tmp_path_factory.mktemp("tune") / "out"
    code, stdout, err = invoke("tune", space_file, "--data", data_dir, "--model", tiny_bert_dir, "--layer", 3,
                               "-o", out, "--holdout", data_dir, "--batch-size", 5, "--bootstrap", 200)
    assert code == 0, err
    assert "[tune] " in err and "measured here" in err and "fold ru-en: selected" in err
    assert "On a language pair it never saw" in stdout
    return out


@pytest.mark.slow  # the whole command on a space, once for the module: CI's tier
def test_tune_writes_its_outputs(tune_out: Path) -> None:
    assert sorted(p.name for p in tune_out.iterdir()) == ["best.toml", "chart.png", "folds.csv", "holdout.csv",
                                                         "leaderboard.csv", "leaderboard.md"]
    rows = list(csv.DictReader(open(tune_out / "leaderboard.csv", encoding="utf-8")))
    assert len(rows) == 37
    assert [r["selected"] for r in rows].count("true") == 1
    selected = next(r for r in rows if r["selected"] == "true")
    assert selected is rows[0] or selected["published"]
    assert {r["published"] for r in rows} >= {"Plain", "Tiny: greedy idf", "Tiny: transport"}
    for r in rows:
        if r["mean"]:
            assert float(r["mean"]) == pytest.approx(np.mean([float(r[lp]) for lp in LPS]))
    folds = list(csv.DictReader(open(tune_out / "folds.csv", encoding="utf-8")))
    assert [f["left_out"] for f in folds] == ["cs-en", "de-en", "ru-en", "mean", "low", "high"]
    table = (tune_out / "leaderboard.md").read_text(encoding="utf-8")
    assert "Nested cross-validation" in table and "Held-out data" in table and "nan" not in table
    assert "successive halving" in table or "full grid" in table
    assert (tune_out / "chart.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow  # shares the whole command's run: CI's tier
def test_best_toml_reproduces_the_dev_r(tune_out: Path, data_dir: Path, tiny_bert_dir: str) -> None:
    rows = list(csv.DictReader(open(tune_out / "leaderboard.csv", encoding="utf-8")))
    best = next(r for r in rows if r["selected"] == "true")
    spec = compile_run([file_source(tune_out / "best.toml")])
    assert spec.encoder.model == tiny_bert_dir and str(alignscore.build(spec).signature()) == best["signature"]
    for lp in LPS:
        code, _, err = invoke("score", "-r", data_dir / f"DAseg.newstest2016.reference.{lp}",
                              "-c", data_dir / f"DAseg.newstest2016.mt-system.{lp}", "--config", tune_out / "best.toml",
                              "--human", data_dir / f"DAseg.newstest2016.human.{lp}", "-q")
        assert code == 0, err
        line = next(ln for ln in err.splitlines() if ln.startswith("pearson r("))
        assert abs(abs(float(line.split("= ")[1].split()[0])) - float(best[lp])) < 1e-6


def test_tune_refuses_what_does_not_fit(tmp_path: Path, space_file: Path, data_dir: Path, tiny_bert_dir: str) -> None:
    out = tmp_path / "out"
    common = ["tune", space_file, "--data", data_dir, "--model", tiny_bert_dir, "-o", out, "-q"]
    code, _, err = invoke(*common, "--budget", "0.00001")
    assert_one_error(code, err, "does not fit --budget 1e-05 min", "37 runs", "measured here")
    code, _, err = invoke(*common, "--max-compositions", "10")
    assert_one_error(code, err, "--max-compositions: ", "holds 40 runs, more than 10")
    code, _, err = invoke(*common, "--objective", "correlation, accuracy[all] >= 0.5")
    assert_one_error(code, err, "needs --challenge SET")
    challenge = tmp_path / "c.jsonl"
    challenge.write_text(json.dumps({"refs": ["a b"], "good": "a b", "bad": "a", "category": "x"}) + "\n",
                         encoding="utf-8")
    code, _, err = invoke(*common, "--challenge", challenge)
    assert_one_error(code, err, "--challenge applies with an --objective on its accuracy only")
    code, _, err = invoke(*common, "--lang-pairs", "de-en", "--lang-pairs", "cs-en,de-en")
    assert_one_error(code, err, "--lang-pairs: de-en is named twice")
    assert not out.exists()
    with pytest.raises(ConfigError, match="^lang_pairs=: de-en is named twice"):
        alignscore.tune(data_dir, space_file, model=tiny_bert_dir, lang_pairs="de-en,de-en")
    with pytest.raises(ConfigError, match="^max_compositions=: .* holds 40 runs, more than 10"):
        alignscore.tune(data_dir, space_file, model=tiny_bert_dir, max_compositions=10)


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
