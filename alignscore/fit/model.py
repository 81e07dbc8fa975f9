"""The settings a fit learns, as a differentiable function from them to scores and to the mean
Pearson r over language pairs: the layer mix (:func:`~alignscore.aggregators.mix.layer_weights`),
the soft greedy match and F-beta (:func:`~alignscore.aligners.greedy.match_similarities`,
:func:`~alignscore.aligners.greedy.f_beta`) or the optimal-transport aligners and Sinkhorn's
entropic strength (:mod:`~alignscore.fit.transport`), the idf exponent
(:func:`~alignscore.weighting.schemes.idf_power`): the same functions the parts score with."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Sequence

import torch

from .._ops import UNIT_FLOOR
from ..aggregators.mix import layer_weights
from ..aligners.greedy import f_beta, match_similarities
from ..aligners.optimal import Sinkhorn, TransportAligner
from ..settings import settings_of
from ..weighting.classes import token_class_multipliers
from ..weighting.schemes import idf_power
from .features import CLASS_SETTINGS, Batch, Features, PairFeatures
from .transport import transport_scores
from .windows import window_problem

#: where a learned temperature starts when the start is the exact greedy match (T = 0)
T_START = 0.01
#: the logit of the start's layer when a single layer becomes a mix (softmax weight about 0.8 of 6)
LAYER_START = 3.0
#: Sinkhorn's default entropic strength (its declaration's)
REG_DEFAULT = next(s.default for s in settings_of(Sinkhorn) if s.name == "reg")
#: the ranges the settings are declared with (Greedy.temperature, _Idf.idf_power, Greedy.beta, the
#: token-class weights of every weighting), Sinkhorn.reg's cut to where its iterations converge in
#: their default limit and its plan is not yet the independent one
BOUNDS = {"temperature": (1e-6, 10.0), "idf_power": (1e-6, 10.0), "beta": (1e-6, 1e6),
          **{s.name: (s.decl.ge, s.decl.le) for s in CLASS_SETTINGS}, "reg": (1e-3, 1.0)}
#: where a learned logarithm starts from a value of 0: the temperature's soft start (any other 0
#: starts at 1e-3)
LOG_START = {"temperature": T_START}


@dataclass(frozen=True)
class Values:
    """Values of the learnable settings, each field named as the option it sets: the mix's
    ``mix_weights`` (logits, one per kept layer; ``inf`` marks exactly one layer), the greedy
    ``temperature`` (0: exact), the ``idf_power``, ``beta`` (used where ``metric`` is
    ``"fbeta"``), the token-class weights (:data:`CLASS_SETTINGS`) and Sinkhorn's ``reg``. The
    scores are greedy's ``metric`` unless ``aligner`` names the start's optimal-transport
    aligner (its other settings fixed; ``metric`` ``"score"``)."""

    mix_weights: tuple[float, ...]
    temperature: float = 0.0
    idf_power: float = 1.0
    beta: float = 1.0
    special_weight: float = 1.0
    punct_weight: float = 1.0
    stopword_weight: float = 1.0
    subword_weight: float = 1.0
    reg: float = REG_DEFAULT
    metric: str = "f1"
    aligner: TransportAligner | None = None

    @property
    def logits(self) -> tuple[float, ...]:
        """The mix's logits (as :attr:`LayerMix.logits <alignscore.aggregators.mix.LayerMix.logits>`)."""
        return self.mix_weights

    @property
    def class_weights(self) -> tuple[float, ...]:
        """The token-class weights in the order of :data:`CLASS_SETTINGS`."""
        return self.special_weight, self.punct_weight, self.stopword_weight, self.subword_weight

    def options(self, learn: Sequence[str]) -> dict[str, Any]:
        """The options these values set in a fitted run: the mix's weights, and each setting of
        ``learn`` (``beta`` with ``metric = "fbeta"``, where these values score F-beta)."""
        out: dict[str, Any] = {"mix_weights": list(self.mix_weights)}
        out.update({f.name: getattr(self, f.name) for f in fields(self) if f.name in learn and f.name in BOUNDS
                    and f.name != "beta"})
        if "beta" in learn and self.metric == "fbeta":
            out.update(beta=self.beta, metric="fbeta")
        return out

    def describe(self) -> str:
        """The learned numbers that the aligner reads, as text (the layer weights aside)."""
        if self.aligner is None:
            parts = [f"temperature {self.temperature:.4g}", f"idf exponent {self.idf_power:.4g}",
                     f"beta {self.beta:.4g}"]
        else:
            parts = [f"{self.aligner.name}", f"idf exponent {self.idf_power:.4g}"]
            parts += [f"reg {self.reg:.4g}"] if isinstance(self.aligner, Sinkhorn) else []
        return "; ".join(parts)

    def weights(self) -> list[float]:
        """The layer weights ``softmax(logits)``."""
        return layer_weights(torch.tensor(self.logits)).tolist()


#: the settings a fit may learn, by their option names (the learnable fields of :class:`Values`)
LEARNABLE = tuple(f.name for f in fields(Values) if f.name not in ("metric", "aligner"))
#: the learnable settings that are numbers (the mix's weights are a list)
NUMBERS = tuple(name for name in LEARNABLE if name in BOUNDS)


@dataclass
class Model:
    """Unconstrained parameters for the ``learn``-ed settings (the others keep ``start``'s):
    the logits as they are, every number as its logarithm; a penalty
    ``reg * |theta - theta_0|^2`` pulls them toward where they started."""

    start: Values
    learn: Sequence[str]
    reg: float = 1e-3
    params: dict[str, torch.Tensor] = field(default_factory=dict)
    origin: dict[str, torch.Tensor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        s = self.start
        for name in self.learn:
            if name in NUMBERS:
                first = torch.tensor(math.log(max(getattr(s, name), LOG_START.get(name, 1e-3))), dtype=torch.float64)
            else:
                first = torch.tensor([max(min(w, 20.0), -20.0) for w in s.logits], dtype=torch.float64)
            self.origin[name] = first.clone()
            self.params[name] = first.clone().requires_grad_(True)

    def parameters(self) -> list[torch.Tensor]:
        return list(self.params.values())

    def current(self) -> dict[str, object]:
        """The settings' values now (``logits`` and every number): tensors for the learned ones
        (differentiable)."""
        s, p = self.start, self.params
        out: dict[str, object] = {"logits": p.get("mix_weights", s.logits), "aligner": s.aligner}
        for name in NUMBERS:
            out[name] = p[name].exp().clamp(*BOUNDS[name]) if name in p else getattr(s, name)
        return out

    def values(self) -> Values:
        """The learned values as plain numbers."""
        now = self.current()

        def plain(x: object) -> object:
            return x.detach().tolist() if isinstance(x, torch.Tensor) else x

        logits = plain(now["logits"])
        numbers = {name: float(plain(now[name])) for name in NUMBERS}  # type: ignore[arg-type]
        return Values(tuple(float(w) for w in logits), **numbers,  # type: ignore[arg-type]
                      metric="fbeta" if "beta" in self.learn else self.start.metric, aligner=self.start.aligner)

    def penalty(self) -> torch.Tensor:
        return self.reg * sum((((self.params[k] - self.origin[k]) ** 2).sum() for k in self.params),
                              torch.zeros((), dtype=torch.float64))


def mix_terms(batch: Batch, logits: torch.Tensor | Sequence[float]
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(cc [L * L], cand_norm [B, Tc], ref_norm [B, Tr])``: the flattened outer product ``c c'``
    of the softmax mix's weights ``c`` (in the products' dtype, float32 at least) and each token's
    mixed vector length ``sqrt(c' A_i c)``, floored as :func:`alignscore._ops.unit` floors it.
    Differentiable in tensor ``logits``."""
    logits = logits if isinstance(logits, torch.Tensor) else torch.tensor(logits, dtype=torch.float64)
    dt = torch.promote_types(batch.cross.dtype, torch.float32)  # float64 products stay float64
    c = layer_weights(logits).to(dt)
    cc = torch.outer(c, c).reshape(-1)
    floor = UNIT_FLOOR * UNIT_FLOOR
    cand_norm = (batch.cand_gram.to(dt) @ cc).clamp_min(floor).sqrt()
    ref_norm = (batch.ref_gram.to(dt) @ cc).clamp_min(floor).sqrt()
    return cc, cand_norm, ref_norm


def mixed_similarity(batch: Batch, logits: torch.Tensor | Sequence[float],
                     terms: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """``[B, Tc, Tr]`` cosine similarities of the softmax mix of the kept layers (what the
    ``mix`` aggregator and the engine make of them), from the batch's products::

        cos(x_i, y_j) = c' X_ij c / sqrt(c' A_i c  c' B_j c),   c = softmax(w)

    ``X_ij`` the ``L x L`` products of candidate token i's and reference token j's layers,
    ``A_i``, ``B_j`` each token's own; norms floored as :func:`alignscore._ops.unit` floors them
    (padding: 0). Differentiable in tensor ``logits``; ``terms``: :func:`mix_terms` of them, where
    the caller has them already."""
    cc, cand_norm, ref_norm = terms if terms is not None else mix_terms(batch, logits)
    return (batch.cross.to(cc.dtype) @ cc) / (cand_norm.unsqueeze(2) * ref_norm.unsqueeze(1))


def pair_scores(pf: PairFeatures, values: Mapping[str, object], metric: str) -> torch.Tensor:
    """``[P]`` scores of one language pair's pairs (float64), differentiable in the tensors
    among ``values`` (``logits`` and the numbers of :data:`NUMBERS`), through greedy's ``metric``
    or the optimal-transport ``values["aligner"]`` when there is one (over its n-gram windows
    where it has them: :func:`~alignscore.fit.windows.window_problem`). A token's
    mass is ``idf^a`` times its class multiplier, as the engine weighs it."""
    a, t = values["idf_power"], values["temperature"]
    t = t.float() if isinstance(t, torch.Tensor) else t
    powered = isinstance(a, torch.Tensor) or a != 1
    weights = [values[s.name] for s in CLASS_SETTINGS]
    classes = (torch.stack([torch.as_tensor(w, dtype=torch.float32) for w in weights])  # type: ignore[arg-type]
               if any(isinstance(w, torch.Tensor) or w != 1 for w in weights) else None)
    aligner = values.get("aligner")
    out = []
    for b in pf.batches:
        terms = mix_terms(b, values["logits"])  # type: ignore[arg-type]
        sim = mixed_similarity(b, values["logits"], terms)  # type: ignore[arg-type]
        ref_mass = idf_power(b.ref_mass, a) if powered else b.ref_mass  # type: ignore[arg-type]
        cand_mass = idf_power(b.cand_mass, a) if powered else b.cand_mass  # type: ignore[arg-type]
        if classes is not None:
            ref_mass = ref_mass * token_class_multipliers(b.ref_classes, classes)
            cand_mass = cand_mass * token_class_multipliers(b.cand_classes, classes)
        if isinstance(aligner, TransportAligner):
            if aligner.n_gram != 1:  # the same transport, over the windows' cosines and masses
                sim, ref_mass, cand_mass = window_problem(b, sim, terms, ref_mass, cand_mass, aligner)
            out.append(transport_scores(sim, ref_mass, cand_mass, aligner, values["reg"]))  # type: ignore[arg-type]
            continue
        p, r, f, _ = match_similarities(sim, ref_mass.to(sim.dtype), cand_mass.to(sim.dtype), b.ref_match,
                                        b.cand_match, t)  # type: ignore[arg-type]
        if metric == "fbeta":
            out.append(f_beta(p.double(), r.double(), values["beta"]))  # type: ignore[arg-type]
        else:
            out.append({"f1": f, "precision": p, "recall": r}[metric].double())
    order = torch.argsort(torch.cat([b.rows for b in pf.batches]))
    return torch.cat(out)[order]


def pearson(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Pearson's r of two ``[n]`` tensors (differentiable; 0 where either is constant).

    Examples
    --------
    >>> round(pearson(torch.tensor([1.0, 2.0, 4.0]), torch.tensor([1.0, 3.0, 2.0])).item(), 4)
    0.3273
    """
    x, y = x - x.mean(), y - y.mean()
    den = ((x * x).sum() * (y * y).sum()).sqrt()
    return (x * y).sum() / den.clamp_min(torch.finfo(den.dtype).tiny)


def mean_r(scores: Sequence[torch.Tensor], pairs: Sequence[PairFeatures],
           rows: Sequence[torch.Tensor] | None = None) -> torch.Tensor:
    """The objective: the mean over language ``pairs`` of Pearson's r between their ``scores``
    and the human judgments, on each pair's ``rows`` where given."""
    if rows is None:
        return torch.stack([pearson(s, pf.human) for s, pf in zip(scores, pairs)]).mean()
    return torch.stack([pearson(s[i], pf.human[i]) for s, pf, i in zip(scores, pairs, rows)]).mean()


def plain(values: Values) -> dict[str, object]:
    """``values`` as :func:`pair_scores` takes them."""
    return {"logits": values.logits, "aligner": values.aligner, **{name: getattr(values, name) for name in NUMBERS}}


def scores_of(features: Features, values: Values) -> list[torch.Tensor]:
    """Each language pair's scores under plain ``values`` (no gradient)."""
    plain_values = plain(values)
    with torch.no_grad():
        return [pair_scores(pf, plain_values, values.metric) for pf in features.pairs]
