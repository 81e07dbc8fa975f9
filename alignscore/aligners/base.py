"""The aligner stage: a padded batch of (reference, candidate) token sets -> scores per pair."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Sequence

import torch

from ..aggregators.base import Vectors
from ..errors import NonFiniteError

NOT_FINITE = ("hold NaN or infinity (made by the encoder or the aggregator, e.g. a float16 overflow): "
              "no score is computed from them")


@dataclass
class PairBatch:
    """``B`` pairs, right-padded. Vectors are unit-normalised (0 at padding).

    ``*_mass`` are the unnormalised token masses (0 for padding, filtered tokens and, under the
    ``match-only`` policy, special tokens); ``*_match`` marks the tokens that may be aligned to
    (False at padding). A token with mass is always matchable. ``finite``: whoever built the
    batch has checked that its vectors are finite (the engine, once per encoding), so
    :func:`check_finite` need not read them back from the device.

    Parameters
    ----------
    ref, cand : torch.Tensor
        ``[B, Tr, D]`` and ``[B, Tc, D]`` token vectors.
    ref_mass, cand_mass : torch.Tensor
        ``[B, Tr]`` and ``[B, Tc]`` masses ``>= 0``.
    ref_match, cand_match : torch.Tensor
        ``[B, Tr]`` and ``[B, Tc]`` bool.
    finite : bool
        The vectors are known to be finite.
    ref_norm, cand_norm : torch.Tensor, optional
        ``[B, Tr]`` and ``[B, Tc]``: the vectors' lengths before unit scaling, for an aligner
        that asks for them (:meth:`Aligner.reads_norms`).

    Examples
    --------
    >>> from alignscore import Greedy
    >>> x = torch.eye(2).unsqueeze(0)                  # one pair: the same two tokens each side
    >>> mass, match = torch.ones(1, 2), torch.ones(1, 2, dtype=torch.bool)
    >>> Greedy()(PairBatch(x, x, mass, mass, match, match))["f1"].tolist()
    [1.0]
    """

    ref: torch.Tensor  # [B, Tr, D]
    cand: torch.Tensor  # [B, Tc, D]
    ref_mass: torch.Tensor  # [B, Tr]
    cand_mass: torch.Tensor  # [B, Tc]
    ref_match: torch.Tensor  # [B, Tr] bool
    cand_match: torch.Tensor  # [B, Tc] bool
    finite: bool = False
    ref_norm: torch.Tensor | None = None  # [B, Tr] the vectors' lengths before unit scaling (when asked for)
    cand_norm: torch.Tensor | None = None  # [B, Tc]


@dataclass
class Alignment:
    """What an aligner did for a batch of pairs, for inspection (``alignscore show``).

    ``matrix [B, Tr, Tc]`` is between the aligned units on each side: token similarities for
    greedy, transport costs for OT. Units are tokens, or n-gram windows for n-gram OT, in which
    case ``ref_units`` / ``cand_units`` (``[B, U, T]`` 0/1) say which tokens form each unit.
    ``flows`` holds named ``[B, Tr, Tc]`` matrices: for greedy ``"recall"`` (each reference
    token's best match, weighted by its normalised mass) and ``"precision"`` (the same for
    candidate tokens); for OT ``"transport"``, the optimal plan. ``contributions`` maps each
    metric to ``(ref [B, Tr], cand [B, Tc])`` per-unit shares that sum exactly to the metric.

    Parameters
    ----------
    kind : str
        ``"similarity"`` or ``"cost"``: what ``matrix`` holds.
    matrix : torch.Tensor
        ``[B, Tr, Tc]``.
    flows, contributions, scores : dict
        As above; ``scores`` is ``{metric: [B]}``, what :meth:`Aligner.__call__` returns.
    ref_units, cand_units : torch.Tensor, optional
        ``[B, U, T]`` 0/1 for n-gram units; None for tokens.

    Examples
    --------
    >>> from alignscore import Greedy
    >>> x, mass, match = torch.eye(2).unsqueeze(0), torch.ones(1, 2), torch.ones(1, 2, dtype=torch.bool)
    >>> why = Greedy().alignment(PairBatch(x, x, mass, mass, match, match))
    >>> why.kind, why.matrix.shape, sorted(why.flows), why.scores["f1"].tolist()
    ('similarity', torch.Size([1, 2, 2]), ['precision', 'recall'], [1.0])
    """

    kind: str  # "similarity" or "cost"
    matrix: torch.Tensor
    flows: dict[str, torch.Tensor]
    contributions: dict[str, tuple[torch.Tensor, torch.Tensor]]
    scores: dict[str, torch.Tensor]
    ref_units: torch.Tensor | None = None
    cand_units: torch.Tensor | None = None


class Aligner(ABC):
    """Scores pairs. ``name`` is its registry name; ``metrics`` names the outputs, in the order
    :meth:`__call__` returns them (fixed for an instance; it may depend on its settings, so ask
    an instance, not the class); ``primary`` picks the best reference.

    Parameters
    ----------
    None here: each aligner is a frozen dataclass whose fields are its settings (cost, score
    form, ...), checked where it is built.

    Examples
    --------
    >>> from alignscore import WMD, Greedy
    >>> Greedy().metrics, Greedy().primary, WMD().metrics, WMD().signature()
    (('precision', 'recall', 'f1'), 'f1', ('score',), 'wmd(euclidean,1-d,n=1)')
    """

    name: ClassVar[str]
    metrics: tuple[str, ...]
    primary: str

    @abstractmethod
    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        """``{metric: [B]}``; finite for every pair. A pair where either side carries no mass
        (an empty text, or every token filtered out) scores 0 on every metric."""

    @abstractmethod
    def signature(self) -> str:
        """What pins this aligner's numbers (cost, score form, ...)."""

    def reads_norms(self) -> bool:
        """Whether it reads the tokens' vector lengths before unit scaling (``PairBatch.ref_norm``,
        ``cand_norm``): the engine then keeps them (after a remapping, the remapped vectors')."""
        return False

    def for_vectors(self, vectors: Vectors) -> "Aligner":
        """This aligner for token vectors of the kind ``vectors`` (what the aggregator declares,
        :meth:`~alignscore.aggregators.base.Aggregator.output`). Raises ConfigError where it
        cannot use them; aligners that read the vectors' structure (BaryScore reads a stack of
        layers) return a copy that knows it. Every aligner here takes any kind but BaryScore."""
        return self

    def score_variants(self, batches: Sequence[PairBatch]) -> list[dict[str, torch.Tensor]]:
        """:meth:`__call__` for each of ``batches``: the same pairs and vectors (the very same
        ``ref`` and ``cand`` tensors) with other masses and match targets (other weightings or
        token filters). Aligners that can share work between them override this."""
        same_vectors(batches)
        return [self(batch) for batch in batches]

    @classmethod
    def score_together(cls, jobs: Sequence[tuple["Aligner", Sequence[PairBatch]]]
                       ) -> list[list[dict[str, torch.Tensor]]]:
        """:meth:`score_variants` of several aligners of this class over the same vectors (every
        batch of every job holds the same ``ref`` and ``cand`` tensors): one list per job.
        Classes whose aligners can share work between them (the exact WMD over tokens and over
        n-grams: one Gram matrix) override this."""
        return [aligner.score_variants(batches) for aligner, batches in jobs]

    def alignment(self, batch: PairBatch) -> Alignment:
        """The matrix, flows and per-unit contributions behind :meth:`__call__`'s scores."""
        raise NotImplementedError(f"{type(self).__name__} does not explain its alignments")


def check_finite(batch: PairBatch) -> PairBatch:
    """``batch``, after checking that its vectors are finite: a NaN would become a NaN score, or
    (through a NaN cost matrix, on which the exact solver returns 0) a perfect one. A batch
    marked ``finite`` is not read again (no host synchronisation).

    Parameters
    ----------
    batch : PairBatch
        The batch an aligner is about to score.

    Returns
    -------
    PairBatch
        ``batch`` itself; :class:`~alignscore.errors.NonFiniteError` where a vector is not finite.

    Examples
    --------
    >>> x, mass = torch.tensor([[[float("nan"), 0.0]]]), torch.ones(1, 1)
    >>> check_finite(PairBatch(x, x, mass, mass, mass.bool(), mass.bool()))
    Traceback (most recent call last):
    alignscore.errors.NonFiniteError: the token vectors hold NaN or infinity (...): no score is computed from them
    """
    if batch.finite:
        return batch
    for side in (batch.ref, batch.cand):
        # one reduction, no [B, T, D] temporary: a NaN or infinity anywhere makes the sum non-finite
        if not bool(torch.isfinite(side.sum())):
            raise NonFiniteError(f"the token vectors {NOT_FINITE}")
    return batch


def same_vectors(batches: Sequence[PairBatch]) -> PairBatch:
    """The first of ``batches``, after checking that all share its ``ref`` and ``cand`` tensors."""
    if not batches or any(b.ref is not batches[0].ref or b.cand is not batches[0].cand for b in batches):
        raise ValueError("score_variants needs one or more batches over the same ref and cand tensors")
    return check_finite(batches[0])


def weighted_mean(values: torch.Tensor, mass: torch.Tensor) -> torch.Tensor:
    """The mass-weighted mean over the last axis::

        mean = sum_i m_i v_i / sum_i m_i      (0 where the masses sum to 0)

    Values where ``m_i = 0`` never contribute (they may be infinite).

    Parameters
    ----------
    values : torch.Tensor
        ``[..., T]``.
    mass : torch.Tensor
        ``[..., T]`` masses ``>= 0``.

    Returns
    -------
    torch.Tensor
        ``[...]``.

    Examples
    --------
    >>> values = torch.tensor([[1.0, 4.0, float("-inf")], [2.0, 3.0, 5.0]])
    >>> mass = torch.tensor([[1.0, 3.0, 0.0], [0.0, 0.0, 0.0]])
    >>> weighted_mean(values, mass).tolist()
    [3.25, 0.0]
    """
    total = mass.sum(-1)
    v = torch.where(mass > 0, values, torch.zeros((), dtype=values.dtype, device=values.device))
    return torch.where(total > 0, (v * mass).sum(-1) / total.clamp_min(torch.finfo(mass.dtype).tiny),
                       torch.zeros((), dtype=values.dtype, device=values.device))


def number(x: float) -> str:
    """``x`` for a signature: the shortest text that reads back as exactly ``x``.

    Parameters
    ----------
    x : float
        A setting's value.

    Returns
    -------
    str
        Without a trailing ``.0``.

    Examples
    --------
    >>> number(2.0), number(0.01), number(1e-7)
    ('2', '0.01', '1e-07')
    """
    text = repr(float(x))
    return text[:-2] if text.endswith(".0") else text
