"""The promises of the aligner stage, checked on a part (:func:`check_aligner`), and the batches
it checks them on."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

import torch

from ..aggregators.single import SingleLayer
from ..aggregators.stack import LayerStack
from ..aligners import ALIGNERS
from ..aligners.base import Aligner, PairBatch
from ..composition import Composition
from ..errors import ConfigError, NonFiniteError
from .promises import call, check_signature, fail, round_trip, tolerance


# (reference tokens, candidate tokens, kind) of the pairs of the test batch (check_aligner's
# docstring describes the batches built from them)
_PAIRS = (
    (5, 4, "random"),
    (1, 1, "opposite"),  # every similarity is -1: matching a zero padding vector would win the max
    (4, 4, "identical"),
    (7, 2, "random"),
    (3, 5, "ref massless"),  # [CLS] [SEP] under match-only: matchable, no mass
    (4, 0, "cand tokenless"),
    (2, 0, "both empty"),
    (3, 6, "random"),
    (0, 3, "ref tokenless"),
)
# the pairs where a side has no mass: they score 0
_EMPTY = tuple(i for i, (_, _, kind) in enumerate(_PAIRS) if "massless" in kind or "tokenless" in kind or "empty" in kind)


@dataclass
class _Pair:
    """One pair, unpadded: ``ref [n, D]``, ``cand [m, D]``, their masses and match targets."""

    ref: torch.Tensor
    cand: torch.Tensor
    ref_mass: torch.Tensor
    cand_mass: torch.Tensor
    ref_match: torch.Tensor
    cand_match: torch.Tensor


def _vectors(gen: torch.Generator, n: int, dim: int, layers: int, dtype: torch.dtype) -> torch.Tensor:
    """``n`` unit vectors, each ``layers`` unit vectors of ``dim`` side by side (what the ``stack``
    aggregator gives, after the engine's unit normalisation)."""
    x = torch.randn(n, layers, dim, generator=gen, dtype=torch.float64)
    x = x / x.norm(dim=-1, keepdim=True)
    return (x.flatten(1) / layers ** 0.5).to(dtype)


def _roles(gen: torch.Generator, n: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Masses and match targets of a text of ``n`` tokens: most with a random mass, a massless
    but matchable one (a special token under match-only) and a filtered one (neither)."""
    mass = (0.2 + torch.rand(n, generator=gen, dtype=torch.float64)).to(dtype)
    match = torch.ones(n, dtype=torch.bool)
    if n >= 3:
        mass[0] = 0  # special token
        mass[n - 1] = 0  # filtered token
        match[n - 1] = False
    return mass, match


def _make_pairs(gen: torch.Generator, dim: int, layers: int, dtype: torch.dtype) -> list[_Pair]:
    pairs = []
    for n, m, kind in _PAIRS:
        ref = _vectors(gen, n, dim, layers, dtype)
        cand = _vectors(gen, m, dim, layers, dtype)
        (rm, rs), (cm, cs) = _roles(gen, n, dtype), _roles(gen, m, dtype)
        if kind == "opposite":
            cand = -ref
        elif kind == "identical":
            cand, cm, cs = ref.clone(), rm.clone(), rs.clone()
        elif kind == "ref massless":
            rm = torch.zeros_like(rm)
        elif kind == "both empty":
            rm, rs = torch.zeros_like(rm), torch.zeros_like(rs)
        pairs.append(_Pair(ref, cand, rm, cm, rs, cs))
    return pairs


def _pad(rows: Sequence[torch.Tensor], width: int) -> torch.Tensor:
    return torch.stack([torch.cat([r, r.new_zeros((width - r.shape[0],) + tuple(r.shape[1:]))]) for r in rows])


def _batch(pairs: Sequence[_Pair], extra: int = 0) -> PairBatch:
    """The pairs right-padded (zero vectors, no mass, not matchable) to their longest text, plus
    ``extra`` positions."""
    tr = max(p.ref.shape[0] for p in pairs) + extra
    tc = max(p.cand.shape[0] for p in pairs) + extra
    return PairBatch(_pad([p.ref for p in pairs], tr), _pad([p.cand for p in pairs], tc),
                     _pad([p.ref_mass for p in pairs], tr), _pad([p.cand_mass for p in pairs], tc),
                     _pad([p.ref_match for p in pairs], tr), _pad([p.cand_match for p in pairs], tc))


def _variants(batch: PairBatch, gen: torch.Generator) -> list[PairBatch]:
    """``batch`` and three batches over the very same vectors with other masses and match targets
    (other weightings and token filters)."""
    out = [batch]
    for _ in range(3):
        keep_r = torch.rand(batch.ref_mass.shape, generator=gen) > 0.3
        keep_c = torch.rand(batch.cand_mass.shape, generator=gen) > 0.3
        ref_mass = torch.rand(batch.ref_mass.shape, generator=gen, dtype=torch.float64).to(batch.ref_mass.dtype)
        cand_mass = torch.rand(batch.cand_mass.shape, generator=gen, dtype=torch.float64).to(batch.cand_mass.dtype)
        out.append(replace(batch, ref_mass=ref_mass * (keep_r & batch.ref_match), cand_mass=cand_mass * (
            keep_c & batch.cand_match), ref_match=batch.ref_match & keep_r, cand_match=batch.cand_match & keep_c))
    return out


def _compare(promise: str, got: dict[str, torch.Tensor], want: dict[str, torch.Tensor], tol: float,
             what: str, pairs: Sequence[int] | None = None) -> None:
    """Raise when a score of ``got`` differs from ``want``'s by more than ``tol`` (relative above 1)."""
    if not isinstance(got, dict) or set(got) != set(want):
        raise fail(promise, f"{what} gave {sorted(got) if isinstance(got, dict) else type(got).__name__}, not the "
                            f"metrics {sorted(want)}")
    for name in want:
        if not isinstance(got[name], torch.Tensor):
            raise fail(promise, f"{name} is {type(got[name]).__name__} {what}, not a tensor")
        a, b = got[name].detach().double().cpu(), want[name].detach().double().cpu()
        if a.shape != b.shape:
            raise fail(promise, f"{name} has shape {tuple(a.shape)} {what}, not {tuple(b.shape)}")
        diff = (a - b).abs()
        bad = ~(diff <= tol * b.abs().clamp_min(1.0))  # NaN is bad too
        if bool(bad.any()):
            i = int(torch.nonzero(bad).flatten()[0])
            pair = pairs[i] if pairs is not None else i
            raise fail(promise, f"pair {pair} {name} changed by {float(diff[i]):.2g} {what} "
                                 f"({float(b[i]):.6g} -> {float(a[i]):.6g}; tolerance {tol:.1g})")


def _pick(scores: dict[str, torch.Tensor], index: Sequence[int], promise: str = "outputs") -> dict[str, torch.Tensor]:
    """The scores of the pairs ``index`` (positions in the batch)."""
    at = torch.tensor(list(index), dtype=torch.long)
    if not isinstance(scores, dict) or not all(isinstance(v, torch.Tensor) and v.dim() == 1 and len(v) > max(index)
                                               for v in scores.values()):
        raise fail(promise, f"{type(scores).__name__} is not one score per pair for each metric")
    return {k: v.detach().cpu()[at] for k, v in scores.items()}


def check_aligner(aligner: Aligner, *, dtype: torch.dtype = torch.float32, seed: int = 0, layers: int = 1,
                  others: Sequence[Aligner] = (), atol: float | None = None) -> None:
    """Check the promises of an aligner (:class:`~alignscore.aligners.base.Aligner`).

    The batches are :class:`~alignscore.aligners.base.PairBatch` es as the engine builds them:
    unit vectors ``[B, T, D]`` (``D = 6 * layers``), right-padded with zero vectors, mass 0 and
    not matchable. The main batch holds nine pairs of random vectors, ``(reference, candidate)``
    tokens: ``(5, 4)``, ``(1, 1)`` a token against its opposite, ``(4, 4)`` a text against
    itself, ``(7, 2)``, ``(3, 5)`` a reference whose every token is massless but matchable,
    ``(4, 0)`` a candidate without tokens, ``(2, 0)`` neither side with mass, ``(3, 6)`` and
    ``(0, 3)`` a reference without tokens. In a text of three tokens or more, the first is
    massless but matchable (a special token under ``match-only``) and the last is neither (a
    filtered token). The checks also score other batches over these pairs: each pair *alone, cut
    to its own length*, so **a side may have zero width** (``[1, 0, D]``: the pairs with a text
    without tokens, as the engine gives a batch whose texts on one side are all empty under a
    static encoder), and one pair with no token on either side (``[1, 0, D]`` both); the pairs
    in another order, with other neighbours, with three more padding positions; the same vectors
    with other masses and match targets (``score_variants``). It checks, in this order:

    - *outputs*: :meth:`~Aligner.__call__` returns one ``[B]`` tensor per name of
      ``aligner.metrics``, and ``primary`` is one of them;
    - *finite scores* for every pair;
    - *zero-width sides score 0*: a batch whose reference or candidate side (or both) has no
      position gives each of its pairs 0 on every metric;
    - scores independent of *batch neighbours* (the other pairs replaced), of the *order* of the
      pairs and of *padding* (each pair alone, cut to its own length, and extra padding);
    - *empty pairs score 0* (either side without mass);
    - *non-finite vectors refused* with :class:`~alignscore.errors.NonFiniteError` (NaN or
      infinity in the token vectors, by ``__call__`` and ``score_variants``:
      :func:`~alignscore.aligners.base.check_finite`);
    - *score_variants* equals calling the aligner on each batch (and refuses batches over other
      vectors: :func:`~alignscore.aligners.base.same_vectors`), and *score_together* equals
      calling each job's aligner (``others``: more aligners of the same class to score with it);
    - *alignment explains the scores* (where :meth:`~Aligner.alignment` is implemented): its
      scores are the aligner's (to float32 rounding), and each metric's per-unit contributions
      sum to it;
    - *spec round trip*: the aligner written to a run file and built from it again has
      its signature and its scores;
    - a *stable signature*: a non-empty line without ``|`` or an object address, the same on
      every call.

    Parameters
    ----------
    aligner : Aligner
        The part to check.
    dtype : torch.dtype
        The dtype of the token vectors and masses (``torch.float32``, as the engine gives them,
        or ``torch.float64``).
    seed : int
        Seed of the random batch.
    layers : int
        Token vectors are ``layers`` unit vectors side by side (what the ``stack`` aggregator
        gives; BaryScore reads them back); the aligner is fitted to such a stack
        (:meth:`~alignscore.aligners.base.Aligner.for_vectors`).
    others : sequence of Aligner
        Aligners of the same class, scored together with ``aligner`` through ``score_together``.
    atol : float, optional
        The difference allowed between two computations of a score (relative for scores above
        1); default :func:`tolerance` of ``dtype``.

    Returns
    -------
    None
        Raises :class:`AssertionError` whose message starts with the broken promise (its
        ``promise`` attribute holds it); an exception the aligner raises is chained to it,
        never raised bare from inside the kit.

    Examples
    --------
    >>> from alignscore.aligners import WMD
    >>> check_aligner(WMD(n_gram=2), others=[WMD()], dtype=torch.float64)
    """
    tol = tolerance(dtype) if atol is None else atol
    for other in others:
        if type(other) is not type(aligner):
            raise TypeError(f"others must be {type(aligner).__name__} aligners, not {type(other).__name__}")
    gen = torch.Generator().manual_seed(seed)
    # the aggregator whose vectors the pairs stand for: one layer, or a stack of ``layers``
    aggregator = SingleLayer() if layers == 1 else LayerStack(tuple(range(-layers, 0)))
    aligner = call("for_vectors", "for_vectors() to the aggregator's output", aligner.for_vectors, aggregator.output())
    others = [call("for_vectors", "for_vectors() of an aligner of others", o.for_vectors, aggregator.output()) for o in others]
    pairs = _make_pairs(gen, 6, layers, dtype)
    batch = _batch(pairs)
    scores = call("outputs", "__call__ on the batch of nine pairs", aligner, batch)
    _check_outputs(aligner, scores, len(pairs))
    _check_zero_width(aligner, pairs)
    _check_invariance(aligner, pairs, _make_pairs(gen, 6, layers, dtype), scores, tol)
    for name, value in scores.items():
        for i in _EMPTY:
            if float(value[i]) != 0:
                raise fail("empty pairs score 0", f"pair {i} ({_PAIRS[i][2]}) {name} is {float(value[i]):.6g}")
    _check_refuses_non_finite(aligner, pairs)
    _check_shared_work(aligner, _variants(batch, gen), others, tol)
    _check_alignment(aligner, batch, scores, tol)
    rebuilt = round_trip(Composition(aggregator, aligner=aligner), ALIGNERS.stage).aligner
    check_signature(aligner, rebuilt)
    _compare("spec round trip", call("spec round trip", "the rebuilt aligner", rebuilt, batch), scores, tol,
             "by the aligner built from its run file")


def _check_outputs(aligner: Aligner, scores: Any, n: int) -> None:
    """One finite ``[n]`` float tensor per metric, in the order of ``aligner.metrics``."""
    metrics = tuple(aligner.metrics)
    if not metrics or not all(isinstance(m, str) for m in metrics) or aligner.primary not in metrics:
        raise fail("outputs", f"metrics {metrics!r} must be names, the primary {aligner.primary!r} among them")
    if not isinstance(scores, dict) or tuple(scores) != metrics:
        raise fail("outputs", f"__call__ returned {list(scores) if isinstance(scores, dict) else type(scores)}, "
                               f"not one tensor per metric in the order of aligner.metrics {list(metrics)}")
    for name, value in scores.items():
        if not isinstance(value, torch.Tensor) or value.shape != (n,) or not value.is_floating_point():
            raise fail("outputs", f"{name} is {type(value).__name__} "
                                   f"{tuple(value.shape) if isinstance(value, torch.Tensor) else ''}, not a float "
                                   f"tensor of shape ({n},) (one score per pair)")
        bad = torch.nonzero(~torch.isfinite(value)).flatten().tolist()
        if bad:
            n_ref, n_cand, kind = _PAIRS[bad[0]]
            raise fail("finite scores", f"pair {bad[0]} {name} is {float(value[bad[0]])} ({kind} pair, "
                                         f"{n_ref} x {n_cand} tokens)")


def _check_zero_width(aligner: Aligner, pairs: list[_Pair]) -> None:
    """Batches whose reference side, candidate side or both have no position: each pair scores 0."""
    tokenless_ref, tokenless_cand = pairs[8], pairs[5]  # (0, 3) and (4, 0)
    neither = _Pair(tokenless_ref.ref, tokenless_cand.cand, tokenless_ref.ref_mass, tokenless_cand.cand_mass,
                    tokenless_ref.ref_match, tokenless_cand.cand_match)
    for what, pair in (("reference", tokenless_ref), ("candidate", tokenless_cand),
                       ("reference and candidate", neither)):
        batch = _batch([pair])
        where = f"a batch of one pair whose {what} side has zero width (ref {tuple(batch.ref.shape)}, " \
                f"cand {tuple(batch.cand.shape)})"
        got = call("zero-width sides score 0", f"__call__ on {where}", aligner, batch)
        if not isinstance(got, dict) or tuple(got) != tuple(aligner.metrics):
            raise fail("zero-width sides score 0", f"__call__ on {where} returned "
                                                   f"{list(got) if isinstance(got, dict) else type(got).__name__}")
        for name, value in got.items():
            if not isinstance(value, torch.Tensor) or value.shape != (1,):
                shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
                raise fail("zero-width sides score 0", f"{name} is {shape} on {where}, not one score")
            if float(value[0]) != 0:
                raise fail("zero-width sides score 0", f"{name} is {float(value[0]):.6g} on {where}, not 0")


def _check_invariance(aligner: Aligner, pairs: list[_Pair], fresh: list[_Pair], scores: dict[str, torch.Tensor],
                      tol: float) -> None:
    """A pair's scores with other neighbours (``fresh``: other pairs of the same lengths, so the
    padding is the same), in another order, alone and with more padding."""
    n = len(pairs)
    for parity in (0, 1):
        probe = [i for i in range(n) if i % 2 == parity]
        mixed = _batch([pairs[i] if i % 2 == parity else fresh[i] for i in range(n)])
        got = call("scores depend on batch neighbours", "__call__ with other neighbours", aligner, mixed)
        _compare("scores depend on batch neighbours", _pick(got, probe, "scores depend on batch neighbours"),
                 _pick(scores, probe), tol, "when scored with other pairs", probe)
    backwards = list(range(n - 1, -1, -1))
    order = backwards[1::2] + backwards[::2]
    got = call("scores depend on the order of the pairs", "__call__ on the pairs reordered", aligner,
               _batch([pairs[i] for i in order]))
    _compare("scores depend on the order of the pairs", got, _pick(scores, order), tol, "when the pairs are reordered",
             order)
    for i in range(n):
        alone = _batch([pairs[i]])
        got = call("scores depend on batch size or padding", f"__call__ on pair {i} alone (ref "
                   f"{tuple(alone.ref.shape)}, cand {tuple(alone.cand.shape)})", aligner, alone)
        _compare("scores depend on batch size or padding", got, _pick(scores, [i]), tol,
                 "scored alone, without padding", [i])
    got = call("scores depend on padding", "__call__ with 3 more padding positions", aligner, _batch(pairs, extra=3))
    _compare("scores depend on padding", got, scores, tol, "with 3 more padding tokens")


def _check_refuses_non_finite(aligner: Aligner, pairs: list[_Pair]) -> None:
    """NaN or infinity in a token vector: a NonFiniteError from ``__call__`` and ``score_variants``."""
    for side, value, method in (("ref", float("nan"), "__call__"), ("cand", float("inf"), "__call__"),
                                ("ref", float("inf"), "score_variants")):
        broken = _batch(pairs)
        getattr(broken, side)[0, 1, 0] = value
        try:
            got = aligner(broken) if method == "__call__" else aligner.score_variants([broken, broken])[0]
        except NonFiniteError:
            continue
        except Exception as exc:  # noqa: BLE001 - the promise is a NonFiniteError, anything else breaks it
            raise fail("non-finite vectors refused", f"{value} in the {side} vectors raised "
                                                     f"{type(exc).__name__} in {method}: {exc}, not a NonFiniteError "
                                                     "(alignscore.aligners.base.check_finite)") from exc
        shown = {k: v.tolist()[:2] for k, v in got.items()} if isinstance(got, dict) else got
        raise fail("non-finite vectors refused", f"{value} in the {side} vectors gave scores {shown} in {method} "
                                                 "instead of a NonFiniteError (call "
                                                 "alignscore.aligners.base.check_finite(batch))")


def _check_shared_work(aligner: Aligner, variants: list[PairBatch], others: Sequence[Aligner], tol: float) -> None:
    """``score_variants`` and ``score_together`` give what calling each aligner on each batch gives."""
    together = call("score_variants", "score_variants on four variants of a batch", aligner.score_variants, variants)
    if len(together) != len(variants):
        raise fail("score_variants", f"{len(together)} results for {len(variants)} batches")
    for k, (b, got) in enumerate(zip(variants, together)):
        want = call("score_variants differs from calling the aligner", f"__call__ on variant {k}", aligner, b)
        _compare("score_variants differs from calling the aligner", got, want, tol, f"in variant {k}")
    try:
        aligner.score_variants([variants[0], replace(variants[0], ref=variants[0].ref.clone())])
    except ValueError:
        pass
    except Exception as exc:  # noqa: BLE001 - the promise is a ValueError (same_vectors)
        raise fail("score_variants", f"batches over different vectors raised {type(exc).__name__}: {exc}, not "
                                     "the ValueError of alignscore.aligners.base.same_vectors") from exc
    else:
        raise fail("score_variants", "it accepted batches over different vectors (alignscore.aligners.base."
                                      "same_vectors refuses them)")
    jobs = [(aligner, variants), (aligner, variants[2:])] + [(o, variants[1:]) for o in others]
    results = call("score_together", "score_together", type(aligner).score_together, jobs)
    if len(results) != len(jobs):
        raise fail("score_together", f"{len(results)} results for {len(jobs)} jobs")
    for j, ((job_aligner, job_batches), got_job) in enumerate(zip(jobs, results)):
        if len(got_job) != len(job_batches):
            raise fail("score_together", f"job {j}: {len(got_job)} results for {len(job_batches)} batches")
        for k, (b, got) in enumerate(zip(job_batches, got_job)):
            want = call("score_together differs from calling the aligner", f"__call__ of job {j}'s aligner on "
                        f"batch {k}", job_aligner, b)
            _compare("score_together differs from calling the aligner", got, want, tol,
                     f"in job {j} ({job_aligner.signature()}), batch {k}")


def _check_alignment(aligner: Aligner, batch: PairBatch, scores: dict[str, torch.Tensor], tol: float) -> None:
    """Where the aligner explains itself: the scores of :meth:`~Aligner.alignment` are its scores,
    and each metric's contributions add up to it."""
    try:
        explained = aligner.alignment(batch)
    except (NotImplementedError, ConfigError):
        return  # explaining its alignments is optional
    except Exception as exc:  # noqa: BLE001 - anything else breaks the promise
        raise fail("alignment explains the scores", f"alignment() raised {type(exc).__name__}: {exc}") from exc
    # alignment() is for inspection and may take another path (a torch cost matrix instead of
    # blocked NumPy ones); a distance from the Gram expansion, sqrt(|x|^2 + |y|^2 - 2 x.y), carries
    # sqrt(eps) of rounding near 0, so the two agree to float32 rounding, not float64's
    _compare("alignment explains the scores", explained.scores, scores, max(tol, tolerance(torch.float32)),
             "in alignment()")
    if set(explained.contributions) != set(scores):
        raise fail("alignment explains the scores", f"contributions for {sorted(explained.contributions)}, "
                                                     f"not for each metric {sorted(scores)}")
    for name, (ref_share, cand_share) in explained.contributions.items():
        if not bool(torch.isfinite(ref_share).all() & torch.isfinite(cand_share).all()):
            raise fail("alignment explains the scores", f"the {name} contributions hold NaN or infinity")
        total = {name: ref_share.sum(-1) + cand_share.sum(-1)}
        _compare("alignment explains the scores", total, {name: explained.scores[name]}, tol,
                 "between its contributions' sum and the score")

