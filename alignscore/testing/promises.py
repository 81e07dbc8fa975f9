"""What every check of the kit shares: the tolerance, how a broken promise is raised, and the
promises every part keeps (its run file round trip, its signature)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any, Callable, TypeVar

import torch

from ..config import RunSpec, compile_run, file_source

T = TypeVar("T")

#: how many machine epsilons two computations of one score may differ by (summation order)
ULPS = 64


def tolerance(dtype: torch.dtype) -> float:
    """The absolute difference allowed between two computations of one value of order 1 in
    ``dtype``: ``64 eps`` (7.6e-6 in float32, 1.4e-14 in float64).

    >>> f"{tolerance(torch.float32):.1e}", f"{tolerance(torch.float64):.1e}"
    ('7.6e-06', '1.4e-14')
    """
    return ULPS * torch.finfo(dtype).eps



def fail(promise: str, detail: str) -> AssertionError:
    """The :class:`AssertionError` to raise: ``promise`` broken, and how. Its message starts with
    the promise (``"finite scores: pair 1 precision is nan ..."``), and its ``promise`` attribute
    holds it (what tells the kit's own failures from an ``assert`` inside the part)."""
    error = AssertionError(f"{promise}: {detail}")
    error.promise = promise  # type: ignore[attr-defined]
    return error


def call(promise: str, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, a call into the part checked: whatever it raises (an ``IndexError``
    on a zero-width batch, a ``RuntimeError`` of a shape, its own ``assert``) becomes the
    :func:`fail` of ``promise`` saying ``what`` was called, the original exception chained for
    its traceback."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - anything the part raises breaks the promise being checked
        if isinstance(exc, AssertionError) and hasattr(exc, "promise"):
            raise  # a promise the kit checked inside fn
        message = " ".join(str(exc).split()) or "(no message)"
        raise fail(promise, f"{what} raised {type(exc).__name__}: {message}") from exc


def round_trip(composition: Any, stage: str) -> Any:
    """``composition`` written to a run file (TOML) and built from it again."""
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "part.toml"
            path.write_text(RunSpec(composition=composition).toml(), encoding="utf-8")
            return compile_run([file_source(path)]).composition
    except Exception as exc:  # noqa: BLE001 - whatever breaks the round trip is the finding
        raise fail("spec round trip", f"the {stage} cannot be written to a run file and read back "
                                       f"({type(exc).__name__}: {exc}); register its class and keep its "
                                       "settings as dataclass fields of TOML types") from None


_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def check_signature(part: Any, rebuilt: Any) -> None:
    first = part.signature()
    if not isinstance(first, str) or not first or "|" in first or "\n" in first or _ADDRESS.search(first):
        raise fail("stable signature", f"{first!r} is not one non-empty line without '|' or an object address")
    if part.signature() != first:
        raise fail("stable signature", f"two calls gave {first!r} and {part.signature()!r}")
    if rebuilt.signature() != first:
        raise fail("spec round trip", f"the part built from its run file has the signature "
                                       f"{rebuilt.signature()!r}, not {first!r}")

