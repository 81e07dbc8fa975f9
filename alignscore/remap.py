"""Cross-lingual remapping: moving a multilingual encoder's source-language vectors toward the
target language before they are aligned with a translation (XMoverScore, Zhao et al. 2020).

Learned from parallel sentences by :mod:`alignscore.fit.remap`: paired word vectors, source
rows ``X`` and target rows ``Z``, give:

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
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from .errors import ConfigError, InputError
from .settings import check_settings, setting

if TYPE_CHECKING:
    from .encoders.base import Encoder

METHODS = ("clp", "clp-orthogonal", "umd")
FORMAT = "alignscore-remapping"
VERSION = "1"


# -- the maths -------------------------------------------------------------------------------------
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

    method: str = setting(MISSING, choices=METHODS)
    weights: torch.Tensor = field(repr=False)
    model: str = setting(MISSING)
    model_digest: str = setting(MISSING)
    layer: int = setting(MISSING, ge=0)
    lang: str | None = setting(None)
    pairs: int = setting(0, ge=0)
    source: str | None = field(default=None, repr=False)
    _checksum: str = field(default="", init=False, repr=False)

    def __post_init__(self) -> None:
        check_settings(self)
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


__all__ = ["FORMAT", "METHODS", "Remapping", "apply_clp", "apply_umd", "load_remapping", "model_digest", "remap_vectors",
           "save_remapping"]
