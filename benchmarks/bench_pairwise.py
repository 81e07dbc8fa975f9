"""Pairwise matrices: ``Scorer.pairwise`` of N candidates x M references against its two parts
measured apart: encoding the N + M texts once, and aligning the N x M pairs over that encoding.
The goal (issue 16): the matrix costs at most 1.5x the encoding plus the alignment.

Texts: the first N WMT16 de-en system outputs and the first M de-en references (default 64 x 64:
128 texts, 4,096 pairs); all-MiniLM-L6-v2 at layer 4, greedy BERTScore. Cases, each in a fresh
process, interleaved round by round (see harness.py); the model is loaded (and run once on one
text) before the timed part in every case:

- ``pairwise``  ``scorer.pairwise(cands, refs)``: tokenize, encode, fit, align in chunks;
- ``encode``    the engine's ``encode`` of the same unique texts (tokenization included);
- ``align``     the engine's ``aligner_inputs`` + ``align`` of the N x M pairs, over an encoding made
                before the timed part.

    python benchmarks/bench_pairwise.py --rounds 5 --out benchmarks/results/pairwise.json
    python benchmarks/bench_pairwise.py --n 8 --m 8 --rounds 1          # a quick check
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import WMT16, Case, Work, interleave, machine, markdown, save_json, summarize  # noqa: E402

MODEL = "all-MiniLM-L6-v2"
LAYER = 4


def _setup(n: int, m: int):  # type: ignore[no-untyped-def]
    """The texts, a scorer whose model is loaded, and the grid of pairs as flat lists."""
    import alignscore
    from alignscore.textio import read_lines

    cands = read_lines(WMT16 / "DAseg.newstest2016.mt-system.de-en")[:n]
    refs = read_lines(WMT16 / "DAseg.newstest2016.reference.de-en")[:m]
    scorer = alignscore.bertscore(MODEL, layer=LAYER)
    scorer.score(["warm up"], ["warm up"])  # loads the model
    return scorer, cands, refs


def pairwise_case(n: int, m: int) -> Work:
    scorer, cands, refs = _setup(n, m)
    return Work(n * m, lambda: {"f1": scorer.pairwise(cands, refs).f1.reshape(-1)})


def encode_case(n: int, m: int) -> Work:
    from alignscore.engine import Pairs, encode

    scorer, cands, refs = _setup(n, m)
    comp = scorer.resolved()
    pairs = Pairs.from_groups(cands, [refs] * n)

    def run() -> dict:
        encode(scorer.encoder, pairs, [comp.aggregator], scorer.runtime)
        return {}

    return Work(n * m, run)


def align_case(n: int, m: int) -> Work:
    from alignscore.engine import Pairs, align, aligner_inputs, encode

    scorer, cands, refs = _setup(n, m)
    comp = scorer.resolved()
    pairs = Pairs.from_groups(cands, [refs] * n)
    pairs.ref_counts = pairs.ref_counts / n  # the references once each, as pairwise fits idf
    encoded = encode(scorer.encoder, pairs, [comp.aggregator], scorer.runtime)

    def run() -> dict:
        (out,) = align(encoded, [comp], aligner_inputs(encoded, [comp], scorer.encoder), scorer.runtime)
        return {"f1": out["f1"]}

    return Work(n * m, run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=64, help="candidates")
    parser.add_argument("--m", type=int, default=64, help="references")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=None, help="JSON file for the raw results")
    args = parser.parse_args()
    kwargs = {"n": args.n, "m": args.m}
    cases = [Case(name, f"benchmarks.bench_pairwise:{name}_case", kwargs) for name in ("pairwise", "encode", "align")]
    info = machine()
    print(f"# pairwise benchmark: {args.n} x {args.m}, {info}", file=sys.stderr)
    results = interleave(cases, rounds=args.rounds)
    rows = summarize(results, reference="pairwise", diff_against="align")
    print(markdown(rows, reference="pairwise", diff_against="align"))
    by_round: dict[int, dict[str, float]] = {}
    for r in results:
        by_round.setdefault(r.round, {})[r.case] = r.seconds
    ratios = [t["pairwise"] / (t["encode"] + t["align"]) for t in by_round.values()]
    print(f"pairwise / (encode + align): {statistics.median(ratios):.2f}x (median over {len(ratios)} round(s); "
          "goal <= 1.5x)")
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        save_json(args.out, {"machine": info, "results": results, "rows": rows, "ratios": ratios})


if __name__ == "__main__":
    main()
