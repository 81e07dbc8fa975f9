"""The optimal-transport aligners (:class:`~alignscore.aligners.WMD`, :class:`~alignscore.aligners.Sinkhorn`)
as differentiable functions of a batch's mixed cosines and masses, with the aligners' own numbers.

The cost between two unit vectors is a function of their cosine alone (``||x - y||^2 = 2 - 2
cos``), so what :mod:`~alignscore.fit.features` keeps gives the costs too, between
tokens or between n-gram windows (:mod:`~alignscore.fit.windows`). The exact
distance is found by the aligner's solver (POT's network simplex); its gradient is what ``ot.emd2`` gives on torch tensors: the optimal plan for the costs and the dual
potentials for the masses (the distance is piecewise linear in the costs, a subgradient where
the plan is not unique). Sinkhorn's plan comes from the aligner's iterations
(:func:`~alignscore.aligners.transport.sinkhorn_potentials`); its gradient is the implicit one
of the converged plan: one Newton step on the fixed point ``f = row(column(f))`` whose value is 0,
so the numbers stay the aligner's and the derivative is ``-J^-1 dR/dtheta``."""

from __future__ import annotations

import numpy as np
import torch

from .._ops import balanced_rows, normalise_mass
from ..aligners.base import Aligner
from ..aligners.optimal import WMD, Sinkhorn, TransportAligner, score_from_distance
from ..aligners.transport import (column_potential, cost_form, network_simplex, potential_plan, row_potential,
                                   sinkhorn_inputs, sinkhorn_potentials)
from ..config.schema import OPTION

#: the squared distance below which the Euclidean cost is ``sqrt`` of it (its gradient stays finite at 0)
SQ_FLOOR = 1e-30


def refused(aligner: Aligner) -> tuple[str, str] | None:
    """``(option, why)`` when the fit cannot follow ``aligner``'s settings: flow dropout (the
    distance after it is not a function the solver's plan differentiates); None otherwise (n-gram
    windows included: :mod:`~alignscore.fit.windows`).

    Examples
    --------
    >>> refused(WMD(flow_dropout=0.3))[0], refused(WMD(n_gram=2)), refused(Sinkhorn(n_gram="sentence"))
    ('flow_dropout', None, None)
    """
    if isinstance(aligner, WMD) and aligner.flow_dropout:
        return OPTION.flow_dropout.name, (f"the fit cannot follow wmd's flow dropout ({aligner.flow_dropout!r}); "
                                          "start from a run with flow_dropout = 0")
    return None


def products_dtype(aligner: Aligner | None) -> torch.dtype:
    """The dtype a fit keeps its products in: float64 through the optimal-transport aligners
    (the Euclidean cost ``sqrt(2 - 2 cos)`` is steep near 0, where float32 products would move
    a near-duplicate pair's distance by 1e-4), float32 otherwise."""
    return torch.float64 if isinstance(aligner, TransportAligner) else torch.float32


def cost_of(cos: torch.Tensor, cost: str) -> torch.Tensor:
    """The aligner's cost between unit vectors from their cosines (as
    :func:`~alignscore.aligners.transport.pairwise_cost` computes it from the vectors).

    Examples
    --------
    >>> cos = torch.tensor([1.0, 0.6, -1.0], dtype=torch.float64)
    >>> [round(c, 4) for c in cost_of(cos, "euclidean").tolist()]
    [0.0, 0.8944, 2.0]
    >>> cost_of(cos, "sqeuclidean").tolist(), [round(c, 4) for c in cost_of(cos, "cos").tolist()]
    ([0.0, 0.8, 4.0], [0.0, 0.4, 2.0])
    """
    return cost_form(cos, 2.0 - 2.0 * cos, cost, SQ_FLOOR)


def exact_distances(cost: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``WMD [B]`` for costs ``[B, Tr, Tc]`` and normalised masses ``a [B, Tr]``, ``b [B, Tc]``
    (0 for a pair with a side without mass), differentiable in all three: the value is
    ``<C, T*>`` for the exact plan ``T*``; the gradients are ``T*`` for ``C`` and the dual
    potentials ``u``, ``v`` for ``a``, ``b`` (``ot.emd2``'s).

    Examples
    --------
    >>> cost = torch.tensor([[[0.0, 1.0], [2.0, 0.5]]], dtype=torch.float64, requires_grad=True)
    >>> a = torch.tensor([[0.25, 0.75]], dtype=torch.float64)
    >>> d = exact_distances(cost, a, torch.tensor([[0.5, 0.5]], dtype=torch.float64))
    >>> d.backward(); d.item(), cost.grad[0].tolist()
    (0.75, [[0.25, 0.0], [0.25, 0.5]])
    """
    solve = network_simplex(balanced=True, duals=True)
    c = cost.detach().double().cpu().numpy()
    an, bn = balanced_rows(a.detach().cpu().numpy(), b.detach().cpu().numpy())
    plan, u, v = np.zeros_like(c), np.zeros_like(an), np.zeros_like(bn)
    for k in range(c.shape[0]):  # one small LP per pair, as the aligner solves them
        rows, cols = np.flatnonzero(an[k] > 0), np.flatnonzero(bn[k] > 0)
        if len(rows) == 0 or len(cols) == 0:
            continue
        t, uk, vk = solve(an[k, rows], bn[k, cols], np.ascontiguousarray(c[k][np.ix_(rows, cols)]))
        plan[k][np.ix_(rows, cols)], u[k, rows], v[k, cols] = t, uk, vk
    plan_t, u_t, v_t = (torch.from_numpy(x).to(device=cost.device, dtype=cost.dtype) for x in (plan, u, v))
    # the dual terms are 0 in value: they carry the potentials as the masses' gradients
    return ((plan_t * cost).sum((1, 2)) + (u_t * (a - a.detach())).sum(-1)
            + (v_t * (b - b.detach())).sum(-1))


def sinkhorn_distances(cost: torch.Tensor, a: torch.Tensor, b: torch.Tensor, aligner: Sinkhorn,
                       reg: float | torch.Tensor) -> torch.Tensor:
    """``<C, T> [B]`` for Sinkhorn's plan ``T`` (``aligner``'s iterations, dtype, ``max_iter`` and
    ``tol``; entropic strength ``reg``), differentiable in ``cost``, the masses and a tensor
    ``reg`` through the implicit derivative of the converged plan. With ``R(f) = f -
    row(column(f))`` (the Sinkhorn map on the row potential) and ``J = I - P + 11'/n`` (its
    Jacobian ``I - P`` at the solution, ``P = pi rho'`` from the plan's row- and
    column-normalised kernels, made invertible along the potentials' free constant, which moves
    no plan), ``f = f* - J^-1 (R(f*) - R(f*)|detached)`` is ``f*`` in value and has the implicit
    function theorem's derivative.

    Examples
    --------
    >>> cost = torch.tensor([[[0.0, 1.0], [2.0, 0.5]]], dtype=torch.float64)
    >>> a, b = torch.tensor([[0.25, 0.75]], dtype=torch.float64), torch.tensor([[0.5, 0.5]], dtype=torch.float64)
    >>> round(sinkhorn_distances(cost, a, b, Sinkhorn(reg=0.5, tol=1e-12), 0.5).item(), 4)
    0.7582
    """
    dt = getattr(torch, aligner.sinkhorn_dtype)
    c, a, b = cost.to(dt), a.to(dt), b.to(dt)
    reg = reg.to(dt) if isinstance(reg, torch.Tensor) else reg
    value = float(reg.detach()) if isinstance(reg, torch.Tensor) else float(reg)
    _, f_star = sinkhorn_potentials(c.detach(), a.detach(), b.detach(), value, aligner.max_iter, aligner.tol)
    empty, _, _, log_a, log_b, scaled = sinkhorn_inputs(c, a, b, reg)
    with torch.no_grad():
        g_star = column_potential(scaled, log_a, f_star)
        pi = torch.softmax(scaled + g_star + log_b, dim=2)  # T_ij / a_i
        rho = torch.softmax(scaled + f_star + log_a, dim=1)  # T_ij / b_j
        n = scaled.shape[1]
        jac = (torch.eye(n, dtype=dt, device=c.device) - pi @ rho.transpose(1, 2)
               + torch.full((n, n), 1.0 / max(n, 1), dtype=dt, device=c.device))
    residual = f_star - row_potential(scaled, log_b, column_potential(scaled, log_a, f_star))
    f = f_star - torch.linalg.solve(jac, residual - residual.detach()) if n else f_star
    plan = potential_plan(scaled, log_a, log_b, f, column_potential(scaled, log_a, f))
    plan = plan.masked_fill(empty.view(-1, 1, 1), 0.0)
    return (plan.to(cost.dtype) * cost).sum((1, 2))


def transport_scores(sim: torch.Tensor, ref_mass: torch.Tensor, cand_mass: torch.Tensor, aligner: TransportAligner,
                     reg: float | torch.Tensor | None = None) -> torch.Tensor:
    """``[B]`` scores (float64) of ``aligner`` from the cosines ``sim [B, Tc, Tr]`` of its units
    (candidate by reference: tokens as :func:`~alignscore.fit.model.mixed_similarity`
    gives them, or windows as :func:`~alignscore.fit.windows.window_problem` does) and
    their unnormalised masses ``[B, Tr]``, ``[B, Tc]``: ``1 - d`` or ``1 / (1 + d)``, 0 for a
    pair with a side without mass, as the aligner scores. ``reg``: Sinkhorn's entropic strength
    (default the aligner's)."""
    if not sim.shape[1] or not sim.shape[2]:  # a batch side without units: every pair scores 0
        return torch.zeros(sim.shape[0], dtype=torch.float64, device=sim.device)
    cost = cost_of(sim.transpose(1, 2).double(), aligner.cost)
    a, b = normalise_mass(ref_mass.double()), normalise_mass(cand_mass.double())
    if isinstance(aligner, Sinkhorn):
        wmd = sinkhorn_distances(cost, a, b, aligner, aligner.reg if reg is None else reg)
    elif isinstance(aligner, WMD):
        wmd = exact_distances(cost, a, b)
    else:
        raise ValueError(f"the fit has no differentiable form of aligner {aligner.name}")
    empty = (a.sum(-1) <= 0) | (b.sum(-1) <= 0)
    return torch.where(empty, torch.zeros_like(wmd), score_from_distance(wmd, aligner.score_form))
