"""The ONNX Runtime backend of :class:`~alignscore.encoders.huggingface.HFEncoder` (``--backend onnx``).

The model is exported once, cut to the highest layer asked for and with one output per layer
asked for (:class:`LayersModule`), with dynamic batch and sequence axes; the graph is kept in the
artifact store (:mod:`alignscore.encoders.artifacts`, ``export_dir``) under the model's
fingerprint and the layers, and read from there on later runs when its checksum still matches (a
damaged graph, or another one put in its place, is exported again). ONNX Runtime then runs it
with every graph optimisation on. Before a new export is used it is checked against the PyTorch
forward pass (:func:`export_error`): every hidden state of a real token must agree to
``tolerance`` (relative to the largest state), on batches of other sizes than the one it was
made from, padded and not; otherwise the export is refused with an error.

Needs ``pip install alignscore[onnx]`` (onnxruntime and onnx).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from ..errors import ConfigError, ModelLoadError
from .artifacts import ArtifactStore, default_export_dir
from .forward import ForwardStrategy, ModelSource, layer_states

PROBE_TEXTS = (
    "A short probe.",
    "A somewhat longer probe sentence, with punctuation, numbers (1,234.5) and rare words: zygote!",
    "Hello world",
)

States = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class LayersModule(torch.nn.Module):
    """``(input_ids, attention_mask) -> [L, B, T, D]``: what an exported graph computes."""

    def __init__(self, model: torch.nn.Module, layers: Sequence[int]) -> None:
        super().__init__()
        self.model = model
        self.layers = list(layers)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return layer_states(self.model, input_ids, attention_mask, self.layers)


def probe_batch(source: ModelSource) -> dict[str, torch.Tensor]:
    """The probe texts, tokenized and right-padded (their lengths differ)."""
    return source.load_tokenizer()(list(PROBE_TEXTS), padding=True, return_tensors="pt")


def export_error(run: States, model: Any, layers: Sequence[int], probe: dict[str, torch.Tensor]) -> float:
    """The largest difference between ``run`` and the eager forward pass over the hidden states
    of real tokens, relative to the largest state (at least 1), on three batches: the padded
    probe, its first two texts cut by one position (another batch and sequence size), and its
    first text alone (no padding at all)."""
    ids, mask = probe["input_ids"], probe["attention_mask"]
    n0 = int(mask[0].sum())
    worst = 0.0
    for i, m in ((ids, mask), (ids[:2, :-1], mask[:2, :-1]), (ids[:1, :n0], mask[:1, :n0])):
        device = next(model.parameters()).device
        with torch.inference_mode():
            want = layer_states(model, i.to(device), m.to(device), layers).float().cpu()
            got = run(i, m).float().cpu()
        valid = m.bool().unsqueeze(0).unsqueeze(-1)
        err = float(((got - want).abs() * valid).max())
        worst = max(worst, err / max(float((want.abs() * valid).max()), 1.0))
    return worst


def _require_onnxruntime() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise ConfigError("backend 'onnx' needs onnxruntime: pip install 'alignscore[onnx]'") from None
    return onnxruntime


@dataclass
class OnnxForward(ForwardStrategy):
    """Runs ``layers`` of one model with ONNX Runtime; one session per layer set. The PyTorch
    model is loaded only to export (and check) a graph that is not on disk yet.

    Args:
        export_dir: the artifact store's folder (see :func:`default_export_dir`).
        threads: ONNX Runtime intra-op threads; default: ``torch.get_num_threads()``.
        tolerance: the largest relative difference to PyTorch a new export may show.
    """

    export_dir: Path = field(default_factory=default_export_dir)
    threads: int | None = None
    tolerance: float = 1e-4
    _sessions: dict[tuple[int, ...], Any] = field(default_factory=dict, init=False, repr=False)

    def path(self, fingerprint: str, layers: Sequence[int]) -> Path:
        return ArtifactStore(self.export_dir).path(fingerprint, layers, ".onnx")

    def states(self, source: ModelSource, input_ids: torch.Tensor, attention_mask: torch.Tensor,
               layers: Sequence[int]) -> torch.Tensor:
        return self.run(self.session(source, layers), input_ids, attention_mask)

    def output_device(self, source: ModelSource) -> torch.device:
        return torch.device("cpu")  # ONNX Runtime returns its outputs on the CPU

    def session(self, source: ModelSource, layers: Sequence[int]) -> Any:
        """The session for ``layers``. A graph the store does not hold (or holds changed) is
        exported from the source's PyTorch model and checked against it; one it holds was checked
        when it was written."""
        key = tuple(layers)
        if key in self._sessions:
            return self._sessions[key]
        ort = _require_onnxruntime()
        load_model, device = source.load_model, source.model_device
        path = self.path(source.fingerprint(), layers)
        probe = probe_batch(source)
        fresh = not ArtifactStore(self.export_dir).verified(path)
        if fresh:
            self._export(load_model(), layers, probe, path)
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.intra_op_num_threads = self.threads or torch.get_num_threads()
        opts.log_severity_level = 3
        opts.enable_cpu_mem_arena = False  # same speed here, 60-100 MiB less peak memory (MiniLM, WMT16)
        providers = ["CPUExecutionProvider"]
        if device.type == "cuda":
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                raise ConfigError("backend 'onnx' on CUDA needs onnxruntime-gpu (CUDAExecutionProvider)")
            providers.insert(0, ("CUDAExecutionProvider", {"device_id": device.index or 0}))
        try:
            sess = ort.InferenceSession(str(path), opts, providers=providers)
        except Exception as exc:  # an unreadable file (a foreign or damaged one): export again
            if fresh:
                raise ModelLoadError(f"ONNX Runtime cannot load the exported model: {exc}") from None
            self._export(load_model(), layers, probe, path)
            sess, fresh = ort.InferenceSession(str(path), opts, providers=providers), True
        if fresh:
            self._check(sess, load_model(), layers, probe, path)
        self._sessions[key] = sess
        return sess

    def run(self, sess: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``[L, B, T, D]`` float32 hidden states on the CPU."""
        (out,) = sess.run(None, {"input_ids": input_ids.cpu().numpy(),
                                 "attention_mask": attention_mask.cpu().numpy()})
        return torch.from_numpy(out)

    # -- export and check ---------------------------------------------------------------------
    def _export(self, model: Any, layers: Sequence[int], probe: dict[str, torch.Tensor], path: Path) -> None:
        """Export with eager attention (explicit masks: nothing about the probe's padding is
        baked into the graph), written atomically."""
        module = LayersModule(model, layers).cpu().eval()  # the exporter restores this mode
        previous = getattr(model.config, "_attn_implementation", None)

        def write(tmp: str) -> None:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    module, (probe["input_ids"], probe["attention_mask"]), tmp, dynamo=False,
                    input_names=["input_ids", "attention_mask"], output_names=["states"],
                    dynamic_axes={"input_ids": {0: "batch", 1: "tokens"},
                                  "attention_mask": {0: "batch", 1: "tokens"},
                                  "states": {1: "batch", 2: "tokens"}},
                    opset_version=17, do_constant_folding=True)

        try:
            if hasattr(model, "set_attn_implementation"):
                model.set_attn_implementation("eager")
            ArtifactStore(self.export_dir).write(path, write)
        except Exception as exc:
            raise ModelLoadError(f"cannot export the model to ONNX: {str(exc).splitlines()[0]}") from None
        finally:
            model.eval()
            if previous is not None and hasattr(model, "set_attn_implementation"):
                model.set_attn_implementation(previous)

    def _check(self, sess: Any, model: Any, layers: Sequence[int], probe: dict[str, torch.Tensor],
               path: Path) -> None:
        """Raise (and delete the graph) if it does not reproduce PyTorch on the probe batches."""
        err = export_error(lambda ids, mask: self.run(sess, ids, mask), model, layers, probe)
        if not err <= self.tolerance:
            path.unlink(missing_ok=True)  # never trusted later without a check
            raise ModelLoadError(
                f"the ONNX export of this model does not reproduce PyTorch (max relative difference "
                f"{err:.2e}); use the torch backend")
