"""alignscore's ``moverscore-v2`` preset against the moverscore 1.0.3 package's moverscore_v2, on
the same model, the same WMT16 pairs and this machine's CPU, in one run.

Each side runs in its own child process (so that peak memory is its own), alternating
``--repeats`` times; a child loads its model, warms up on a few pairs (untimed), then times one
full scoring of the pairs. Reported per side: pairs per second (best run and median), the time
spent after encoding (moverscore_v2: everything in ``word_mover_score`` outside
``get_bert_embedding``; alignscore: the aligner), peak resident memory, and the largest score
difference between the two. moverscore_v2 is loaded with all-MiniLM-L6-v2 as in the parity
tests (tests/moverscore_ref.py), uniform or idf weights as chosen.

    python benchmarks/bench_wmd.py --lp de-en --pairs 560 --repeats 2 --record

``--record`` appends the result to benchmarks/RESULTS.md under "## wmd vs moverscore_v2".
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = Path(os.environ.get("ALIGNSCORE_DATA", REPO.parent / "shared" / "data"))
RESULTS = HERE / "RESULTS.md"
HEADING = "## wmd vs moverscore_v2"


def load_pairs(lp: str, n: int) -> tuple[list[str], list[str]]:
    from alignscore.textio import read_lines

    root = DATA / "wmt16-da-seg"
    refs = read_lines(root / f"DAseg.newstest2016.reference.{lp}")[:n]
    cands = read_lines(root / f"DAseg.newstest2016.mt-system.{lp}")[:n]
    return refs, cands


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


# -- workers (child processes) ---------------------------------------------------------------
def worker_moverscore(args: argparse.Namespace) -> dict:
    sys.path.insert(0, str(REPO / "tests"))
    from collections import defaultdict

    from moverscore_ref import load_moverscore_v2

    from alignscore.encoders.layers import packaged_model_dir

    refs, cands = load_pairs(args.lp, args.pairs)
    model_dir = str(packaged_model_dir(args.model) or args.model)
    ms = load_moverscore_v2(model_dir)
    spent = [0.0]
    embed = ms.get_bert_embedding

    def timed_embedding(*a, **k):  # noqa: ANN002, ANN003
        t = time.perf_counter()
        out = embed(*a, **k)
        spent[0] += time.perf_counter() - t
        return out

    ms.get_bert_embedding = timed_embedding

    def weights(texts: list[str]):  # noqa: ANN202
        return ms.get_idf_dict(texts) if args.idf else defaultdict(lambda: 1.0)

    ms.word_mover_score(refs[:4], cands[:4], weights(refs[:4]), weights(cands[:4]), device="cpu")  # warm-up
    base_rss = peak_rss_mib()
    spent[0] = 0.0
    start = time.perf_counter()
    scores = ms.word_mover_score(refs, cands, weights(refs), weights(cands), stop_words=[], n_gram=1,
                                 remove_subwords=True, device="cpu")
    total = time.perf_counter() - start
    same = [ms.tokenizer.tokenize(r) == ms.tokenizer.tokenize(c) for r, c in zip(refs, cands)]
    return {"seconds": total, "after_encoding": total - spent[0], "peak_rss_mib": peak_rss_mib(),
            "rss_before_mib": base_rss, "scores": [float(s) for s in scores], "same_tokens": same}


def worker_alignscore(args: argparse.Namespace) -> dict:
    from alignscore.aligners.optimal import WMD
    from alignscore.presets import moverscore_v2

    refs, cands = load_pairs(args.lp, args.pairs)
    scorer = moverscore_v2(model=args.model, idf=args.idf, device="cpu")
    spent = [0.0]
    call = WMD.__call__

    def timed_call(self, batch):  # noqa: ANN001, ANN202
        t = time.perf_counter()
        out = call(self, batch)
        spent[0] += time.perf_counter() - t
        return out

    WMD.__call__ = timed_call  # this child process only
    scorer.score(cands[:4], refs[:4])  # warm-up (loads the model)
    base_rss = peak_rss_mib()
    spent[0] = 0.0
    start = time.perf_counter()
    scores = scorer.score(cands, refs)
    total = time.perf_counter() - start
    return {"seconds": total, "after_encoding": spent[0], "peak_rss_mib": peak_rss_mib(),
            "rss_before_mib": base_rss, "scores": scores["score"].tolist(), "signature": scores.signature}


# -- parent -----------------------------------------------------------------------------------
def run_child(side: str, args: argparse.Namespace) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = fh.name
    cmd = [sys.executable, __file__, "--worker", side, "--out", out, "--lp", args.lp, "--pairs", str(args.pairs),
           "--model", args.model] + (["--idf"] if args.idf else [])
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    result = json.loads(Path(out).read_text())
    os.unlink(out)
    return result


def summarise(runs: dict[str, list[dict]], args: argparse.Namespace) -> tuple[str, dict]:
    import numpy as np

    n = args.pairs
    best = {k: min(r["seconds"] for r in v) for k, v in runs.items()}
    median = {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()}
    after = {k: min(r["after_encoding"] for r in v) for k, v in runs.items()}
    peak = {k: max(r["peak_rss_mib"] for r in v) for k, v in runs.items()}
    ms_scores = np.array(runs["moverscore"][0]["scores"])
    as_scores = np.array(runs["alignscore"][0]["scores"])
    same = np.array(runs["moverscore"][0]["same_tokens"])
    diff = np.abs(ms_scores - as_scores)
    facts = {
        "pairs_per_s": {k: n / v for k, v in best.items()},
        "ratio_best": best["moverscore"] / best["alignscore"],
        "ratio_median": median["moverscore"] / median["alignscore"],
        "ratio_after_encoding": after["moverscore"] / after["alignscore"],
        "max_abs_diff": float(diff.max()),
        "max_abs_diff_distinct": float(diff[~same].max()) if (~same).any() else float("nan"),
        "identical_pairs": int(same.sum()),
    }
    load = os.getloadavg()
    weights = "idf (reference idf / candidate idf)" if args.idf else "uniform"
    lines = [
        f"### {dt.date.today().isoformat()}: WMT16 {args.lp}, {n} pairs, {args.model}, {weights}",
        "",
        f"Machine: {os.cpu_count()}-core CPU ({platform.processor() or platform.machine()}), no GPU, "
        f"torch threads = default; shared with other jobs (load average {load[0]:.1f} at the end). "
        f"Best of {args.repeats} alternating runs per side, model loading and warm-up excluded.",
        "",
        "| | moverscore_v2 (pyemd, square union) | alignscore moverscore-v2 (POT, rectangular) |",
        "|---|---|---|",
        f"| pairs/s (best run) | {n / best['moverscore']:.1f} | {n / best['alignscore']:.1f} |",
        f"| seconds, best / median | {best['moverscore']:.2f} / {median['moverscore']:.2f} | "
        f"{best['alignscore']:.2f} / {median['alignscore']:.2f} |",
        f"| seconds after encoding (alignment) | {after['moverscore']:.2f} | {after['alignscore']:.2f} |",
        f"| peak RSS (MiB) | {peak['moverscore']:.0f} | {peak['alignscore']:.0f} |",
        "",
        f"Speed-up: {facts['ratio_best']:.2f}x end to end (median runs: {facts['ratio_median']:.2f}x); "
        f"{facts['ratio_after_encoding']:.1f}x on the alignment stage alone.",
        f"Largest per-pair score difference: {facts['max_abs_diff_distinct']:.2e} over the "
        f"{n - facts['identical_pairs']} pairs with distinct texts; {facts['max_abs_diff']:.2e} over all "
        f"(the {facts['identical_pairs']} pairs whose candidate tokenizes as its reference: moverscore_v2's "
        f"float32 sqrt(|x|^2+|y|^2-2x.y) turns rounding noise into ~3e-4 distances).",
        "",
    ]
    return "\n".join(lines), facts


def record(text: str) -> None:
    """Append under HEADING, creating the file or the heading if missing; other sections stay."""
    body = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmark results\n"
    if HEADING not in body.splitlines():
        body = body.rstrip("\n") + f"\n\n{HEADING}\n\n{text}"
    else:
        lines = body.splitlines(keepends=True)
        start = lines.index(HEADING + "\n") if HEADING + "\n" in lines else len(lines) - 1
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        chunk = "".join(lines[:end]).rstrip("\n") + "\n\n" + text
        body = chunk + ("\n" + "".join(lines[end:]) if end < len(lines) else "")
    RESULTS.write_text(body.rstrip("\n") + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lp", default="de-en")
    ap.add_argument("--pairs", type=int, default=560)
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--idf", action="store_true", help="idf weights (default: uniform)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--record", action="store_true", help=f"append to {RESULTS.name}")
    ap.add_argument("--worker", choices=["moverscore", "alignscore"], help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        result = (worker_moverscore if args.worker == "moverscore" else worker_alignscore)(args)
        Path(args.out).write_text(json.dumps(result))
        return

    runs: dict[str, list[dict]] = {"moverscore": [], "alignscore": []}
    for i in range(args.repeats):
        for side in ("moverscore", "alignscore"):
            runs[side].append(run_child(side, args))
            print(f"run {i + 1} {side}: {runs[side][-1]['seconds']:.2f} s", file=sys.stderr, flush=True)
    text, facts = summarise(runs, args)
    print(text)
    print(json.dumps(facts, indent=1))
    if args.record:
        record(text)


if __name__ == "__main__":
    main()
