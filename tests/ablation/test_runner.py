"""Ablation grids: parsing, running (each cell equals its Scorer run alone; one encoding per model),
skipping what cannot run, outputs and the ``ablate`` command. Tiny local models, a WMT16 subset."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

import alignscore
from alignscore.ablation import evaluate, load_grid, parse_grid, run_grid, write_outputs
from alignscore.cli import main
from alignscore.cli.options import FLAGS
from alignscore.config import compile_run
from alignscore.config.compile import merge, sources_of
from alignscore.encoders.huggingface import HFEncoder
from alignscore.errors import ConfigError
from alignscore.evaluation.wmt import load_daseg
from alignscore.signature import content_digest
from helpers import counted_forward, wmt16

N = 40  # segments per language pair: enough to correlate, small enough to be quick
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DAseg folder with the first N segments of de-en and ru-en, and an official-style full
    reference file for de-en only (so ru-en has no idf-L corpus)."""
    out = tmp_path_factory.mktemp("daseg")
    for lp in ("de-en", "ru-en"):
        files = wmt16(lp)
        for kind in ("reference", "mt-system", "human", "source"):
            (out / f"DAseg.newstest2016.{kind}.{lp}").write_text("\n".join(files[kind][:N]) + "\n",
                                                                  encoding="utf-8")
    (out / "newstest2016-deen-ref.en").write_text("\n".join(wmt16("de-en")["reference"]) + "\n", encoding="utf-8")
    return out


def _grid_text(base: str, mnli: str) -> str:
    return f"""
title = "tiny"
[models.base]
model = "{base}"
layer = 3
[models.mnli]
model = "{mnli}"
layer = 2
[defaults]
special_tokens = "match-only"
[[columns]]
name = "WMD1"
aligner = "wmd"
n_gram = 1
cost = "sqeuclidean"
special_tokens = "keep"
[[columns]]
name = "WMD2"
aligner = "wmd"
n_gram = 2
special_tokens = "keep"
[[columns]]
name = "F"
aligner = "greedy"
metric = "f1"
[[rows]]
name = "Vanilla"
[[rows]]
name = "IDF-S"
weighting = "idf-S"
[[rows]]
name = "IDF-L + SEP + RM"
weighting = "idf-L"
sep = true
filters = ["rm"]
[[rows]]
name = "PMEANS"
aggregator = {{ name = "pmeans", layers = [-3, -2, -1] }}
[[rows]]
name = "Routing"
aggregator = "routing"
[[rows]]
name = "Layer {{layer}}"
layer = -1
[[rows]]
name = "MNLI + IDF-S"
model = "mnli"
weighting = "idf-S"
"""


@pytest.fixture(scope="module")
def grid_file(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: str, tiny_roberta_dir: str) -> Path:
    path = tmp_path_factory.mktemp("grid") / "tiny.toml"
    path.write_text(_grid_text(tiny_bert_dir, tiny_roberta_dir), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def counted_run(grid_file: Path, data_dir: Path):
    """The tiny grid run once, counting encoder forward passes per model."""
    calls: dict[str, int] = {}
    original = HFEncoder.forward

    def counting(self, input_ids, attention_mask, layers):
        calls[self.name] = calls.get(self.name, 0) + 1
        return original(self, input_ids, attention_mask, layers)

    HFEncoder.forward = counting  # type: ignore[method-assign]
    try:
        run = run_grid(load_grid(grid_file), load_daseg(data_dir), sources_of({"batch_size": 16}))
    finally:
        HFEncoder.forward = original  # type: ignore[method-assign]
    return run, calls


# -- parsing -----------------------------------------------------------------------------------
def _minimal(**extra: object) -> dict:
    data = {"models": {"base": {"model": "m"}}, "columns": [{"name": "F", "aligner": "greedy"}],
            "rows": [{"name": "Vanilla"}]}
    data.update(extra)
    return data


def _cells(data: dict) -> list:
    """Every cell of a grid compiled (what ``ablate`` does before any model loads)."""
    grid = parse_grid(data)
    return [compile_run(grid.sources(r, c), {"idf_corpus": ("a corpus",)}) for r in grid.rows for c in grid.columns]


@pytest.mark.parametrize("bad, message", [
    ({"rows": [{"name": "x", "weighting": "tfidf"}]}, "rows\\[0\\].weighting: no weighting 'tfidf'"),
    ({"rows": [{"name": "x", "colour": "red"}]}, "rows\\[0\\].colour: no such option"),
    ({"rows": [{"name": "x", "aggregator": "pmeans", "layer": 3}]},
     "rows\\[0\\].layer: applies to aggregator single, not to aggregator pmeans"),
    ({"rows": [{"name": "x", "model": "mnli"}]}, "names a model role of \\[models\\]: one of base, not 'mnli'"),
    ({"rows": [{"name": "x"}, {"name": "x"}]}, "unique"),
    ({"columns": [{"name": "F", "aligner": "beam"}]}, "no aligner 'beam'"),
    ({"columns": [{"name": "F", "aligner": "greedy", "metric": "bleu"}]}, "no output 'bleu'"),
    ({"columns": []}, "at least one"),
    ({"models": {}}, "models"),
    ({"rows": [{"name": "x", "filters": ["rm", "nonsense"]}]}, "no token filter 'nonsense'"),
    ({"rows": [{"name": "x", "special_tokens": "maybe"}]}, "special_tokens: one of match-only, drop, keep"),
    ({"rows": [{"name": "x", "config": "run.toml"}]}, "a config is a whole run"),
        ({"rows": [{"name": "x", "preset": "nope"}]}, "preset: one of baryscore, bertscore"),
    ({"colums": []}, "colums: not a grid key"),
])
def test_grid_errors_are_config_errors(bad, message):
    with pytest.raises(ConfigError, match=message):
        _cells(_minimal(**bad))


def test_cells_merge_role_flags_defaults_column_row():
    grid = parse_grid(_minimal(
        models={"base": {"model": "b", "layer": 9}, "mnli": {"model": "m", "layer": 9}},
        defaults={"weighting": "idf-S", "filters": ["rm"]},
        columns=[{"name": "W", "aligner": "wmd", "n_gram": 2, "special_tokens": "keep",
                  "filters": [{"name": "stopwords", "stopwords": ["the"]}]}],
        rows=[{"name": "A"}, {"name": "B", "special_tokens": "drop", "weighting": "none", "model": "mnli"}]))
    a, b = (compile_run(grid.sources(r, grid.columns[0])) for r in grid.rows)
    assert (a.encoder.model, a.composition.weighting.signature(), a.composition.roles.special) == ("b", "idf-S", "keep")
    assert [type(f).__name__ for f in a.composition.roles.filters] == ["RemoveSubwordsPunct", "StopWords"]
    assert a.composition.aligner.n_gram == 2 and a.composition.aggregator.layer == 9
    assert (b.encoder.model, b.composition.weighting.signature(), b.composition.roles.special) == ("m", "none", "drop")
    flags = sources_of({"model": "x", "layer": 4}, FLAGS)
    over = [merge(grid.sources(r, grid.columns[0], flags)) for r in grid.rows]
    assert (over[0].given("model").value, over[0].given("layer").value) == ("x", 4)
    assert (over[1].given("model").value, over[1].given("layer").value) == ("m", 4)  # only --mnli-model moves it
    moved = merge(grid.sources(grid.rows[0], grid.columns[0], sources_of({"model": "x"}, FLAGS)))
    assert moved.given("layer") is None  # another model: its own default layer, not the role's 9
    mnli = merge(grid.sources(grid.rows[1], grid.columns[0], flags, {"mnli": "y"}))
    assert mnli.given("model").value == "y" and mnli.given("layer").value == 4


def test_a_grid_row_sets_any_option_of_a_run_even_the_encoder_s():
    grid = parse_grid(_minimal(rows=[{"name": "half", "dtype": "bfloat16", "long_texts": "window", "batch_size": 8}]))
    spec = compile_run(grid.sources(grid.rows[0], grid.columns[0]))
    assert (spec.encoder.dtype, spec.encoder.long_texts, spec.runtime.batch_size) == ("bfloat16", "window", 8)


def test_shipped_grids_parse():
    t9 = load_grid(REPO / "ablations" / "table9.toml")
    assert [r.name for r in t9.rows] == [
        "Vanilla", "IDF-S", "IDF-L", "IDF-L + SEP", "IDF-L + SEP + RM", "IDF-L + SEP + PMEANS",
        "IDF-L + SEP + MNLI", "IDF-L + SEP + PMEANS + MNLI", "IDF-L + SEP + PMEANS + MNLI + RM"]
    assert [c.name for c in t9.columns] == ["WMD1", "WMD2", "BERTScore F"]
    t6 = load_grid(REPO / "ablations" / "table6.toml")
    assert [c.name for c in t6.columns] == ["WMD-1"] and len(t6.rows) == 7


# -- running -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_every_cell_equals_its_scorer_run_alone(counted_run, data_dir):
    run, _ = counted_run
    pairs = {lp.name: lp for lp in load_daseg(data_dir)}
    checked = 0
    for cell in run.cells:
        if cell.scores is None:
            continue
        row, col = run.grid.rows[cell.row], run.grid.columns[cell.column]
        lp = pairs[cell.lang_pair]
        corpus = {"idf_corpus": str(data_dir / "newstest2016-deen-ref.en")}
        spec = compile_run(run.grid.sources(row, col), corpus)
        scorer = alignscore.build(spec)  # a fresh encoder per cell: truly "alone"
        alone = scorer.score(lp.candidates, lp.references)
        # tolerance 1e-5 per segment: only the encoder batches differ (float32 rounding)
        np.testing.assert_allclose(cell.scores, alone[spec.composition.metric].double().numpy(), atol=1e-5, rtol=0)
        assert cell.signature == str(alone.signature)
        checked += 1
    assert checked == 7 * 3 * 2 - 3  # all but IDF-L on ru-en (no corpus)


def test_each_unique_text_is_encoded_once_per_model(counted_run, data_dir):
    run, calls = counted_run
    texts = set()
    for lp in load_daseg(data_dir):
        texts |= {t.strip() for t in lp.references + lp.candidates}
    batches = math.ceil(len(texts) / 16)
    base, mnli = run.models["base"], run.models["mnli"]
    assert calls == {base: batches, mnli: batches}  # one pass per batch, for every layer and row


def test_what_cannot_run_is_skipped_with_a_reason(counted_run):
    run, _ = counted_run
    assert "Layer 4" in run.row_names  # {layer} resolved: the last layer of the 4-layer model
    reasons = {(run.row_names[c.row], c.lang_pair): c.skipped for c in run.cells if c.skipped}
    assert set(reasons) == {("IDF-L + SEP + RM", "ru-en")}
    assert "no idf-L corpus for ru-en" in reasons[("IDF-L + SEP + RM", "ru-en")]


def test_a_layer_the_model_does_not_have_is_an_error_before_any_encoding(grid_file, data_dir, tmp_path):
    bad = tmp_path / "deep.toml"
    bad.write_text(grid_file.read_text(encoding="utf-8") + '[[rows]]\nname = "Too deep"\nlayer = 99\n',
                   encoding="utf-8")
    before = HFEncoder.load_model
    HFEncoder.load_model = lambda self: pytest.fail("the model's weights were loaded")  # type: ignore[method-assign]
    try:
        result = CliRunner().invoke(main, ["ablate", str(bad), "--data", str(data_dir), "-o", str(tmp_path / "o"), "-q"])
    finally:
        HFEncoder.load_model = before  # type: ignore[method-assign]
    assert result.exit_code == 1 and not (tmp_path / "o").exists()
    assert result.output.strip() == (f"alignscore: error: {bad}:{len(bad.read_text().splitlines())}: rows[7].layer: "
                                     f"layer 99 does not exist: the model has layers 0..4 (or -4..-1 from the top) "
                                     f"(model {run_model(grid_file)!r})")


def run_model(grid_file: Path) -> str:
    return load_grid(grid_file).model("base")


def _small_grid(grid_file: Path, tmp_path: Path, rows: str = "") -> Path:
    """The tiny grid's models, one greedy column, rows Vanilla and MNLI (and ``rows``)."""
    text = grid_file.read_text(encoding="utf-8")
    small = tmp_path / "small.toml"
    small.write_text(text[:text.index("[[columns]]")] + '[[columns]]\nname = "F"\naligner = "greedy"\n'
                     '[[rows]]\nname = "Vanilla"\n[[rows]]\nname = "MNLI"\nmodel = "mnli"\n' + rows, encoding="utf-8")
    return small


def test_a_model_that_is_not_here_is_an_error_unless_skipped(grid_file, data_dir, tmp_path):
    small = load_grid(_small_grid(grid_file, tmp_path))
    pairs = load_daseg(data_dir, ["de-en"])
    with pytest.raises(ConfigError, match=r"^models=\['mnli'\]: model 'no-such-org/no-such-model-xyz' is not on this "
                                          "machine .*skip_missing="):
        run_grid(small, pairs, models={"mnli": "no-such-org/no-such-model-xyz"})
    run = run_grid(small, pairs, models={"mnli": "no-such-org/no-such-model-xyz"}, skip_missing=True)
    vanilla, mnli = run.cells
    assert vanilla.scores is not None
    assert mnli.scores is None and "not on this machine" in mnli.skipped


def _lines(path: Path, *keys: str) -> list[int]:
    """The line of each key (``key = ...``) in a file, in order of the keys."""
    text = path.read_text(encoding="utf-8").splitlines()
    return [next(n for n, line in enumerate(text, 1) if line.startswith(key)) for key in keys]


def test_ablate_names_a_missing_model_where_the_grid_names_it(grid_file, data_dir, tmp_path):
    small = _small_grid(grid_file, tmp_path)
    missing = str(tmp_path / "no-such-mnli-model")
    small.write_text(small.read_text(encoding="utf-8").replace(load_grid(grid_file).model("mnli"), missing),
                     encoding="utf-8")
    out = tmp_path / "out"
    args = ["ablate", str(small), "--data", str(data_dir), "--lang-pairs", "de-en", "--bootstrap", "0",
            "-o", str(out), "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and not out.exists()
    (line,) = _lines(small, f'model = "{missing}"')
    assert result.output.strip().splitlines() == [
        f"alignscore: error: {small}:{line}: models.mnli.model: no such model folder or file: {missing}; "
        "--skip-missing skips the runs that need it"]
    result = CliRunner().invoke(main, args + ["--skip-missing"])
    assert result.exit_code == 0, result.output
    assert "| MNLI | (all) |" in result.output and f"[1] model {missing!r} is not on this machine" in result.output
    assert (out / "table.md").exists()


def test_ablate_reports_the_errors_of_every_cell_before_anything_runs(grid_file, data_dir, tmp_path):
    bad = _small_grid(grid_file, tmp_path, '[[rows]]\nname = "Too deep"\nlayer = 99\n'
                                           '[[rows]]\nname = "Greedy bigrams"\nn_gram = 0\n')
    out = tmp_path / "out"
    with counted_forward() as calls:
        result = CliRunner().invoke(main, ["ablate", str(bad), "--data", str(data_dir), "--mnli-model",
                                           "no-such-org/no-such-model-xyz", "-o", str(out), "-q"])
    assert result.exit_code == 1 and not out.exists() and calls["n"] == 0
    deep, n_gram = _lines(bad, "layer = 99", "n_gram = 0")
    lines = result.output.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("alignscore: error: ") for line in lines), lines
    assert lines[0].startswith("alignscore: error: --mnli-model: model 'no-such-org/no-such-model-xyz' is not on")
    assert lines[1].startswith(f"alignscore: error: {bad}:{deep}: rows[2].layer: layer 99 does not exist")
    assert lines[2].startswith(f"alignscore: error: {bad}:{n_gram}: rows[3].n_gram:")


def test_outputs(counted_run, tmp_path):
    run, _ = counted_run
    stats = evaluate(run, ["pearson", "kendall"], bootstrap=200, seed=0)
    paths = write_outputs(tmp_path / "out", run, stats, "pearson", command="alignscore ablate tiny.toml")
    table = paths["table"].read_text(encoding="utf-8")
    assert "| Ablation | Metric | de-en | ru-en | Avg |" in table
    assert "no idf-L corpus for ru-en" in table
    assert "alignscore ablate tiny.toml" in table
    with open(paths["csv"], encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * len(run.cells)  # long form: one line per cell, language pair, correlation
    assert set(rows[0]) >= {"row", "aligner", "lang_pair", "r", "p_value"}
    ok = [r for r in rows if r["status"] == "ok" and r["correlation"] == "pearson"]
    assert all(float(r["ci_low"]) <= abs(float(r["r"])) <= float(r["ci_high"]) for r in ok)
    assert any(r["not_beaten"] == "true" for r in ok)
    # the Markdown cell is |r| of the CSV, bold where not beaten
    first = ok[0]
    cell = f"{abs(float(first['r'])):.3f}"
    assert (f"**{cell}**" if first["not_beaten"] == "true" else cell) in table
    assert paths["chart"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sigs = paths["signatures"].read_text(encoding="utf-8").splitlines()
    assert len(sigs) - 1 == sum(c.signature is not None for c in run.cells)
    assert all("align:" in line for line in sigs[1:])


def test_pearson_r_of_a_cell_is_its_correlation_with_human(counted_run):
    run, _ = counted_run
    stats = evaluate(run, ["pearson"], bootstrap=0)
    cell = next(c for c in run.cells if c.scores is not None)
    lp = next(lp for lp in run.lang_pairs if lp.name == cell.lang_pair)
    stat = next(s for s in stats if (s.row_index, s.column_index, s.lang_pair) == (cell.row, cell.column, cell.lang_pair))
    assert stat.r == pytest.approx(np.corrcoef(cell.scores, lp.human)[0, 1], abs=1e-12)


# -- the command ---------------------------------------------------------------------------------
@pytest.mark.slow  # a whole grid: out of the edit loop's tier, in CI's
def test_ablate_command(grid_file, data_dir, tmp_path, tiny_bert_dir):
    out = tmp_path / "res"
    result = CliRunner().invoke(main, ["ablate", str(grid_file), "--data", str(data_dir), "--lang-pairs", "de-en",
                                       "--model", tiny_bert_dir, "--layer", "2", "--bootstrap", "50", "-o", str(out),
                                       "-q"])
    assert result.exit_code == 0, result.output
    assert "| Vanilla | WMD1 |" in result.output
    assert {p.name for p in out.iterdir()} == {"table.md", "results.csv", "chart.png", "signatures.tsv"}
    sig = (out / "signatures.tsv").read_text(encoding="utf-8")
    assert "layers:L2|" in sig  # --layer reached the single-layer rows


def test_ablate_command_errors_are_one_line(tmp_path, data_dir):
    bad = tmp_path / "bad.toml"
    bad.write_text('[models.base]\nmodel = "m"\n[[columns]]\nname = "F"\naligner = "beam"\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["ablate", str(bad), "--data", str(data_dir)])
    assert result.exit_code == 1
    assert result.output.strip().startswith("alignscore: error:") and "no aligner 'beam'" in result.output
    assert len(result.output.strip().splitlines()) == 1
    (tmp_path / "broken.toml").write_text("title = \n", encoding="utf-8")
    result = CliRunner().invoke(main, ["ablate", str(tmp_path / "broken.toml"), "--data", str(data_dir)])
    assert result.exit_code == 1 and "not valid TOML" in result.output
    result = CliRunner().invoke(main, ["ablate", str(REPO / "ablations" / "table9.toml"), "--data",
                                       str(data_dir), "--lang-pairs", "xx-en"])
    assert result.exit_code == 1 and "xx-en" in result.output


def test_every_cell_that_ran_has_one_finite_score_per_segment(counted_run):
    run, _ = counted_run
    segments = {lp.name: len(lp.candidates) for lp in run.lang_pairs}
    ran = [c for c in run.cells if c.scores is not None]
    assert ran and all(c.skipped is None for c in ran)
    for c in ran:
        assert c.scores.shape == (segments[c.lang_pair],) and np.isfinite(c.scores).all(), (c.row, c.column)
    assert all(c.skipped for c in run.cells if c.scores is None)  # a cell without scores says why
    assert torch.get_default_dtype() == torch.float32  # the run left the process's default alone


def test_a_stop_word_file_is_read_relative_to_the_grid(tmp_path):
    (tmp_path / "stop.txt").write_text("the\nof\n", encoding="utf-8")
    grid = parse_grid(_minimal(rows=[{"name": "x", "filters": [{"name": "stopwords", "stopwords": "stop.txt"}]}]),
                      base_dir=tmp_path)
    (filt,) = compile_run(grid.sources(grid.rows[0], grid.columns[0])).composition.roles.filters
    assert filt.stopwords == str(tmp_path / "stop.txt") and filt.signature() == f"stop(stop.txt#{content_digest(['of', 'the'])},n=2)"
