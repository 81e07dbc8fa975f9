"""Cost of the whole table9 ablation grid, against one plain BERTScore run over the same pairs and
against running the grid's cells one by one with ``Scorer``.

    python benchmarks/bench_grid.py [--model all-MiniLM-L6-v2] [--layer 4] [--lang-pairs de-en,ru-en]
                                    [--rounds 3] [--no-one-by-one] [--record]

After a warm-up (imports, model files), plain BERTScore runs and grid runs alternate for
``--rounds`` rounds, both with a freshly loaded model each time; the medians are compared.

The grid encodes each unique sentence once per model (one forward pass for every layer it needs)
and shares weights and alignments; ``Scorer`` run per cell encodes again for every cell. The
idf-L corpus is the union of the WMT16 references of all six language pairs (the folder has no
full newstest2016 reference files). MNLI rows are skipped when no MNLI model is on the machine.
``--record`` appends the numbers to benchmarks/RESULTS.md under "## table9 grid cost".
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

from alignscore import bertscore
from alignscore.ablation import evaluate, load_grid, run_grid
from alignscore.cli.options import FLAGS
from alignscore.config import build, compile_run
from alignscore.encoders import encoder_of
from alignscore.config.compile import sources_of
from alignscore.encoders.base import Encoder
from alignscore.evaluation.wmt import load_daseg

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ALIGNSCORE_DATA", REPO.parent / "shared" / "data")) / "wmt16-da-seg"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--layer", type=int, default=4)
    ap.add_argument("--lang-pairs", default="de-en,ru-en")
    ap.add_argument("--grid", default=str(REPO / "ablations" / "table9.toml"))
    ap.add_argument("--rounds", type=int, default=3, help="alternating plain/grid rounds (medians reported)")
    ap.add_argument("--no-one-by-one", action="store_true", help="skip the (slow) cell-by-cell Scorer runs")
    ap.add_argument("--record", action="store_true", help="append the results to benchmarks/RESULTS.md")
    ap.add_argument("--note", default="", help="free text for the record (e.g. machine load)")
    args = ap.parse_args()
    lps = [s.strip() for s in args.lang_pairs.split(",") if s.strip()]

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "wmt16-refs.en"
        refs_all = [line for p in sorted(DATA.glob("DAseg.newstest2016.reference.*"))
                    for line in p.read_text(encoding="utf-8").splitlines()]
        corpus.write_text("\n".join(refs_all) + "\n", encoding="utf-8")
        pairs = load_daseg(DATA, lps, idf_corpus=corpus)
        grid = load_grid(args.grid)
        flags = sources_of({"model": args.model, "layer": args.layer}, FLAGS)
        cands = [c for lp in pairs for c in lp.candidates]
        refs = [r for lp in pairs for r in lp.references]
        print(f"{len(cands)} pairs ({', '.join(lps)}), model {args.model}, layer {args.layer}, "
              f"torch threads {torch.get_num_threads()}")

        # warm-up (imports, tokenizer files, model weights in the page cache), so that neither
        # timed run pays for what the other already paid; then plain and grid alternate
        # (and the saved traces of the default CPU backend: plain BERTScore's layer, the grid's layers)
        bertscore(args.model, layer=args.layer).score(cands[:8], refs[:8])
        run_grid(grid, [replace(lp, candidates=lp.candidates[:8], references=lp.references[:8],
                                human=lp.human[:8]) for lp in pairs], flags, skip_missing=True)
        plains, grids = [], []
        for _ in range(args.rounds):
            t = time.perf_counter()
            bertscore(args.model, layer=args.layer).score(cands, refs)
            plains.append(time.perf_counter() - t)
            t = time.perf_counter()
            run = run_grid(grid, pairs, flags, skip_missing=True)  # the MNLI rows, where their model is not here
            grids.append(time.perf_counter() - t)
            print(f"round {len(plains)}: plain BERTScore {plains[-1]:.1f} s, table9 grid {grids[-1]:.1f} s "
                  f"= {grids[-1] / plains[-1]:.2f}x")
        plain, t_grid = statistics.median(plains), statistics.median(grids)
        print(f"plain BERTScore (Scorer, fresh model):   {plain:7.1f} s (median of {args.rounds})")
        t = time.perf_counter()
        evaluate(run, ["pearson"], bootstrap=1000)
        t_eval = time.perf_counter() - t
        ran = [c for c in run.cells if c.scores is not None]
        cells = len({(c.row, c.column) for c in ran})
        print(f"table9 grid ({cells} cells ran, x {len(pairs)} pairs): {t_grid:7.1f} s (median) "
              f"(+ {t_eval:.1f} s Williams and 1000 bootstrap resamples)  = {t_grid / plain:.2f}x plain")
        print("   stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in run.seconds.items()))

        t_one = None
        if not args.no_one_by_one:
            by_name = {lp.name: lp for lp in pairs}
            encoders: dict[tuple[object, str], Encoder] = {}
            t = time.perf_counter()
            for c in ran:
                lp = by_name[c.lang_pair]
                spec = compile_run(run.grid.sources(run.grid.rows[c.row], run.grid.columns[c.column], flags),
                                   {"idf_corpus": str(corpus)})
                # one encoder (model loaded once) per model and aggregator: an HFEncoder is not
                # reused across different layer sets (see the report on HFEncoder's hooks)
                key = (spec.encoder, repr(spec.composition.aggregator))
                enc = encoders.setdefault(key, encoder_of(spec.encoder))
                build(spec, enc).score(lp.candidates, lp.references)
            t_one = time.perf_counter() - t
            print(f"same cells one by one with Scorer:       {t_one:7.1f} s = {t_one / t_grid:.1f}x the grid")

    if args.record:
        lines = [
            f"### {dt.date.today().isoformat()}: {args.model} layer {args.layer}, {len(cands)} pairs "
            f"({', '.join(lps)}), {cells} table9 cells",
            "",
            f"Machine: {os.cpu_count()}-core CPU ({platform.machine()}), torch {torch.__version__}, "
            f"{torch.get_num_threads()} threads; code at commit {_commit()}. {args.note}".rstrip(),
            "",
            f"After a warm-up run on 8 pairs, {args.rounds} rounds alternating a plain BERTScore run and "
            f"the grid; medians (per round: " + ", ".join(f"{p:.1f} / {g:.1f} s" for p, g in zip(plains, grids))
            + ").",
            "",
            "| run | seconds | vs plain BERTScore |",
            "|---|---:|---:|",
            f"| one plain BERTScore run (Scorer) | {plain:.1f} | 1.00x |",
            f"| whole table9 grid (`run_grid`) | {t_grid:.1f} | {t_grid / plain:.2f}x |",
            f"| + meta-evaluation (Williams, 1000 bootstrap) | {t_eval:.1f} | |",
        ]
        if t_one is not None:
            lines.append(f"| the same cells one by one with Scorer | {t_one:.1f} | {t_one / plain:.2f}x |")
        lines += ["", "Grid stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in run.seconds.items()) + ".", ""]
        path = REPO / "benchmarks" / "RESULTS.md"
        text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
        if "## table9 grid cost" not in text:
            text = text.rstrip("\n") + "\n\n## table9 grid cost\n\n"
            text += ("Command: `python benchmarks/bench_grid.py --record`. The grid encodes each sentence once "
                     "per model for all layers; one-by-one re-encodes per cell. Timings taken while other "
                     "processes share the CPU are pessimistic.\n\n")
        # append at the end of this section (before the next "## " heading, if another follows)
        start = text.index("## table9 grid cost")
        nxt = text.find("\n## ", start + 1)
        entry = "\n".join(lines).rstrip("\n") + "\n"
        if nxt < 0:
            text = text.rstrip("\n") + "\n\n" + entry
        else:
            text = text[:nxt].rstrip("\n") + "\n\n" + entry + text[nxt:]
        path.write_text(text, encoding="utf-8")
        print(f"appended to {path}")


def _commit() -> str:
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    main()
