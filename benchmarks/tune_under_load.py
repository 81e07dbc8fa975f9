"""Which of tune's adaptive budget pieces a loaded machine needs: the default ``alignscore tune``
(all-MiniLM-L6-v2, the packaged space) with each piece disabled in turn while two busy loops keep
both cores busy; for each, the wall time against the budget and whether best.toml was written.

The pieces (each disabled by replacing it for the one process):

- ``pace``: re-planning the later levels where the search falls behind (``search(pace=None)``);
- ``threads``: the probe's timing of torch's threads against one (torch left on its own threads);
- ``headroom``: a plan takes at most ``HEADROOM`` of the time left (1.0 instead).

Usage::

    python benchmarks/tune_under_load.py DATA --budget-min 10 --variants all,-pace,-threads,-headroom,none --parallel

``--budget-min`` stands in for the default budget (the search then screens harder where the space
does not fit, as the default does); ``--explicit`` gives it as ``--budget`` instead. Prints one
Markdown row per variant.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import importlib, sys, torch
tune_mod = importlib.import_module("alignscore.tune.tune")  # the package's `tune` attribute is the function
cost_mod = importlib.import_module("alignscore.tune.cost")
off, minutes = set(sys.argv[1].split(",")) - {""}, float(sys.argv[2])
tune_mod.DEFAULT_BUDGET_MIN = minutes
if "pace" in off and hasattr(tune_mod, "Pace"):
    tune_mod.Pace = lambda *a, **k: None
if "threads" in off and hasattr(cost_mod, "fastest_threads"):
    cost_mod.fastest_threads = lambda run, clock=None: torch.get_num_threads()
if "headroom" in off and hasattr(tune_mod, "HEADROOM"):
    tune_mod.HEADROOM = 1.0
from alignscore.cli import main
sys.argv = ["alignscore", "tune", *sys.argv[3:]]
main(prog_name="alignscore")
"""

PIECES = ("pace", "threads", "headroom")


def start(data: str, off: set[str], minutes: float, explicit: bool, out: Path) -> subprocess.Popen:
    args = ["--data", data, "-o", str(out), "--model", "all-MiniLM-L6-v2"] + (
        ["--budget", f"{minutes:g}"] if explicit else [])
    out.mkdir(parents=True)
    with open(out.parent / f"{out.name}.log", "w", encoding="utf-8") as log:  # a pipe left unread would block it
        return subprocess.Popen([sys.executable, "-c", CHILD, ",".join(sorted(off)), str(minutes), *args],
                                stdout=log, stderr=subprocess.STDOUT)


def row(off: set[str], minutes: float, took: float, proc: subprocess.Popen, out: Path) -> str:
    lines = (out.parent / f"{out.name}.log").read_text(encoding="utf-8", errors="replace").splitlines()
    said = [ln.strip() for ln in lines if any(w in ln for w in ("re-planned", "error", "runs x", "Error"))]
    wrote = (out / "best.toml").is_file() and proc.returncode == 0
    return (f"| {', '.join(sorted(off)) or 'none'} | {minutes:g} min | {took / 60:.2f} min | "
            f"{'yes' if took <= minutes * 60 else 'no'} | {'written' if wrote else 'not written'} | "
            f"{' / '.join(said)[:400]} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data")
    ap.add_argument("--budget-min", type=float, default=3.0)
    ap.add_argument("--explicit", action="store_true", help="give the budget as --budget")
    ap.add_argument("--variants", default="all,-pace,-threads,-headroom",
                    help="comma-separated: all (every piece on), -PIECE (that piece off), none (every piece off)")
    ap.add_argument("--burners", type=int, default=2, help="busy loops kept running throughout")
    ap.add_argument("--parallel", action="store_true",
                    help="run the variants at once (each under the same load from the others and the machine)")
    a = ap.parse_args()
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.burners)]
    offs = [set(PIECES) if v == "none" else ({v[1:]} if v.startswith("-") else set()) for v in a.variants.split(",")]
    try:
        print(f"# load average at the start {os.getloadavg()}", file=sys.stderr, flush=True)
        print("| pieces off | budget | wall | within budget | best.toml | what it said |")
        print("|---|---:|---:|---|---|---|", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            outs = [Path(tmp) / f"out{k}" for k in range(len(offs))]
            batches = [list(range(len(offs)))] if a.parallel else [[k] for k in range(len(offs))]
            for batch in batches:
                t = time.perf_counter()
                procs = {k: start(a.data, offs[k], a.budget_min, a.explicit, outs[k]) for k in batch}
                took = {}
                while len(took) < len(procs):
                    for k, p in procs.items():
                        if k not in took and p.poll() is not None:
                            took[k] = time.perf_counter() - t
                    time.sleep(1)
                for k in batch:
                    print(row(offs[k], a.budget_min, took[k], procs[k], outs[k]), flush=True)
                print(f"# load average {os.getloadavg()}", file=sys.stderr, flush=True)
    finally:
        for b in burners:
            b.kill()
            b.wait()


if __name__ == "__main__":
    main()
