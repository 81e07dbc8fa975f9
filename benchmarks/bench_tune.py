"""``alignscore tune`` on WMT16 (all six to-English pairs, 3,360 segments) with the packaged space:
the full grid against successive halving, side by side in one process, and how each search's
selection does on language pairs it never saw against the published configurations.

- ``full``: every run of the space on every segment (``Schedule((1.0,))``), with nested
  leave-one-language-pair-out cross-validation (the folds reuse the grid's scores);
- ``halving``: the schedule given (``--eta``, ``--levels``), with its own book of scores (nothing
  shared with the full grid but the loaded model), and the time it was estimated to take before
  it ran (:func:`~alignscore.tune.measure`: a bounded probe of two batches of segments);
- ``--command``: ``alignscore.tune`` as the command runs it, with the probe's time, the estimate and
  the time it took.

Reported: each search's time, the ratio, the estimate's error, each selection's mean |r| on all
segments of the six pairs and the difference between the two selections with a 95% interval
(resampling the segments of every pair: is the halving's selection within the full grid's
best?); and, per search, the nested cross-validated |r| of the selection, of BERTScore's default,
MoverScore v2 and the other published configurations (groups by their best on the other pairs),
with 95% intervals and the selection's gain over each.

    python benchmarks/bench_tune.py --model all-MiniLM-L6-v2 --record
    python benchmarks/bench_tune.py --model benchmarks/models/all-mpnet-base-v2 --record
"""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import REPO, WMT16, machine  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--eta", type=int, default=4)
    ap.add_argument("--levels", type=int, default=4)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--no-grid", action="store_true", help="only the whole procedure (no full grid to compare with)")
    ap.add_argument("--record", action="store_true", help="append the tables to benchmarks/RESULTS.md")
    ap.add_argument("--note", default="")
    ap.add_argument("--probe-seconds", type=float, default=60.0, help="the time the cost probe may take")
    ap.add_argument("--command", action="store_true",
                    help="only `alignscore.tune` as the command runs it (default budget, or --budget): the probe's "
                         "time, the estimate and the actual time")
    ap.add_argument("--budget", type=float, default=None, help="with --command: minutes")
    ap.add_argument("--against", default=None, metavar="ID",
                    help="with --command: after the timed call, the selection against this run of the space (another "
                         "run's selection, e.g. c1299) on every segment, with bootstrap standard errors")
    args = ap.parse_args()
    if args.command:
        return _command(args)

    from alignscore.cli.options import FLAGS
    from alignscore.config import build
    from alignscore.config.compile import sources_of
    from alignscore.tune import Book, Schedule, data_corpus, halve, measure, prepare, search
    from alignscore.tune.space import load_space
    from alignscore.evaluation.wmt import load_daseg

    pairs = load_daseg(WMT16)
    corpus = {"idf_corpus": data_corpus(str(WMT16), None, pairs)}
    flags = sources_of({"model": args.model}, FLAGS)
    space = load_space()
    published = {}
    for name, spec in space.published_runs(flags, corpus).items():
        try:
            build(spec)
            published[name] = spec
        except Exception as exc:  # noqa: BLE001 - a configuration this model cannot run
            print(f"{name}: left out ({exc})")
    entries, scorers = prepare(space.candidates(flags, data=corpus), published)
    halving = Schedule.halving(args.eta, args.levels)
    print(f"{len(entries)} runs, {sum(len(lp) for lp in pairs)} segments; {halving}", flush=True)

    measured = measure(entries, scorers, pairs, args.probe_seconds)
    cost, probe = measured.cost, measured.seconds
    sizes = [len(lp) for lp in pairs]
    estimate = cost.seconds(sizes, halving)
    full_estimate = cost.seconds(sizes, Schedule((1.0,)))
    say = lambda msg: print(f"  {msg}", flush=True)  # noqa: E731
    lps = list(range(len(pairs)))
    every = list(range(len(entries)))
    # the whole procedure: nested cross-validation and the published configurations
    t = time.perf_counter()
    run = search(entries, scorers, pairs, halving, resamples=args.resamples, log=say, cost=cost)
    t_run = time.perf_counter() - t
    print(f"nested search: {t_run:.0f} s (estimated {estimate:.0f} s)", flush=True)

    lines = [f"### {dt.date.today().isoformat()}: {Path(args.model).name}, WMT16 (6 pairs, 3,360 segments), "
             f"packaged space ({len(entries)} runs)", ""]
    m = machine()
    lines += [f"Machine: {m['cpu']}, {m['cores']} cores; torch {m['torch']}, transformers "
              f"{m['transformers']}, POT {m['POT']}. Command: `python "
              f"benchmarks/bench_tune.py {shlex.join(sys.argv[1:])}`. Probe for the estimates: {probe:.0f} s. "
              f"{args.note}".rstrip(), ""]
    if not args.no_grid:
        # the search alone (no cross-validation): the full grid, then halving with a book of its own
        grid = Book(entries, scorers, pairs, Schedule((1.0,)), progress=False)
        t = time.perf_counter()
        full = halve(grid, every, lps)
        t_full = time.perf_counter() - t
        print(f"full grid: {t_full:.0f} s, best {entries[full.ranking[0]].id}, selected {entries[full.selected].id}", flush=True)
        half_book = Book(entries, scorers, pairs, halving)
        t = time.perf_counter()
        halved = halve(half_book, every, lps, cost=cost.per_score)
        t_half = time.perf_counter() - t
        print(f"halving: {t_half:.0f} s, selected {entries[halved.selected].id}", flush=True)
        gap, low, high = _paired_gap(grid, full.ranking[0], halved.ranking[0], args.resamples)
        rank = full.ranking.index(halved.ranking[0]) + 1
        best, found, chosen = entries[full.ranking[0]], entries[halved.ranking[0]], entries[halved.selected]
        lines += ["| search on the six pairs | took | scores computed | best run found | mean \\|r\\| on every segment |",
                  "|---|---:|---:|---|---:|",
                  f"| full grid | {t_full:.0f} s | {sum(grid.aligned):,} | {best.id} ({best.label}) | "
                  f"{_mean(grid, full.ranking[0]):.4f} |",
                  f"| {halving} | {t_half:.0f} s ({t_half / t_full:.2f} of the grid's) | {sum(half_book.aligned):,} | "
                  f"{found.id} ({found.label}) | {_mean(grid, halved.ranking[0]):.4f} |", "",
                  f"The halving's best is the full grid's rank {rank} of {len(entries)}; the grid's best minus it: "
                  f"{gap:+.4f} [{low:+.4f}, {high:+.4f}] (mean |r| over the six pairs, 95% interval resampling every "
                  f"pair's segments). Selected by each (a published configuration within a standard error of the best "
                  f"goes first): full grid {entries[full.selected].id}, halving {chosen.id}.", ""]
    lines += [f"The whole procedure (nested cross-validation over the six pairs, every published configuration on "
              f"every segment) with {halving}: estimated {estimate / 60:.1f} min before it ran (measure: "
              f"{probe:.0f} s), took {t_run / 60:.1f} min ({t_run / estimate:.2f} of the estimate); the full grid's "
              f"estimate: {full_estimate / 60:.1f} min. Each level took (estimated): " +
              ", ".join(f"{run.seconds[f'level {k + 1}']:.0f} s ({s:.0f} s)"
                        for k, s in enumerate(cost.levels(sizes, halving))) + "."]
    lines += ["", "Nested cross-validation: mean |r| on the left-out pair, 95% intervals; a group by its best run "
                  "on the other five pairs.", "",
              "| run | held-out \\|r\\| | 95% interval | selection minus it | 95% interval |", "|---|---:|---|---:|---|"]
    for key, est in run.estimates.items():
        gain = run.gains.get(key)
        lines.append(f"| {'the search' if key == 'selected' else key} | {est.estimate:.4f} | "
                     f"[{est.low:.4f}, {est.high:.4f}] | " +
                     (f"{gain.estimate:+.4f} | [{gain.low:+.4f}, {gain.high:+.4f}] |" if gain else "| |"))
    chosen_runs = {f.chosen["selected"] for f in run.folds}
    lines += ["", "Selected on the other pairs: " + "; ".join(
        f"{run.entries[e].id} ({run.entries[e].label}) for " +
        ", ".join(f"{f.held_out} ({f.abs_r['selected']:.4f} held out)" for f in run.folds
                  if f.chosen["selected"] == e)
        for e in sorted(chosen_runs))]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        _record(text)


def _command(args: argparse.Namespace) -> None:
    """``alignscore.tune`` on WMT16 with the packaged space, as ``alignscore tune`` runs it."""
    import tempfile

    import alignscore

    with tempfile.TemporaryDirectory() as out:
        t = time.perf_counter()
        result = alignscore.tune(WMT16, budget=args.budget, output=Path(out) / "tune", model=args.model,
                                 progress=True, log=lambda msg: print(f"  {msg}", flush=True))
        took = time.perf_counter() - t
    budget = args.budget if args.budget is not None else "default"
    m = machine()
    best = result.best
    text = (f"### {dt.date.today().isoformat()}: `alignscore.tune`, {Path(args.model).name}, WMT16, budget "
            f"{budget} min\n\nMachine: {m['cpu']}, {m['cores']} cores. Command: `python benchmarks/bench_tune.py "
            f"{shlex.join(sys.argv[1:])}`. {args.note}".rstrip() +
            f"\n\n| probe | rounds | schedule | runs | estimate | took (search) | took (whole call) |\n"
            f"|---:|---:|---|---:|---:|---:|---:|\n| {result.probe.seconds:.0f} s | {result.probe.rounds} | "
            f"{result.plan.schedule} | {len(result.plan.runs or result.run.entries)} | "
            f"{result.plan.seconds / 60:.1f} min | {result.run.seconds['total'] / 60:.1f} min | {took / 60:.1f} min |"
            f"\n\n{(result.plan.note or 'the usual schedules fit').capitalize()}. Selected: {best.id} ({best.label}), mean |r| "
            f"{result.run.mean_abs_r.get(result.run.best, float('nan')):.4f}; torch threads chosen by the probe: "
            f"{result.probe.threads}.\n")
    if args.against:
        text += _against(result, args.against, args.resamples)
    print(text)
    if args.record:
        _record(text)


def _against(result, other_id: str, resamples: int) -> str:  # noqa: ANN001
    """The selection and the run ``other_id`` on every segment: each one's mean |r| with its
    bootstrap standard error, and their paired difference with its own."""
    from alignscore.cli.options import FLAGS
    from alignscore.config import build
    from alignscore.tune import Book, Schedule
    from alignscore.evaluation.stats import pooled_abs_r

    entries = result.run.entries
    other = next(e for e, x in enumerate(entries) if x.id == other_id)
    mine = result.run.best
    book = Book([entries[mine], entries[other]], [build(entries[mine].spec), build(entries[other].spec)],
                result.run.lang_pairs, Schedule((1.0,)))
    lps = range(len(book.lang_pairs))
    book.need((e, l, 0) for e in (0, 1) for l in lps)
    r = book.mean_abs_r([0, 1], lps, 0)
    boot = pooled_abs_r(*book.blocks([0, 1], lps, 0), resamples, seed=0)
    se = boot.std(axis=1, ddof=1)
    gap_se = float((boot[0] - boot[1]).std(ddof=1))
    within = abs(r[0] - r[1]) <= se[1]
    return (f"\nAgainst {other_id} ({entries[other].label}) on every segment ({resamples} resamples of each pair's "
            f"segments): selection {entries[mine].id} mean |r| {r[0]:.4f} (SE {se[0]:.4f}), {other_id} {r[1]:.4f} "
            f"(SE {se[1]:.4f}); difference {r[0] - r[1]:+.4f} (paired SE {gap_se:.4f}): "
            f"{'within' if within else 'not within'} one standard error of {other_id}'s.\n")


def _record(text: str) -> None:
    results = REPO / "benchmarks" / "RESULTS.md"
    body = results.read_text(encoding="utf-8")
    head = "## tune: the search over every published configuration\n"
    if head not in body:
        body += "\n" + head + "\n"
    results.write_text(body.rstrip("\n") + "\n\n" + text, encoding="utf-8")


def _mean(book, e: int) -> float:  # noqa: ANN001
    return float(book.mean_abs_r([e], range(len(book.lang_pairs)), book.schedule.levels - 1)[0])


def _paired_gap(book, a: int, b: int, resamples: int) -> tuple[float, float, float]:  # noqa: ANN001
    """Mean |r| over the pairs of ``a`` minus ``b`` on every segment, and a 95% percentile
    interval from resampling each pair's segments (the same resamples for both)."""
    from alignscore.evaluation.stats import percentile_interval, pooled_abs_r

    lps = range(len(book.lang_pairs))
    book.need((e, l, 0) for e in (a, b) for l in lps)
    observed = float(np.diff(book.mean_abs_r([b, a], lps, 0))[0])
    boot = pooled_abs_r(*book.blocks([a, b], lps, 0), resamples, seed=0)
    gap = percentile_interval(observed, boot[0] - boot[1])
    return gap.estimate, gap.low, gap.high


if __name__ == "__main__":
    main()
