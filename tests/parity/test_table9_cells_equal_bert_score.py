"""The shipped table9 grid with the real all-MiniLM-L6-v2 (layer 4) on WMT16 de-en (first 200
segments): its BERTScore cells equal Pearson r of bert_score 0.3.13's F with the same model, layer
and idf, and its WMD cells equal the WMD aligner's scores from ``Scorer`` run alone.

Tolerances: 1e-6 absolute on Pearson r (the issue's bar); 1e-5 absolute on per-segment scores
(float32 encoders, batches of different shapes).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import alignscore
from alignscore.ablation import evaluate, load_grid, run_grid
from alignscore.cli.options import FLAGS
from alignscore.config import compile_run
from alignscore.config.compile import sources_of
from alignscore.evaluation.wmt import load_daseg
from helpers import LANG_PAIRS, needs, wmt16

bert_score = needs("bert_score")

pytestmark = [pytest.mark.slow, pytest.mark.reference]
REPO = Path(__file__).resolve().parents[2]
LP, N = "de-en", 200
ROWS = ("Vanilla", "IDF-S", "IDF-L", "IDF-L + SEP + RM", "IDF-L + SEP + PMEANS", "IDF-L + SEP + MNLI")


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, minilm_dir: str):
    folder = tmp_path_factory.mktemp("daseg-parity")
    files = wmt16(LP)
    for kind in ("reference", "mt-system", "human", "source"):
        (folder / f"DAseg.newstest2016.{kind}.{LP}").write_text("\n".join(files[kind][:N]) + "\n",
                                                               encoding="utf-8")
    corpus = [r for lp in LANG_PAIRS for r in wmt16(lp)["reference"]]  # 3,360 WMT16 references
    corpus_file = folder / "wmt16-refs.en"
    corpus_file.write_text("\n".join(corpus) + "\n", encoding="utf-8")
    # the MNLI role names a model that is on no machine (the grid's own may be in the user's hub cache)
    grid = load_grid(REPO / "ablations" / "table9.toml")
    grid = replace(grid, rows=tuple(r for r in grid.rows if r.name in ROWS))
    pairs = load_daseg(folder, idf_corpus=corpus_file)
    flags = sources_of({"model": minilm_dir, "layer": 4}, FLAGS)
    run = run_grid(grid, pairs, flags, models={"mnli": str(folder / "no-such-mnli-model")}, skip_missing=True)
    stats = {(s.row, s.column): s for s in evaluate(run, ["pearson"], bootstrap=0)}
    return run, stats, pairs[0], corpus, flags, corpus_file


def _bert_score_f(lp, minilm_dir, idf):
    _, _, f = bert_score.score(lp.candidates, lp.references, model_type=minilm_dir, num_layers=4,
                               idf=idf, batch_size=64, device="cpu", nthreads=1)
    return f.double().numpy()


@pytest.mark.parametrize("row", ["Vanilla", "IDF-S", "IDF-L"])
def test_bertscore_cells_equal_bert_score_pearson_r(setup, minilm_dir, row):
    run, stats, lp, corpus, _, _ = setup
    if row == "IDF-L":
        from bert_score.utils import get_idf_dict, get_tokenizer

        idf = get_idf_dict(corpus, get_tokenizer(minilm_dir, use_fast=False), nthreads=0)
    else:
        idf = row == "IDF-S"
    theirs = np.corrcoef(_bert_score_f(lp, minilm_dir, idf), lp.human)[0, 1]
    diff = abs(stats[(row, "BERTScore F")].r - theirs)
    assert diff < 1e-6, f"|r - r_bert_score| = {diff:.2e}"


@pytest.mark.parametrize("row, column", [("Vanilla", "WMD1"), ("IDF-L + SEP + RM", "WMD2"),
                                         ("IDF-L + SEP + PMEANS", "WMD1")])
def test_wmd_cells_equal_the_aligner_run_alone(setup, row, column):
    run, stats, lp, _, flags, corpus_file = setup
    i = run.row_names.index(row)
    j = [c.name for c in run.grid.columns].index(column)
    cell = run.cell(i, j, LP)
    spec = compile_run(run.grid.sources(run.grid.rows[i], run.grid.columns[j], flags),
                       {"idf_corpus": str(corpus_file)})
    scorer = alignscore.build(spec)
    assert scorer.aligner.name == "wmd"
    alone = scorer.score(lp.candidates, lp.references)
    np.testing.assert_allclose(cell.scores, alone.score.double().numpy(), atol=1e-5, rtol=0)
    assert abs(stats[(row, column)].r - np.corrcoef(alone.score.double().numpy(), lp.human)[0, 1]) < 1e-6
    assert cell.signature == str(alone.signature)


def test_mnli_rows_are_skipped_with_a_note(setup):
    # the MNLI model is not on this machine: with skip_missing, skipped with a note, nothing downloaded
    run, stats, _, _, _, _ = setup
    i = run.row_names.index("IDF-L + SEP + MNLI")
    cells = [c for c in run.cells if c.row == i]
    assert len(cells) == 3 and all(c.scores is None and "not on this machine" in c.skipped for c in cells)
    assert stats[("IDF-L + SEP + MNLI", "WMD1")].r is None
