"""Everything issue 14 measures on a GPU, in one go, written as files (``results.json`` and
``results.md``) into ``--out``.

Run it on the GPU machine from the repository root, with the folder that
``benchmarks/gpu_assets.py`` prepares here carried along (``.gpu``: wheels, tokenizer files and
configurations, WMT16); the exact device-tool command is in benchmarks/RESULTS.md ("GPU"). No
weights travel: each model is built from its configuration with a fixed seed (speed does not
depend on the weights) and saved once, so that alignscore and bert_score read the same folder.

Sections (``--sections``, all by default), each written as soon as it is done:

- ``greedy``: BERTScore (greedy, no idf) pairs per second, alignscore against bert_score 0.3.13
  (``BERTScorer`` on the same folder, layer, device and inputs; model loading not timed) on the
  3,360 WMT16 pairs and on a 100,000-pair corpus made from WMT16 texts (each pair joins two
  WMT16 pairs: reference a + b against candidate a + b; roberta-large on the 3,360 pairs only),
  the ratio, float32 parity (max per-pair |diff| of P, R, F), peak GPU memory
  (``torch.cuda.max_memory_allocated``) and where alignscore's time goes (tokenize, encode,
  align; host copies: device time of the profiler's memcpy events over one run);
- ``precision``: the same greedy runs in float16 and bfloat16 (pairs/s, peak memory, max drift
  against float32: with random weights the drift only shows the numerics, see
  ``benchmarks/precision_drift.py`` for real models);
- ``ot``: moverscore_v2 (pyemd over POT, on the same model on the GPU) against the
  ``moverscore-v2`` preset with the exact aligner (wmd, CPU solver) and with Sinkhorn on the GPU.

Without CUDA the script exits with status 2 and one line. ``--dry-run`` runs the same code paths
on the CPU with tiny configurations and a few pairs (the tests run it).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import torch

REPO = Path(__file__).resolve().parents[1]
LANG_PAIRS = ("cs-en", "de-en", "fi-en", "ro-en", "ru-en", "tr-en")
# the layer both sides read (bert_score's num_layers)
LAYERS = {"all-MiniLM-L6-v2": 4, "all-mpnet-base-v2": 9, "roberta-large": 17}
LARGE_CORPUS_MODELS = ("all-MiniLM-L6-v2", "all-mpnet-base-v2")
SECTIONS = ("greedy", "precision", "ot")
TINY = dict(hidden_size=32, num_hidden_layers=4, num_attention_heads=2, intermediate_size=64)


def fail(message: str) -> None:
    print(f"bench_gpu: error: {message}", file=sys.stderr)
    sys.exit(2)


# -- inputs ---------------------------------------------------------------------------------------
def wmt16_pairs(data: Path, per_lp: int | None = None) -> tuple[list[str], list[str]]:
    """``(cands, refs)``: the mt-system outputs and references of the six WMT16 language pairs."""
    from alignscore.textio import read_lines

    cands, refs = [], []
    for lp in LANG_PAIRS:
        cands += read_lines(data / f"DAseg.newstest2016.mt-system.{lp}")[:per_lp]
        refs += read_lines(data / f"DAseg.newstest2016.reference.{lp}")[:per_lp]
    return cands, refs


def large_corpus(cands: list[str], refs: list[str], size: int) -> tuple[list[str], list[str]]:
    """``size`` distinct pairs from WMT16's: pair k joins pairs a = k mod n and
    b = (a + 1 + k // n) mod n (candidate a + b against reference a + b)."""
    n = len(cands)
    out_c, out_r = [], []
    for k in range(size):
        a = k % n
        b = (a + 1 + k // n) % n
        out_c.append(f"{cands[a]} {cands[b]}")
        out_r.append(f"{refs[a]} {refs[b]}")
    return out_c, out_r


def build_model(src: Path, dest: Path, dry_run: bool, device: str) -> Path:
    """``dest``: the configuration and tokenizer files of ``src`` and weights initialised from
    the configuration with seed 0 (tiny sizes for a dry run)."""
    from transformers import AutoConfig, AutoModel

    shutil.copytree(src, dest, dirs_exist_ok=True)
    config = AutoConfig.from_pretrained(dest)
    if dry_run:
        for key, value in TINY.items():
            setattr(config, key, value)
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModel.from_config(config)
    model.save_pretrained(dest)
    del model
    return dest


# -- timing ---------------------------------------------------------------------------------------
def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    sync()
    start = time.perf_counter()
    out = fn()
    sync()
    return time.perf_counter() - start, out


def peak_memory(fn: Callable[[], Any]) -> tuple[float | None, Any]:
    """MiB of GPU memory at the peak of ``fn`` (None on CPU) and its result."""
    if not torch.cuda.is_available():
        return None, fn()
    sync()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    sync()
    return torch.cuda.max_memory_allocated() / 2**20, out


def host_copies(fn: Callable[[], Any]) -> dict[str, Any]:
    """Device time (s) and count of the memcpy events (host <-> device) of one run of ``fn``."""
    if not torch.cuda.is_available():
        return {"seconds": None, "count": None}
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        sync()
    seconds, count = 0.0, 0
    for e in prof.key_averages():
        if "memcpy" in e.key.lower() and ("htod" in e.key.lower() or "dtoh" in e.key.lower()):
            total = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0.0)
            seconds += total / 1e6
            count += e.count
    return {"seconds": seconds, "count": count}


# -- the two sides ------------------------------------------------------------------------------
class Ours:
    """alignscore's BERTScore on one model folder, dtype and device, run stage by stage."""

    def __init__(self, model_dir: Path, layer: int, dtype: str, device: str, batch_size: int) -> None:
        from alignscore.encoders.huggingface import HFEncoder
        from alignscore import bertscore

        self.encoder = HFEncoder(str(model_dir), device_name=device, dtype=dtype)
        self.scorer = bertscore(layer=layer, encoder=self.encoder, batch_size=batch_size)
        self.composition = self.scorer.resolved()
        self.runtime = self.scorer.runtime

    def stages(self, cands: list[str], refs: list[str]) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
        from alignscore import engine
        from alignscore.tokens import TokenTable

        pairs = engine.Pairs.from_pairs(refs, cands)
        comps = [self.composition]
        t_tok, table = timed(lambda: TokenTable.from_tokenized(self.encoder.tokenize(pairs.texts)))
        t_enc, encoded = timed(lambda: engine.encode(self.encoder, pairs, [c.aggregator for c in comps],
                                                     self.runtime, table))

        def align() -> list[dict[str, torch.Tensor]]:
            return engine.align(encoded, comps, engine.aligner_inputs(encoded, comps, self.encoder), self.runtime)

        t_align, (scores,) = timed(align)
        return {"tokenize": t_tok, "encode": t_enc, "align": t_align}, scores

    def run(self, cands: list[str], refs: list[str]) -> dict[str, torch.Tensor]:
        return self.scorer.score(cands, refs).metrics


class Theirs:
    """bert_score 0.3.13's ``BERTScorer`` on the same folder, layer and device."""

    def __init__(self, model_dir: Path, layer: int, device: str, batch_size: int) -> None:
        import bert_score

        self.scorer = bert_score.BERTScorer(model_type=str(model_dir), num_layers=layer, device=device,
                                            batch_size=batch_size, nthreads=1)

    def run(self, cands: list[str], refs: list[str]) -> dict[str, torch.Tensor]:
        p, r, f = self.scorer.score(cands, refs)
        return {"precision": p, "recall": r, "f1": f}


def max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k].double().cpu() - b[k].double().cpu()).abs().max()) for k in ("precision", "recall", "f1"))


def speed(run: Callable[[], Any], pairs: int, repeats: int) -> dict[str, Any]:
    """Pairs per second (median of ``repeats`` timed runs), the peak GPU memory of the first run
    and its scores."""
    mib, (first, out) = peak_memory(lambda: timed(run))
    times = [first] + [timed(run)[0] for _ in range(repeats - 1)]
    return {"pairs": pairs, "seconds": statistics.median(times), "pairs_per_s": pairs / statistics.median(times),
            "peak_mib": mib, "scores": out}


# -- sections -----------------------------------------------------------------------------------
def greedy_section(models: dict[str, Path], corpora: dict[str, tuple[list[str], list[str]]], args: argparse.Namespace,
                   dtypes: tuple[str, ...], reference: dict[tuple[str, str], dict[str, torch.Tensor]]
                   ) -> list[dict[str, Any]]:
    """One row per model, dtype and corpus; ``reference`` keeps (and, for other dtypes, gets)
    the float32 scores of each model and corpus."""
    rows = []
    for name, model_dir in models.items():
        layer = min(LAYERS[name], TINY["num_hidden_layers"]) if args.dry_run else LAYERS[name]
        theirs = Theirs(model_dir, layer, args.device, args.batch_size) if "float32" in dtypes else None
        if "float32" not in dtypes:
            fp32 = Ours(model_dir, layer, "float32", args.device, args.batch_size)
            for corpus, (cands, refs) in corpora.items():
                if (name, corpus) not in reference and (corpus != "large" or name in LARGE_CORPUS_MODELS):
                    reference[(name, corpus)] = fp32.run(cands, refs)
            del fp32
        for dtype in dtypes:
            ours = Ours(model_dir, layer, dtype, args.device, args.batch_size)
            for corpus, (cands, refs) in corpora.items():
                if corpus == "large" and name not in LARGE_CORPUS_MODELS:
                    continue
                ours.run(cands[:8], refs[:8])  # warm-up: loads the model, CUDA kernels
                row: dict[str, Any] = {"model": name, "layer": layer, "dtype": dtype, "corpus": corpus}
                repeats = args.repeats if corpus == "wmt16" else 1
                mine = speed(lambda: ours.run(cands, refs), len(cands), repeats)
                row["ours_pairs_per_s"], row["ours_peak_mib"] = mine["pairs_per_s"], mine["peak_mib"]
                row["stages_s"], _ = ours.stages(cands, refs)
                # the profiler's trace of a 100,000-pair run would be huge: the WMT16 pairs only
                row["host_copies"] = (host_copies(lambda: ours.run(cands, refs)) if corpus == "wmt16"
                                      else {"seconds": None, "count": None})
                if dtype == "float32":
                    reference[(name, corpus)] = mine["scores"]
                    assert theirs is not None
                    theirs.run(cands[:8], refs[:8])
                    other = speed(lambda: theirs.run(cands, refs), len(cands), repeats)
                    row["bert_score_pairs_per_s"], row["bert_score_peak_mib"] = other["pairs_per_s"], other["peak_mib"]
                    row["ratio"] = mine["pairs_per_s"] / other["pairs_per_s"]
                    row["max_abs_diff_vs_bert_score"] = max_diff(mine["scores"], other["scores"])
                else:
                    row["max_abs_drift_vs_float32"] = max_diff(mine["scores"], reference[(name, corpus)])
                rows.append(row)
                print(json.dumps(row), flush=True)
            del ours
    return rows


def ot_section(model_dir: Path, cands: list[str], refs: list[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    """moverscore_v2 against the moverscore-v2 preset (wmd) and its Sinkhorn variant, idf weights."""
    sys.path.insert(0, str(REPO / "tests"))
    from moverscore_ref import load_moverscore_v2

    from alignscore.aligners.optimal import Sinkhorn
    from alignscore.encoders.huggingface import HFEncoder
    from alignscore import moverscore_v2

    ms = load_moverscore_v2(str(model_dir))
    ms.model.to(args.device)

    def theirs() -> torch.Tensor:
        idf_r, idf_c = ms.get_idf_dict(refs), ms.get_idf_dict(cands)
        return torch.tensor(ms.word_mover_score(refs, cands, idf_r, idf_c, stop_words=[], n_gram=1,
                                                remove_subwords=True, device=args.device), dtype=torch.float64)

    rows = []
    t_theirs, ref_scores = timed(theirs)
    rows.append({"side": f"moverscore_v2 (pyemd; model on {args.device})", "pairs_per_s": len(cands) / t_theirs})
    for label, overrides in (("alignscore wmd (exact, CPU solver)", {}),
                             (f"alignscore sinkhorn ({args.device}, float64, reg 0.02)",
                              {"aligner": Sinkhorn(cost="euclidean", score_form="1-d")}),
                             (f"alignscore sinkhorn ({args.device}, float32, reg 0.02)",
                              {"aligner": Sinkhorn(cost="euclidean", score_form="1-d", sinkhorn_dtype="float32")})):
        scorer = moverscore_v2(encoder=HFEncoder(str(model_dir), device_name=args.device), **overrides)
        scorer.score(cands[:8], refs[:8])
        mib, (seconds, out) = peak_memory(lambda: timed(lambda: scorer.score(cands, refs)))
        diff = float((out["score"].double() - ref_scores).abs().max())
        rows.append({"side": label, "pairs_per_s": len(cands) / seconds, "peak_mib": mib,
                     "ratio": t_theirs / seconds, "max_abs_diff_vs_moverscore_v2": diff})
        print(json.dumps(rows[-1]), flush=True)
    return rows


# -- output -------------------------------------------------------------------------------------
def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1e-2 or not math.isfinite(value) else f"{value:,.1f}"
    return str(value)


def markdown(results: dict[str, Any]) -> str:
    dry = ", DRY RUN on CPU: not a measurement" if results["dry_run"] else ""
    lines = [f"# GPU benchmark ({results['device']}{dry})",
             "", f"torch {results['torch']}, transformers {results['transformers']}; pairs/s: median of "
             f"{results['repeats']} runs (WMT16) or one run (large corpus), after a warm-up on 8 pairs; peak "
             "memory of the first run.", ""]
    greedy = results.get("greedy", []) + results.get("precision", [])
    if greedy:
        lines += ["| model | dtype | corpus | alignscore pairs/s | bert_score pairs/s | ratio "
                  "| peak MiB (ours / theirs) | max abs diff (vs bert_score / vs float32) "
                  "| tokenize / encode / align s | host copies s (n) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in greedy:
            st, hc = r["stages_s"], r["host_copies"]
            diff = r.get("max_abs_diff_vs_bert_score", r.get("max_abs_drift_vs_float32"))
            lines.append(f"| {r['model']} (layer {r['layer']}) | {r['dtype']} | {r['corpus']} | "
                         f"{fmt(r['ours_pairs_per_s'])} | {fmt(r.get('bert_score_pairs_per_s'))} | "
                         f"{fmt(r.get('ratio'))} | {fmt(r['ours_peak_mib'])} / {fmt(r.get('bert_score_peak_mib'))} | "
                         f"{fmt(diff)} | {st['tokenize']:.2f} / {st['encode']:.2f} / {st['align']:.2f} | "
                         f"{fmt(hc['seconds'])} ({fmt(hc['count'])}) |")
        lines.append("")
    if results.get("ot"):
        lines += ["| OT (all-MiniLM-L6-v2 architecture, idf) | pairs/s | ratio | peak MiB "
                  "| max abs diff vs moverscore_v2 |",
                  "|---|---|---|---|---|"]
        for r in results["ot"]:
            lines.append(f"| {r['side']} | {fmt(r['pairs_per_s'])} | {fmt(r.get('ratio'))} | {fmt(r.get('peak_mib'))} "
                         f"| {fmt(r.get('max_abs_diff_vs_moverscore_v2'))} |")
    return "\n".join(lines) + "\n"


def write(out: Path, results: dict[str, Any]) -> None:
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    (out / "results.md").write_text(markdown(results), encoding="utf-8")


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--assets", type=Path, default=REPO / ".gpu", help="what gpu_assets.py prepared")
    ap.add_argument("--out", type=Path, required=True, help="folder for results.json and results.md")
    ap.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated, of: {', '.join(SECTIONS)}")
    ap.add_argument("--models", default=",".join(LAYERS), help="comma-separated, of: " + ", ".join(LAYERS))
    ap.add_argument("--large", type=int, default=100_000, help="pairs of the large corpus (0: none)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--dry-run", action="store_true", help="the same code paths on the CPU, tiny sizes")
    args = ap.parse_args(argv)
    sections = [s for s in args.sections.split(",") if s]
    models = [m for m in args.models.split(",") if m]
    if set(sections) - set(SECTIONS) or set(models) - set(LAYERS):
        fail(f"unknown section or model in {args.sections!r} / {args.models!r}")
    args.sections, args.models = sections, models
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    if not args.dry_run and not torch.cuda.is_available():
        fail("no CUDA device: this benchmark runs on a GPU (use --dry-run to check it on the CPU)")
    missing = [p for p in ["data/wmt16-da-seg", *(f"models/{m}/config.json" for m in args.models)]
               if not (args.assets / p).exists()]
    if missing:
        fail(f"{args.assets} lacks {missing[0]}: prepare it with benchmarks/gpu_assets.py")
    args.device = "cpu" if args.dry_run else "cuda"
    if args.dry_run:
        args.repeats, args.large = 1, min(args.large, 24)
    args.out.mkdir(parents=True, exist_ok=True)
    import transformers

    results: dict[str, Any] = {
        "device": "cpu" if args.dry_run else torch.cuda.get_device_name(), "dry_run": args.dry_run,
        "torch": torch.__version__, "transformers": transformers.__version__, "repeats": args.repeats}
    cands, refs = wmt16_pairs(args.assets / "data" / "wmt16-da-seg", 4 if args.dry_run else None)
    corpora = {"wmt16": (cands, refs)}
    if args.large:
        corpora["large"] = large_corpus(cands, refs, args.large)
    results["pairs"] = {k: len(v[0]) for k, v in corpora.items()}
    with tempfile.TemporaryDirectory() as tmp:
        reference: dict[tuple[str, str], dict[str, torch.Tensor]] = {}
        models = {m: build_model(args.assets / "models" / m, Path(tmp) / m, args.dry_run, args.device)
                  for m in args.models}
        if "greedy" in args.sections:
            results["greedy"] = greedy_section(models, corpora, args, ("float32",), reference)
            write(args.out, results)
        if "precision" in args.sections:
            dtypes = ("float16", "bfloat16") if not args.dry_run else ("bfloat16",)
            results["precision"] = greedy_section(models, corpora, args, dtypes, reference)
            write(args.out, results)
        if "ot" in args.sections:
            ot_model = models.get("all-MiniLM-L6-v2") or next(iter(models.values()))
            results["ot"] = ot_section(ot_model, cands, refs, args)
        write(args.out, results)
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main(sys.argv[1:]))
