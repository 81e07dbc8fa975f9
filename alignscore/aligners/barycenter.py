"""BaryScore (Colombo et al., EMNLP 2021, "Automatic Text Evaluation through the Lens of
Wasserstein Barycenters"): each text is L discrete measures, one per layer, over its token
vectors; their Wasserstein barycenter stands for the text; the score is the (entropic)
Wasserstein distance between the two texts' barycenters.

Notation for one text: ``Y_l [n, D]`` its token vectors at layer l (unit vectors), ``a [n]``
the tokens' masses normalised to sum to 1 (the same for every layer), ``k`` the number of
barycenter support points, each of mass ``1 / k``. ``W2^2(mu, nu) = min_T <C, T>`` with
``C_ij = |x_i - y_j|^2`` over plans ``T >= 0`` with marginals the two measures' masses.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace

import torch

from ..aggregators.base import Vectors
from ..aggregators.stack import unstack_layers
from ..errors import ConfigError
from ..settings import check_settings, setting
from .base import Aligner, Alignment, PairBatch, number
from .optimal import SCORE_FORMS, score_from_distance
from .._ops import normalise_mass
from .transport import exact_plans, pairwise_cost, sinkhorn_plans


_AGGREGATOR_OF = {"concat": "pmeans", "mix": "routing"}


def free_support_barycenters(locations: torch.Tensor, mass: torch.Tensor, members: torch.Tensor,
                             max_iter: int = 1000, tol: float = 1e-7
                             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Free-support Wasserstein barycenters of the layers of a padded batch of texts.

    Text b is ``L`` measures ``mu_l = sum_j a_j delta(Y_l[j])`` (``locations [B, L, T, D]``,
    masses ``a`` = ``mass [B, T]`` normalised). Its barycenter ``nu = sum_i (1/k) delta(X_i)``
    has one support point per member token (``members [B, T]``: ``k`` = their number; padding
    is never a member) and minimises ``(1/L) sum_l W2^2(nu, mu_l)`` over the points ``X``, found
    as POT's ``ot.lp.free_support_barycenter`` finds it (Cuturi & Doucet, 2014, Algorithm 2)::

        T_l = optimal plan between (X, 1/k) and (Y_l, a)          (exact, network simplex)
        X  <- (1/L) sum_l k T_l Y_l                               (each point: the mean of its mass)

    until the displacement ``sum_i |X_new_i - X_i|^2 <= tol`` or ``max_iter`` rounds. Each text
    stops on its own, so a barycenter never depends on the rest of the batch. ``X`` starts at
    each member token's mean over the layers, ``X_i = (1/L) sum_l Y_l[i]`` (see :class:`BaryScore`
    for why not at 0). Each update lowers the objective and plans are vertices of a polytope, so
    the iteration settles on a local minimum in finitely many rounds. In float64.

    Returns ``(X [B, T, D], rounds [B], settled [B])``: row i of X is the support point started
    at member i (0 elsewhere); ``settled`` is False for texts still moving after ``max_iter``
    rounds. Texts without mass get ``X = 0``, 0 rounds and count as settled.
    """
    b_size, n_layers, t, d = locations.shape
    y = locations.double()
    members = members.bool()
    a = normalise_mass(mass.double() * members)
    k = members.sum(-1, keepdim=True)
    support = members / k.clamp_min(1)  # [B, T]: 1/k on members
    has_mass = a.sum(-1) > 0
    x = torch.where((members & has_mass.unsqueeze(-1)).unsqueeze(-1), y.mean(1), torch.zeros((), dtype=y.dtype,
                                                                                           device=y.device))
    rounds = torch.zeros(b_size, dtype=torch.long, device=y.device)
    moving = has_mass.clone()
    for _ in range(max_iter):
        idx = moving.nonzero().flatten()
        if len(idx) == 0:
            break
        ya = y[idx].flatten(0, 1)  # [A * L, T, D]
        xa = x[idx]
        cost = pairwise_cost(xa.repeat_interleave(n_layers, 0), ya, "sqeuclidean")
        plans = exact_plans(cost, support[idx].repeat_interleave(n_layers, 0), a[idx].repeat_interleave(n_layers, 0))
        moved = torch.bmm(plans.to(y.dtype), ya).unflatten(0, (len(idx), n_layers)).mean(1)  # [A, T, D]
        new = moved * k[idx].unsqueeze(-1).to(y.dtype)  # / (1/k): rows of non-members are 0
        x[idx] = new
        rounds[idx] += 1
        moving[idx] = ((new - xa) ** 2).sum((1, 2)) > tol
    return x, rounds, ~moving


def barycenter_distances(x_ref: torch.Tensor, ref_members: torch.Tensor, x_cand: torch.Tensor,
                         cand_members: torch.Tensor, reg: float, max_iter: int = 10_000, tol: float = 1e-9
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """``d [B]``: the transport cost between two barycenters with uniform masses on their
    support points (``members``), under ``C_ij = |x_i - y_j|^2``.

    ``reg > 0``: ``d = <C, T_reg>``, ``T_reg`` the entropic plan minimising ``<C, T> - reg H(T)``
    (log-domain Sinkhorn, :func:`~alignscore.aligners.transport.sinkhorn_plans`), what POT's
    ``ot.sinkhorn2`` returns (the transport cost of the entropic plan, without the entropy
    term); ``reg = 0``: the exact ``W2^2`` (``ot.emd2``). Returns ``(d, converged [B])``;
    ``converged`` is False where Sinkhorn stopped at ``max_iter`` with a row-marginal error
    (L1) of ``tol`` or more. Pairs where a side has no member get ``d = 0``.
    """
    cost = pairwise_cost(x_ref, x_cand, "sqeuclidean")
    a, b = normalise_mass(ref_members.double()), normalise_mass(cand_members.double())
    if reg == 0:
        plan = exact_plans(cost, a, b)
        converged = torch.ones(cost.shape[0], dtype=torch.bool, device=cost.device)
    else:
        plan, _, _, converged = sinkhorn_plans(cost, a, b, reg, max_iter, tol)
    return (plan * cost).sum((1, 2)), converged


@dataclass(frozen=True)
class BaryScore(Aligner):
    """BaryScore: the distance between the Wasserstein barycenters of the two texts' layers.

    Reads each token's layers from the ``stack`` aggregator (:class:`~alignscore.aggregators.
    stack.LayerStack`; :func:`~alignscore.aggregators.stack.unstack_layers`). For each side,
    its barycenter over the layers with that side's token masses
    (:func:`free_support_barycenters`); then ``d``, the transport cost between the two
    barycenters (:func:`barycenter_distances`); ``score = 1 - d`` (or ``1 / (1 + d)``), so that
    higher is better like every other score here (the largest of several references is the
    best). A pair where either side has no mass scores 0. Solvers that stop before converging
    say so in a warning with counts; no score is ever NaN.

    What the authors' code (``nlg_eval_via_simi_measures/bary_score.py``, ``BaryScoreMetric``)
    does, and the parts of a composition that give the same:

    - bert-base-uncased (``model_name``), the last 5 hidden states (``last_layers=5``):
      ``LayerStack((-5, -4, -3, -2, -1))``; each layer's token vectors L2-normalised (the stack
      does it).
    - every token of the text, [CLS] and [SEP] included (``special_tokens="keep"``); masses idf
      (``use_idfs=True``, the class default; its command line's default is uniform masses):
      ``log((M + 1) / (df + 1))``, references' idf over the references and candidates' over the
      candidates (``IdfS(sep=True)``), so [CLS]/[SEP] get 0 and uniform masses give every token
      one share.
    - barycenter: ``ot.lp.free_support_barycenter`` with the layers equally weighted, ``k`` = the
      number of tokens, support masses ``1/k``, ``numItermax=1000`` and POT's ``stopThr=1e-7``
      (``bary_iter``, ``bary_tol``); the same tokens' masses in every layer.
    - distance: ``ot.dist`` (squared Euclidean) between the barycenters, uniform masses, and
      ``ot.sinkhorn2(..., reg, numItermax=10000)`` (POT's ``stopThr=1e-9``) for
      ``reg in (10, 1, 5, 0.1, 0.5, 0.01, 0.001)`` ("SD_reg") besides ``ot.emd2`` ("W");
      ``sinkhorn_ref=0.01`` is its documented default regularisation (it was the one score
      reported before all were), hence ``reg = 0.01`` here; ``reg = 0`` gives "W".
    - it reports the distance itself (lower is better); here ``1 - d``, so |Pearson r| with
      human judgments is unchanged.

    Deliberate differences: (1) the authors start the barycenter at ``X = 0``, where every cost
    to a unit vector is 1: the first plans are whatever the LP solver returns for a problem
    where all plans tie, so their barycenter depends on its tie-breaking (and on rounding);
    here it starts at each token's mean over the layers, a deterministic start that is already
    the barycenter when the layers' optimal plans are the identity. (2) Their
    ``evaluate_batch`` swaps the two idf tables when it uses the ones ``prepare_idfs`` stored
    (candidates weighed by the references' idf and vice versa); here each side has its own.
    (3) Sinkhorn runs in the log domain (theirs, in the exp domain, underflows for small
    ``reg`` such as 0.001) and stops on the row-marginal L1 error (theirs on the L2 error of the
    column marginals). (4) Their support has one point per token, including tokens without
    mass; here one per member token (those that may be aligned to), which is the same under
    ``special_tokens="keep"`` and no token filter.

    It reads a stack of layers (the ``stack`` aggregator; one layer's vectors are a stack of
    one): how many, it learns from the aggregator when the composition is made (:meth:`fit`).

    Parameters
    ----------
    reg : float
        Entropic regularisation of the final distance, in the units of the squared Euclidean
        cost; ``0`` for the exact distance.
    score_form : str
        ``"1-d"`` or ``"1/(1+d)"``.
    bary_iter, bary_tol : int, float
        The barycenter's round limit and displacement threshold.
    max_iter, tol : int, float
        Sinkhorn's iteration limit and marginal-error threshold.

    Returns
    -------
    BaryScore
        Fitted to the aggregator's output (:meth:`fit`), called on a
        :class:`~alignscore.aligners.base.PairBatch`: ``{"score": [B]}``.

    Examples
    --------
    One layer (a stack of one): the barycenters are the texts themselves, and a third of the
    mass moves at squared distance 2:

    >>> import torch
    >>> from alignscore.aggregators import SingleLayer
    >>> from alignscore.aligners import PairBatch
    >>> ref = torch.eye(3).unsqueeze(0)
    >>> batch = PairBatch(ref=ref, cand=ref[:, :2], ref_mass=torch.ones(1, 3), cand_mass=torch.ones(1, 2),
    ...                   ref_match=torch.ones(1, 3, dtype=torch.bool), cand_match=torch.ones(1, 2, dtype=torch.bool))
    >>> aligner = BaryScore(reg=0.0).for_vectors(SingleLayer().output())
    >>> round(aligner(batch)["score"].item(), 4)   # 1 - 2/3
    0.3333
    """

    reg: float = setting(0.01, ge=0)
    score_form: str = setting("1-d", choices=SCORE_FORMS, aliases=("score",))
    bary_iter: int = setting(1000, ge=1, help="baryscore: the barycenter's round limit.")
    bary_tol: float = setting(1e-7, ge=0, help="baryscore: the barycenter's displacement threshold.")
    max_iter: int = setting(10_000, ge=1)
    tol: float = setting(1e-9, gt=0)
    _layers: int | None = field(default=None, repr=False)

    name = "baryscore"
    metrics = ("score",)
    primary = "score"

    def __post_init__(self) -> None:
        check_settings(self)

    def for_vectors(self, vectors: Vectors) -> "BaryScore":
        if vectors.kind not in ("stack", "layer"):
            raise ConfigError(f"aligner baryscore reads a stack of layers (aggregator stack, or one layer), not "
                              f"{vectors} (aggregator {_AGGREGATOR_OF.get(vectors.kind, vectors.kind)})")
        return replace(self, _layers=vectors.layers)

    @property
    def stack(self) -> int:
        """How many layers the stack holds (known once :meth:`fit`)."""
        if self._layers is None:
            raise ConfigError("baryscore: fit it to the aggregator's vectors first (a Composition does)")
        return self._layers

    def barycenters(self, batch: PairBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Both sides' barycenters ``[B, T, D]`` (float64), warning about any that did not settle."""
        out = []
        unsettled = total = 0
        for vectors, mass, members in ((batch.ref, batch.ref_mass, batch.ref_match),
                                       (batch.cand, batch.cand_mass, batch.cand_match)):
            x, _, settled = free_support_barycenters(unstack_layers(vectors, self.stack), mass, members,
                                                     self.bary_iter, self.bary_tol)
            out.append(x)
            unsettled += int((~settled).sum())
            total += len(settled)
        if unsettled:
            warnings.warn(f"baryscore: the barycenter of {unsettled} of {total} texts was still moving after "
                          f"{self.bary_iter} rounds (displacement > {number(self.bary_tol)}); the last one is used",
                          stacklevel=3)
        return out[0], out[1]

    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        x_ref, x_cand = self.barycenters(batch)
        d, converged = barycenter_distances(x_ref, batch.ref_match, x_cand, batch.cand_match, self.reg,
                                            self.max_iter, self.tol)
        if not bool(converged.all()):
            warnings.warn(f"baryscore: Sinkhorn did not converge for {int((~converged).sum())} of {len(d)} pairs in "
                          f"{self.max_iter} iterations (marginal error >= {number(self.tol)}); their last "
                          f"iterate is used", stacklevel=2)
        empty = (batch.ref_mass.sum(-1) <= 0) | (batch.cand_mass.sum(-1) <= 0)
        score = score_from_distance(d, self.score_form)
        return {"score": torch.where(empty.to(d.device), torch.zeros_like(score), score).to(batch.ref.device)}

    def alignment(self, batch: PairBatch) -> Alignment:
        raise ConfigError("baryscore aligns the texts' layer barycenters, not their tokens: it has no "
                          "per-token explanation")

    def signature(self) -> str:
        return (f"baryscore(L={self.stack},sqeuclidean,{self.score_form},reg={number(self.reg)},"
                f"iter<={self.max_iter},tol={number(self.tol)},bary<={self.bary_iter},"
                f"bary_tol={number(self.bary_tol)})")
