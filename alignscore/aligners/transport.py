"""Optimal transport over padded batches: costs, the exact solver and log-domain Sinkhorn.

Notation for one pair: masses ``a`` (reference units) and ``b`` (candidate units), each
normalised to sum to 1, cost ``C``; a transport plan ``T >= 0`` has ``T 1 = a`` and
``T^T 1 = b``; the word mover's distance is ``WMD = min_T <C, T>``.
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from typing import Any, Callable, NamedTuple

import numpy as np
import torch
from threadpoolctl import ThreadpoolController

from ..errors import ConfigError, NonFiniteError
from .base import NOT_FINITE

COSTS = ("euclidean", "sqeuclidean", "cos")
# network-simplex pivots allowed per problem (POT's default, 1e5, can stop short on long texts)
EMD_MAX_ITER = 10_000_000
# flows this close (masses summing to 1) are equal for the flow dropout: the solver's rounding is ~1e-16
FLOW_TIE = 1e-12


def pairwise_cost(x: torch.Tensor, y: torch.Tensor, cost: str) -> torch.Tensor:
    """The cost matrices between two padded batches of vectors, in float64::

        sqeuclidean:  C_ij = ||x_i - y_j||^2 = ||x_i||^2 + ||y_j||^2 - 2 x_i . y_j   (clamped at 0)
        euclidean:    C_ij = ||x_i - y_j||
        cos:          C_ij = 1 - cos(x_i, y_j) = 1 - x_i . y_j   (unit vectors; clamped at 0)

    ``cos`` is Word Rotator's Distance's cost (Yokoi et al., 2020); on unit vectors it is half
    the squared Euclidean distance.

    Parameters
    ----------
    x : torch.Tensor
        ``[B, Tr, D]`` reference vectors.
    y : torch.Tensor
        ``[B, Tc, D]`` candidate vectors.
    cost : str
        ``"euclidean"``, ``"sqeuclidean"`` or ``"cos"``.

    Returns
    -------
    torch.Tensor
        ``C [B, Tr, Tc]``, float64.

    Examples
    --------
    >>> x = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    >>> y = torch.tensor([[[0.6, 0.8]]])
    >>> [round(c, 4) for c in pairwise_cost(x, y, "sqeuclidean").flatten().tolist()]  # 2 - 2 x_i . y_j
    [0.8, 0.4]
    >>> [round(c, 4) for c in pairwise_cost(x, y, "euclidean").flatten().tolist()]
    [0.8944, 0.6325]
    >>> [round(c, 4) for c in pairwise_cost(x, y, "cos").flatten().tolist()]  # 1 - x_i . y_j
    [0.4, 0.2]
    """
    x, y = x.double(), y.double()
    dot = torch.bmm(x, y.transpose(1, 2))
    return cost_form(dot, (x * x).sum(-1).unsqueeze(2) + (y * y).sum(-1).unsqueeze(1) - 2 * dot, cost)


def cost_form(dot: torch.Tensor, sq: torch.Tensor, cost: str, floor: float = 0.0) -> torch.Tensor:
    """The cost ``cost`` from the dot products ``dot`` of unit vectors and their squared distances
    ``sq`` (the one table of cost forms: :func:`pairwise_cost` gives it vectors, the fit cosines).
    Rounding can make either a tiny negative, so both are clamped at 0; the Euclidean cost's
    square is clamped at ``floor`` (a fit takes the gradient of its square root).

    Examples
    --------
    >>> cos = torch.tensor([1.0, 0.6, -1.0], dtype=torch.float64)
    >>> [[round(c, 4) for c in cost_form(cos, 2 - 2 * cos, f).tolist()] for f in COSTS]
    [[0.0, 0.8944, 2.0], [0.0, 0.8, 4.0], [0.0, 0.4, 2.0]]
    """
    if cost == "cos":
        return (1.0 - dot).clamp_min(0)
    if cost == "sqeuclidean":
        return sq.clamp_min(0)
    if cost == "euclidean":
        return sq.clamp_min(floor).sqrt()
    raise ValueError(f"unknown cost {cost!r}")


def exact_plans(cost: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Optimal transport plans, one exact problem per pair::

        T = argmin_T <C, T>   over   T >= 0,  T 1 = a,  T^T 1 = b

    Each pair is solved by POT's network simplex (:func:`network_simplex`, the solver behind
    ``ot.emd``) on its rectangular problem restricted to the units with mass (``a_i > 0``,
    ``b_j > 0``); units without mass get no flow. This equals the square problem over the union
    of both texts' units with zero mass on the other side (what MoverScore hands to pyemd), only
    smaller. Pairs where either side has no mass get ``T = 0``.

    Parameters
    ----------
    cost : torch.Tensor
        ``C [B, Tr, Tc]``.
    a, b : torch.Tensor
        ``[B, Tr]``, ``[B, Tc]`` masses ``>= 0``, each summing to 1 (or all 0).

    Returns
    -------
    torch.Tensor
        ``T [B, Tr, Tc]``, float64, on ``cost``'s device.

    Raises
    ------
    NonFiniteError
        ``cost`` holds NaN or infinity (on NaN costs the solver returns a plan of cost 0).

    Examples
    --------
    Two reference units with masses 1/4 and 3/4 sent to two candidate units of mass 1/2; the
    cheap diagonal is used as far as the masses allow:

    >>> cost = torch.tensor([[[0.0, 1.0], [2.0, 0.5]]], dtype=torch.float64)
    >>> a, b = torch.tensor([[0.25, 0.75]]), torch.tensor([[0.5, 0.5]])
    >>> plan = exact_plans(cost, a, b)
    >>> plan[0].tolist()
    [[0.25, 0.0], [0.25, 0.5]]
    >>> (plan * cost).sum().item()  # the word mover's distance
    0.75
    """
    check_finite_cost(cost)
    solve = network_simplex(plans=True)
    c_np = cost.detach().double().cpu().numpy()
    a_np = a.detach().double().cpu().numpy()
    b_np = b.detach().double().cpu().numpy()
    plans = np.zeros_like(c_np)
    for k in range(c_np.shape[0]):  # one small LP per pair: POT has no batched exact solver
        rows = np.flatnonzero(a_np[k] > 0)
        cols = np.flatnonzero(b_np[k] > 0)
        if len(rows) == 0 or len(cols) == 0:
            continue
        ak, bk = a_np[k, rows], b_np[k, cols]
        sub = np.ascontiguousarray(c_np[k][np.ix_(rows, cols)])
        plans[k][np.ix_(rows, cols)] = solve(ak / ak.sum(), bk / bk.sum(), sub)
    return torch.from_numpy(plans).to(cost.device)


def drop_flows(plan: np.ndarray, share: float) -> np.ndarray:
    """A transport plan with its smallest flows set to 0 (XMoverScore's "flow dropout").

    With ``f_(1) <= ... <= f_(q)`` the plan's ``q`` nonzero flows and ``k = max(int(q * share), 1)``,
    every flow below ``f_(k)`` becomes 0: the ``k - 1`` smallest, fewer where flows tie with
    ``f_(k)`` (the reference code's rule). Uniform masses make many flows equal in exact
    arithmetic (``1/n``, ``1/m``, their differences), computed a few ulps apart; a flow within
    :data:`FLOW_TIE` of ``f_(k)`` (the masses sum to 1) counts as equal to it and is kept, so
    which of them go does not depend on rounding. The result no longer meets the marginals;
    its ``<C, T>`` is what the reference scores. ``share = 0`` keeps every flow.

    Parameters
    ----------
    plan : numpy.ndarray
        ``T [Tr, Tc]`` (not written to).
    share : float
        In ``[0, 1)``.

    Returns
    -------
    numpy.ndarray
        A new plan (``plan`` itself when ``share`` is 0 or no flow is nonzero).

    Examples
    --------
    Six nonzero flows, share 0.5: ``k = 3``, so the flows below the third smallest (0.1) go.

    >>> plan = np.array([[0.05, 0.1, 0.0], [0.1, 0.25, 0.02], [0.0, 0.0, 0.48]])
    >>> drop_flows(plan, 0.5).tolist()
    [[0.0, 0.1, 0.0], [0.1, 0.25, 0.0], [0.0, 0.0, 0.48]]
    """
    if share == 0:
        return plan
    flows = plan[plan != 0]
    if not flows.size:
        return plan
    k = max(int(flows.size * share), 1)
    threshold = np.partition(flows, k - 1)[k - 1]
    return np.where(plan < threshold - FLOW_TIE, 0.0, plan)


def check_finite_cost(cost: torch.Tensor) -> None:
    """Raise :class:`~alignscore.errors.NonFiniteError` when ``cost`` holds NaN or infinity."""
    if not bool(torch.isfinite(cost).all()):
        raise NonFiniteError(f"the cost matrix and so the token vectors {NOT_FINITE}")


def _flush(x: torch.Tensor) -> torch.Tensor:
    """``x`` with entries whose ``exp`` would be subnormal set to -inf (so ``exp`` gives exact 0).
    Subnormal arithmetic is very slow on CPUs; the flushed terms are below the smallest normal
    number, far below what can change a sum that includes a term of size 1."""
    return x.masked_fill(x < math.log(torch.finfo(x.dtype).tiny), float("-inf"))


def _logsumexp(x: torch.Tensor, dim: int) -> torch.Tensor:
    """``log sum_dim exp(x)`` (keepdim), shifted by the maximum and with subnormal terms flushed."""
    if x.shape[dim] == 0:
        return x.sum(dim=dim, keepdim=True).fill_(float("-inf"))
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    return m + torch.exp(_flush(x - m)).sum(dim=dim, keepdim=True).log()


def single_threaded_blas() -> contextlib.AbstractContextManager[Any]:
    """A context in which NumPy's BLAS runs on one thread: for the exact solver's small per-block
    matrices, BLAS threads only wait on each other and on torch's (measured on the table9 grid)."""
    return _blas_controller().limit(limits=1, user_api="blas")


@functools.lru_cache(maxsize=1)
def _blas_controller() -> ThreadpoolController:
    # inspecting the loaded libraries takes milliseconds (more than a batch of small problems): once
    return ThreadpoolController()


@functools.lru_cache(maxsize=8)
def network_simplex(plans: bool = False, balanced: bool = False,
                    duals: bool = False) -> Callable[[np.ndarray, np.ndarray, np.ndarray], Any]:
    """POT's network simplex as ``(a, b, C) -> min_T <C, T>`` (``plans``: ``-> T``, the optimal
    plan; ``duals``: ``-> (T, u, v)``, the plan and dual potentials with ``u_i + v_j <= C_ij``,
    which are the distance's gradients in ``a`` and ``b`` up to a constant, as ``ot.emd2``
    sets them) for masses ``a, b >= 0`` that each sum to 1 (float64, ``C`` C-contiguous);
    units without mass take no part (POT drops them).

    Calls POT's C entry point ``emd_c`` directly: ``ot.emd2``'s per-call backend, marginal and
    gradient handling cost more than solving a 30 x 30 problem (measured on the table9 grid).
    As ``ot.emd2`` does, ``b`` is rescaled to ``a``'s total, unless ``balanced`` says the caller
    did so (:func:`~alignscore._ops.balanced_rows`, for many rows at once). ``emd_c`` is not
    public API: when it is missing or answers a test problem wrongly (another POT version),
    ``ot.emd2`` (``ot.emd``) is used.
    """
    import ot  # POT; imported here so that importing alignscore stays light

    def public(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> Any:
        if duals:
            plan, log = ot.emd(a, b, c, numItermax=EMD_MAX_ITER, log=True, check_marginals=False)
            return plan, log["u"], log["v"]
        if plans:
            return ot.emd(a, b, c, numItermax=EMD_MAX_ITER, check_marginals=False)
        return float(ot.emd2(a, b, c, numItermax=EMD_MAX_ITER, check_marginals=False))

    try:
        from ot.lp.emd_wrap import emd_c
    except ImportError:
        return public

    def direct(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> Any:
        plan, value, u, v, code = emd_c(a, b if balanced else b * (a.sum() / b.sum()), c, EMD_MAX_ITER, 1)
        if code != 1:  # 1: optimal; POT warns in the same way
            warnings.warn(f"POT's network simplex stopped before optimality (code {code})", stacklevel=3)
        return (plan, u, v) if duals else plan if plans else float(value)

    a, b, c = np.array([0.25, 0.75]), np.array([0.5, 0.5]), np.array([[0.0, 1.0], [2.0, 0.5]])
    try:
        mine, theirs = direct(a, b, c), public(a, b, c)
        if duals:  # the same plan, and potentials that price it alike (they are unique up to a constant)
            ok = bool(np.allclose(mine[0], theirs[0], rtol=0, atol=1e-12)) and bool(np.allclose(
                (mine[1] @ a + mine[2] @ b), (theirs[1] @ a + theirs[2] @ b), rtol=0, atol=1e-12))
        else:
            ok = bool(np.allclose(mine, theirs, rtol=0, atol=1e-12))
    except (TypeError, ValueError):
        ok = False
    return direct if ok else public


class SinkhornResult(NamedTuple):
    """What :func:`sinkhorn_plans` returns: the plans ``[B, Tr, Tc]``, the iterations run, each
    pair's row-marginal error ``sum_i |(T 1)_i - a_i|`` ``[B]`` (0 for empty pairs) and whether
    it is below the tolerance ``[B]``."""

    plan: torch.Tensor
    iterations: int
    error: torch.Tensor
    converged: torch.Tensor


# Over-relaxation factor of the Sinkhorn updates (see sinkhorn_plans).
OVERRELAX = 1.9


class SinkhornInputs(NamedTuple):
    """What the Sinkhorn iterations run on: which pairs are ``empty`` ``[B]``, the masses ``a``,
    ``b`` normalised (an empty side uniform), their logarithms ``log_a [B, Tr, 1]``,
    ``log_b [B, 1, Tc]`` (``-inf`` without mass) and ``scaled = -C / reg`` ``[B, Tr, Tc]``."""

    empty: torch.Tensor
    a: torch.Tensor
    b: torch.Tensor
    log_a: torch.Tensor
    log_b: torch.Tensor
    scaled: torch.Tensor


def sinkhorn_inputs(cost: torch.Tensor, a: torch.Tensor, b: torch.Tensor, reg: float | torch.Tensor) -> SinkhornInputs:
    """The :class:`SinkhornInputs` of a batch (differentiable in ``cost``, ``a``, ``b`` and a
    tensor ``reg``: a mass of 0 has no gradient through its logarithm)."""
    empty = (a.sum(-1) <= 0) | (b.sum(-1) <= 0)
    # an empty side gets a dummy uniform mass so that the iterations stay finite; zeroed below
    a = torch.where(empty.unsqueeze(-1), torch.ones_like(a), a)
    b = torch.where(empty.unsqueeze(-1), torch.ones_like(b), b)
    a, b = a / a.sum(-1, keepdim=True), b / b.sum(-1, keepdim=True)
    neg_inf = torch.tensor(float("-inf"), dtype=cost.dtype, device=cost.device)
    log_a = torch.where(a > 0, torch.where(a > 0, a, torch.ones_like(a)).log(), neg_inf).unsqueeze(2)
    log_b = torch.where(b > 0, torch.where(b > 0, b, torch.ones_like(b)).log(), neg_inf).unsqueeze(1)
    return SinkhornInputs(empty, a, b, log_a, log_b, -cost / reg)


def row_potential(scaled: torch.Tensor, log_b: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """``f [B, Tr, 1]`` (in units of reg) that makes the rows of the plan exact for ``g``."""
    return -_logsumexp(scaled + g + log_b, dim=2)


def column_potential(scaled: torch.Tensor, log_a: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """``g [B, 1, Tc]`` (in units of reg) that makes the columns of the plan exact for ``f``."""
    return -_logsumexp(scaled + f + log_a, dim=1)


def potential_plan(scaled: torch.Tensor, log_a: torch.Tensor, log_b: torch.Tensor, f: torch.Tensor,
                   g: torch.Tensor) -> torch.Tensor:
    """``T_ij = a_i b_j exp(f_i + g_j - C_ij / reg)``."""
    return torch.exp(_flush(log_a + f + g + log_b + scaled))


def sinkhorn_plans(cost: torch.Tensor, a: torch.Tensor, b: torch.Tensor, reg: float,
                   max_iter: int = 1000, tol: float = 1e-9, check_every: int = 10) -> SinkhornResult:
    """Entropic plans ``T [B, Tr, Tc]`` by Sinkhorn iterations in the log domain, all pairs at
    once, on ``cost``'s device and in its dtype.

    Solves ``min_T <C, T> - reg * H(T)`` subject to the marginals. With dual potentials ``f, g``
    the Sinkhorn updates and the plan are::

        f_i <- -reg * log sum_j b_j exp((g_j - C_ij) / reg)
        g_j <- -reg * log sum_i a_i exp((f_i - C_ij) / reg)
        T_ij = a_i b_j exp((f_i + g_j - C_ij) / reg)

    (log-sum-exp throughout, so small ``reg`` does not underflow). Plain updates converge
    slowly when ``reg`` is small against the costs (thousands of iterations at ``reg = 0.02``
    on near-duplicate texts), so after the first ``2 * check_every`` plain ones the updates are
    over-relaxed, ``f <- f + w (f_update - f)`` with ``w = OVERRELAX`` (Thibault et al., 2021,
    "Overrelaxed Sinkhorn-Knopp"); a pair whose error grows above twice its best goes back to
    plain updates (``w = 1``) for good, which always converge. The fixed point, and so the
    converged plan, is the same. The returned plan has its ``g`` from a last plain update, so
    its column marginals are exact; a pair stops once its row-marginal error
    ``sum_i |(T 1)_i - a_i|`` is below ``tol`` (checked every ``check_every`` iterations and
    after the last), so its plan does not depend on which other pairs share the batch. All stop
    after ``max_iter``: the result says which pairs did not converge (a caller must say so).
    Units without mass get no flow; pairs where either side has no mass get ``T = 0``.

    Parameters
    ----------
    cost : torch.Tensor
        ``C [B, Tr, Tc]`` (its dtype is the iterations' dtype).
    a, b : torch.Tensor
        ``[B, Tr]``, ``[B, Tc]`` masses ``>= 0`` (normalised here).
    reg : float
        The entropic regularisation ``> 0``, in the units of the cost.
    max_iter, tol, check_every : int, float, int
        The iteration limit, the row-marginal error (L1) below which a pair stops, and how
        often it is measured.

    Returns
    -------
    SinkhornResult
        ``(plan, iterations, error, converged)``.

    Raises
    ------
    NonFiniteError
        A cost with NaN or infinity.
    ConfigError
        A plan that is not finite (``reg`` too small for the dtype).

    Examples
    --------
    The problem of :func:`exact_plans`: as ``reg`` shrinks, the transport cost of the entropic
    plan approaches the exact 0.75 from above.

    >>> cost = torch.tensor([[[0.0, 1.0], [2.0, 0.5]]], dtype=torch.float64)
    >>> a, b = torch.tensor([[0.25, 0.75]], dtype=torch.float64), torch.tensor([[0.5, 0.5]], dtype=torch.float64)
    >>> for reg in (1.0, 0.5, 0.1):
    ...     result = sinkhorn_plans(cost, a, b, reg, tol=1e-12)
    ...     print(reg, round((result.plan * cost).sum().item(), 4), bool(result.converged.all()))
    1.0 0.8256 True
    0.5 0.7582 True
    0.1 0.75 True
    """
    return sinkhorn_potentials(cost, a, b, reg, max_iter, tol, check_every)[0]


def sinkhorn_potentials(cost: torch.Tensor, a: torch.Tensor, b: torch.Tensor, reg: float, max_iter: int = 1000,
                        tol: float = 1e-9, check_every: int = 10) -> tuple[SinkhornResult, torch.Tensor]:
    """:func:`sinkhorn_plans`'s result and its row potential ``f [B, Tr, 1]`` (in units of
    ``reg``): the plan is :func:`potential_plan` of ``f`` and ``column_potential(f)``."""
    check_finite_cost(cost)
    empty, a, b, log_a, log_b, scaled = sinkhorn_inputs(cost, a, b, reg)

    def plan_of(f: torch.Tensor, g: torch.Tensor, k: slice | torch.Tensor = slice(None)) -> torch.Tensor:
        return potential_plan(scaled[k], log_a[k], log_b[k], f, g)

    def col_update(f: torch.Tensor, k: slice | torch.Tensor = slice(None)) -> torch.Tensor:
        return column_potential(scaled[k], log_a[k], f)  # the g that makes the columns exact

    def row_error(plan: torch.Tensor, k: slice | torch.Tensor = slice(None)) -> torch.Tensor:  # [B, 1, 1]
        return (plan.sum(2, keepdim=True) - a[k].unsqueeze(2)).abs().sum(1, keepdim=True)

    f = torch.zeros_like(log_a)  # f / reg
    g = torch.zeros_like(log_b)  # g / reg
    # the pairs still iterating: their indices, and their potentials, weights and best errors
    # (each pair's iterations are its own: dropping the others changes none of its numbers)
    k = torch.arange(cost.shape[0], device=cost.device)
    fk, gk = f, g
    shape = (cost.shape[0], 1, 1)
    active = torch.ones(shape, dtype=torch.bool, device=cost.device)
    w = torch.ones(shape, dtype=cost.dtype, device=cost.device)
    best = torch.full(shape, float("inf"), dtype=cost.dtype, device=cost.device)
    it = 0
    for it in range(1, max_iter + 1):
        fk = torch.where(active, fk + w * (row_potential(scaled[k], log_b[k], gk) - fk), fk)
        gk = torch.where(active, gk + w * (col_update(fk, k) - gk), gk)
        if it % check_every == 0 or it == max_iter:
            err = row_error(plan_of(fk, col_update(fk, k), k), k)
            if it == 2 * check_every:
                w = torch.full_like(w, OVERRELAX)
            w = torch.where(err > 2 * best, torch.ones_like(w), w)
            best = torch.minimum(best, err)
            active = active & (err >= tol)
            if not bool(active.any()):
                break
            if 2 * int(active.sum()) <= len(k):  # most have stopped: go on with the others alone
                f, g = f.index_copy(0, k, fk), g.index_copy(0, k, gk)
                keep = active.flatten()
                k, fk, gk, w, best, active = k[keep], fk[keep], gk[keep], w[keep], best[keep], active[keep]
    f, g = f.index_copy(0, k, fk), g.index_copy(0, k, gk)
    plan = plan_of(f, col_update(f)).masked_fill(empty.view(-1, 1, 1), 0.0)
    if not bool(torch.isfinite(plan).all()):
        raise ConfigError(f"Sinkhorn's plan is not finite: reg {reg!r} is too small for {cost.dtype}")
    err = row_error(plan).flatten().masked_fill(empty, 0.0)
    return SinkhornResult(plan, it, err, err < tol), f
