"""``alignscore tune --combine K``: the combination proposed from the leaderboard's runs (apart
from each other), kept as best.toml only where its nested estimate beats the selection's, and
scored by ``score --config`` as the proposal scored it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from alignscore.combination import Combination
from alignscore.evaluation.wmt import load_daseg
from alignscore.tune.combine import APART, apart
from cli_checks import assert_one_error, invoke
from helpers import write_daseg

LPS = ("de-en", "ru-en", "cs-en")
SPACE = """
layer = [1, 2, 3]
subspace = [{ name = "greedy", aligner = ["greedy"], metric = ["recall", "f1"] },
            { name = "wmd", aligner = [{ name = "wmd", n_gram = 2 }], special_tokens = ["keep"] }]
published = [{ name = "Plain", layer = 3 }]
"""


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, tiny_bert_dir) -> tuple[Path, Path, str]:
    root = tmp_path_factory.mktemp("combine")
    data = write_daseg(root, LPS, 40)
    space = root / "space.toml"
    space.write_text(SPACE, encoding="utf-8")
    out = root / "out"
    code, stdout, err = invoke("tune", space, "--data", data, "--model", tiny_bert_dir, "-o", out, "-q",
                               "--combine", 2, "--bootstrap", 100)
    assert code == 0, err
    return data, out, stdout


@pytest.mark.slow  # a whole tune with its combine step: CI's tier
def test_the_proposal_is_reported_and_written_where_it_belongs(tuned) -> None:
    data, out, stdout = tuned
    assert "combination of" in stdout and "nested estimate" in stdout
    board = (out / "leaderboard.md").read_text(encoding="utf-8")
    assert "### Combination (at most 2 runs)" in board and "against the single selection's" in board
    kept = "kept as best.toml" in stdout
    combo = out / ("best.toml" if kept else "combination.toml")
    assert (out / "single.toml").exists() == kept
    combination = Combination.read(combo)
    assert 1 <= len(combination.parts) <= 2
    assert abs(sum(p.weight for p in combination.parts) - 1) < 1e-9
    # score --config gives the proposal's combination: its mean |r| on the data as the leaderboard says
    pairs = load_daseg(data)
    rs = []
    for lp in pairs:
        code, text, err = invoke("score", "--config", combo, "-c", data / f"DAseg.newstest2016.mt-system.{lp.name}",
                                 "-r", data / f"DAseg.newstest2016.reference.{lp.name}", "--format", "jsonl", "-q")
        assert code == 0, err
        got = [json.loads(line)["combined"] for line in text.splitlines() if line.strip()]
        rs.append(abs(np.corrcoef(got, lp.human)[0, 1]))
    assert f"in sample {np.mean(rs):.4f}" in board


def test_runs_apart_differ_in_two_settings() -> None:
    from types import SimpleNamespace

    a = SimpleNamespace(values={"layer": 1, "aligner": "greedy", "metric": "f1"})
    b = SimpleNamespace(values={"layer": 2, "aligner": "greedy", "metric": "f1"})
    c = SimpleNamespace(values={"layer": 2, "aligner": "wmd"})
    assert APART == 2 and not apart(a, b) and apart(a, c) and apart(b, c)


@pytest.mark.parametrize("value, needle", [("1", "an integer >= 2"), ("0", "an integer >= 2")])
def test_a_bad_combine_is_one_line_before_anything_loads(tmp_path, value, needle) -> None:
    code, _, err = invoke("tune", "--data", tmp_path / "no-data", "--model", tmp_path / "no-model", "--combine", value,
                          "-o", tmp_path / "out", "-q")
    assert_one_error(code, err, "--combine", needle)
    assert not (tmp_path / "out").exists()


def test_the_combine_step_is_estimated_before_the_search() -> None:
    from alignscore.tune.combine import POOL, CombineCost, fits_of
    from alignscore.tune.cost import Cost

    assert fits_of(6, 3) == 7 * ((POOL - 1) + (POOL - 2)) and fits_of(6, 2, pool=3) == 7 * 2
    cost = Cost(per_text=0.001, per_score=(0.01, 0.02, 0.03))
    ticks = iter([0.0, 0.5])  # one weight fit timed: half a second
    combining = CombineCost.measure(cost, [100, 200], [50], 2, clock=lambda: next(ticks))
    encoding, scoring, holdout = 0.001 * 2 * 350, 0.06 * 300, 0.05 * 50
    assert combining.worst() == pytest.approx(encoding + scoring + holdout + 0.5 * fits_of(2, 2, pool=3))
    cheap = encoding + 0.01 * 300 + 0.01 * 50 + 0.5 * fits_of(2, 2, pool=1)
    assert combining.seconds([0]) == pytest.approx(cheap)


def test_the_pool_is_bounded_by_the_time_kept_for_it(monkeypatch) -> None:
    """A run whose scoring would not fit the time kept for the step is passed over and counted."""
    from types import SimpleNamespace

    from alignscore.tune import combine

    entries = [SimpleNamespace(values={"layer": k, "aligner": a}, composition=SimpleNamespace(weighting=None))
               for k, a in ((1, "greedy"), (2, "wmd"), (3, "sinkhorn"), (4, "baryscore"))]  # each apart
    monkeypatch.setattr(combine, "ranking", lambda run: range(len(run.entries)))  # the board in this order
    run = SimpleNamespace(entries=entries)
    assert combine.pool_of(run) == ([0, 1, 2, 3], 0)
    assert combine.pool_of(run, fits=lambda pool: 1 not in pool) == ([0, 2, 3], 1)
    assert combine.pool_of(run, size=2) == ([0, 1], 0)


@pytest.mark.slow  # a cost probe that scores: out of the edit loop's tier, in CI's
def test_a_budget_without_room_for_the_combination_is_refused_saying_so(tmp_path, tiny_bert_dir) -> None:
    data = write_daseg(tmp_path, LPS, 40)
    space = tmp_path / "space.toml"
    space.write_text(SPACE, encoding="utf-8")
    code, _, err = invoke("tune", space, "--data", data, "--model", tiny_bert_dir, "-o", tmp_path / "out", "-q",
                          "--combine", 2, "--budget", "0.02")
    assert_one_error(code, err, "--budget", "kept for --combine 2")
    assert not (tmp_path / "out").exists()
