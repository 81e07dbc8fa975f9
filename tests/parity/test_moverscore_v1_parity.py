"""The ``moverscore-v1`` preset against a plainly written reference computation of MoverScore v1
(the paper's configuration, ``moverscore.py``), on real WMT16 sentences with all-MiniLM-L6-v2.

The reference is independent of alignscore's code: it runs the Hugging Face model one sentence
at a time, takes the last five layers, L2-normalises each, concatenates [min; mean; max],
applies [RM] to the WordPiece token strings (no "##" pieces, no punctuation; [CLS]/[SEP] stay,
as in moverscore.py's string test), weighs tokens by idf dictionaries built with a Counter
(reference idf from the references, candidate idf from the candidates) or by 1, builds n-gram
windows with Python lists, and solves MoverScore's square problem over the union
[reference units; candidate units] (zero mass on the other side) with pyemd, as moverscore.py
does. Score = 1 - EMD with squared Euclidean costs between unit vectors.

n-gram windows (n = 2) follow docs/what-it-computes.md#transport: a window's vector is the mass-weighted average of its
tokens' unit vectors (moverscore.py averages the power-mean vectors before re-normalising, which
differs slightly for n >= 2; for n = 1 the two agree). Tolerance: 1e-5 absolute per pair.
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter

import numpy as np
import pytest
import torch

from alignscore import moverscore_v1
from helpers import needs

pytestmark = [pytest.mark.slow, pytest.mark.reference]
needs("pyemd")

N_PAIRS = 40
TOL = 1e-5


def idf_dict(texts: list[str], tokenizer) -> tuple[dict[int, float], float]:
    df = Counter()
    for t in texts:
        df.update(set(tokenizer(t)["input_ids"]))
    m = len(texts)
    return {i: math.log((m + 1) / (c + 1)) for i, c in df.items()}, math.log(m + 1)


def rm_keep(token: str) -> bool:
    if token.startswith("##"):
        return False
    return not all(unicodedata.category(c)[0] in "PS" for c in token)


def encode(text: str, tokenizer, model) -> tuple[list[int], list[str], np.ndarray]:
    """Token ids, token strings and MoverScore v1 token vectors of one sentence (run alone)."""
    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc, output_hidden_states=True).hidden_states
    layers = torch.stack([h[0] / h[0].norm(dim=-1, keepdim=True) for h in hidden[-5:]])  # [5, T, D]
    vec = torch.cat([layers.min(0).values, layers.mean(0), layers.max(0).values], -1).double().numpy()
    vec = vec / np.linalg.norm(vec, axis=-1, keepdims=True)
    ids = enc["input_ids"][0].tolist()
    return ids, tokenizer.convert_ids_to_tokens(ids), vec


def sentence_units(encoded: tuple[list[int], list[str], np.ndarray], idf: tuple[dict[int, float], float] | None,
                   n: int) -> tuple[np.ndarray, np.ndarray]:
    ids, tokens, vec = encoded
    keep = [k for k, tok in enumerate(tokens) if rm_keep(tok)]
    mass = np.array([1.0 if idf is None else idf[0].get(ids[k], idf[1]) for k in keep])
    vec = vec[keep]
    if n == 1:
        return vec, mass
    width = min(n, len(keep))
    units, masses = [], []
    for s in range(len(keep) - width + 1):
        w = mass[s:s + width]
        v = (w[:, None] * vec[s:s + width]).sum(0) / w.sum()
        units.append(v / np.linalg.norm(v))
        masses.append(w.sum())
    return np.array(units), np.array(masses)


def reference_score(x: np.ndarray, a: np.ndarray, y: np.ndarray, b: np.ndarray) -> float:
    from pyemd import emd

    z = np.concatenate([x, y])
    dist = ((z[:, None, :] - z[None, :, :]) ** 2).sum(-1)
    c1 = np.concatenate([a, np.zeros(len(y))]) / a.sum()
    c2 = np.concatenate([np.zeros(len(x)), b]) / b.sum()
    return 1.0 - emd(c1, c2, np.ascontiguousarray(dist))


@pytest.fixture(scope="module")
def hf(minilm_dir: str):
    from transformers import AutoModel, AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_dir), AutoModel.from_pretrained(minilm_dir).eval()


@pytest.fixture(scope="module")
def sample(wmt_data) -> tuple[list[str], list[str]]:
    data = wmt_data["cs-en"]
    return data["reference"][:N_PAIRS], data["mt-system"][:N_PAIRS]


@pytest.fixture(scope="module")
def encoded(hf, sample):
    tokenizer, model = hf
    refs, cands = sample
    return [encode(t, tokenizer, model) for t in refs], [encode(t, tokenizer, model) for t in cands]


@pytest.mark.parametrize("idf,n", [(True, 1), (False, 1), (True, 2)])
def test_moverscore_v1_matches_the_reference_computation(hf, sample, encoded, minilm_dir, idf: bool,
                                                         n: int) -> None:
    tokenizer, _ = hf
    refs, cands = sample
    ref_idf = idf_dict(refs, tokenizer) if idf else None
    cand_idf = idf_dict(cands, tokenizer) if idf else None
    want = []
    for r, c in zip(*encoded):
        x, a = sentence_units(r, ref_idf, n)
        y, b = sentence_units(c, cand_idf, n)
        want.append(reference_score(x, a, y, b))
    got = moverscore_v1(model=minilm_dir, idf=idf, n_gram=n).score(cands, refs)["score"].numpy()
    diff = np.abs(np.array(want) - got)
    assert diff.max() < TOL, (diff.max(), int(diff.argmax()))
    assert np.std(got) > 0.01  # real, varied scores
