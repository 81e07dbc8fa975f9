"""``alignscore fit`` against ``alignscore tune`` on WMT16 (all six to-English pairs, 3,360
segments), one after the other on the same machine in one invocation, each in a process of its
own (so that each one's peak memory is its own).

Reported: each call's time (and the ratio), peak resident memory, and the nested
leave-one-language-pair-out estimates with 95% intervals of the fitted metric, its start, tune's
selection and every published configuration (tune's groups by their best on the other pairs);
per fold, the held-out |r| of the fitted metric and of its start and the steps each fold ran; the
learned settings.

    python benchmarks/bench_fit.py --model all-MiniLM-L6-v2 --record
    python benchmarks/bench_fit.py --model benchmarks/models/all-mpnet-base-v2 --start tune --record

``--start tune`` starts the fit from tune's best.toml (where tune selects a run the fit can learn
through: greedy, one layer or a mix); ``--start FILE`` from a run file, without running tune;
default: BERTScore's composition for the model. ``--precision`` instead measures what keeping
the products in float16 or bfloat16 would change: each language pair's |r| against float32 at
the start, the optimisation's start and a random mix, the bytes kept and a step's time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import REPO, WMT16, machine  # noqa: E402


def _peak_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _tune(args: argparse.Namespace, out: Path) -> dict:
    import alignscore

    t = time.perf_counter()
    result = alignscore.tune(WMT16, budget=args.tune_budget, output=out / "tune", model=args.model,
                             holdout=args.holdout)
    took = time.perf_counter() - t
    run = result.run
    return {"seconds": took, "peak_mib": _peak_mib(), "selected": f"{result.best.id} ({result.best.label})",
            "best_toml": str(out / "tune" / "best.toml"),
            "estimates": {k: [e.estimate, e.low, e.high] for k, e in run.estimates.items()},
            "holdout": {k: sum(h.abs_r[k] for h in run.holdout) / len(run.holdout)
                        for k in (run.holdout[0].abs_r if run.holdout else {})}}


def _fit(args: argparse.Namespace, out: Path, start: str | None) -> dict:
    import alignscore
    from alignscore.weighting import TOKEN_CLASSES

    t = time.perf_counter()
    result = alignscore.fit(WMT16, model=args.model, start=start, budget=args.fit_budget, output=out / "fit",
                            steps=args.steps, holdout=args.holdout, quiet=True,
                            layers=[int(x) for x in args.layers.split(",")] if args.layers else None)
    took = time.perf_counter() - t
    v, est = result.values, result.estimate
    return {"seconds": took, "peak_mib": _peak_mib(), "kept_mib": result.state_bytes / 2**20,
            "layers": list(result.layers), "weights": v.weights(), "start_weights": result.start_values.weights(),
            "temperature": v.temperature, "idf_power": v.idf_power, "beta": v.beta, "metric": v.metric,
            "class_weights": dict(zip(TOKEN_CLASSES, v.class_weights)),
            "final_steps": result.final.steps, "in_sample": result.in_sample, "holdout": result.holdout,
            "start": "; ".join(line for line in result.start.toml().splitlines() if line and not line.startswith("#")),
            "intervals": {k: [i.estimate, i.low, i.high] for k, i in result.intervals.items()},
            "folds": [[f.held_out, f.abs_r["fitted"], f.abs_r["start"], f.chosen["fitted"].steps]
                      for f in est.folds] if est else []}


def _precision(args: argparse.Namespace) -> None:
    import torch
    from dataclasses import replace

    import alignscore
    from alignscore.fit.features import extract
    from alignscore.fit.model import Model, Values, mean_r, pair_scores, scores_of
    from alignscore.fit.optimise import abs_r
    from alignscore.fit.run import start_values
    from alignscore.evaluation.wmt import load_daseg

    spec = alignscore.config.run_spec({"model": args.model})
    scorer = alignscore.build(spec)
    comp = scorer.resolved()
    kept, exact, init = start_values(replace(spec, composition=comp), scorer.encoder.num_layers, None)
    pairs = load_daseg(WMT16)
    g = torch.Generator().manual_seed(0)
    values = {"start": exact, "optimisation's start": init,
              "random mix, T 0.05, F-beta 1.5": Values(tuple(torch.randn(len(kept), generator=g).tolist()),
                                                        temperature=0.05, beta=1.5, metric="fbeta")}
    rows, base = [], {}
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        features = extract(scorer, comp, pairs, kept, dtype=dtype)
        model = Model(init, ("mix_weights", "temperature", "beta"))
        t = time.perf_counter()
        for _ in range(3):
            model.params["mix_weights"].grad = None
            mean_r([pair_scores(pf, model.current(), "fbeta") for pf in features.pairs], features.pairs).backward()
        step = (time.perf_counter() - t) / 3
        diffs = []
        for name, v in values.items():
            rs = abs_r(scores_of(features, v), features, range(len(pairs)))
            base.setdefault(name, rs)
            diffs.append(max(abs(a - b) for a, b in zip(rs, base[name])))
        rows.append(f"| {str(dtype).removeprefix('torch.')} | {features.nbytes / 2**20:,.0f} MiB | {step:.2f} s | "
                    + " | ".join(f"{d:.1e}" for d in diffs) + " |")
        del features
    m = machine()
    print(f"### {dt.date.today().isoformat()}: the fit's products in lower precision, {Path(args.model).name}, WMT16\n\n"
          f"Machine: {m['cpu']}, {m['cores']} cores; torch {m['torch']}. Command: `python benchmarks/bench_fit.py "
          f"{shlex.join(sys.argv[1:])}`. {args.note}".rstrip() + "\n\n| kept as | kept | a step (forward + backward, "
          "6 pairs) | " + " | ".join(f"max change of a pair's \\|r\\|: {n}" for n in values) + " |\n|---|---:|---:|"
          + "---:|" * len(values) + "\n" + "\n".join(rows) + "\n")


def _child(args: argparse.Namespace) -> None:
    out = Path(args.workdir)
    data = _tune(args, out) if args.child == "tune" else _fit(args, out, args.start_file)
    Path(args.json).write_text(json.dumps(data), encoding="utf-8")


def _run_child(which: str, args: argparse.Namespace, work: Path, start_file: str | None = None) -> dict:
    path = work / f"{which}.json"
    cmd = [sys.executable, __file__, "--child", which, "--json", str(path), "--workdir", str(work),
           "--model", args.model, "--tune-budget", str(args.tune_budget), "--fit-budget", str(args.fit_budget),
           "--steps", str(args.steps)] + (["--start-file", start_file] if start_file else []) + (
               ["--layers", args.layers] if args.layers else []) + (
               ["--holdout", args.holdout] if args.holdout else [])
    subprocess.run(cmd, check=True, cwd=REPO)
    return json.loads(path.read_text(encoding="utf-8"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--start", default="bertscore", help="bertscore, tune or a run file")
    ap.add_argument("--precision", action="store_true", help="only the float16 / bfloat16 check")
    ap.add_argument("--fit-budget", type=float, default=30.0, help="minutes")
    ap.add_argument("--tune-budget", type=float, default=30.0, help="minutes")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--layers", default=None, help="the layers a single-layer start is mixed over, e.g. 5,6,7,8,9")
    ap.add_argument("--holdout", default=None, help="another year's DAseg folder (benchmarks/wmt17_daseg.py)")
    ap.add_argument("--record", action="store_true", help="append the tables to benchmarks/RESULTS.md")
    ap.add_argument("--note", default="")
    ap.add_argument("--child", choices=("tune", "fit"), help=argparse.SUPPRESS)
    ap.add_argument("--json", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help=argparse.SUPPRESS)
    ap.add_argument("--start-file", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return _child(args)
    if args.precision:
        return _precision(args)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tune = None
        if args.start in ("bertscore", "tune"):
            tune = _run_child("tune", args, work)
            print(f"tune: {tune['seconds']:.0f} s, selected {tune['selected']}", flush=True)
        start = {"bertscore": None, "tune": tune and tune["best_toml"]}.get(args.start, args.start)
        fit = _run_child("fit", args, work, start)
        print(f"fit: {fit['seconds']:.0f} s", flush=True)
    text = _report(args, tune, fit)
    print(text)
    if args.record:
        with open(REPO / "benchmarks" / "RESULTS.md", "a", encoding="utf-8") as fh:
            fh.write("\n" + text)


def _report(args: argparse.Namespace, tune: dict | None, fit: dict) -> str:
    m = machine()
    iv = fit["intervals"]
    ratio = f" ({fit['seconds'] / tune['seconds']:.2f} of tune's)" if tune else ""
    lines = [f"### {dt.date.today().isoformat()}: {Path(args.model).name}, WMT16 (6 pairs, 3,360 segments)", "",
             f"Machine: {m['cpu']}, {m['cores']} cores; torch {m['torch']}, transformers {m['transformers']}, POT "
             f"{m['POT']}. Command: `python benchmarks/bench_fit.py {shlex.join(sys.argv[1:])}`. {args.note}".rstrip(),
             "", "| call | took | peak resident memory |", "|---|---:|---:|"]
    if tune:
        lines.append(f"| `alignscore.tune` (default space, budget {args.tune_budget:g} min) | "
                     f"{tune['seconds'] / 60:.1f} min | {tune['peak_mib']:,.0f} MiB |")
    lines += [f"| `alignscore.fit` (budget {args.fit_budget:g} min, at most {args.steps} steps per fit) | "
              f"{fit['seconds'] / 60:.1f} min{ratio} | {fit['peak_mib']:,.0f} MiB (products kept: "
              f"{fit['kept_mib']:,.0f} MiB) |", "",
              "Nested leave-one-language-pair-out estimates: mean |r| on the left-out pair, 95% intervals (the fit: "
              "each held-out pair's segments resampled; tune: as in its own tables).", "",
              "| run | held-out mean \\|r\\| | 95% interval |", "|---|---:|---|"]
    for name, key in (("fitted", "fitted"), ("its start", "start"), ("fitted minus start", "gain")):
        if key in iv:
            e, lo, hi = iv[key]
            sign = "+" if key == "gain" else ""
            lines.append(f"| {name} | {e:{sign}.4f} | [{lo:{sign}.4f}, {hi:{sign}.4f}] |")
    for key, (e, lo, hi) in (tune["estimates"] if tune else {}).items():
        lines.append(f"| {'tune: its selection' if key == 'selected' else 'tune: ' + key} | {e:.4f} | "
                     f"[{lo:.4f}, {hi:.4f}] |")
    lines += ["", (f"Tune selected {tune['selected']}. " if tune else "") +
              f"The fit's start: `{fit['start']}`.", "",
              "| held-out pair | fitted \\|r\\| | start \\|r\\| | steps |", "|---|---:|---:|---:|"]
    lines += [f"| {lp} | {rf:.4f} | {rs:.4f} | {steps} |" for lp, rf, rs, steps in fit["folds"]]
    lines += ["", f"Learned on all six pairs ({fit['final_steps']} steps): layer weights "
              + ", ".join(f"L{k} {w:.3f}" for k, w in zip(fit["layers"], fit["weights"]))
              + " (start: " + ", ".join(f"{w:.3f}" for w in fit["start_weights"]) + ")"
              + f"; temperature {fit['temperature']:.4g}; idf exponent {fit['idf_power']:.4g}; beta {fit['beta']:.4g}; "
              + "token-class weights " + ", ".join(f"{k} {w:.3g}" for k, w in fit["class_weights"].items()) + "; "
              f"metric {fit['metric']}. In-sample mean |r|: start {fit['in_sample'].get('start', float('nan')):.4f}, "
              f"fitted {fit['in_sample'].get('fitted', float('nan')):.4f}.", ""]
    if args.holdout:
        lines += [f"On another year ({Path(args.holdout).name}, every language pair; nothing of it seen by the fit or "
                  "the search): mean |r|.", "", "| run | mean \\|r\\| |", "|---|---:|"]
        lines += [f"| fit: {k} | {v:.4f} |" for k, v in fit["holdout"].items()]
        lines += [f"| tune: {'its selection' if k == 'selected' else k} | {v:.4f} |"
                  for k, v in (tune["holdout"] if tune else {}).items()] + [""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
