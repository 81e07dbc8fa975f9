"""Whole-process timings of ``alignscore`` commands, as a user runs them (interpreter start,
imports, model loading, scoring, writing): each case is one ``alignscore ...`` subprocess, cases
alternate round by round, and the medians are reported with their ratios.

- ``score``: greedy BERTScore (all-MiniLM-L6-v2, layer 4) over the WMT16 pairs;
- ``diff``: ``alignscore diff`` of two greedy compositions over the same pairs (no weighting vs
  idf-S, its report on stdout), which encodes each text once for both sides: its time against
  one ``score`` run;
- ``score_10``: the same command on the first 10 pairs, a cold start (what a small call costs);
- ``cache_first`` / ``cache_second``: ``score --cache DIR`` on an emptied cache, then again over
  the same texts (every state read from the cache, the model's weights never loaded);
- ``imports``: ``python -c "import torch, transformers"``, the floor of any run on the default
  path: ``score_10`` is reported against it.

    python benchmarks/bench_cli.py --rounds 3
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import LANG_PAIRS, machine, wmt_pairs  # noqa: E402

ALIGNSCORE = str(Path(sys.executable).with_name("alignscore"))
MODEL = ["--model", "all-MiniLM-L6-v2", "--layer", "4", "-q"]


def commands(work: Path, lps: list[str]) -> dict[str, list[str]]:
    """Case name -> its command line (input files written into ``work``)."""
    cands, refs = wmt_pairs(tuple(lps))
    (work / "c.txt").write_text("\n".join(cands) + "\n")
    (work / "r.txt").write_text("\n".join(refs) + "\n")
    (work / "c10.txt").write_text("\n".join(cands[:10]) + "\n")
    (work / "r10.txt").write_text("\n".join(refs[:10]) + "\n")
    files = ["-r", str(work / "r.txt"), "-c", str(work / "c.txt")]
    out = ["-o", str(work / "out.tsv")]
    return {
        "score": [ALIGNSCORE, "score", *files, *MODEL, *out],
        "diff": [ALIGNSCORE, "diff", *files, *MODEL, "--a", "--weighting none", "--b", "--weighting idf-S"],
        "score_10": [ALIGNSCORE, "score", "-r", str(work / "r10.txt"), "-c", str(work / "c10.txt"), *MODEL, *out],
        "cache_first": [ALIGNSCORE, "score", *files, *MODEL, "--cache", str(work / "cache"), *out],
        "cache_second": [ALIGNSCORE, "score", *files, *MODEL, "--cache", str(work / "cache"), *out],
        "imports": [sys.executable, "-c", "import torch, transformers"],
    }


def run(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lps", default=",".join(LANG_PAIRS))
    ap.add_argument("--only", nargs="*", default=None, help="cases to run (default: all)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    cases = commands(work, args.lps.split(","))
    names = [n for n in cases if args.only is None or n in args.only]
    # warm-up, untimed: the operating system's file cache holds the model and the libraries
    run(cases["score_10"])
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.rounds):
        for name in names:
            if name == "cache_first":
                shutil.rmtree(work / "cache", ignore_errors=True)
            times[name].append(run(cases[name]))
            print(f"round {r + 1} {name}: {times[name][-1]:.2f} s", file=sys.stderr)
    info = machine()
    print(f"# whole-process CLI timings, {info}")
    print(f"pairs: {len(wmt_pairs(tuple(args.lps.split(',')))[0])} ({args.lps}); medians of {args.rounds} rounds\n")
    print("| case | median s | runs |\n|---|---:|---|")
    med = {n: statistics.median(t) for n, t in times.items()}
    for n in names:
        print(f"| {n} | {med[n]:.2f} | {', '.join(f'{x:.2f}' for x in times[n])} |")
    if "diff" in med and "score" in med:
        per_round = [d / s for d, s in zip(times["diff"], times["score"])]
        print(f"\ndiff / score: {med['diff'] / med['score']:.2f}x (per round: "
              f"{', '.join(f'{x:.2f}' for x in per_round)})")
    if "score_10" in med and "imports" in med:
        print(f"cold start (10 pairs) / import torch, transformers: {med['score_10'] / med['imports']:.2f}x")
    if "cache_first" in med and "cache_second" in med:
        print(f"cache, first / second run: {med['cache_first'] / med['cache_second']:.1f}x")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
