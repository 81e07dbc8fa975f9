"""Which float32 forward pass is fastest on this CPU, and how close each comes to the CPU's GEMM rate.

    python benchmarks/forward_strategies.py --model all-MiniLM-L6-v2 --layer 4 [--texts 3000] [--rounds 3]
    python benchmarks/forward_strategies.py --model benchmarks/models/all-mpnet-base-v2 --layer 9

Encodes the unique WMT16 texts (references and candidates of every language pair, the first
``--texts`` of them) in the engine's batches (64 texts, longest first) with each strategy, in
alternating rounds after a warm-up, and reports per strategy the median seconds, the largest
difference of a real token's state from PyTorch's, and the efficiency: counted FLOPs / seconds /
the GEMM rate measured in the same run (fp32 ``torch.matmul`` of 2048 x 2048 matrices).

FLOPs are counted on real tokens only (padding is waste), per token and layer up to the top layer:
``2 * (4 H^2 + 2 H I)`` for the projections and the feed-forward layer (H hidden, I intermediate
size) plus ``4 T H`` for the attention products of a text of T tokens. Strategies:

- ``torch``: PyTorch eager (the torch backend, the default).
- ``torchscript``: a TorchScript trace of the same module: what tracing alone buys over eager mode.
- ``onnx``: ONNX Runtime on the graph exported here (``torch.onnx.export`` of the same module)
  with every graph optimisation; needs onnxruntime and onnx.
- ``onnx-fused``: the exported graph through ONNX Runtime's transformer optimiser (fused
  attention, skip-layer-norm, bias-GELU), then as ``onnx``.
- ``openvino``: OpenVINO's CPU plugin on the exported graph, f32 inference precision.
- ``torch-frozen``: the TorchScript trace frozen (weights as constants) and passed through
  ``torch.jit.optimize_for_inference`` (oneDNN weight layouts where it applies).
- ``onednn-graph``: the frozen trace run with TorchScript's oneDNN Graph fuser on
  (``torch.jit.enable_onednn_fusion``: linear + GELU, matmul + softmax and the like fused).
- ``torch-compile`` (``--compile``, minutes of compilation): ``torch.compile`` with Inductor,
  dynamic shapes, frozen weights and prepacked GEMM weights.
- ``torch-int8`` (approximate): alignscore's ``dtype="int8"`` (PyTorch dynamic quantisation of
  the linear layers, int8 weights per output channel).
- ``onnx-int8`` (approximate): the exported graph with weights quantised to int8 (dynamic quantisation).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alignscore import HFEncoder  # noqa: E402
from alignscore.encoders.forward import layer_states  # noqa: E402
from alignscore.runtime import plan_batches  # noqa: E402
from alignscore.tokens import TokenTable, pad_gather  # noqa: E402
from alignscore.evaluation.wmt import load_daseg  # noqa: E402

DATA = Path(os.environ.get("ALIGNSCORE_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def gemm_rate(n: int = 2048, repeats: int = 10) -> float:
    """GFLOP/s of the best of ``repeats`` float32 ``n x n`` matmuls."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.matmul(a, b)
    best = min(_time(lambda: torch.matmul(a, b)) for _ in range(repeats))
    return 2 * n ** 3 / best / 1e9


def _time(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def batches(enc: HFEncoder, texts: list[str], size: int = 64) -> list[tuple[torch.Tensor, torch.Tensor]]:
    table = TokenTable.from_tokenized(enc.tokenize(texts))
    order = torch.argsort(table.lengths, descending=True, stable=True)
    out = []
    for lo, hi in plan_batches(table.lengths[order], size):
        index, valid = pad_gather(table.offsets, order[lo:hi])
        out.append((torch.where(valid, table.ids[index], enc.pad_id), valid.long()))
    return out


def flops(enc: HFEncoder, work: list[tuple[torch.Tensor, torch.Tensor]], top: int) -> float:
    cfg = enc.load_model().config
    h, i = cfg.hidden_size, cfg.intermediate_size
    total = 0.0
    for _, mask in work:
        lengths = mask.sum(1).double()
        total += top * float((2 * (4 * h * h + 2 * h * i) * lengths + 4 * h * lengths ** 2).sum())
    return total


def strategies(enc: HFEncoder, layers: list[int]) -> dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]:
    out: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
        "torch": lambda ids, mask: enc.forward(ids, mask, layers)}
    int8_enc = HFEncoder(enc.model, device_name="cpu", dtype="int8")
    out["torch-int8"] = lambda ids, mask: int8_enc.forward(ids, mask, layers)
    out.update(torchscript_strategies(enc, layers))
    threads = torch.get_num_threads()
    try:
        import onnxruntime as ort

        path = Path(tempfile.mkdtemp(prefix="forward-strategies-")) / "model.onnx"
        export_onnx(enc, layers, path)
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = threads
        so.enable_cpu_mem_arena = False
        plain = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        out["onnx"] = lambda ids, mask: torch.from_numpy(
            plain.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})[0])
        from onnxruntime.transformers.optimizer import optimize_model

        cfg = enc.load_model().config
        fused_path = path.with_suffix(".fused.onnx")
        opt = optimize_model(str(path), model_type="bert", num_heads=cfg.num_attention_heads,
                             hidden_size=cfg.hidden_size, opt_level=1, use_gpu=False)
        print(f"[onnx-fused] fused operators: {json.dumps(opt.get_fused_operator_statistics())}", file=sys.stderr)
        opt.save_model_to_file(str(fused_path))
        sess = ort.InferenceSession(str(fused_path), so, providers=["CPUExecutionProvider"])
        out["onnx-fused"] = lambda ids, mask: torch.from_numpy(
            sess.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})[0])
        from onnxruntime.quantization import QuantType, quantize_dynamic

        int8_path = path.with_suffix(".int8.onnx")
        quantize_dynamic(str(path), str(int8_path), weight_type=QuantType.QInt8)
        sess8 = ort.InferenceSession(str(int8_path), so, providers=["CPUExecutionProvider"])
        out["onnx-int8"] = lambda ids, mask: torch.from_numpy(
            sess8.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})[0])
    except Exception as exc:  # noqa: BLE001 - report and go on
        print(f"[onnx-fused] unavailable: {exc}", file=sys.stderr)
    try:
        import openvino as ov

        core = ov.Core()
        compiled = core.compile_model(core.read_model(str(path)), "CPU",
                                      {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
                                       "INFERENCE_PRECISION_HINT": "f32"})
        request = compiled.create_infer_request()
        out["openvino"] = lambda ids, mask: torch.from_numpy(
            request.infer({"input_ids": ids.numpy(), "attention_mask": mask.numpy()})[0].copy())
    except Exception as exc:  # noqa: BLE001
        print(f"[openvino] unavailable: {exc}", file=sys.stderr)
    return out


PROBE_TEXTS = ("A short probe.", "A somewhat longer probe sentence, with punctuation and rare words: zygote!",
               "Hello world")


class LayersModule(torch.nn.Module):
    """``(input_ids, attention_mask) -> [L, B, T, D]``: what a traced or exported graph computes."""

    def __init__(self, model: torch.nn.Module, layers: list[int]) -> None:
        super().__init__()
        self.model = model
        self.layers = list(layers)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return layer_states(self.model, input_ids, attention_mask, self.layers)


def probe_batch(enc: HFEncoder) -> dict[str, torch.Tensor]:
    """The probe texts, tokenized and right-padded (their lengths differ)."""
    return enc.load_tokenizer()(list(PROBE_TEXTS), padding=True, return_tensors="pt")


def export_onnx(enc: HFEncoder, layers: list[int], path: Path) -> None:
    """The module exported to ONNX with eager attention and dynamic batch and sequence axes."""
    model = enc.load_model()
    model.set_attn_implementation("eager")
    probe = probe_batch(enc)
    with torch.no_grad():
        torch.onnx.export(LayersModule(model, layers).eval(), (probe["input_ids"], probe["attention_mask"]),
                          str(path), dynamo=False, input_names=["input_ids", "attention_mask"],
                          output_names=["states"], opset_version=17, do_constant_folding=True,
                          dynamic_axes={"input_ids": {0: "batch", 1: "tokens"},
                                        "attention_mask": {0: "batch", 1: "tokens"}, "states": {1: "batch", 2: "tokens"}})
    model.set_attn_implementation("sdpa")


def torchscript_strategies(enc: HFEncoder, layers: list[int]) -> dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]:
    """``torchscript``, ``torch-frozen`` and ``onednn-graph`` (see the module's docstring)."""
    probe = probe_batch(enc)
    with torch.no_grad():
        traced = torch.jit.trace(LayersModule(enc.load_model(), layers).eval(),
                                 (probe["input_ids"], probe["attention_mask"]), check_trace=False)
    frozen = torch.jit.optimize_for_inference(torch.jit.freeze(traced.eval()))
    graph = torch.jit.freeze(traced.eval())

    def run_traced(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            return traced(ids, mask)

    def run_frozen(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            return frozen(ids, mask)

    def run_onednn(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        torch.jit.enable_onednn_fusion(True)
        try:
            with torch.no_grad():
                return graph(ids, mask)
        finally:
            torch.jit.enable_onednn_fusion(False)

    return {"torchscript": run_traced, "torch-frozen": run_frozen, "onednn-graph": run_onednn}


def compiled_strategy(enc: HFEncoder, layers: list[int]) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """``torch-compile`` (see the module's docstring)."""
    import torch._inductor.config as inductor
    inductor.freezing = True
    inductor.cpp.weight_prepack = True
    fn = torch.compile(LayersModule(enc.load_model(), layers).eval(), dynamic=True)

    def run(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return fn(ids, mask)
    return run


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="all-MiniLM-L6-v2")
    p.add_argument("--layer", type=int, required=True)
    p.add_argument("--texts", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64, help="texts per batch (the engine's default: 64)")
    p.add_argument("--only", nargs="*", default=None, help="strategies to run (default: all)")
    p.add_argument("--compile", action="store_true", help="also torch.compile (Inductor; minutes to compile)")
    args = p.parse_args()
    enc = HFEncoder(args.model, device_name="cpu")
    texts = list(dict.fromkeys(t.strip() for lp in load_daseg(DATA / "wmt16-da-seg")
                               for t in lp.references + lp.candidates))[:args.texts]
    work = batches(enc, texts, args.batch_size)
    layers = [args.layer]
    counted = flops(enc, work, args.layer)
    runs = strategies(enc, layers)
    if args.compile:
        runs["torch-compile"] = compiled_strategy(enc, layers)
    if args.only:
        runs = {k: v for k, v in runs.items() if k in args.only}
    reference = [enc.forward(ids, mask, layers) for ids, mask in work[:3]]
    times: dict[str, list[float]] = {name: [] for name in runs}
    diffs = {}
    for name, fn in runs.items():  # warm-up (TorchScript profiles its first runs), and the check against PyTorch
        got = [fn(ids, mask) for _ in range(3) for ids, mask in work[:3]][-3:]
        diffs[name] = max(float(((g - r).abs() * m.bool().unsqueeze(-1)).max())
                          for g, r, (_, m) in zip(got, reference, work[:3]))
    rates = [gemm_rate()]
    for _ in range(args.rounds):
        for name, fn in runs.items():
            times[name].append(_time(lambda: [fn(ids, mask) for ids, mask in work]))
        rates.append(gemm_rate())
    rate = statistics.median(rates)
    tokens = sum(int(m.sum()) for _, m in work)
    print(f"model {args.model} layer {args.layer}, batches of {args.batch_size}: {len(texts)} texts, {tokens} tokens, {counted / 1e12:.3f} TFLOP "
          f"counted; GEMM rate {rate:.1f} GFLOP/s (median of {len(rates)}: {min(rates):.1f}-{max(rates):.1f}); "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for name in runs:
        t = statistics.median(times[name])
        print(f"  {name:12s} {t:7.2f} s (rounds {', '.join(f'{x:.2f}' for x in times[name])})  "
              f"{counted / t / 1e9:6.1f} GFLOP/s = {counted / t / 1e9 / rate:5.1%} of GEMM   "
              f"max |diff| vs torch {diffs[name]:.1e}")


if __name__ == "__main__":
    main()
