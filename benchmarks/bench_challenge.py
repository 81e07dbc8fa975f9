"""Cost of ``alignscore challenge``: a challenge set of ``--items`` items (default 1,000) made by
``perturb`` from the WMT16 to-English candidates (all six language pairs, seed 1, every kind; the
items drawn with ``random.Random(--seed)``), scored

- ``score``           once with plain ``Scorer.score``: every distinct (candidate, references)
                      pair of the set once (the good candidates without repeats, and the bad
                      ones): the least work any tool could do for these texts;
- ``challenge``       by :func:`~alignscore.evaluation.challenge.run_challenge` with the same
                      composition (good and bad candidates as two sets, per-category accuracy,
                      1,000 bootstrap resamples);
- ``challenge x3``    the same with three compositions of one model (BERTScore F1, WMD on
                      unigrams, BERTScore with idf): every distinct text is still encoded once.

Cases, each in a fresh process, interleaved round by round (see harness.py); the timed part
includes loading the model. Printed: the harness table with each case's speed against ``score``.
``--record`` appends the table to benchmarks/RESULTS.md under "challenge sets".

    python benchmarks/bench_challenge.py --rounds 3 --record
    python benchmarks/bench_challenge.py --items 40 --rounds 1      # a quick check
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import (  # noqa: E402
    LANG_PAIRS, REPO, WMT16, Case, Work, interleave, machine, markdown, summarize)

MODEL = "all-MiniLM-L6-v2"
LAYER = 4
COMPOSITIONS = ({}, {"aligner": "wmd", "n_gram": 1}, {"idf": True})


def make_set(path: Path, items: int, seed: int) -> int:
    """Write the challenge set (JSON lines) and return its number of distinct texts."""
    from alignscore.evaluation.perturb import item_json, perturb
    from alignscore.textio import read_lines

    made = []
    for lp in LANG_PAIRS:
        cands = read_lines(WMT16 / f"DAseg.newstest2016.mt-system.{lp}")
        refs = [[r] for r in read_lines(WMT16 / f"DAseg.newstest2016.reference.{lp}")]
        made += perturb(cands, refs, 1).items
    if items > len(made):
        raise SystemExit(f"--items is at most {len(made)}")
    chosen = sorted(random.Random(seed).sample(range(len(made)), items))
    path.write_text("".join(json.dumps(item_json(made[k])) + "\n" for k in chosen), encoding="utf-8")
    return len({t.strip() for k in chosen for t in (*made[k].refs, made[k].good, made[k].bad)})


def _scorers(n: int) -> list:
    from alignscore.config import plan_runs, run_spec

    return plan_runs([run_spec({"model": MODEL, "layer": LAYER, **c}) for c in COMPOSITIONS[:n]]).scorers()


def score_case(set_file: str) -> Work:
    from alignscore.evaluation.challenge import read_items

    items = read_items(set_file)
    pairs = list(dict.fromkeys((t, i.refs) for i in items for t in (i.good, i.bad)))
    (scorer,) = _scorers(1)

    def run() -> dict:
        scorer.score([c for c, _ in pairs], [list(r) for _, r in pairs])
        return {}

    return Work(len(pairs), run, {"items": len(items)})


def challenge_case(set_file: str, compositions: int) -> Work:
    from alignscore.evaluation.challenge import read_items, run_challenge

    items = read_items(set_file)
    scorers = _scorers(compositions)

    def run() -> dict:
        run_challenge(scorers, items)
        return {}

    return Work(2 * len(items), run, {"items": len(items)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0, help="which items are drawn")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--record", action="store_true", help="append the results to benchmarks/RESULTS.md")
    ap.add_argument("--note", default="", help="free text for the record (e.g. machine load)")
    args = ap.parse_args()
    set_file = Path(tempfile.mkdtemp(prefix="bench-challenge-")) / "set.jsonl"
    distinct = make_set(set_file, args.items, args.seed)
    cases = [Case("score", "benchmarks.bench_challenge:score_case", {"set_file": str(set_file)}),
             Case("challenge", "benchmarks.bench_challenge:challenge_case",
                  {"set_file": str(set_file), "compositions": 1}),
             Case("challenge x3", "benchmarks.bench_challenge:challenge_case",
                  {"set_file": str(set_file), "compositions": 3})]
    info = machine()
    head = (f"{args.items} items ({distinct} distinct texts), {MODEL} layer {LAYER}, {args.rounds} round(s); "
            f"{info}")
    print(f"# challenge benchmark: {head}", file=sys.stderr)
    rows = summarize(interleave(cases, rounds=args.rounds), reference="score")
    table = markdown(rows, reference="score")
    print(table)
    if args.record:
        text = (f"\n### challenge sets ({dt.date.today()}; `python benchmarks/bench_challenge.py --items {args.items} "
                f"--rounds {args.rounds} --record`)\n\n{head}. {args.note}\n\n"
                "pairs: `score` scores each distinct (candidate, references) pair once; `challenge` counts two "
                "pairs per item (good and bad). A speed below 1x is the cost of the challenge run over scoring the "
                f"same distinct texts once.\n\n{table}\n")
        with open(REPO / "benchmarks" / "RESULTS.md", "a", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
