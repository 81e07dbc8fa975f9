"""Scaling with corpus size: time and peak memory of ``alignscore score`` on 1k, 10k and 100k
pairs, whole-file (``memory``) against chunked (``--stream``), each run in a fresh process
through the command line's own code path (read files, score, write the output file).

Corpora, built from the WMT16 DAseg sentences of the 6 to-English language pairs:

- ``cross``: every candidate against other references of its language pair (pair k of a pair
  is mt-system[i] against reference[(i + k // 560) % 560]); at most 6,720 distinct texts, so
  the encoder's work stops growing and the pairs dominate;
- ``unique``: two-sentence documents, mt-system[i] + mt-system[j] against reference[i] +
  reference[j] for distinct (i, j): every text is new, so the encoder's work and the vectors
  grow with the corpus (what streaming is for). Encoding all of them is slow on 2 cores, so
  this corpus uses a low layer by default (the memory held per token does not depend on it).

    python benchmarks/bench_scale.py --corpus cross --sizes 1000,10000,100000
    python benchmarks/bench_scale.py --corpus unique --sizes 1000,10000 --layer 1
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import LANG_PAIRS, WMT16, Case, Work, machine, markdown, run_case, save_json, summarize  # noqa: E402


def build_corpus(kind: str, size: int, directory: Path) -> tuple[Path, Path]:
    """Write ``size`` candidate and reference lines; returns their paths."""
    from alignscore.textio import read_lines

    mt = {lp: read_lines(WMT16 / f"DAseg.newstest2016.mt-system.{lp}") for lp in LANG_PAIRS}
    ref = {lp: read_lines(WMT16 / f"DAseg.newstest2016.reference.{lp}") for lp in LANG_PAIRS}
    directory.mkdir(parents=True, exist_ok=True)
    cands_path, refs_path = directory / f"{kind}-{size}.cands", directory / f"{kind}-{size}.refs"
    with open(cands_path, "w", encoding="utf-8") as c, open(refs_path, "w", encoding="utf-8") as r:
        for k in range(size):
            lp = LANG_PAIRS[k % len(LANG_PAIRS)]
            m = k // len(LANG_PAIRS)
            n = len(mt[lp])
            i = m % n
            if kind == "cross":
                j = (i + m // n) % n
                c.write(mt[lp][i] + "\n")
                r.write(ref[lp][j] + "\n")
            else:
                j = (i + 1 + m // n) % n
                c.write(mt[lp][i] + " " + mt[lp][j] + "\n")
                r.write(ref[lp][i] + " " + ref[lp][j] + "\n")
    return cands_path, refs_path


def cli_case(cands: str, refs: str, out: str, layer: int, stream: bool, chunk_size: int, pairs: int,
             token_budget: int | None = None, cache: str | None = None) -> Work:
    from alignscore.cli import main

    args = ["score", "-c", cands, "-r", refs, "--model", "all-MiniLM-L6-v2", "--layer", str(layer), "-o", out, "-q"]
    if token_budget:
        args += ["--token-budget", str(token_budget)]
    if cache:
        shutil.rmtree(cache, ignore_errors=True)  # starts empty: what one run reuses within itself
        args += ["--cache", cache]
    if stream:
        args += ["--stream", "--chunk-size", str(chunk_size)]

    def run() -> dict:
        main(args, standalone_mode=False)
        return {}

    return Work(pairs, run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=("cross", "unique"), default="cross")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--modes", default="memory,stream")
    parser.add_argument("--layer", type=int, default=None, help="default: 4 (cross), 1 (unique)")
    parser.add_argument("--chunk-size", type=int, default=2000)
    parser.add_argument("--token-budget", type=int, default=None)
    parser.add_argument("--stream-cache", action="store_true",
                        help="streamed runs use a (fresh) embedding cache, so chunks reuse each other's texts")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    layer = args.layer if args.layer is not None else (4 if args.corpus == "cross" else 1)
    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    info = machine()
    print(f"# scale benchmark ({args.corpus}, layer {layer}, chunk {args.chunk_size}, token budget "
          f"{args.token_budget}, stream cache {args.stream_cache}), {info}", file=sys.stderr)
    results = []
    outputs: dict[int, dict[str, Path]] = {}
    for size in (int(s) for s in args.sizes.split(",")):
        cands, refs = build_corpus(args.corpus, size, work)
        for mode in args.modes.split(","):
            out = work / f"{args.corpus}-{size}-{mode}.tsv"
            case = Case(f"{mode}_{size}", "benchmarks.bench_scale:cli_case",
                        {"cands": str(cands), "refs": str(refs), "out": str(out), "layer": layer,
                         "stream": mode == "stream", "chunk_size": args.chunk_size, "pairs": size,
                         "token_budget": args.token_budget,
                         "cache": str(work / "cache") if mode == "stream" and args.stream_cache else None})
            results.append(run_case(case, 0, work / "runs"))
            outputs.setdefault(size, {})[mode] = out
        if len(outputs[size]) == 2:
            outputs[size]["diff"] = _max_row_diff(outputs[size]["memory"], outputs[size]["stream"])  # type: ignore[assignment]
    print(markdown(summarize(results)))
    for size, outs in outputs.items():
        if "diff" in outs:
            print(f"{size} pairs: largest difference between whole-file and streamed rows {outs['diff']:.1e}")
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        save_json(args.out, {"machine": info, "corpus": args.corpus, "layer": layer, "results": results})
    shutil.rmtree(work, ignore_errors=True)


def _max_row_diff(a: Path, b: Path) -> float:
    worst = 0.0
    with open(a) as fa, open(b) as fb:
        for i, (la, lb) in enumerate(zip(fa, fb)):
            if i < 3:
                continue
            worst = max(worst, max(abs(float(x) - float(y)) for x, y in zip(la.split("\t"), lb.split("\t"))))
    return worst


if __name__ == "__main__":
    main()
