"""The forward pass: an encoder's hidden states of the layers asked for, from token ids, in
PyTorch eager mode (a TorchScript trace and ONNX Runtime were measured no faster:
benchmarks/RESULTS.md), running only the blocks up to the highest layer."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

import torch


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
