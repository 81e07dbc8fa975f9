"""How far the Sinkhorn aligner lands from the exact word mover's distance on real data.

Encodes WMT16 (mt-system vs reference) once with the moverscore-v2 composition on
all-MiniLM-L6-v2 (or --model), keeps the padded pair batches, then scores them with the exact
``wmd`` aligner and with ``sinkhorn`` at several regularisations, and reports the absolute
score differences (mean, 95th percentile, max), the Pearson correlation of the two score lists,
and the aligner time. Run from the repository root:

    python benchmarks/sinkhorn_accuracy.py --lp de-en --pairs 560 --record

``--record`` appends the table to benchmarks/RESULTS.md under "## sinkhorn vs exact wmd".
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time
from pathlib import Path
from typing import ClassVar

import torch

from alignscore.aligners import WMD, Aligner, PairBatch, Sinkhorn
from alignscore import moverscore_v1, moverscore_v2
from alignscore.textio import read_lines

DATA = Path(os.environ.get("ALIGNSCORE_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


class Recorder(Aligner):
    """Scores nothing; keeps every batch the scorer hands to its aligner."""

    name: ClassVar[str] = "recorder"
    metrics: ClassVar[tuple[str, ...]] = ("score",)
    primary: ClassVar[str] = "score"

    def __init__(self) -> None:
        self.batches: list[PairBatch] = []

    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        self.batches.append(batch)
        return {"score": torch.zeros(batch.ref.shape[0])}

    def signature(self) -> str:
        return "recorder"


def run(aligner: Aligner, batches: list[PairBatch]) -> tuple[torch.Tensor, float]:
    start = time.perf_counter()
    out = torch.cat([aligner(b)["score"].double().cpu() for b in batches])
    return out, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--lp", default="de-en")
    ap.add_argument("--pairs", type=int, default=560)
    ap.add_argument("--regs", default="0.05,0.02,0.01", help="regularisations to try (float64)")
    ap.add_argument("--float32", action="store_true", help="also the default reg in float32")
    ap.add_argument("--preset", choices=["moverscore-v2", "moverscore-v1"], default="moverscore-v2")
    ap.add_argument("--record", action="store_true", help="append to benchmarks/RESULTS.md")
    args = ap.parse_args()

    root = DATA / "wmt16-da-seg"
    refs = read_lines(root / f"DAseg.newstest2016.reference.{args.lp}")[: args.pairs]
    cands = read_lines(root / f"DAseg.newstest2016.mt-system.{args.lp}")[: args.pairs]
    recorder = Recorder()
    preset = moverscore_v2 if args.preset == "moverscore-v2" else moverscore_v1
    scorer = preset(model=args.model)
    cost = scorer.aligner.cost
    scorer.aligner = recorder
    scorer.score(cands, refs)
    batches = recorder.batches
    base = WMD(cost=cost)
    exact, t_exact = run(base, batches)
    default = Sinkhorn()
    configs = [Sinkhorn(cost=cost, reg=float(r)) for r in args.regs.split(",")]
    if args.float32:
        configs.append(Sinkhorn(cost=cost, sinkhorn_dtype="float32"))
    load = os.getloadavg()
    lines = [
        f"### {dt.date.today().isoformat()}: {args.preset} on {args.model}, WMT16 {args.lp}, {len(exact)} pairs",
        "",
        f"Cost {cost}, score 1 - WMD. Sinkhorn defaults: reg={default.reg:g}, max_iter={default.max_iter}, "
        f"tol={default.tol:g} (row-marginal L1 error), float64. Difference = |sinkhorn score - exact score| "
        f"per pair. Times: the aligner only, on this {os.cpu_count()}-core CPU shared with other jobs "
        f"(load average {load[0]:.1f}); the exact solver took {t_exact:.2f} s for all pairs. Command: "
        f"`python benchmarks/sinkhorn_accuracy.py --lp {args.lp} --pairs {args.pairs} --regs {args.regs}"
        f"{' --float32' if args.float32 else ''} --record`.",
        "",
        "| reg | dtype | mean abs diff | p95 | max | Pearson r with exact | sinkhorn time (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for aligner in configs:
        approx, t = run(aligner, batches)
        diff = (approx - exact).abs()
        r = torch.corrcoef(torch.stack([approx, exact]))[0, 1]
        mark = " (default)" if (aligner.reg, aligner.dtype) == (default.reg, default.dtype) else ""
        lines.append(f"| {aligner.reg:g}{mark} | {aligner.dtype} | {diff.mean():.2e} | {diff.quantile(0.95):.2e} | "
                     f"{diff.max():.2e} | {r:.6f} | {t:.1f} |")
        print(lines[-1], flush=True)
    if args.record:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_wmd import record

        record("\n".join(lines) + "\n", heading="## sinkhorn vs exact wmd")


if __name__ == "__main__":
    main()
