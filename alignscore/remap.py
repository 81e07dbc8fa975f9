"""Cross-lingual remapping: moving a multilingual encoder's source-language vectors toward the
target language before they are aligned with a translation (XMoverScore, Zhao et al. 2020).

Learned from parallel sentences. Each word's vector at a layer is the mean of its sub-token
vectors (words as the encoder's tokenizer splits them, special tokens left out); in each
sentence pair, a source word and a target word are paired where each is the other's most similar
word by cosine (mutual best matches in the encoder's own space: the reference pairs words with
fast_align instead). The paired vectors, source rows ``X`` and target rows ``Z``, give:

- ``clp``: the least-squares linear map ``W = argmin ||X W - Z||`` (the reference computes
  ``(X^T X)^-1 X^T Z``; here a least-squares solver in float64, which is the same where
  ``X^T X`` is invertible);
- ``clp-orthogonal``: the orthogonal ``W`` minimising ``||X W - Z||`` (Procrustes):
  ``W = V U^T`` from the SVD ``Z^T X = U S V^T``, as the reference's ``train_mapping.py``;
- ``umd``: ``b``, the first right singular vector of ``X - Z`` (the main direction of the
  language difference); a vector ``v`` becomes ``v - (v . b) b``.

A :class:`Remapping` is applied to source-side vectors only, ``v W`` (CLP) or the projection
above (UMD). It is saved with the model it was learned for, the layer, the source language, the
number of word pairs and a SHA-256 checksum (:func:`save_remapping`, :func:`load_remapping`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import torch

from .errors import ConfigError, InputError

if TYPE_CHECKING:
    from .encoders.base import Encoder
    from .runtime import Runtime

METHODS = ("clp", "clp-orthogonal", "umd")
FORMAT = "alignscore-remapping"
VERSION = "1"


# -- the maths -------------------------------------------------------------------------------------
def word_vectors(states: torch.Tensor, word: torch.Tensor) -> torch.Tensor:
    """``[W, D]`` float64: the mean of the token vectors ``states [T, D]`` of each word, ``word
    [T]`` giving each token's word (0..W-1; -1 for tokens of no word, left out).

    >>> states = torch.tensor([[1.0, 0.0], [3.0, 2.0], [5.0, 5.0], [9.0, 9.0]])
    >>> word_vectors(states, torch.tensor([-1, 0, 0, 1])).tolist()
    [[4.0, 3.5], [9.0, 9.0]]
    """
    keep = word >= 0
    n = int(word[keep].max()) + 1 if bool(keep.any()) else 0
    sums = torch.zeros(n, states.shape[-1], dtype=torch.float64, device=states.device)
    sums.index_add_(0, word[keep], states[keep].double())
    counts = torch.bincount(word[keep], minlength=n).clamp(min=1).to(sums)
    return sums / counts.unsqueeze(1)


def mutual_best(x: torch.Tensor, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices ``(i, j)`` of the rows of ``x [n, D]`` and ``z [m, D]`` that are each other's most
    similar row by cosine (ties: the first row); empty where either has no rows.

    >>> x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1]])
    >>> z = torch.tensor([[0.0, 2.0], [1.0, 0.05]])
    >>> [t.tolist() for t in mutual_best(x, z)]
    [[0, 1], [1, 0]]
    """
    if len(x) == 0 or len(z) == 0:
        empty = torch.empty(0, dtype=torch.long)
        return empty, empty
    sim = _unit(x) @ _unit(z).T
    best_z, best_x = sim.argmax(1), sim.argmax(0)
    i = torch.nonzero(best_x[best_z] == torch.arange(len(x), device=x.device)).squeeze(1)
    return i, best_z[i]


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp(min=1e-12)


def fit_clp(x: torch.Tensor, z: torch.Tensor, orthogonal: bool = False) -> torch.Tensor:
    """``W [D, D]`` (float64) with ``x W ~ z`` for paired rows ``x, z [N, D]``: least squares, or,
    ``orthogonal``, the orthogonal ``W = V U^T`` from the SVD ``z^T x = U S V^T``.

    >>> x = torch.eye(3, dtype=torch.float64)
    >>> bool(torch.allclose(fit_clp(x, 2 * x), 2 * x))
    True
    """
    x, z = x.double().cpu(), z.double().cpu()
    if orthogonal:
        u, _, vh = torch.linalg.svd(z.T @ x)
        return vh.T @ u.T
    return torch.linalg.lstsq(x, z, driver="gelsd").solution


def fit_umd(x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """``b [D]`` (float64, unit length): the first right singular vector of ``x - z``, its sign
    chosen so that its largest coordinate in absolute value is positive (either sign removes
    the same component).

    >>> x = torch.tensor([[1.0, 0.0], [2.0, 1.0]]); z = torch.tensor([[1.0, 3.0], [2.0, -2.0]])
    >>> fit_umd(x, z).round(decimals=6).tolist()
    [0.0, 1.0]
    """
    _, _, vh = torch.linalg.svd(x.double().cpu() - z.double().cpu(), full_matrices=False)
    b = vh[0]
    return b * torch.sign(b[b.abs().argmax()])


def apply_clp(vectors: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``vectors [..., D] @ w``, in the vectors' dtype and on their device."""
    return vectors @ w.to(vectors)


def apply_umd(vectors: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``vectors [..., D]`` less their component on the unit vector ``b``: ``v - (v . b) b``.

    >>> apply_umd(torch.tensor([[3.0, 4.0]]), torch.tensor([0.0, 1.0])).tolist()
    [[3.0, 0.0]]
    """
    b = b.to(vectors)
    return vectors - (vectors @ b).unsqueeze(-1) * b


def mean_cosine(x: torch.Tensor, z: torch.Tensor) -> float:
    """The mean cosine of the paired rows of ``x`` and ``z`` (0 where there are none)."""
    if len(x) == 0:
        return 0.0
    return float((_unit(x.double()) * _unit(z.double())).sum(-1).mean())


# -- a learned remapping -------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Remapping:
    """A learned remapping for one source language.

    Parameters
    ----------
    method : str
        ``"clp"``, ``"clp-orthogonal"`` or ``"umd"``.
    weights : torch.Tensor
        ``[D, D]`` for CLP (vectors are multiplied by it), ``[D]`` (unit length) for UMD.
    model : str
        The encoder's name as it was given when the remapping was learned.
    model_digest : str
        The SHA-256 of the encoder's model files (:func:`model_digest`).
    layer : int
        The encoder layer whose vectors it maps.
    lang : str or None
        The source language it was learned for (None: not stated).
    pairs : int
        How many word pairs it was learned from.
    source : str, optional
        The file it was read from (:func:`load_remapping`), for the run file that names it.

    Examples
    --------
    >>> r = Remapping("umd", torch.tensor([0.0, 1.0], dtype=torch.float64), "m", "0" * 64, 8, "de", 2)
    >>> r.apply(torch.tensor([[[3.0, 4.0]]])).tolist(), r.width
    ([[[3.0, 0.0]]], 2)
    """

    method: str
    weights: torch.Tensor = field(repr=False)
    model: str
    model_digest: str
    layer: int
    lang: str | None = None
    pairs: int = 0
    source: str | None = field(default=None, repr=False)
    _checksum: str = field(default="", init=False, repr=False)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"method must be one of {', '.join(METHODS)}, not {self.method!r}")
        if not isinstance(self.weights, torch.Tensor):
            raise ConfigError(f"weights must be a tensor, not {type(self.weights).__name__}")
        object.__setattr__(self, "weights", self.weights.detach().to("cpu", torch.float64).contiguous())
        d = self.weights.shape[0] if self.weights.dim() else 0
        want = (d,) if self.method == "umd" else (d, d)
        if d == 0 or tuple(self.weights.shape) != want:
            shape = "[D]" if self.method == "umd" else "[D, D]"
            raise ConfigError(f"a {self.method} remapping needs weights of shape {shape}, "
                              f"not {list(self.weights.shape)}")
        if not bool(torch.isfinite(self.weights).all()):
            raise ConfigError("the remapping's weights are not all finite")
        if isinstance(self.layer, bool) or not isinstance(self.layer, int) or self.layer < 0:
            raise ConfigError(f"layer must be an integer >= 0, not {self.layer!r}")
        if isinstance(self.pairs, bool) or not isinstance(self.pairs, int) or self.pairs < 0:
            raise ConfigError(f"pairs must be an integer >= 0, not {self.pairs!r}")
        # frozen: the checksum of the whole weight matrix is taken once, not at every signature or compare
        h = hashlib.sha256(json.dumps(self.header(), sort_keys=True).encode("utf-8") + b"\0")
        h.update(self.weights.numpy().astype("<f8").tobytes())
        object.__setattr__(self, "_checksum", h.hexdigest())

    @property
    def width(self) -> int:
        """The vectors' dimension ``D``."""
        return int(self.weights.shape[0])

    def apply(self, vectors: torch.Tensor) -> torch.Tensor:
        """The remapped ``vectors [..., D]`` (any leading shape, e.g. a padded batch ``[B, T, D]``;
        padding rows are mapped too and stay masked), in their dtype and on their device."""
        if vectors.shape[-1] != self.width:
            raise ConfigError(f"the remapping maps {self.width}-dimensional vectors, "
                              f"not {vectors.shape[-1]}-dimensional ones")
        if self.method == "umd":
            return apply_umd(vectors, self.weights)
        return apply_clp(vectors, self.weights)

    def header(self) -> dict[str, str]:
        """What the file states besides the weights (strings, as safetensors' metadata)."""
        return {"format": FORMAT, "version": VERSION, "method": self.method, "model": self.model,
                "model_digest": self.model_digest, "width": str(self.width), "layer": str(self.layer),
                "lang": self.lang or "", "pairs": str(self.pairs)}

    def checksum(self) -> str:
        """SHA-256 of the header (as canonical JSON) and the weights' float64 bytes."""
        return self._checksum

    def __eq__(self, other: object) -> bool:  # by content: two reads of one file are one remapping
        return isinstance(other, Remapping) and self.checksum() == other.checksum()

    def __hash__(self) -> int:
        return hash(self.checksum())

    def digest(self) -> str:
        """A short name for signatures: ``method(lang,layer N)#<12 hex digits of the checksum>``."""
        return f"{self.method}({self.lang or '?'},layer {self.layer})#{self.checksum()[:12]}"

    def check(self, model_digest: str, layer: int, width: int | None = None, model: str | None = None) -> None:
        """Refuse a use with another model, layer or width than it was learned for.

        Raises
        ------
        ConfigError
            One line naming what differs: ``remapping learned for model X layer 8, not Y layer 9``.
        """
        name = model or "another model"
        if model_digest != self.model_digest or layer != self.layer:
            if model_digest != self.model_digest and model == self.model:
                name += f" (other files: {model_digest[:12]}, not {self.model_digest[:12]})"
            what = name if model_digest != self.model_digest else self.model
            raise ConfigError(f"remapping learned for model {self.model} layer {self.layer}, not {what} layer {layer}")
        if width is not None and width != self.width:
            raise ConfigError(f"remapping learned for {self.width}-dimensional vectors, not {width}-dimensional ones")


def remap_vectors(remap: Remapping, vectors: torch.Tensor) -> torch.Tensor:
    """``vectors [N, D]`` remapped (:meth:`~alignscore.remap.Remapping.apply`) and unit-normalised
    again, as every encoder's vectors are (a vector of 0 stays 0).

    Parameters
    ----------
    remap, vectors : Remapping, torch.Tensor
        The map toward the candidates' language, and ``[N, D]`` unit vectors.

    Returns
    -------
    torch.Tensor
        ``[N, D]``, unit length (0 where the map gives 0).

    Examples
    --------
    >>> umd = Remapping("umd", torch.tensor([0.0, 1.0], dtype=torch.float64), "m", "0" * 64, 8)
    >>> remap_vectors(umd, torch.tensor([[0.6, 0.8], [0.0, 0.0]])).tolist()
    [[1.0, 0.0], [0.0, 0.0]]
    """
    out = remap.apply(vectors)
    return out / out.norm(dim=-1, keepdim=True).clamp(min=torch.finfo(out.dtype).tiny)


def model_digest(encoder: Encoder) -> str:
    """The SHA-256 of the encoder's model files: its fingerprint without the backend, dtype and
    long-text fields (a remapping learned in float32 serves a bfloat16 run of the same model)."""
    parts = encoder.fingerprint().split("|")
    return parts[1] if parts[0] == "static" else parts[0]


def save_remapping(remapping: Remapping, path: str | Path) -> None:
    """Write ``remapping`` to ``path`` (safetensors: the weights, and the header and checksum as
    metadata). The caller picks and checks the path (:func:`alignscore.textio.check_output`)."""
    from safetensors.torch import save_file

    save_file({"weights": remapping.weights}, str(path), metadata={**remapping.header(),
                                                                   "sha256": remapping.checksum()})


def load_remapping(path: str | Path) -> Remapping:
    """The remapping saved at ``path``, its checksum verified.

    Raises
    ------
    InputError
        Naming the file: not a remapping file, damaged, or its checksum does not match.
    """
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as fh:
            meta = dict(fh.metadata() or {})
            weights = fh.get_tensor("weights") if "weights" in fh.keys() else None  # noqa: SIM118
    except FileNotFoundError:
        raise InputError("no such remapping file", str(path)) from None
    except Exception as exc:  # safetensors raises its own errors for a damaged header
        raise InputError(f"not a remapping file ({' '.join(str(exc).split()) or type(exc).__name__})",
                         str(path)) from None
    if meta.get("format") != FORMAT or weights is None:
        raise InputError("not a remapping file (alignscore remap writes them)", str(path))
    if meta.get("version") != VERSION:
        raise InputError(f"remapping file version {meta.get('version')!r}; this alignscore reads version {VERSION}",
                         str(path))
    try:
        remapping = Remapping(meta["method"], weights, meta["model"], meta["model_digest"], int(meta["layer"]),
                              meta["lang"] or None, int(meta["pairs"]), str(path))
    except (KeyError, ValueError, ConfigError) as exc:
        raise InputError(f"damaged remapping file ({exc})", str(path)) from None
    if meta.get("sha256") != remapping.checksum() or meta.get("width") != str(remapping.width):
        raise InputError("the remapping file's checksum does not match its content: the file is damaged or was "
                         "edited; learn it again with alignscore remap", str(path))
    return remapping


# -- learning from parallel sentences ----------------------------------------------------------------
def paired_words(encoder: Encoder, sources: Sequence[str], targets: Sequence[str], layer: int,
                 runtime: Runtime | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The word vectors ``(X, Z)`` (float64, ``[N, D]`` each) of the word pairs of the parallel
    sentences ``sources[i]``/``targets[i]`` at ``layer``: each word the mean of its tokens'
    vectors, pairs the mutual best matches by cosine within each sentence pair."""
    from .runtime import Runtime, embed
    from .tokens import TokenTable

    if len(sources) != len(targets):
        raise ConfigError(f"{len(sources)} source sentences but {len(targets)} target sentences: they must be parallel")
    table = TokenTable.from_tokenized(encoder.tokenize(list(sources) + list(targets)))
    states = embed(encoder, table, [layer], lambda h: h[0], runtime or Runtime(), desc="encoding").cpu()
    starts = table.word_start & ~table.special
    word = torch.cumsum(starts.long(), 0) - 1  # one running word count over every text
    word = torch.where(table.special | (word < 0), torch.full_like(word, -1), word)
    vectors = word_vectors(states, word)
    per_text = torch.bincount(table.text_index()[starts], minlength=len(table))
    bounds = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(per_text, 0)]).tolist()
    n = len(sources)
    xs, zs = [], []
    for k in range(n):
        src = vectors[bounds[k]:bounds[k + 1]]
        tgt = vectors[bounds[n + k]:bounds[n + k + 1]]
        i, j = mutual_best(src, tgt)
        xs.append(src[i])
        zs.append(tgt[j])
    width = vectors.shape[-1] if vectors.dim() == 2 else 0
    cat = (lambda rows: torch.cat(rows) if rows else torch.empty(0, width, dtype=torch.float64))
    return cat(xs), cat(zs)


def fit(method: str, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """The weights of ``method`` learned from the paired rows ``x ~ z``.

    Raises
    ------
    ConfigError
        Too few pairs: fewer than two, or, for unconstrained CLP, fewer than the width (the
        least-squares map would not be determined by them).
    """
    if method not in METHODS:
        raise ConfigError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    need = x.shape[-1] if method == "clp" else 2
    if len(x) < need:
        raise ConfigError(f"{len(x)} word pairs found in the parallel sentences; {method} needs at least {need}"
                          + (" (the vectors' width) for a determined map: give more sentences, or use "
                             "clp-orthogonal or umd" if method == "clp" else ": give more sentences"))
    if method == "umd":
        return fit_umd(x, z)
    return fit_clp(x, z, orthogonal=method == "clp-orthogonal")


def learn(encoder: Encoder, sources: Sequence[str], targets: Sequence[str], layer: int = 8,
          method: str = "clp-orthogonal", lang: str | None = None,
          runtime: Runtime | None = None) -> tuple[Remapping, dict[str, float]]:
    """A :class:`Remapping` of ``encoder``'s ``layer`` learned from the parallel sentences, and
    ``{"pairs", "cosine_before", "cosine_after"}``: how many word pairs, and their mean cosine
    before and after the remapping of the source side."""
    if method not in METHODS:
        raise ConfigError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    x, z = paired_words(encoder, sources, targets, layer, runtime)
    remapping = Remapping(method, fit(method, x, z), encoder.name, model_digest(encoder), layer, lang, len(x))
    stats = {"pairs": float(len(x)), "cosine_before": mean_cosine(x, z),
             "cosine_after": mean_cosine(remapping.apply(x), z)}
    return remapping, stats


def learn_files(encoder: Encoder, runtime: Runtime, src: str, tgt: str, output: str, layer: int = 8,
                method: str = "clp-orthogonal", lang: str | None = None, inputs: Sequence[str] = ()
                ) -> tuple[Remapping, dict[str, float]]:
    """:func:`learn` from the parallel files ``src`` and ``tgt`` (line i of one translates line i
    of the other) with ``encoder`` and ``runtime``, saved to ``output`` (which may not be one of
    the ``inputs``, the other files the run reads).

    Raises
    ------
    InputError, ConfigError
        An output that cannot be written or is an input, files that are not parallel or hold no
        pair of non-empty lines, a layer the model does not have: before the weights load.
    """
    from .textio import check_output, read_lines, replacing

    check_output(output, [src, tgt, *inputs])  # before any work: writable, and not an input
    sources, targets = read_lines(src), read_lines(tgt)
    if len(sources) != len(targets):
        raise InputError(f"{tgt} has {len(targets)} lines but {src} has {len(sources)}: the files must be parallel, "
                         "one sentence and its translation per line")
    if not any(s.strip() and t.strip() for s, t in zip(sources, targets)):
        raise InputError(f"and {tgt} have no line where both sentences are non-empty: nothing to learn from", src)
    if layer > encoder.num_layers:  # the model's configuration only: its weights load later
        raise ConfigError(f"--layer {layer}: model {encoder.name!r} has layers 0..{encoder.num_layers}")
    encoder.check()
    remapping, stats = learn(encoder, sources, targets, layer=layer, method=method, lang=lang, runtime=runtime)
    with replacing(output) as tmp:
        save_remapping(remapping, tmp)
    return remapping, stats


__all__ = ["METHODS", "Remapping", "apply_clp", "apply_umd", "fit", "fit_clp", "fit_umd", "learn", "learn_files",
           "load_remapping", "mean_cosine", "model_digest", "mutual_best", "paired_words", "save_remapping",
           "word_vectors"]
