"""Distil a static model from a Hugging Face model, as model2vec describes it, saved in model2vec's format.

The steps (model2vec's documentation: "passing a vocabulary through a sentence transformer
model, then reducing the dimensionality of the resulting embeddings using PCA, and finally
weighting the embeddings using zipf weighting"):

1. every token ``t`` of the tokenizer's vocabulary goes through the model on its own, between
   the tokenizer's special tokens (``[CLS] t [SEP]``); its vector is the mean of the last layer's
   output over those positions;
2. PCA to ``dims`` components (centred, by SVD; each component's sign chosen so that the token
   with the largest coordinate on it, in absolute value, has a positive one);
3. SIF weighting with Zipf's law standing in for the unknown token frequencies: the token of rank
   ``r`` (ids in order, from 1) gets ``p_r = (1/(r+1)) / sum_k 1/(k+1)`` and its vector is
   scaled by ``a / (a + p_r)``, ``a = sif`` (1e-4).

Tokens named ``[unusedN]`` (BERT's placeholders, never produced from text) take no part in the
PCA fit nor in the ranks, as in model2vec; they keep a row (projected, weighted as the last rank),
so that the saved tokenizer is the model's own, unchanged.

The output (``model.safetensors`` with ``embeddings``, ``tokenizer.json``, ``config.json``) loads
with ``model2vec.StaticModel.from_pretrained`` and with ``--model DIR``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import ConfigError, InputError
from ..textio import check_output_folder
from .huggingface import HFEncoder, encode_whole

SIF_COEFFICIENT = 1e-4
PLACEHOLDER = re.compile(r"\[unused\d+\]")


def token_states(encoder: HFEncoder, batch_size: int = 512, progress: bool = False) -> np.ndarray:
    """``[V, D]``: each vocabulary token's mean last-layer output, the token alone between the
    tokenizer's special tokens (float64)."""
    tok = encoder.load_tokenizer()
    (probe,) = encode_whole(tok.backend_tokenizer, ["a"])
    mask = probe.special_tokens_mask
    lead = next((k for k, m in enumerate(mask) if not m), len(mask))
    trail = next((k for k, m in enumerate(reversed(mask)) if not m), len(mask))
    prefix, suffix = probe.ids[:lead], probe.ids[len(mask) - trail:]
    vocab = len(tok)
    layer = encoder.num_layers
    out = np.empty((vocab, 0))
    rows = []
    from tqdm.auto import tqdm

    with torch.inference_mode():
        for start in tqdm(range(0, vocab, batch_size), desc=f"distilling ({encoder.name})", unit="batch",
                          disable=not progress):
            ids = torch.arange(start, min(vocab, start + batch_size)).unsqueeze(1)
            batch = torch.cat([torch.tensor([prefix] * len(ids), dtype=torch.long).reshape(len(ids), -1), ids,
                               torch.tensor([suffix] * len(ids), dtype=torch.long).reshape(len(ids), -1)], 1)
            states = encoder.forward(batch.to(encoder.model_device), torch.ones_like(batch).to(encoder.model_device),
                                     [layer])[0]
            rows.append(states.double().mean(1).cpu().numpy())
    out = np.concatenate(rows) if rows else out
    return out


def pca(x: np.ndarray, dims: int, fit: np.ndarray | None = None) -> np.ndarray:
    """``x`` projected on the first ``dims`` principal components of the rows ``fit`` selects
    (all by default), centred on their mean; each component's sign makes the largest coordinate
    (in absolute value) of those rows on it positive.

    >>> x = np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 0.1]])
    >>> pca(x, 1).round(2).ravel().tolist()
    [-2.0, -1.0, 3.0]
    """
    rows = x if fit is None else x[fit]
    mean = rows.mean(0)
    _, _, vt = np.linalg.svd(rows - mean, full_matrices=False)
    vt = vt[:dims]
    scores = (rows - mean) @ vt.T
    signs = np.sign(scores[np.abs(scores).argmax(0), np.arange(scores.shape[1])])
    return ((x - mean) @ vt.T) * signs


def sif_weights(n: int, sif: float = SIF_COEFFICIENT) -> np.ndarray:
    """``a / (a + p_r)`` for ranks ``r = 1..n`` with Zipf's ``p_r`` (see the module's docstring).

    >>> sif_weights(3, 0.5).round(3).tolist()
    [0.52, 0.619, 0.684]
    """
    inv = 1.0 / np.arange(2, n + 2)
    return sif / (sif + inv / inv.sum())


def distill(model: str, output: str | Path, dims: int | None = 256, sif: float = SIF_COEFFICIENT,
            batch_size: int = 512, device: str | None = None, progress: bool = False) -> Path:
    """Distil ``model`` (a Hugging Face hub id or directory) into a static model2vec model in
    the folder ``output`` (new, or empty; written whole or not at all). ``dims``: PCA components
    (None: as many as the model's hidden size). Returns the folder.

    Raises:
        InputError: ``output`` is ``-``, a file, a folder with files in it, or in a folder that
            does not exist (no folder above the output is created).
        ConfigError: ``dims`` or ``sif`` out of range.
        ModelLoadError: the model cannot be loaded.
    """
    out = check_output_folder(output, ())  # not '-', not a file; the folder above it exists and takes a new one
    if out.is_dir() and any(out.iterdir()):
        raise InputError("is not an empty folder: give a new (or empty) folder for the static model", str(out))
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 1):
        raise ConfigError(f"dims must be an integer >= 1, not {dims!r}")
    if not 0 < sif < 1:
        raise ConfigError(f"the SIF coefficient must lie between 0 and 1, not {sif!r}")
    encoder = HFEncoder(model, device_name=device)
    tok = encoder.load_tokenizer()
    hidden = int(getattr(encoder.config, "hidden_size", 0) or 0)
    if dims is not None and hidden and dims > hidden:
        raise ConfigError(f"dims {dims} is more than the model's {hidden} dimensions")
    states = token_states(encoder, batch_size, progress)
    vocab_tokens = tok.convert_ids_to_tokens(list(range(len(states))))
    keep = np.array([not PLACEHOLDER.fullmatch(t or "") for t in vocab_tokens])
    n_dims = dims or states.shape[1]
    if n_dims > int(keep.sum()):
        raise ConfigError(f"dims {n_dims} is more than the {int(keep.sum())} tokens of the vocabulary")
    table = pca(states, n_dims, keep)
    weights = np.full(len(table), sif_weights(int(keep.sum()) + 1, sif)[-1])
    weights[keep] = sif_weights(int(keep.sum()), sif)
    table = (table * weights[:, None]).astype(np.float32)
    config = {"model_type": "model2vec", "architectures": ["StaticModel"], "tokenizer_name": str(model),
              "apply_pca": dims, "apply_zipf": True, "sif_coefficient": sif, "hidden_dim": int(table.shape[1]),
              "seq_length": 1000000, "normalize": True, "distilled_by": "alignscore"}
    _write(out, table, tok.backend_tokenizer, config)
    return out


def _write(out: Path, table: np.ndarray, tokenizer: Any, config: dict[str, Any]) -> None:
    """The model's three files, written into a temporary folder next to ``out`` and renamed onto it."""
    from safetensors.numpy import save_file

    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        save_file({"embeddings": np.ascontiguousarray(table)}, str(tmp / "model.safetensors"))
        tokenizer.save(str(tmp / "tokenizer.json"))
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        mask = _umask()
        for f in tmp.iterdir():
            os.chmod(f, 0o666 & ~mask)
        os.chmod(tmp, 0o777 & ~mask)
        if out.exists():
            out.rmdir()  # empty, checked above
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


__all__ = ["SIF_COEFFICIENT", "distill", "pca", "sif_weights", "token_states"]
