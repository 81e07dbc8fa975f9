"""The budget of ``alignscore tune``: ``--budget`` checked before anything loads; the plan from
made-up costs (the schedule that fits, an explicit budget refused with the cheapest schedule's
estimate, the default one screening harder instead); the cost probe bounded on an injected
clock; a search that falls behind its plan re-planning its later levels. No timing: every
clock here is a fake one."""

from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import alignscore
from alignscore.errors import ConfigError
from alignscore.tune import (HARDER, SCHEDULES, Book, Cost, Pace, Schedule, halve_together,
                                          measure, plan_search, prepare, probe_seconds, replan_share)
from alignscore.tune.cost import PROBE_ROUNDS, fastest_threads
from alignscore.tune.space import parse_space
from alignscore.cli.options import FLAGS
from alignscore.config.compile import sources_of
from alignscore.evaluation.wmt import LangPair, load_daseg
from cli_checks import assert_one_error, invoke
from helpers import write_daseg

SIZES = [300, 300]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "soon"])
def test_budget_must_be_a_finite_positive_number_before_anything_loads(tmp_path: Path, value: str) -> None:
    # neither the data nor the model exists: the budget is the first thing checked
    code, _, err = invoke("tune", "--data", tmp_path / "no-data", "--model", tmp_path / "no-model",
                          "--budget", value, "-o", tmp_path / "out", "-q")
    assert_one_error(code, err, "--budget", value, "a number > 0")
    assert not (tmp_path / "out").exists()
    with pytest.raises(ConfigError, match="^budget=: .*a number > 0"):
        alignscore.tune(tmp_path / "no-data", budget=float(value) if value != "soon" else value)
    with pytest.raises(ConfigError, match="^budget=: expected a number > 0, not True"):
        alignscore.tune(tmp_path / "no-data", budget=True)


def test_the_probe_takes_at_most_a_tenth_of_the_budget_and_a_minute() -> None:
    assert probe_seconds(60.0) == 6.0 and probe_seconds(30 * 60) == 60.0


def costly(n: int = 100, per_score: float = 0.001, published: int = 3) -> Cost:
    return Cost(per_text=0.001, per_score=(per_score,) * n, per_call=(0.01,) * n, always=tuple(range(published)))


def test_the_plan_is_the_schedule_that_fits() -> None:
    cost = costly()
    full = cost.seconds(SIZES, Schedule((1.0,)))
    assert plan_search(cost, SIZES, full).schedule == Schedule((1.0,))
    fits = [s for s in SCHEDULES if cost.seconds(SIZES, s) <= full * 0.5]
    assert plan_search(cost, SIZES, full * 0.5).schedule == fits[0]
    planned = plan_search(cost, SIZES, full * 0.5)
    assert planned.runs is None and planned.note is None
    assert [e + s for e, s in planned.levels] == pytest.approx(cost.levels(SIZES, planned.schedule))


def test_an_explicit_budget_is_refused_with_the_cheapest_estimate() -> None:
    cost = costly(per_score=1.0)
    cheapest = cost.seconds(SIZES, SCHEDULES[-1])
    with pytest.raises(ConfigError) as err:
        plan_search(cost, SIZES, 60.0, explicit=True, label="--budget", given=1.0)
    assert "does not fit --budget 1 min (1.0 min left after loading and measuring): 100 runs" in str(err.value)
    assert f"about {cheapest / 60:.1f} min even with {SCHEDULES[-1]}" in str(err.value)


@pytest.mark.parametrize("budget_s", [1e6, 5000.0, 1000.0])
def test_the_default_budget_plans_within_itself(budget_s: float) -> None:
    cost = costly(per_score=1.0)
    plan = plan_search(cost, SIZES, budget_s, explicit=False, seed=3)
    assert plan.schedule in SCHEDULES + HARDER and plan.seconds <= budget_s
    if plan.schedule not in SCHEDULES or plan.runs is not None:
        assert plan.note and "default budget" in plan.note and "\n" not in plan.note


def test_a_sample_drops_published_runs_before_it_overruns() -> None:
    cost = costly(per_score=1.0)
    one = cost.only([0]).seconds(SIZES, HARDER[-1])
    plan = plan_search(cost, SIZES, one * 1.01, explicit=False, seed=3)
    assert plan.runs == (0,) and plan.seconds <= one * 1.01  # the first published run only
    assert "1 of the 3 published configurations" in plan.note


@pytest.mark.parametrize("budget_s", [500.0, 1.0, -5.0])
def test_the_default_budget_refuses_where_not_one_run_fits(budget_s: float) -> None:
    with pytest.raises(ConfigError, match="not even one run fits the default budget"):
        plan_search(costly(per_score=1.0), SIZES, budget_s, explicit=False, seed=3)


def test_the_default_budget_screens_harder_then_samples_the_space() -> None:
    cost = costly(per_score=0.01)
    # between the cheapest usual schedule and the hardest one: a harder schedule, every run
    budget = (cost.seconds(SIZES, SCHEDULES[-1]) + cost.seconds(SIZES, HARDER[-1])) / 2
    harder = plan_search(cost, SIZES, budget, explicit=False)
    assert harder.schedule in HARDER and harder.runs is None and "screening harder" in harder.note
    # a budget only a part of the runs fits: a seeded sample, the published ones in it, the largest that fits
    tight = cost.only(range(40)).seconds(SIZES, HARDER[-1])
    sampled = plan_search(cost, SIZES, tight, explicit=False, seed=1)
    assert sampled.schedule == HARDER[-1] and {0, 1, 2} <= set(sampled.runs) and len(sampled.runs) == 40
    assert sampled.seconds <= tight < cost.only(range(41)).seconds(SIZES, HARDER[-1])
    assert "seeded sample of 40 runs" in sampled.note
    assert plan_search(cost, SIZES, tight, explicit=False, seed=1).runs == sampled.runs  # seeded
    assert plan_search(cost, SIZES, tight, explicit=False, seed=2).runs != sampled.runs


def test_falling_behind_replans_the_remaining_levels() -> None:
    levels = [(1.0, 9.0), (1.0, 9.0), (2.0, 18.0)]  # planned: 40 s
    assert replan_share(levels, 0, 10.0, 40.0) == 1.0  # on time
    assert replan_share(levels, 0, 12.0, 60.0) == 1.0  # behind, but the budget has room
    # twice as slow: 20 s spent, 20 s left; the rest would take 2 * 30 s, of which 2 * 3 s encoding
    assert replan_share(levels, 0, 20.0, 40.0) == pytest.approx((20.0 - 6.0) / 54.0)
    assert replan_share(levels, 1, 40.0, 40.0) == 0.0  # nothing left: only the best goes on
    ticks = iter([0.0, 20.0])
    pace = Pace(levels, 40.0, clock=lambda: next(ticks))
    said: list[str] = []
    assert pace.after(0, said.append) == pytest.approx(14 / 54) and "re-planned" in said[0]


def book_of(n_runs: int, n: int = 120) -> Book:
    """Scores given, not computed: run k is the human score plus noise growing with k."""
    rng = np.random.default_rng(0)
    pairs = [LangPair("2016", src, "en", ["r"] * n, ["c"] * n, rng.normal(size=n)) for src in ("cs", "de")]
    entries = [SimpleNamespace(published=[], accuracy=None) for _ in range(n_runs)]
    book = Book(entries, [], pairs, Schedule((0.25, 1.0), keep=0.5, min_keep=1))
    for l, pair in enumerate(pairs):
        for level in range(2):
            for k in range(n_runs):
                book.scores[(k, l, level)] = (pair.human + 0.2 * (k + 1) * rng.normal(size=n))[book.sample(l, level)]
    return book


def test_a_search_behind_its_plan_promotes_fewer_runs() -> None:
    levels = [(0.0, 10.0), (0.0, 10.0)]
    on_time = halve_together(book_of(16), range(16), [[0, 1]],
                             pace=Pace(levels, 20.0, clock=iter([0.0, 10.0]).__next__))
    assert sum(1 for level in on_time[0].reached.values() if level == 1) == 8
    late = halve_together(book_of(16), range(16), [[0, 1]], pace=Pace(levels, 20.0, clock=iter([0.0, 15.0]).__next__))
    # 1.5 times slower, 5 s left of the 15 s the last level would now take: a third of the runs
    assert sum(1 for level in late[0].reached.values() if level == 1) == 2


@pytest.mark.slow  # a probe that scores: out of the edit loop's tier, in CI's
def test_the_probe_is_bounded_on_its_clock(tiny_bert_dir: str, tmp_path: Path) -> None:
    pairs = load_daseg(write_daseg(tmp_path, ("de-en", "ru-en"), 30))
    space = parse_space({"layer": [1, 2], "aligner": ["greedy", {"name": "wmd", "n_gram": 1}]})
    entries, scorers = prepare(space.candidates(sources_of({"model": tiny_bert_dir}, FLAGS)))
    slow = itertools.count(0.0, 7.0)  # every reading 7 s after the one before
    probe = measure(entries, scorers, pairs, seconds=60.0, clock=lambda: next(slow))
    assert probe.rounds == 1  # a second round would end past its 60 s
    steady = itertools.count(0.0, 0.5)
    some = measure(entries, scorers, pairs, seconds=60.0, clock=lambda: next(steady))
    assert 1 < some.rounds <= PROBE_ROUNDS and some.seconds <= 60.0
    assert len(some.cost.per_score) == len(entries) and all(c >= 0 for c in some.cost.per_score)


def test_a_missing_model_is_named_unless_skipped(tmp_path: Path, tiny_bert_dir: str) -> None:
    data = write_daseg(tmp_path, ("de-en", "ru-en"), 30)
    space = tmp_path / "two-models.toml"
    space.write_text(f"model = [{tiny_bert_dir!r}, 'no-such-org/no-such-model']\nlayer = [2]\n", encoding="utf-8")
    common = ["tune", space, "--data", data, "-o", tmp_path / "out", "-q", "--bootstrap", 100]
    code, _, err = invoke(*common)
    assert_one_error(code, err, f"{space}:1: model[1]", "no-such-org/no-such-model", "--skip-missing")
    assert not (tmp_path / "out").exists()
    threads = torch.get_num_threads()
    result = alignscore.tune(data, space, skip_missing=True, bootstrap=100)
    assert torch.get_num_threads() == threads  # the probe's choice does not outlive the search
    assert {e.spec.encoder.model for e in result.run.entries} == {tiny_bert_dir}
    assert any("no-such-org/no-such-model" in line for line in result.left_out)


def test_on_a_slow_clock_no_budget_runs_over(tmp_path: Path, tiny_bert_dir: str) -> None:
    data = write_daseg(tmp_path, ("de-en", "ru-en"), 30)
    space = tmp_path / "space.toml"
    space.write_text("layer = [1, 2, 3]\nweighting = ['none', 'idf-S']\naligner = ['greedy', 'wmd']\n"
                     "[[published]]\nname = 'Plain'\nlayer = 2\n", encoding="utf-8")
    slow = itertools.count(0.0, 100.0)  # every clock reading 100 s after the one before: no time is left
    with pytest.raises(ConfigError, match=r"not even one run fits the default budget \(0.0 min left after "
                                          r"loading and measuring\)"):
        alignscore.tune(data, space, model=tiny_bert_dir, bootstrap=100, clock=lambda: next(slow))
    slow = itertools.count(0.0, 100.0)
    with pytest.raises(ConfigError, match=r"does not fit budget= 30 min \(0.0 min left after loading and "
                                          r"measuring\): 12 runs take about .* measured here"):
        alignscore.tune(data, space, model=tiny_bert_dir, budget=30, bootstrap=100, clock=lambda: next(slow))


@pytest.mark.parametrize("one_faster", [True, False])
def test_the_probe_leaves_torch_on_the_faster_thread_count(one_faster: bool) -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    now = [0.0]

    def run() -> None:  # on a busy machine one thread is the faster; on a quiet one, two
        now[0] += {1: 1.0, 2: 3.0}[torch.get_num_threads()] if one_faster else {1: 3.0, 2: 1.0}[
            torch.get_num_threads()]

    try:
        chosen = fastest_threads(run, clock=lambda: now[0])
        assert chosen == torch.get_num_threads() == (1 if one_faster else 2)
    finally:
        torch.set_num_threads(before)


def test_a_plan_keeps_headroom_for_an_estimate_that_falls_short() -> None:
    cost = costly(per_score=0.01)
    full = cost.seconds(SIZES, SCHEDULES[0])
    assert plan_search(cost, SIZES, full).schedule == SCHEDULES[0]
    kept = plan_search(cost, SIZES, full, headroom=0.8)
    assert kept.schedule != SCHEDULES[0] and kept.seconds <= 0.8 * full
