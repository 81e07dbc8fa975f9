"""Reference-free scoring on WMT16 (source vs MT, the six to-English pairs): mean |r| with the human
scores for greedy matching and XMoverScore's WMD on bigrams, without a remapping, with CLP
(orthogonal) and with UMD, each remapping learned on WMT16's source/reference text of its
language (``alignscore.fit.remap.learn_files``, as ``alignscore remap`` runs it); the same pairs scored
against their references for comparison; pairs per second of each reference-free run (one process,
the model loaded before the clock starts).

    python benchmarks/fetch_multilingual_e5.py MODEL_DIR
    python benchmarks/bench_reference_free.py --model MODEL_DIR --record
"""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import REPO, WMT16, machine  # noqa: E402

METHODS = ("none", "clp-orthogonal", "umd")
ALIGNMENTS = {"greedy F1": {}, "WMD-2 (xmoverscore)": {"preset": "xmoverscore"}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="a multilingual encoder (e.g. the converted multilingual-e5-small)")
    ap.add_argument("--layer", type=int, default=8)
    ap.add_argument("--record", action="store_true", help="append the table to benchmarks/RESULTS.md")
    args = ap.parse_args()

    import alignscore
    from alignscore.encoders import encoder_of
    from alignscore.evaluation.wmt import load_daseg
    from alignscore.fit.remap import RemapOptions, learn_files
    from alignscore.runtime import Runtime

    pairs = load_daseg(WMT16)
    base = alignscore.run_spec({"model": args.model, "layer": args.layer})
    encoder = encoder_of(base.encoder)
    runtime = Runtime()
    r: dict[tuple[str, str], list[float]] = {}
    speed: dict[tuple[str, str], list[float]] = {}
    learned: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for lp in pairs:
            src_lang = lp.src
            remaps = {"none": None}
            for method in METHODS[1:]:
                path = Path(tmp) / f"{src_lang}-{method}.remap"
                opts = RemapOptions((_write(tmp, f"{src_lang}.src", lp.sources),),
                                    (_write(tmp, f"{src_lang}.ref", lp.references),), str(path), args.layer, method,
                                    src_lang)
                _, stats = learn_files(encoder, runtime, opts)
                learned.append(f"{src_lang} {method}: {stats['pairs']:.0f} word pairs, mean cosine "
                               f"{stats['cosine_before']:.4f} -> {stats['cosine_after']:.4f}")
                remaps[method] = str(path)
            for name, options in ALIGNMENTS.items():
                for method, path in remaps.items():
                    given = {**options, "model": args.model, "layer": args.layer,
                             **({"remap": path} if path else {})}
                    scorer = alignscore.build(alignscore.run_spec(given), encoder=encoder)
                    t = time.perf_counter()
                    scores = scorer.score(lp.candidates, sources=lp.sources)
                    speed.setdefault((name, method), []).append(len(lp) / (time.perf_counter() - t))
                    r.setdefault((name, method), []).append(_abs_r(scorer, scores, lp.human))
                scorer = alignscore.build(alignscore.run_spec({**options, "model": args.model, "layer": args.layer}),
                                          encoder=encoder)
                scores = scorer.score(lp.candidates, lp.references)
                r.setdefault((name, "with references"), []).append(_abs_r(scorer, scores, lp.human))
            print(f"{lp.name}: " + ", ".join(f"{k[0]}/{k[1]} {v[-1]:.3f}" for k, v in r.items()), flush=True)
    m = machine()
    names = [lp.name for lp in pairs]
    lines = [f"### {dt.date.today().isoformat()}: reference-free scoring on WMT16 (source vs MT), "
             f"{Path(args.model).name} layer {args.layer}", "",
             f"Machine: {m['cpu']}, {m['cores']} cores, torch {m['torch']}, transformers {m['transformers']}. "
             f"Command: `python benchmarks/bench_reference_free.py {shlex.join(sys.argv[1:])}`. No language-model "
             "term: no causal LM is available offline here.", "",
             "| alignment | source side | " + " | ".join(names) + " | mean abs r | pairs/s |",
             "|---|---|" + "---:|" * (len(names) + 2)]
    for (name, method), values in r.items():
        pps = f"{np.mean(speed[(name, method)]):.0f}" if (name, method) in speed else ""
        side = "references (not reference-free)" if method == "with references" else f"sources, remap {method}"
        lines.append(f"| {name} | {side} | " + " | ".join(f"{v:.3f}" for v in values) +
                     f" | {np.mean(values):.3f} | {pps} |")
    lines += ["", "Remappings (each learned on the 560 source/reference pairs of its language pair, layer "
              f"{args.layer}): " + "; ".join(learned) + "."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        results = REPO / "benchmarks" / "RESULTS.md"
        body = results.read_text(encoding="utf-8")
        head = "## Reference-free scoring (issue 46)\n"
        if head not in body:
            body = body.rstrip("\n") + "\n\n" + head
        results.write_text(body.rstrip("\n") + "\n\n" + text, encoding="utf-8")


def _abs_r(scorer, scores, human: np.ndarray) -> float:  # noqa: ANN001
    from alignscore.evaluation.stats import correlation

    return abs(correlation(scores[scorer.composition.metric].numpy().astype(float), human)[0])


def _write(folder: str, name: str, lines: list[str] | None) -> str:
    if lines is None:
        raise SystemExit("the data has no source files")
    path = Path(folder) / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


if __name__ == "__main__":
    main()
