"""The persistent embedding cache: a first run over the WMT16 pairs (empty cache, filling it)
against a second run over the same texts (every state read from the cache), each in a fresh
process, for the torch and the onnx backends. Greedy BERTScore, all-MiniLM-L6-v2, layer 4.

    python benchmarks/bench_cache.py --rounds 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_greedy import MODEL, MODELS  # noqa: E402
from benchmarks.harness import (  # noqa: E402
    LANG_PAIRS, Case, Work, interleave, machine, markdown, save_json, summarize, wmt_pairs)


def cached_case(lps: list[str], cache: str, fresh: bool, backend: str = "torch", export_dir: str | None = None) -> Work:
    import alignscore

    if fresh:
        shutil.rmtree(cache, ignore_errors=True)
    cands, refs = wmt_pairs(tuple(lps))

    def run() -> dict:
        enc = alignscore.HFEncoder(MODEL, backend=backend, export_dir=export_dir)
        scorer = alignscore.Scorer(encoder=enc, aggregator=alignscore.SingleLayer(MODELS[MODEL]), cache=cache)
        return dict(scorer.score(cands, refs).metrics)

    return Work(len(cands), run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lps", default=",".join(LANG_PAIRS))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    lps = args.lps.split(",")
    work = Path(tempfile.mkdtemp(prefix="bench-cache-"))
    export_dir = str(work / "onnx")
    import alignscore

    enc = alignscore.HFEncoder(MODEL, backend="onnx", export_dir=export_dir)  # export once, untimed
    alignscore.Scorer(encoder=enc, aggregator=alignscore.SingleLayer(MODELS[MODEL])).score(["warm up"], ["warm up"])
    cases = []
    for backend in ("torch", "onnx"):
        kw = {"lps": lps, "cache": str(work / backend), "backend": backend, "export_dir": export_dir}
        cases += [Case(f"first_run_{backend}", "benchmarks.bench_cache:cached_case", {**kw, "fresh": True}),
                  Case(f"second_run_{backend}", "benchmarks.bench_cache:cached_case", {**kw, "fresh": False})]
    info = machine()
    print(f"# cache benchmark, {info}", file=sys.stderr)
    results = interleave(cases, rounds=args.rounds)
    for backend in ("torch", "onnx"):
        rows = summarize([r for r in results if r.case.endswith(backend)], reference=f"first_run_{backend}",
                         diff_against=f"first_run_{backend}")
        print(markdown(rows, reference=f"first_run_{backend}", diff_against=f"first_run_{backend}"))
        print()
    size = sum(f.stat().st_size for f in (work / "torch").glob("*"))
    print(f"cache on disk after a run: {size / 2**20:.0f} MiB")
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        save_json(args.out, {"machine": info, "results": results})
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
