"""When scores are constant: up to the rounding of the dtype they were computed in.

Scores that are constant have no correlation, and "constant" means constant up to the rounding
of the dtype they were computed in (:func:`flat`): the same text scored twice may differ in its
last bits (another batch, another padding, another kernel), and a correlation over those bits
would be one of noise. Every correlation here (and every command's) is undefined over them.
"""

from __future__ import annotations

import numpy as np

#: Scores whose spread (max - min) is at most this many units of their dtype's rounding (its
#: machine epsilon times the larger of 1 and the largest |score|) are constant (:func:`flat`).
#: A score sums or averages many float products, each off by up to half a unit, so equal
#: pairs may differ by a few units; 16 leaves room for that and is still far below any
#: difference between scores of different texts (1e-6 of a cosine in float32).
ROUNDING_UNITS = 16


def _row_units(values: np.ndarray) -> np.ndarray:
    """``[...]``: :func:`rounding_unit` of each row of ``values [..., n]``."""
    x = np.asarray(values)
    if x.dtype in (np.float16, np.float32):
        return np.full(x.shape[:-1], float(np.finfo(x.dtype).eps))
    x = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        narrowed = x.astype(np.float32).astype(np.float64)
    single = (narrowed == x).all(axis=-1)
    return np.where(single, float(np.finfo(np.float32).eps), float(np.finfo(np.float64).eps))


def rounding_unit(values: np.ndarray) -> float:
    """The machine epsilon of the dtype the 1-d ``values`` were computed in: their own dtype's
    for a float16 or float32 array; for float64, float32's when every value is a float32
    number (scores computed in float32 and converted, as ``tensor.double().numpy()`` gives
    them), float64's otherwise.

    >>> rounding_unit(np.array([0.5, 0.25])) == float(np.finfo(np.float32).eps)
    True
    >>> rounding_unit(np.array([0.1, 0.2])) == float(np.finfo(np.float64).eps)
    True
    """
    return float(_row_units(np.ravel(values)))


def flat_rows(values: np.ndarray, eps: float | None = None) -> np.ndarray:
    """Whether each row of ``values [..., n]`` is constant up to rounding: its spread is at
    most :data:`ROUNDING_UNITS` times ``eps`` (default: each row's :func:`rounding_unit`) times
    the larger of 1 and its largest ``|value|``. A row of fewer than two values is flat; one
    holding NaN is not (it is refused as not finite, where that matters)."""
    x = np.asarray(values, dtype=np.float64)
    eps = _row_units(values) if eps is None else eps
    if x.shape[-1] < 2:
        return np.ones(x.shape[:-1], dtype=bool)
    spread = np.ptp(x, axis=-1)
    scale = np.maximum(1.0, np.abs(x).max(axis=-1))
    with np.errstate(invalid="ignore"):
        return spread <= ROUNDING_UNITS * eps * scale


def flat(values: np.ndarray, eps: float | None = None) -> bool:
    """Whether the 1-d ``values`` are constant up to rounding (:func:`flat_rows`).

    >>> flat(np.array([1.0, 1.0, 1.0000001192092896]))  # float32 1.0 and its next number
    True
    >>> flat(np.array([0.5, 0.5, 0.5001]))
    False
    """
    return bool(flat_rows(np.ravel(values), eps))


def flat_text(values: np.ndarray, eps: float | None = None) -> str:
    """How flat ``values`` are, for a message: ``all equal``, or ``equal up to float32 rounding,
    spanning 1.2e-07``."""
    x = np.asarray(values, dtype=np.float64)
    spread = float(np.ptp(x)) if x.size else 0.0
    if spread == 0:
        return "all equal"
    eps = rounding_unit(values) if eps is None else eps
    name = next((str(np.dtype(t)) for t in (np.float16, np.float32, np.float64) if np.finfo(t).eps == eps),
                f"eps {eps:.2g}")
    return f"equal up to {name} rounding, spanning {spread:.2g}"


__all__ = ["ROUNDING_UNITS", "flat", "flat_rows", "flat_text", "rounding_unit"]
