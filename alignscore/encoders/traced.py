"""The default CPU forward pass: PyTorch, through a TorchScript trace of the model kept on disk.

The forward pass is PyTorch's own (the same kernels, the same numbers as eager mode); what the
trace saves is start-up. Building a transformers model imports most of transformers and parts of
torch that a forward pass never uses (seconds per process), where loading a saved trace takes a
tenth of a second and needs neither transformers nor the model's Python code.

The first run for a model and layer set loads the model eagerly, traces
:class:`~alignscore.encoders.exports.LayersModule` on the padded probe batch (every data-dependent
branch, such as the attention mask, is taken as for a padded batch), and checks the trace against
eager mode (:func:`~alignscore.encoders.exports.export_error`: it must agree to ``tolerance``,
relative to the largest state, on a batch of another size and on an unpadded one) before writing
it into the export folder. A model that cannot be traced, or whose trace fails the check, is run
eagerly, and a marker file says so to later runs. A loaded trace is first run on a few tiny inputs
(TorchScript's profiling runs), so that real batches run its optimised graph, with the kernel
fusers off (PyTorch's own kernels, as in eager mode).
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch

from .exports import LayersModule, default_export_dir, export_error, graph_path, probe_batch, write_atomically
from .forward import ForwardStrategy, ModelSource, TorchForward

REFUSED = ".refused"


@dataclass
class TracedForward(ForwardStrategy):
    """PyTorch on the CPU in float32 through a saved trace per layer set (see the module's
    docstring); :class:`~alignscore.encoders.forward.TorchForward` where there is none.

    Args:
        export_dir: where traces are kept (see :func:`~alignscore.encoders.exports.default_export_dir`).
        tolerance: the largest relative difference to eager mode a new trace may show.
    """

    export_dir: Path = field(default_factory=default_export_dir)
    tolerance: float = 1e-5
    _modules: dict[tuple[int, ...], Any] = field(default_factory=dict, init=False, repr=False)
    _eager: TorchForward = field(default_factory=TorchForward, init=False, repr=False)

    def path(self, fingerprint: str, layers: Sequence[int]) -> Path:
        return graph_path(self.export_dir, fingerprint, layers, ".pt")

    def states(self, source: ModelSource, input_ids: torch.Tensor, attention_mask: torch.Tensor,
               layers: Sequence[int]) -> torch.Tensor:
        module = self.module(source, layers)
        if module is None:
            return self._eager.states(source, input_ids, attention_mask, layers)
        return _run(module, input_ids.cpu().long(), attention_mask.cpu().long())  # the dtypes it was traced with

    def module(self, source: ModelSource, layers: Sequence[int]) -> Any:
        """The loaded trace for ``layers``, made (and checked) when not on disk; None: run eagerly."""
        key = tuple(layers)
        if key not in self._modules:
            module = self._load_or_trace(source, key)
            if module is not None:
                _warm_up(module)
            self._modules[key] = module
        return self._modules[key]

    def _load_or_trace(self, source: ModelSource, layers: tuple[int, ...]) -> Any:
        path = self.path(source.fingerprint(), layers)
        if path.with_name(path.name + REFUSED).exists():
            return None
        if path.is_file():
            try:
                return torch.jit.load(str(path), map_location="cpu").eval()
            except Exception:  # noqa: BLE001 - a damaged or foreign file: trace again
                pass
        model = source.load_model()
        probe = probe_batch(source)
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")  # the tracer's warnings about Python values it records
                traced = torch.jit.trace(LayersModule(model, layers).eval(),
                                         (probe["input_ids"], probe["attention_mask"]), check_trace=False)

            ok = export_error(lambda ids, mask: _run(traced, ids, mask), model, layers, probe) <= self.tolerance
        except Exception:  # noqa: BLE001 - a model the tracer cannot follow runs eagerly
            traced, ok = None, False
        try:
            if ok:
                write_atomically(path, lambda tmp: torch.jit.save(traced, tmp))
            else:
                write_atomically(path.with_name(path.name + REFUSED), lambda tmp: Path(tmp).write_text(""))
        except OSError:  # a folder that cannot be written: this process still uses what it made
            pass
        return traced if ok else None


def _warm_up(module: Any) -> None:
    """Run the trace on three one-text inputs of different lengths, so that TorchScript's profiling
    runs (which keep every intermediate tensor of the pass alive) happen on tiny inputs and real
    batches run the optimised graph, which frees each tensor after its last use: peak memory
    otherwise grows with the model's depth (measured, benchmarks/RESULTS.md)."""
    for length in (3, 5, 7):
        _run(module, torch.zeros(1, length, dtype=torch.long), torch.ones(1, length, dtype=torch.long))


def _run(module: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The trace on a batch, with TorchScript's kernel fusers off: the optimised graph then calls
    PyTorch's own (multi-threaded) kernels, as eager mode does; the CPU fuser's kernels were
    slower than eager mode (benchmarks/RESULTS.md)."""
    with torch.inference_mode(), _cpu_fuser_off():
        return module(input_ids, attention_mask)


@contextlib.contextmanager
def _cpu_fuser_off() -> Iterator[None]:
    """TorchScript's CPU kernel fuser (NNC) off for the block, restored after. Not
    ``torch.jit.fuser("none")``: that also sets the retired nvfuser's flag, and torch prints a
    warning line on stderr each time."""
    get, set_ = (getattr(torch._C, name, None) for name in ("_jit_texpr_fuser_enabled", "_jit_set_texpr_fuser_enabled"))
    if get is None or set_ is None:  # a torch without it: nothing to turn off
        yield
        return
    before = get()
    set_(False)
    try:
        yield
    finally:
        set_(before)
