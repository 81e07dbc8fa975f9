"""Forward strategies: how an encoder's hidden states are computed from token ids.

A strategy is one way of running the same model; everything else (tokenization, layers, devices,
caching) stays the encoder's. PyTorch eager mode is the one strategy here: a TorchScript trace
and ONNX Runtime were measured no faster (benchmarks/RESULTS.md). Another strategy must return
the same numbers to float tolerance.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from typing import Any, Iterator, Protocol, Sequence

import torch


class ModelSource(Protocol):
    """What a strategy may ask of its encoder: the loaded PyTorch model and where the states
    should come out."""

    def load_model(self) -> Any: ...

    @property
    def model_device(self) -> torch.device: ...


class ForwardStrategy(ABC):
    """Computes ``[len(layers), B, T, D]`` float32 hidden states of a right-padded batch; layer k
    is the output of the k-th block (0: embeddings), and only the blocks up to ``max(layers)`` run."""

    @abstractmethod
    def states(self, source: ModelSource, input_ids: torch.Tensor, attention_mask: torch.Tensor,
               layers: Sequence[int]) -> torch.Tensor:
        """The hidden states of ``layers`` (on :meth:`output_device`)."""

    def output_device(self, source: ModelSource) -> torch.device:
        """Where :meth:`states` puts its result."""
        return source.model_device


class TorchForward(ForwardStrategy):
    """PyTorch eager mode, in the model's own dtype."""

    def states(self, source: ModelSource, input_ids: torch.Tensor, attention_mask: torch.Tensor,
               layers: Sequence[int]) -> torch.Tensor:
        model = source.load_model()
        device = source.model_device
        with torch.inference_mode():
            return layer_states(model, input_ids.to(device), attention_mask.to(device), layers)


def layer_states(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 layers: Sequence[int]) -> torch.Tensor:
    """``[len(layers), B, T, D]`` float32: layer k is the output of the model's k-th block,
    running only the blocks up to ``max(layers)`` (the final layer norm of a T5-like stack is
    applied to every layer, as a k-block encoder would). Layer 0 alone still runs the first
    block: a stack cut to no block returns no hidden states at all."""
    with _first_blocks(model, max(1, *layers)) as final_norm:
        out = model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True,
                    return_dict=True)
        hidden = out.hidden_states
        states = []
        for k in layers:
            h = hidden[k]
            if final_norm is not None and k < len(hidden) - 1:
                h = final_norm(h)
            states.append(h.float())
    return torch.stack(states)


@contextlib.contextmanager
def _first_blocks(model: Any, top: int) -> Iterator[Any]:
    """Temporarily keep only the first ``top`` blocks of the model's stack, so blocks above the
    highest layer asked for never run. Yields the stack's final layer norm, if it has one.

    transformers >= 5 collects hidden states with forward hooks that it installs on the first call:
    they are installed here on the whole stack first, or a later call that needs more blocks than
    the first one ran would find no hooks on the upper blocks."""
    _install_output_hooks(model)
    for path in ("encoder.layer", "transformer.layer", "layer", "encoder.block", "block", "layers"):
        owner, attr = model, path
        if "." in path:
            head, attr = path.split(".")
            owner = getattr(model, head, None)
        blocks = getattr(owner, attr, None) if owner is not None else None
        if isinstance(blocks, torch.nn.ModuleList):
            final_norm = getattr(owner, "final_layer_norm", None)
            setattr(owner, attr, blocks[:top])
            try:
                yield final_norm
            finally:
                setattr(owner, attr, blocks)
            return
    yield None  # unknown stack: run it whole; hidden_states[k] is still layer k


def _install_output_hooks(model: Any) -> None:
    try:
        from transformers.utils.output_capturing import maybe_install_capturing_hooks
    except ImportError:  # transformers < 5 returns hidden states without hooks
        return
    maybe_install_capturing_hooks(model)  # what the model's own forward does on its first call
