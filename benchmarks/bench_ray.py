"""Scaling on Ray: one process (1 and 2 torch threads) against ``score_dataset`` with 1 and 2
actors (one CPU, so one torch thread, each) on WMT16 pairs, uniform weights and idf-S.

Every configuration is timed end to end from the texts in memory to the scores back in the
driver, model loading included (one process: ``alignscore.score``; Ray: the checks, the first
pass, the actors' start and model load, the scoring, ``take_all``), at two sizes (all 3,360
pairs and the 560 of de-en by default), so that a straight line through the two gives the
marginal cost per pair (ms/pair, what a large job pays) and the fixed cost (start-up, what a
small one pays). Ray's own start (``ray.init``) is timed once, apart. Scores are compared with
one process's (max |diff| over every metric).

    python benchmarks/bench_ray.py                                  # 3,360 and 560 pairs, 3 rounds
    python benchmarks/bench_ray.py --sizes 20,40 --rounds 1         # a quick check
    python benchmarks/bench_ray.py --record                         # append the tables to RESULTS.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import LANG_PAIRS, WMT16, machine  # noqa: E402

WEIGHTINGS = {"uniform": {}, "idf-S": {"idf": True}}


def pairs(size: int) -> tuple[list[str], list[str]]:
    """The first ``size`` WMT16 pairs: de-en's first, then the other language pairs'."""
    from alignscore.textio import read_lines

    order = ("de-en",) + tuple(lp for lp in LANG_PAIRS if lp != "de-en")
    cands, refs = [], []
    for lp in order:
        cands += read_lines(WMT16 / f"DAseg.newstest2016.mt-system.{lp}")
        refs += read_lines(WMT16 / f"DAseg.newstest2016.reference.{lp}")
    if size > len(cands):
        raise SystemExit(f"at most {len(cands)} pairs")
    return cands[:size], refs[:size]


def one_process(cands: list[str], refs: list[str], threads: int, options: dict) -> tuple[float, dict]:
    import torch

    import alignscore

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        start = time.perf_counter()
        scores = alignscore.score(cands, refs, **options)
        return time.perf_counter() - start, {k: v.double() for k, v in scores.metrics.items()}
    finally:
        torch.set_num_threads(before)


def on_ray(cands: list[str], refs: list[str], actors: int, batch_size: int, options: dict) -> tuple[float, dict]:
    import ray
    import torch

    from alignscore.integrations.ray import score_dataset

    ds = ray.data.from_items([{"id": i, "cand": c, "ref": r} for i, (c, r) in enumerate(zip(cands, refs))])
    start = time.perf_counter()
    rows = score_dataset(ds, concurrency=actors, batch_size=batch_size, **options).take_all()
    seconds = time.perf_counter() - start
    rows.sort(key=lambda r: r["id"])
    if [r["id"] for r in rows] != list(range(len(cands))):
        raise SystemExit("Ray lost or duplicated rows")
    names = [k for k in rows[0] if k not in ("id", "cand", "ref", "signature")]
    return seconds, {k: torch.tensor([r[k] for r in rows], dtype=torch.float64) for k in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="560,3360", help="two numbers of pairs (default: 560,3360)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per configuration (the median is kept)")
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--batch-size", type=int, default=256, help="rows per actor call")
    parser.add_argument("--record", action="store_true", help="append the results to benchmarks/RESULTS.md")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if len(sizes) != 2 or sizes[0] == sizes[1]:
        raise SystemExit("--sizes takes two different numbers of pairs")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    import ray

    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray_init = time.perf_counter() - start
    ray.data.DataContext.get_current().enable_progress_bars = False

    configs = [("one process, 1 thread", lambda c, r, o: one_process(c, r, 1, o)),
               ("one process, 2 threads", lambda c, r, o: one_process(c, r, 2, o)),
               ("Ray, 1 actor", lambda c, r, o: on_ray(c, r, 1, args.batch_size, o)),
               ("Ray, 2 actors", lambda c, r, o: on_ray(c, r, 2, args.batch_size, o))]
    one_process(*pairs(2), 1, {"model": args.model})  # imports and first-call costs, untimed
    times: dict[tuple[str, str, int], list[float]] = {}
    diffs: dict[tuple[str, str, int], float] = {}
    for weighting, extra in WEIGHTINGS.items():
        options = {"model": args.model, **extra}
        for size in sizes:
            cands, refs = pairs(size)
            for round_ in range(args.rounds):  # interleaved: every configuration sees the same load
                reference = None
                for name, run in configs:
                    seconds, scores = run(cands, refs, options)
                    times.setdefault((name, weighting, size), []).append(seconds)
                    if reference is None:
                        reference = scores
                    diff = max(float((scores[k] - reference[k]).abs().max()) for k in reference)
                    diffs[(name, weighting, size)] = max(diff, diffs.get((name, weighting, size), 0.0))
                    print(f"{weighting} {size} pairs, {name}, round {round_ + 1}: {seconds:.2f} s", file=sys.stderr)
    ray.shutdown()

    median = {k: statistics.median(v) for k, v in times.items()}
    lines = [f"`ray.init(num_cpus=2)`: {ray_init:.2f} s (once, not in the rows below). Scores against one process, "
             "1 thread: max |diff| over every metric.", "",
             "| configuration | weighting | pairs | seconds | pairs/s | max \\|diff\\| |",
             "|---|---|---:|---:|---:|---:|"]
    for weighting in WEIGHTINGS:
        for size in sizes:
            for name, _ in configs:
                t = median[(name, weighting, size)]
                lines.append(f"| {name} | {weighting} | {size:,} | {t:.2f} | {size / t:.1f} | "
                             f"{diffs[(name, weighting, size)]:.1e} |")
    lines += ["", "| configuration | weighting | marginal ms/pair | pairs/s (marginal) | fixed cost s |",
              "|---|---|---:|---:|---:|"]
    small, large = sizes
    for weighting in WEIGHTINGS:
        for name, _ in configs:
            t_small, t_large = median[(name, weighting, small)], median[(name, weighting, large)]
            marginal = (t_large - t_small) / (large - small)
            lines.append(f"| {name} | {weighting} | {1000 * marginal:.2f} | "
                         f"{(1 / marginal if marginal > 0 else float('inf')):.1f} | {t_small - small * marginal:.2f} |")
    lines.append("")
    for weighting in WEIGHTINGS:
        for size in sizes:
            ratio = median[("Ray, 1 actor", weighting, size)] / median[("Ray, 2 actors", weighting, size)]
            lines.append(f"- {weighting}, {size:,} pairs: 2 actors are {ratio:.2f}x as fast as 1 actor")
    table = "\n".join(lines)
    print(table)
    if args.record:
        command = " ".join(["python", "benchmarks/bench_ray.py", *sys.argv[1:]])
        with open(Path(__file__).parent / "RESULTS.md", "a", encoding="utf-8") as fh:
            about = ", ".join(f"{k}: {v}" for k, v in machine().items())
            fh.write(f"\n### Ray Data: 1 vs 2 actors (`{command}`)\n\n{about}\n\n{table}\n")


if __name__ == "__main__":
    main()
