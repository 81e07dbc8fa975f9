"""Optimal-transport aligners: the word mover's distance (exact) and its entropic (Sinkhorn)
approximation, over tokens or n-gram windows (MoverScore)."""

from __future__ import annotations

import warnings
from abc import abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterator, Sequence, cast

import numpy as np
import torch

from .._ops import balanced_rows, normalise_mass
from ..settings import SettingError, check_settings, setting
from .base import Aligner, Alignment, PairBatch, check_finite, number, same_vectors
from .ngrams import SENTENCE, ngram_units, pool_ngrams, window_inner, windows
from .transport import (COSTS, drop_flows, exact_plans, network_simplex, pairwise_cost,
                        single_threaded_blas, sinkhorn_plans)

SCORE_FORMS = ("1-d", "1/(1+d)")
Problem = tuple[int, int, np.ndarray, np.ndarray, np.ndarray]  # (variant, pair, a, b, C) for the exact solver
# Pairs whose costs the exact aligner builds at once (of similar lengths): temporaries [variants, pairs, T, T]
# of a few MB at most.
PAIRS_PER_BLOCK = 16


def _token_sqdist(x: np.ndarray, y: np.ndarray, gram: np.ndarray) -> np.ndarray:
    """``|x_i|^2 + |y_j|^2 - 2 x_i . y_j`` (clipped at 0) ``[B, Tr, Tc]`` of tokens ``x [B, Tr, D]``,
    ``y [B, Tc, D]`` with inner products ``gram [B, Tr, Tc]``: shared by a block's token-level jobs."""
    sqx, sqy = np.einsum("btd,btd->bt", x, x), np.einsum("btd,btd->bt", y, y)
    return np.maximum(sqx[:, :, None] + sqy[:, None, :] - 2.0 * gram, 0.0)


def _ends(takes_part: np.ndarray) -> np.ndarray:
    """``[B]``: one past the last token that takes part in any variant (``takes_part [V, B, T]``)."""
    any_variant = takes_part.any(0)
    if not any_variant.shape[-1]:
        return np.zeros(any_variant.shape[0], dtype=np.int64)
    return np.where(any_variant.any(-1), any_variant.shape[-1] - np.argmax(any_variant[:, ::-1], -1), 0)


def _norms(norm: torch.Tensor | None) -> torch.Tensor:
    if norm is None:
        raise ValueError("the n-gram mean of states needs the batch's vector norms (ref_norm, cand_norm)")
    return norm


def score_from_distance(wmd: torch.Tensor, form: str) -> torch.Tensor:
    """A score from a distance ``d``, higher for closer texts::

        "1-d":      score = 1 - d            (moverscore 1.0.3)
        "1/(1+d)":  score = 1 / (1 + d)      (later MoverScore code)

    Parameters
    ----------
    wmd : torch.Tensor
        Distances ``d >= 0``.
    form : str
        One of :data:`SCORE_FORMS`.

    Returns
    -------
    torch.Tensor
        The scores, the shape of ``wmd``.

    Examples
    --------
    >>> d = torch.tensor([0.0, 0.25, 1.0])
    >>> score_from_distance(d, "1-d").tolist()
    [1.0, 0.75, 0.0]
    >>> [round(s, 4) for s in score_from_distance(d, "1/(1+d)").tolist()]
    [1.0, 0.8, 0.5]
    """
    if form == "1-d":
        return 1.0 - wmd
    if form == "1/(1+d)":
        return 1.0 / (1.0 + wmd)
    raise ValueError(f"unknown score form {form!r}")


@dataclass
class _Units:
    """The units one OT problem runs over: tokens (n = 1) or n-gram windows."""

    ref: torch.Tensor  # [B, Ur, D] unit vectors
    cand: torch.Tensor  # [B, Uc, D]
    ref_mass: torch.Tensor  # [B, Ur] unnormalised
    cand_mass: torch.Tensor  # [B, Uc]
    ref_units: torch.Tensor | None  # [B, Ur, Tr] or None for tokens
    cand_units: torch.Tensor | None


@dataclass(frozen=True)
class TransportAligner(Aligner):
    """Shared by the OT aligners (:class:`WMD`, :class:`Sinkhorn`): units, cost, score form, scores and alignment
    details. For unit vectors ``x`` (reference), ``y`` (candidate), normalised masses ``a``, ``b`` and cost ``C``
    (Euclidean or squared Euclidean distance, or ``1 - cos``), a plan ``T`` (:meth:`plans`) gives ``WMD = <C, T>``
    and ``score = 1 - WMD`` or ``1 / (1 + WMD)``; only units with mass carry flow, and a pair with a side without
    mass scores 0. Units: tokens, or windows of tokens weighted by their masses (:mod:`alignscore.aligners.ngrams`).

    Parameters
    ----------
    cost, score_form, n_gram
        As for :class:`WMD`.

    Examples
    --------
    >>> WMD(n_gram=2, score_form="1/(1+d)").signature()
    'wmd(euclidean,1/(1+d),n=2)'
    """

    cost: str = setting("euclidean", choices=COSTS, help=(
        "Optimal transport: the cost between unit vectors, euclidean (moverscore_v2, the default), "
        "sqeuclidean (MoverScore v1) or cos (1 - cos; with --weighting norm and wmd: Word Rotator's Distance)."))
    score_form: str = setting("1-d", choices=SCORE_FORMS, aliases=("score",), help=(
        "Optimal transport, baryscore: the score from the distance d, 1-d (moverscore 1.0.3, the default) or "
        "1/(1+d)."))
    n_gram: int | str = setting(1, ge=1, choices=(SENTENCE,), help=(
        "Optimal transport: n-gram size (1, 2, ...) or 'sentence' (SMD)."))

    metrics = ("score",)
    primary = "score"

    def __post_init__(self) -> None:
        check_settings(self)

    @abstractmethod
    def plans(self, cost: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Transport plans ``[B, Ur, Uc]`` for normalised masses ``a``, ``b`` (0 for empty pairs)."""

    def distances(self, u: _Units, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``WMD [B] = <C, T>`` for the units ``u`` and normalised masses ``a``, ``b``."""
        cost = pairwise_cost(u.ref, u.cand, self.cost)
        return (self.plans(cost, a, b).to(cost.dtype) * cost).sum((1, 2))

    def _units(self, batch: PairBatch, dense: bool = False) -> _Units:
        """The units of a batch; ``dense``: the window-by-token matrices too (:meth:`alignment`)."""
        if self.n_gram == 1:
            return _Units(batch.ref, batch.cand, batch.ref_mass, batch.cand_mass, None, None)
        raw = self.reads_norms()
        ref, ref_mass = pool_ngrams(batch.ref, batch.ref_mass, batch.ref_match, self.n_gram,
                                    _norms(batch.ref_norm) if raw else None)
        cand, cand_mass = pool_ngrams(batch.cand, batch.cand_mass, batch.cand_match, self.n_gram,
                                      _norms(batch.cand_norm) if raw else None)
        ur = ngram_units(batch.ref_match, self.n_gram) if dense else None
        uc = ngram_units(batch.cand_match, self.n_gram) if dense else None
        return _Units(ref, cand, ref_mass, cand_mass, ur, uc)

    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        u = self._units(check_finite(batch))
        a, b = normalise_mass(u.ref_mass.double()), normalise_mass(u.cand_mass.double())
        wmd = self.distances(u, a, b).to(a.device)
        empty = (a.sum(-1) <= 0) | (b.sum(-1) <= 0)
        return {"score": torch.where(empty, torch.zeros_like(wmd), score_from_distance(wmd, self.score_form))}

    def alignment(self, batch: PairBatch) -> Alignment:
        """Costs, the plan and per-unit contributions to the score.

        With ``c_i = sum_j T_ij C_ij`` (what reference unit i ships) and ``c'_j = sum_i T_ij C_ij``
        (what candidate unit j receives), both summing to WMD, and the score ``1 - k * WMD``
        (``k = 1`` for ``1 - d``, ``1 / (1 + WMD)`` for ``1 / (1 + d)``), reference unit i
        contributes ``(a_i - k c_i) / 2`` and candidate unit j ``(b_j - k c'_j) / 2``: the masses
        each sum to 1, so the shares add up to the score exactly. Units without mass, and every
        unit of an empty pair, contribute 0 (cost NaN in ``matrix``).
        """
        u = self._units(check_finite(batch), dense=True)
        cost = pairwise_cost(u.ref, u.cand, self.cost)
        a, b = normalise_mass(u.ref_mass.double()), normalise_mass(u.cand_mass.double())
        plan = self.plans(cost, a, b).to(cost.dtype)
        wmd = (plan * cost).sum((1, 2))
        empty = ((a.sum(-1) <= 0) | (b.sum(-1) <= 0)).unsqueeze(-1)
        score = torch.where(empty.squeeze(-1), torch.zeros_like(wmd), score_from_distance(wmd, self.score_form))
        k = torch.ones_like(wmd) if self.score_form == "1-d" else 1.0 / (1.0 + wmd)
        ref_share = (a - k.unsqueeze(-1) * (plan * cost).sum(2)) / 2
        cand_share = (b - k.unsqueeze(-1) * (plan * cost).sum(1)) / 2
        zero = torch.zeros((), dtype=cost.dtype, device=cost.device)
        ref_share, cand_share = torch.where(empty, zero, ref_share), torch.where(empty, zero, cand_share)
        takes_part = (u.ref_mass > 0).unsqueeze(2) & (u.cand_mass > 0).unsqueeze(1)
        return Alignment(kind="cost", matrix=cost.masked_fill(~takes_part, float("nan")), flows={"transport": plan},
                         contributions={"score": (ref_share, cand_share)}, scores={"score": score},
                         ref_units=u.ref_units, cand_units=u.cand_units)

    def _signature_parts(self) -> str:
        return f"{self.cost},{self.score_form},n={self.n_gram}"


@dataclass(frozen=True)
class WMD(TransportAligner):
    """The word mover's distance, solved exactly (POT's network simplex, one problem per pair).

    Parameters
    ----------
    cost : str
        ``"euclidean"`` (moverscore_v2), ``"sqeuclidean"`` (MoverScore v1) or ``"cos"`` (``1 - cos``).
    score_form : str
        ``"1-d"`` (``1 - WMD``, moverscore 1.0.3) or ``"1/(1+d)"``.
    n_gram : int or str
        1 (tokens), n >= 2 (WMD-n) or ``"sentence"`` (SMD).
    ngram_mean : str
        The vector of an n-gram window: ``"unit"`` (the default), the mean of its tokens' unit
        vectors (MoverScore v1's); ``"states"``, the mean of the tokens' vectors before they were
        scaled to unit length (after a remapping, of the remapped ones), XMoverScore's.
    flow_dropout : float
        XMoverScore's flow dropout, a share in ``[0, 1)``: after the exact plan is found, its
        smallest nonzero flows are set to 0 (:func:`~alignscore.aligners.transport.drop_flows`)
        and the distance is ``<C, T>`` over the flows left; 0 (the default) keeps them all.

    Examples
    --------
    ``{"score": [B]}`` per :class:`PairBatch`. Two of three orthogonal reference tokens: a sixth
    of the mass moves from each candidate token to the third, at ``sqrt(2)`` (``1 - cos = 1``):

    >>> ref, match = torch.eye(3).unsqueeze(0), torch.ones(1, 3, dtype=torch.bool)
    >>> batch = PairBatch(ref, ref[:, :2], torch.ones(1, 3), torch.ones(1, 2), match, match[:, :2])
    >>> round(WMD()(batch)["score"].item(), 4), round(WMD(cost="cos")(batch)["score"].item(), 4)
    (0.5286, 0.6667)
    """

    flow_dropout: float = setting(0.0, ge=0, le=1, help=(
        "wmd: XMoverScore's flow dropout, the share (in [0, 1)) of the optimal plan's nonzero flows whose "
        "smallest are set to 0 before the distance is summed (the reference code's 0.3); 0, the default, keeps all."))

    ngram_mean: str = setting("unit", choices=("unit", "states"), help=(
        "wmd with --n-gram 2 or more: an n-gram's vector, the mean of its tokens' unit vectors (unit, the default, "
        "MoverScore v1's) or of their vectors before unit scaling (states, XMoverScore's)."))

    name = "wmd"

    def reads_norms(self) -> bool:
        return self.ngram_mean == "states" and self.n_gram != 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.flow_dropout == 1:
            raise SettingError("flow_dropout", "must be below 1 (a share of the flows), not 1")

    def plans(self, cost: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        plans = exact_plans(cost, a, b)
        if not self.flow_dropout:
            return plans
        kept = [torch.from_numpy(drop_flows(p.cpu().numpy(), self.flow_dropout)) for p in plans]
        return torch.stack(kept).to(plans.device) if kept else plans

    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        return self.score_variants([batch])[0]

    def score_variants(self, batches: Sequence[PairBatch]) -> list[dict[str, torch.Tensor]]:
        return self.score_together([(self, batches)])[0]

    @classmethod
    def score_together(cls, jobs: Sequence[tuple[Aligner, Sequence[PairBatch]]]
                       ) -> list[list[dict[str, torch.Tensor]]]:
        """The exact WMD of every pair under every job's aligner (tokens or n-grams, any cost)
        and variant (the batches' masses and members), in NumPy float64, blocks of
        :data:`PAIRS_PER_BLOCK` pairs of similar lengths at a time.

        A block's vectors and inner products ``x_i . y_j`` are computed once for all its jobs and
        variants, then each job's costs (tokens: one matrix per pair for every variant; n-gram
        windows: :meth:`_window_problems`), then the solver once per pair, job and variant.
        Blocks of similar lengths, each cut to its longest texts, keep padding and the
        temporaries ``[V, pairs, T, T]`` small. The solver leaves units without mass out. Blocks
        run on torch's threads (the solver releases the GIL); a pair's score is the same in any
        block."""
        aligners = [cast(WMD, aligner) for aligner, _ in jobs]  # the engine groups jobs by class
        first = same_vectors([b for _, batches in jobs for b in batches])
        xs, ys = (t.detach().cpu().numpy() for t in (first.ref, first.cand))
        sides = [[np.stack([getattr(b, f).detach().cpu().numpy() for b in batches])
                  for f in ("ref_mass", "ref_match", "cand_mass", "cand_match")] for _, batches in jobs]
        norms = None
        if any(a.reads_norms() for a in aligners):
            norms = [_norms(n).detach().cpu().numpy() for n in (first.ref_norm, first.cand_norm)]
        wmd = [np.zeros((len(batches), xs.shape[0])) for _, batches in jobs]
        empty = [np.ones((len(batches), xs.shape[0]), dtype=bool) for _, batches in jobs]
        ends_r = _ends(np.concatenate([(mr > 0) | sr for mr, sr, _, _ in sides]))
        ends_c = _ends(np.concatenate([(mc > 0) | sc for _, _, mc, sc in sides]))
        order = np.lexsort((ends_c, ends_r))
        solve, solve_plan = network_simplex(balanced=True), network_simplex(plans=True, balanced=True)

        def distance(aligner: WMD, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> float:
            if not aligner.flow_dropout:
                return solve(a, b, c)
            return float((drop_flows(solve_plan(a, b, c), aligner.flow_dropout) * c).sum())

        def block(start: int) -> None:  # writes only its own pairs' entries
            sel = order[start:start + PAIRS_PER_BLOCK]
            tr, tc = ends_r[sel].max(), ends_c[sel].max()
            x, y = xs[sel, :tr].astype(np.float64), ys[sel, :tc].astype(np.float64)
            gram = x @ y.transpose(0, 2, 1)
            token_costs = {a.cost for a in aligners if a.n_gram == 1}
            sq = _token_sqdist(x, y, gram) if token_costs - {"cos"} else None
            # 1 - cos = 1 - x . y on unit vectors, from the inner products (not sq / 2: the same
            # to float64 rounding, but this is the formula the cost names)
            cos = np.maximum(1.0 - gram, 0.0) if "cos" in token_costs else None
            for j, (aligner, (mr, sr, mc, sc)) in enumerate(zip(aligners, sides)):
                mr, mc = mr[:, sel, :tr], mc[:, sel, :tc]
                if aligner.n_gram == 1:
                    cost = cos if aligner.cost == "cos" else sq if aligner.cost == "sqeuclidean" else np.sqrt(sq)
                    problems = aligner._token_problems(cost, mr, mc)
                else:
                    scale = (norms[0][sel, :tr], norms[1][sel, :tc]) if aligner.reads_norms() and norms else None
                    problems = aligner._window_problems(x, y, gram, mr, sr[:, sel, :tr], mc, sc[:, sel, :tc], scale)
                done = [(v, k, distance(aligner, a, b, c)) for v, k, a, b, c in problems]
                if done:
                    v, k, value = zip(*done)
                    at = (np.array(v), sel[np.array(k)])
                    wmd[j][at], empty[j][at] = value, False

        starts = range(0, len(order), PAIRS_PER_BLOCK)
        workers = min(torch.get_num_threads(), len(starts))
        with single_threaded_blas():
            if workers <= 1:
                for start in starts:
                    block(start)
            else:
                with ThreadPoolExecutor(workers) as pool:
                    list(pool.map(block, starts))  # raises what a block raised
        return [[{"score": score_from_distance(torch.from_numpy(d), aligner.score_form).masked_fill(
                    torch.from_numpy(e), 0.0).to(first.ref.device)} for d, e in zip(wmd[j], empty[j])]
                for j, aligner in enumerate(aligners)]

    def _token_problems(self, cost: np.ndarray, mr: np.ndarray, mc: np.ndarray) -> Iterator[Problem]:
        """``(variant, pair, a, b, C)`` of token-level problems: masses ``mr [V, B, Tr]``,
        ``mc [V, B, Tc]`` of tokens whose costs are ``cost [B, Tr, Tc]`` (this aligner's cost,
        from :func:`_token_sqdist` or the inner products, shared by the block's jobs: never
        written to), one cost matrix per pair, cut after the last token any variant gives mass."""
        (a, b), ok = balanced_rows(mr, mc), (mr.sum(-1) > 0) & (mc.sum(-1) > 0)
        ends_r, ends_c = _ends(mr > 0), _ends(mc > 0)
        for k in np.flatnonzero(ok.any(0)):
            n, m = ends_r[k], ends_c[k]
            c = np.ascontiguousarray(cost[k, :n, :m])  # the solver needs C order
            for v in np.flatnonzero(ok[:, k]):
                yield v, k, a[v, k, :n], b[v, k, :m], c

    def _window_problems(self, x: np.ndarray, y: np.ndarray, gram: np.ndarray, mr: np.ndarray, sr: np.ndarray,
                         mc: np.ndarray, sc: np.ndarray,
                         scale: tuple[np.ndarray, np.ndarray] | None = None) -> Iterator[Problem]:
        """``(variant, pair, a, b, C)`` of n-gram problems: tokens ``x [B, Tr, D]``,
        ``y [B, Tc, D]`` (float64) with inner products ``gram [B, Tr, Tc]``, masses ``mr``, ``mc``
        and members ``sr``, ``sc`` (``[V, B, tokens]``) per variant.

        Each text's members are moved to the front (:func:`compact_members`), so that a window is
        ``k`` consecutive slots (``k = n``, or all members for SMD; a text with fewer members has
        one window, padded with zero mass). The windows are never pooled: with ``p_s`` and
        ``q_t`` the mass-weighted sums of the members of reference window s and candidate window
        t, the cost between their unit vectors is ``||p_s/|p_s| - q_t/|q_t|||^2 = 2 - 2 p_s . q_t
        / (|p_s| |q_t|)``, where ``p_s . q_t`` and ``|p_s|^2`` are window sums of the members'
        inner products (:func:`window_inner`, :func:`window_sqnorms`)."""
        sx, sy = scale if scale is not None else (None, None)
        ref, cand = windows(x, mr, sr, self.n_gram, sx), windows(y, mc, sc, self.n_gram, sy)
        if ref is None or cand is None:
            return
        pr, pc = ref.index.shape[-1], cand.index.shape[-1]
        if ref.prefix and cand.prefix:  # the members' inner products are a corner of the Gram matrix
            members = gram[None, :, :pr, :pc]  # [1, B, P, P']
        else:
            pair = np.arange(x.shape[0])[:, None, None]  # with [V, B, P, 1] indices: [V, B, P, P']
            members = gram[pair, ref.index[..., :, None], cand.index[..., None, :]]
        inner = window_inner(members, ref.weight, cand.weight, ref.k, cand.k)
        # a window without mass has p = 0 (inner product 0): any finite cost, it takes no part
        norms = np.maximum(ref.norm[..., :, None] * cand.norm[..., None, :], 1e-300)
        if self.cost == "cos":
            cost = np.maximum(1.0 - inner / norms, 0.0)
        else:
            sq = np.maximum(2.0 - 2.0 * inner / norms, 0.0)
            cost = sq if self.cost == "sqeuclidean" else np.sqrt(sq)
        a, b = balanced_rows(ref.mass, cand.mass)
        for v, k in zip(*np.nonzero((ref.mass.sum(-1) > 0) & (cand.mass.sum(-1) > 0))):
            n, m = ref.count[v, k], cand.count[v, k]
            yield v, k, a[v, k, :n], b[v, k, :m], np.ascontiguousarray(cost[v, k, :n, :m])

    def signature(self) -> str:
        dropout = f",flow_dropout={number(self.flow_dropout)}" if self.flow_dropout else ""
        mean = ",mean=states" if self.reads_norms() else ""
        return f"wmd({self._signature_parts()}{mean}{dropout})"


# The smallest Sinkhorn reg, in units of the dtype's machine epsilon: the log-domain potentials
# reach C / reg with C <= 4 (unit vectors), so their rounding errors, (4 / reg) * eps, stay below 1e-3.
MIN_REG_EPS = 4000


@dataclass(frozen=True)
class Sinkhorn(TransportAligner):
    """Entropic OT (log-domain :func:`~alignscore.aligners.transport.sinkhorn_plans`) over all
    pairs of a batch as one tensor problem, on the vectors' device (GPU when there).

    The plan minimises ``<C, T> - reg * H(T)``; the score comes from ``<C, T>`` as :class:`WMD`'s
    (never below the exact WMD, up to the marginal error). As ``reg`` shrinks so does the bias,
    and the iterations grow. A pair whose row-marginal error is above ``tol`` after ``max_iter``
    iterations is scored from its last plan, with a warning: raise ``max_iter`` (or ``reg``).
    Accuracy: ``benchmarks/sinkhorn_accuracy.py``; faster than :class:`WMD` only on a GPU.

    Parameters
    ----------
    cost, score_form, n_gram
        As for :class:`WMD`.
    reg : float
        Entropic regularisation (finite, at least ``MIN_REG_EPS`` times the dtype's machine
        epsilon: 8.9e-13 in float64, 4.8e-4 in float32), in the units of the cost.
    max_iter, tol : int, float
        Iteration cap; a pair stops when its row-marginal error (L1) is below ``tol`` (> 0).
    sinkhorn_dtype : str
        ``"float64"`` (default) or ``"float32"`` (faster on GPUs).

    Examples
    --------
    >>> x, mass, match = torch.eye(2).unsqueeze(0), torch.ones(1, 2), torch.ones(1, 2, dtype=torch.bool)
    >>> round(Sinkhorn(reg=0.01)(PairBatch(x, x, mass, mass, match, match))["score"].item(), 4)   # itself
    1.0
    """

    reg: float = setting(0.02, gt=0, help=(
        "sinkhorn, baryscore: entropic regularisation (sinkhorn: > 0, default 0.02; smaller is closer to the "
        "exact wmd and needs more iterations; baryscore: default 0.01, 0 for the exact distance)."))
    max_iter: int = setting(1000, ge=1, help="sinkhorn, baryscore: Sinkhorn's iteration limit.")
    tol: float = setting(1e-6, gt=0, help="sinkhorn, baryscore: Sinkhorn's marginal-error threshold.")
    sinkhorn_dtype: str = setting("float64", choices=("float64", "float32"), aliases=("dtype",),
                                  help="sinkhorn: the precision of the iterations (float32 is faster on GPUs).")

    name = "sinkhorn"

    def __post_init__(self) -> None:
        super().__post_init__()
        floor = MIN_REG_EPS * torch.finfo(getattr(torch, self.sinkhorn_dtype)).eps
        if self.reg < floor:
            raise SettingError("reg", f"{self.reg!r} is too small for {self.sinkhorn_dtype}: below {floor:.1g} the "
                                      "potentials (costs up to 4, divided by reg) keep no precision; use a larger "
                                      "reg, float64, or the exact aligner wmd")

    def plans(self, cost: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        dt = getattr(torch, self.sinkhorn_dtype)
        result = sinkhorn_plans(cost.to(dt), a.to(dt), b.to(dt), self.reg, self.max_iter, self.tol)
        missed = int((~result.converged).sum())
        if missed:
            warnings.warn(
                f"sinkhorn did not converge for {missed} of {len(result.converged)} pair(s) of a batch: after "
                f"max_iter={self.max_iter} iterations their row-marginal error is up to "
                f"{float(result.error.max()):.2g} (tol {self.tol:g}), so their scores are approximate; "
                f"raise max_iter or reg, or use the exact aligner wmd", stacklevel=2)
        return result.plan

    def signature(self) -> str:
        return (f"sinkhorn({self._signature_parts()},reg={self.reg!r},iter<={self.max_iter},"
                f"tol={self.tol!r},{self.sinkhorn_dtype})")
