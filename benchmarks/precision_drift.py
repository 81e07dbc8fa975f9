"""Mixed precision (or the int8 approximate mode) against float32: per-pair drift and the change in Pearson r on WMT16.

Scores the WMT16 DAseg pairs of the six language pairs (mt-system against reference, BERTScore
greedy F1, no idf) with one model in float32 and in ``--dtype``, on one device, and reports

- the per-pair drift of P, R and F1 against float32 (max and mean |diff| over all pairs),
- Pearson r of F1 with the human scores per language pair, and the mean |r| in float32, in
  ``--dtype`` and their difference.

    python benchmarks/precision_drift.py --model all-MiniLM-L6-v2 --dtype bfloat16 --device cpu [--per-lp 560]
    python benchmarks/precision_drift.py --model DIR --dtype float16 --device cuda --layer 9

On a CPU, bfloat16 is slow but its numerics are bfloat16's (a valid measurement of the drift, not
of GPU speed); float16 needs CUDA. Prints a Markdown table and, with ``--json FILE``, writes the
numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from harness import LANG_PAIRS, WMT16  # noqa: E402

METRICS = ("precision", "recall", "f1")


def load(data: Path, per_lp: int | None) -> dict[str, dict[str, list]]:
    from alignscore.textio import read_lines

    out = {}
    for lp in LANG_PAIRS:
        files = {k: read_lines(data / f"DAseg.newstest2016.{k}.{lp}")[:per_lp]
                 for k in ("mt-system", "reference", "human")}
        out[lp] = {"cands": files["mt-system"], "refs": files["reference"],
                   "human": np.array([float(h) for h in files["human"]])}
    return out


def score(model: str, dtype: str, device: str, layer: int | None, data: dict[str, dict[str, list]]
          ) -> dict[str, np.ndarray]:
    """``{metric: [P]}`` over the language pairs in order (one encoding of all their texts)."""
    import alignscore
    from alignscore.encoders.huggingface import HFEncoder

    scorer = alignscore.bertscore(layer=layer, encoder=HFEncoder(model, device_name=device, dtype=dtype))
    cands = [c for d in data.values() for c in d["cands"]]
    refs = [r for d in data.values() for r in d["refs"]]
    metrics = scorer.score(cands, refs).metrics
    return {k: metrics[k].double().numpy() for k in METRICS}


def drift(model: str, dtype: str, device: str, layer: int | None, data: dict[str, dict[str, list]]) -> dict:
    from alignscore.evaluation.stats import correlation

    full, low = (score(model, d, device, layer, data) for d in ("float32", dtype))
    bounds = np.cumsum([0] + [len(d["cands"]) for d in data.values()])
    r = {name: {lp: correlation(s["f1"][bounds[i]:bounds[i + 1]], d["human"])[0]
                for i, (lp, d) in enumerate(data.items())}
         for name, s in (("float32", full), (dtype, low))}
    mean_abs = {name: float(np.mean([abs(v) for v in rs.values()])) for name, rs in r.items()}
    return {"model": model, "dtype": dtype, "device": device, "layer": layer, "pairs": int(bounds[-1]),
            "drift": {k: {"max": float(np.abs(full[k] - low[k]).max()), "mean": float(np.abs(full[k] - low[k]).mean())}
                      for k in METRICS},
            "pearson": r, "mean_abs_pearson": mean_abs,
            "mean_abs_pearson_change": mean_abs[dtype] - mean_abs["float32"]}


def markdown(result: dict) -> str:
    d, dt = result["drift"], result["dtype"]
    lines = [f"{result['model']} (layer {result['layer']}), {dt} against float32 on {result['device']}, "
             f"{result['pairs']} WMT16 pairs",
             "", "| | max abs diff | mean abs diff |", "|---|---|---|"]
    lines += [f"| {k} | {d[k]['max']:.2e} | {d[k]['mean']:.2e} |" for k in METRICS]
    lines += ["", "| language pair | Pearson r float32 | Pearson r " + dt + " |", "|---|---|---|"]
    lines += [f"| {lp} | {result['pearson']['float32'][lp]:.5f} | {result['pearson'][dt][lp]:.5f} |"
              for lp in result["pearson"]["float32"]]
    m = result["mean_abs_pearson"]
    lines.append(f"| mean abs r | {m['float32']:.5f} | {m[dt]:.5f} (change {result['mean_abs_pearson_change']:+.1e}) |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--dtype", choices=("bfloat16", "float16", "int8"), default="bfloat16",
                    help="int8: the approximate CPU mode (dynamic quantisation)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--layer", type=int, default=None, help="default: the model's BERTScore layer")
    ap.add_argument("--per-lp", type=int, default=None, help="first N pairs of each language pair (default: all 560)")
    ap.add_argument("--data", type=Path, default=WMT16)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    result = drift(args.model, args.dtype, args.device, args.layer, load(args.data, args.per_lp))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
