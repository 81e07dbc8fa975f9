"""The promises of each pipeline stage, checked on a part: the harness the suite runs over every
registered part, and the one a plugin author runs over theirs.

Each check builds small random inputs (a seeded :class:`torch.Generator`, tiny dimensions),
calls the part the way the engine does, and raises :class:`AssertionError` whose message starts
with the promise that broke::

    >>> from alignscore.aligners import Greedy
    >>> from alignscore.testing import check_aligner
    >>> check_aligner(Greedy())
    >>> class Centred(Greedy):  # subtracts the batch mean: a pair's score depends on the others
    ...     def __call__(self, batch):
    ...         return {k: v - v.mean() for k, v in super().__call__(batch).items()}
    >>> check_aligner(Centred())
    Traceback (most recent call last):
    ...
    AssertionError: scores depend on batch neighbours: pair 0 precision changed by ...

Scores are compared to a tolerance tied to the dtype of the inputs (:func:`tolerance`), never bit
for bit: another batch shape may take another BLAS kernel (AVX2 or AVX-512), which rounds
differently.
"""

from __future__ import annotations

import re
import tempfile
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import torch

from .aggregators.base import Aggregator
from .aggregators.single import SingleLayer
from .aggregators.stack import LayerStack
from .aligners.base import Aligner, PairBatch
from .composition import Composition
from .config import RunSpec, compile_run, file_source
from .encoders.base import Encoder
from .errors import ConfigError
from .filters.base import TokenFilter, TokenRoles
from .tokens import Tokenized, TokenTable
from .weighting.base import WeightState, Weighting

__all__ = ["WordEncoder", "check_aggregator", "check_aligner", "check_filter", "check_weighting", "tolerance"]

#: how many machine epsilons two computations of one score may differ by (summation order)
ULPS = 64


def tolerance(dtype: torch.dtype) -> float:
    """The absolute difference allowed between two computations of one value of order 1 in
    ``dtype``: ``64 eps`` (7.6e-6 in float32, 1.4e-14 in float64).

    >>> f"{tolerance(torch.float32):.1e}", f"{tolerance(torch.float64):.1e}"
    ('7.6e-06', '1.4e-14')
    """
    return ULPS * torch.finfo(dtype).eps


def _fail(promise: str, detail: str) -> AssertionError:
    return AssertionError(f"{promise}: {detail}")


# -- aligners ---------------------------------------------------------------------------------------
# (reference tokens, candidate tokens, kind) of the pairs of the test batch
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
    if set(got) != set(want):
        raise _fail(promise, f"{what} gave the metrics {sorted(got)}, not {sorted(want)}")
    for name in want:
        a, b = got[name].detach().double().cpu(), want[name].detach().double().cpu()
        if a.shape != b.shape:
            raise _fail(promise, f"{name} has shape {tuple(a.shape)} {what}, not {tuple(b.shape)}")
        diff = (a - b).abs()
        bad = ~(diff <= tol * b.abs().clamp_min(1.0))  # NaN is bad too
        if bool(bad.any()):
            i = int(torch.nonzero(bad).flatten()[0])
            pair = pairs[i] if pairs is not None else i
            raise _fail(promise, f"pair {pair} {name} changed by {float(diff[i]):.2g} {what} "
                                 f"({float(b[i]):.6g} -> {float(a[i]):.6g}; tolerance {tol:.1g})")


def _pick(scores: dict[str, torch.Tensor], index: Sequence[int]) -> dict[str, torch.Tensor]:
    at = torch.tensor(list(index), dtype=torch.long)
    return {k: v.detach().cpu()[at] for k, v in scores.items()}


def check_aligner(aligner: Aligner, *, dtype: torch.dtype = torch.float32, seed: int = 0, layers: int = 1,
                  others: Sequence[Aligner] = (), atol: float | None = None) -> None:
    """Check the promises of an aligner (:class:`~alignscore.aligners.base.Aligner`).

    On a batch of nine pairs of random unit vectors (among them an empty text, a text without
    mass, a text against itself and one against its opposite) it checks, in this order:

    - *outputs*: :meth:`~Aligner.__call__` returns one ``[B]`` tensor per name of
      ``aligner.metrics``, and ``primary`` is one of them;
    - *finite scores* for every pair;
    - scores independent of *batch neighbours* (the other pairs replaced), of the *order* of the
      pairs and of *padding* (each pair alone, cut to its own length, and extra padding);
    - *empty pairs score 0* (either side without mass);
    - *non-finite vectors refused* with :class:`~alignscore.errors.ConfigError` (NaN or
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
        (:meth:`~alignscore.aligners.base.Aligner.fit`).
    others : sequence of Aligner
        Aligners of the same class, scored together with ``aligner`` through ``score_together``.
    atol : float, optional
        The difference allowed between two computations of a score (relative for scores above
        1); default :func:`tolerance` of ``dtype``.

    Returns
    -------
    None
        Raises :class:`AssertionError` naming the broken promise.

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
    aligner = aligner.fit(aggregator.output())
    others = [o.fit(aggregator.output()) for o in others]
    pairs = _make_pairs(gen, 6, layers, dtype)
    batch = _batch(pairs)
    scores = aligner(batch)
    _check_outputs(aligner, scores, len(pairs))
    _check_invariance(aligner, pairs, _make_pairs(gen, 6, layers, dtype), scores, tol)
    for name, value in scores.items():
        for i in _EMPTY:
            if float(value[i]) != 0:
                raise _fail("empty pairs score 0", f"pair {i} ({_PAIRS[i][2]}) {name} is {float(value[i]):.6g}")
    _check_refuses_non_finite(aligner, pairs)
    _check_shared_work(aligner, _variants(batch, gen), others, tol)
    _check_alignment(aligner, batch, scores, tol)
    rebuilt = _round_trip(Composition(aggregator, aligner=aligner), "aligner").aligner
    _check_signature(aligner, rebuilt)
    _compare("spec round trip", rebuilt(batch), scores, tol, "by the aligner built from its run file")


def _check_outputs(aligner: Aligner, scores: Any, n: int) -> None:
    """One finite ``[n]`` float tensor per metric, in the order of ``aligner.metrics``."""
    metrics = tuple(aligner.metrics)
    if not metrics or not all(isinstance(m, str) for m in metrics) or aligner.primary not in metrics:
        raise _fail("outputs", f"metrics {metrics!r} must be names, the primary {aligner.primary!r} among them")
    if not isinstance(scores, dict) or tuple(scores) != metrics:
        raise _fail("outputs", f"__call__ returned {list(scores) if isinstance(scores, dict) else type(scores)}, "
                               f"not one tensor per metric in the order of aligner.metrics {list(metrics)}")
    for name, value in scores.items():
        if not isinstance(value, torch.Tensor) or value.shape != (n,) or not value.is_floating_point():
            raise _fail("outputs", f"{name} is {type(value).__name__} "
                                   f"{tuple(value.shape) if isinstance(value, torch.Tensor) else ''}, not a float "
                                   f"tensor of shape ({n},) (one score per pair)")
        bad = torch.nonzero(~torch.isfinite(value)).flatten().tolist()
        if bad:
            n_ref, n_cand, kind = _PAIRS[bad[0]]
            raise _fail("finite scores", f"pair {bad[0]} {name} is {float(value[bad[0]])} ({kind} pair, "
                                         f"{n_ref} x {n_cand} tokens)")


def _check_invariance(aligner: Aligner, pairs: list[_Pair], fresh: list[_Pair], scores: dict[str, torch.Tensor],
                      tol: float) -> None:
    """A pair's scores with other neighbours (``fresh``: other pairs of the same lengths, so the
    padding is the same), in another order, alone and with more padding."""
    n = len(pairs)
    for parity in (0, 1):
        probe = [i for i in range(n) if i % 2 == parity]
        mixed = _batch([pairs[i] if i % 2 == parity else fresh[i] for i in range(n)])
        _compare("scores depend on batch neighbours", _pick(aligner(mixed), probe), _pick(scores, probe), tol,
                 "when scored with other pairs", probe)
    backwards = list(range(n - 1, -1, -1))
    order = backwards[1::2] + backwards[::2]
    _compare("scores depend on the order of the pairs", aligner(_batch([pairs[i] for i in order])),
             _pick(scores, order), tol, "when the pairs are reordered", order)
    for i in range(n):
        _compare("scores depend on batch size or padding", aligner(_batch([pairs[i]])), _pick(scores, [i]), tol,
                 "scored alone, without padding", [i])
    _compare("scores depend on padding", aligner(_batch(pairs, extra=3)), scores, tol, "with 3 more padding tokens")


def _check_refuses_non_finite(aligner: Aligner, pairs: list[_Pair]) -> None:
    """NaN or infinity in a token vector: a ConfigError from ``__call__`` and ``score_variants``."""
    for side, value, call in (("ref", float("nan"), "__call__"), ("cand", float("inf"), "__call__"),
                              ("ref", float("inf"), "score_variants")):
        broken = _batch(pairs)
        getattr(broken, side)[0, 1, 0] = value
        try:
            got = aligner(broken) if call == "__call__" else aligner.score_variants([broken, broken])[0]
        except ConfigError:
            continue
        except Exception as exc:  # noqa: BLE001 - the promise is a ConfigError, anything else breaks it
            raise _fail("non-finite vectors refused", f"{value} in the {side} vectors raised "
                                                      f"{type(exc).__name__} in {call}: {exc}, not a ConfigError "
                                                      "(alignscore.aligners.base.check_finite)") from None
        raise _fail("non-finite vectors refused", f"{value} in the {side} vectors gave scores "
                                                  f"{ {k: v.tolist()[:2] for k, v in got.items()} } in {call} "
                                                  "instead of a ConfigError (call "
                                                  "alignscore.aligners.base.check_finite(batch))")


def _check_shared_work(aligner: Aligner, variants: list[PairBatch], others: Sequence[Aligner], tol: float) -> None:
    """``score_variants`` and ``score_together`` give what calling each aligner on each batch gives."""
    together = aligner.score_variants(variants)
    if len(together) != len(variants):
        raise _fail("score_variants", f"{len(together)} results for {len(variants)} batches")
    for k, (b, got) in enumerate(zip(variants, together)):
        _compare("score_variants differs from calling the aligner", got, aligner(b), tol, f"in variant {k}")
    try:
        aligner.score_variants([variants[0], replace(variants[0], ref=variants[0].ref.clone())])
    except ValueError:
        pass
    else:
        raise _fail("score_variants", "it accepted batches over different vectors (alignscore.aligners.base."
                                      "same_vectors refuses them)")
    jobs = [(aligner, variants), (aligner, variants[2:])] + [(o, variants[1:]) for o in others]
    results = type(aligner).score_together(jobs)
    if len(results) != len(jobs):
        raise _fail("score_together", f"{len(results)} results for {len(jobs)} jobs")
    for j, ((job_aligner, job_batches), got_job) in enumerate(zip(jobs, results)):
        if len(got_job) != len(job_batches):
            raise _fail("score_together", f"job {j}: {len(got_job)} results for {len(job_batches)} batches")
        for k, (b, got) in enumerate(zip(job_batches, got_job)):
            _compare("score_together differs from calling the aligner", got, job_aligner(b), tol,
                     f"in job {j} ({job_aligner.signature()}), batch {k}")


def _check_alignment(aligner: Aligner, batch: PairBatch, scores: dict[str, torch.Tensor], tol: float) -> None:
    """Where the aligner explains itself: the scores of :meth:`~Aligner.alignment` are its scores,
    and each metric's contributions add up to it."""
    try:
        explained = aligner.alignment(batch)
    except (NotImplementedError, ConfigError):
        return  # explaining its alignments is optional
    # alignment() is for inspection and may take another path (a torch cost matrix instead of
    # blocked NumPy ones); a distance from the Gram expansion, sqrt(|x|^2 + |y|^2 - 2 x.y), carries
    # sqrt(eps) of rounding near 0, so the two agree to float32 rounding, not float64's
    _compare("alignment explains the scores", explained.scores, scores, max(tol, tolerance(torch.float32)),
             "in alignment()")
    if set(explained.contributions) != set(scores):
        raise _fail("alignment explains the scores", f"contributions for {sorted(explained.contributions)}, "
                                                     f"not for each metric {sorted(scores)}")
    for name, (ref_share, cand_share) in explained.contributions.items():
        if not bool(torch.isfinite(ref_share).all() & torch.isfinite(cand_share).all()):
            raise _fail("alignment explains the scores", f"the {name} contributions hold NaN or infinity")
        total = {name: ref_share.sum(-1) + cand_share.sum(-1)}
        _compare("alignment explains the scores", total, {name: explained.scores[name]}, tol,
                 "between its contributions' sum and the score")


# -- spec and signature ------------------------------------------------------------------------------
def _round_trip(composition: Any, stage: str) -> Any:
    """``composition`` written to a run file (TOML) and built from it again."""
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "part.toml"
            path.write_text(RunSpec(composition=composition).toml(), encoding="utf-8")
            return compile_run([file_source(path)]).composition
    except Exception as exc:  # noqa: BLE001 - whatever breaks the round trip is the finding
        raise _fail("spec round trip", f"the {stage} cannot be written to a run file and read back "
                                       f"({type(exc).__name__}: {exc}); register its class and keep its "
                                       "settings as dataclass fields of TOML types") from None


_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def _check_signature(part: Any, rebuilt: Any) -> None:
    first = part.signature()
    if not isinstance(first, str) or not first or "|" in first or "\n" in first or _ADDRESS.search(first):
        raise _fail("stable signature", f"{first!r} is not one non-empty line without '|' or an object address")
    if part.signature() != first:
        raise _fail("stable signature", f"two calls gave {first!r} and {part.signature()!r}")
    if rebuilt.signature() != first:
        raise _fail("spec round trip", f"the part built from its run file has the signature "
                                       f"{rebuilt.signature()!r}, not {first!r}")


# -- aggregators ------------------------------------------------------------------------------------
def check_aggregator(aggregator: Aggregator, *, dtype: torch.dtype = torch.float32, seed: int = 0,
                     num_layers: int = 6, default_layer: int | None = 3, atol: float | None = None) -> None:
    """Check the promises of an aggregator (:class:`~alignscore.aggregators.base.Aggregator`).

    The aggregator is resolved for a model of ``num_layers`` blocks, then given random hidden
    states ``[L, B, T, D]`` of its layers. Promises: *layers* resolve to layer numbers of the
    model; the output is ``[B, T, D']`` and *finite*; *every token is aggregated on its own*
    (its vector alone, with other neighbours, other padding or in another order is the same);
    *spec round trip* and a *stable signature* (of the resolved aggregator).

    Parameters
    ----------
    aggregator : Aggregator
        The part to check (unresolved, as a user writes it).
    dtype : torch.dtype
        The dtype of the hidden states.
    seed : int
        Seed of the random states.
    num_layers, default_layer : int
        The model it is resolved for: its blocks, and its default layer (``None``: none).
    atol : float, optional
        Allowed difference between two computations of a vector entry; default
        :func:`tolerance` of ``dtype``.

    Returns
    -------
    None
        Raises :class:`AssertionError` naming the broken promise.

    Examples
    --------
    >>> from alignscore.aggregators import PowerMeans
    >>> check_aggregator(PowerMeans(layers=(-2, -1)))
    """
    tol = tolerance(dtype) if atol is None else atol
    resolved = aggregator.resolve(num_layers, default_layer)
    layers = tuple(resolved.layers_read())
    if not layers or not all(isinstance(k, int) and 0 <= k <= num_layers for k in layers):
        raise _fail("layers", f"resolved for {num_layers} blocks, the layers are {layers!r}, not numbers in "
                              f"0..{num_layers}")
    gen = torch.Generator().manual_seed(seed)
    b, t, d = 3, 5, 8
    states = (3 * torch.randn(len(layers), b, t, d, generator=gen, dtype=torch.float64)).to(dtype)
    out = resolved(states)
    if not isinstance(out, torch.Tensor) or out.dim() != 3 or tuple(out.shape[:2]) != (b, t):
        raise _fail("outputs", f"states {tuple(states.shape)} gave {getattr(out, 'shape', type(out))}, not "
                               f"[{b}, {t}, D'] (one vector per token)")
    if not bool(torch.isfinite(out).all()):
        raise _fail("finite vectors", "finite hidden states gave NaN or infinity")

    def same(promise: str, got: torch.Tensor, want: torch.Tensor, what: str) -> None:
        diff = (got.double() - want.double()).abs()
        bad = ~(diff <= tol * want.double().abs().clamp_min(1.0))
        if got.shape != want.shape or bool(bad.any()):
            worst = float(diff.max()) if got.shape == want.shape else float("nan")
            raise _fail(promise, f"a token's vector changed by {worst:.2g} {what} (tolerance {tol:.1g})")

    for i in range(b):
        for j in range(t):
            same("tokens aggregated on their own", resolved(states[:, i:i + 1, j:j + 1])[0, 0], out[i, j],
                 f"(text {i}, token {j}) when aggregated alone")
    other = (3 * torch.randn(states.shape, generator=gen, dtype=torch.float64)).to(dtype)
    other[:, :, :2] = states[:, :, :2]
    same("tokens aggregated on their own", resolved(other)[:, :2], out[:, :2],
         "when the tokens after it changed (padding)")
    perm_b, perm_t = torch.tensor([2, 0, 1]), torch.tensor([4, 2, 0, 3, 1])
    same("tokens aggregated on their own", resolved(states[:, perm_b][:, :, perm_t]), out[perm_b][:, perm_t],
         "when the texts and tokens are reordered")

    rebuilt = _round_trip(Composition(aggregator=aggregator), "aggregator").aggregator
    rebuilt = rebuilt.resolve(num_layers, default_layer)
    _check_signature(resolved, rebuilt)
    same("spec round trip", rebuilt(states), out, "by the aggregator built from its run file")


# -- weighting and filters: a small word-level encoder ---------------------------------------------
class WordEncoder(Encoder):
    """A tiny encoder for tests of weightings and token filters: words and punctuation marks are
    tokens, a word longer than 5 letters is split into WordPiece-style pieces (``"alig"``,
    ``"##nme"``, ``"##nt"``), texts are framed by ``[CLS]`` and ``[SEP]``, and a token's id is a
    hash of its string (stable across runs). Its hidden states are seeded from the ids (no
    context), so it also serves as the encoder of a :class:`~alignscore.scorer.Scorer` in tests.

    >>> enc = WordEncoder()
    >>> enc.tokenize(["Alignment, done."]).tokens
    [['[CLS]', 'alig', '##nme', '##nt', ',', 'done', '.', '[SEP]']]
    """

    SPECIAL = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2}

    def __init__(self, vocab_size: int = 211, num_layers: int = 3, dim: int = 8) -> None:
        self._vocab_size, self._num_layers, self._dim = vocab_size, num_layers, dim

    name = property(lambda self: "words")  # type: ignore[assignment]
    num_layers = property(lambda self: self._num_layers)  # type: ignore[assignment]
    vocab_size = property(lambda self: self._vocab_size)  # type: ignore[assignment]
    pad_id = property(lambda self: 0)  # type: ignore[assignment]
    model_max_length = property(lambda self: 512)  # type: ignore[assignment]
    device = property(lambda self: torch.device("cpu"))  # type: ignore[assignment]

    def default_layer(self) -> int | None:
        return self._num_layers

    def signature(self) -> str:
        return f"words(V={self._vocab_size})"

    def _id(self, token: str) -> int:
        return self.SPECIAL.get(token, len(self.SPECIAL) + zlib.crc32(token.encode()) % (self._vocab_size - len(self.SPECIAL)))

    def tokenize(self, texts: Sequence[str]) -> Tokenized:
        out = Tokenized([], [], [], [], [], [])
        for text in texts:
            tokens, surface, starts = ["[CLS]"], [""], [False]
            for word in re.findall(r"\w+|[^\w\s]", text.strip().lower()):
                pieces = [word] if len(word) <= 5 else [word[:4]] + [word[k:k + 3] for k in range(4, len(word), 3)]
                for k, piece in enumerate(pieces):
                    tokens.append(piece if k == 0 else "##" + piece)
                    surface.append(piece)
                    starts.append(k == 0)
            tokens.append("[SEP]")
            surface.append("")
            starts.append(False)
            out.ids.append([self._id(tok) for tok in tokens])
            out.special.append([tok in self.SPECIAL for tok in tokens])
            out.word_start.append(starts)
            out.tokens.append(tokens)
            out.surface.append(surface)
        return out

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, layers: Sequence[int]) -> torch.Tensor:
        table = torch.randn(self._num_layers + 1, self._vocab_size, self._dim,
                            generator=torch.Generator().manual_seed(0))
        return table[list(layers)][:, input_ids]


_TEXTS = (
    "The cat sat on the mat.",
    "A remarkable alignment of transformers, isn't it?",
    "the the the",
    "",
    "Unbelievable!",
    "Scores never depend on the other texts.",
    "The cat sat on the mat.",
)


def _table(encoder: Encoder, texts: Sequence[str]) -> TokenTable:
    return TokenTable.from_tokenized(encoder.tokenize(list(texts)))


def check_weighting(weighting: Weighting, *, encoder: Encoder | None = None, texts: Sequence[str] = _TEXTS,
                    seed: int = 0) -> None:
    """Check the promises of a weighting (:class:`~alignscore.weighting.base.Weighting`).

    Over a few texts, some repeated, each counted a random number of times as a reference and as
    a candidate: ``compute`` gives two *finite, non-negative* ``[V]`` tables; *one pass equals a
    chunked pass* (the texts counted in two chunks into one state) and *merged states*
    (two processes' counts added, :meth:`WeightState.merge`); the weights *do not depend on
    the order* of the texts; a weighting whose :meth:`~Weighting.depends_on_texts` is False gives
    the same weights whatever the texts; *spec round trip* and a *stable signature*. Through the
    engine (the encoder's default layer, bert_score's token roles), the *engine's masses* are
    ``weight[id] * role``, times the norm of the token's vector before unit normalisation for a
    weighting whose :meth:`~Weighting.reads_norms` is True (which must be a bool), each text's
    masses the same as when that text is encoded alone.

    Parameters
    ----------
    weighting : Weighting
        The part to check.
    encoder : Encoder, optional
        Tokenizes the texts (and an idf-L corpus); default :class:`WordEncoder`.
    texts : sequence of str
        The texts counted.
    seed : int
        Seed of the random counts.

    Returns
    -------
    None
        Raises :class:`AssertionError` naming the broken promise.

    Examples
    --------
    >>> from alignscore.weighting import IdfS
    >>> check_weighting(IdfS(sep=True))
    """
    encoder = encoder or WordEncoder()
    table = _table(encoder, texts)
    gen = torch.Generator().manual_seed(seed)
    ref_counts = torch.randint(0, 3, (len(table),), generator=gen).double()
    cand_counts = torch.randint(0, 3, (len(table),), generator=gen).double()
    weights = weighting.fit(table, ref_counts, cand_counts, encoder)
    if not isinstance(weights, tuple) or len(weights) != 2:
        raise _fail("outputs", f"compute returned {type(weights).__name__}, not (ref_weights, cand_weights)")
    for side, w in zip(("reference", "candidate"), weights):
        if not isinstance(w, torch.Tensor) or w.shape != (encoder.vocab_size,) or not w.is_floating_point():
            raise _fail("outputs", f"the {side} weights are {getattr(w, 'shape', type(w))}, not a float tensor "
                                   f"[{encoder.vocab_size}] (one weight per token id)")
        if not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
            wrong = w[~(torch.isfinite(w) & (w >= 0))]
            raise _fail("finite, non-negative weights", f"the {side} weights hold {wrong[:3].tolist()}")

    def same(promise: str, got: tuple[torch.Tensor, torch.Tensor], what: str) -> None:
        for side, a, b in zip(("reference", "candidate"), got, weights):
            tol = tolerance(b.dtype)
            diff = (a.double() - b.double()).abs()
            if a.shape != b.shape or not bool((diff <= tol * b.double().abs().clamp_min(1.0)).all()):
                worst = float(diff.max()) if a.shape == b.shape else float("nan")
                raise _fail(promise, f"a {side} weight changed by {worst:.2g} {what}")

    half = len(table) // 2
    chunks = [torch.arange(half), torch.arange(half, len(table))]
    state = WeightState.empty(encoder.vocab_size)
    for rows in chunks:
        sub, _ = table.select(rows)
        weighting.update(state, sub, ref_counts[rows], cand_counts[rows])
    same("one pass equals a chunked pass", weighting.compute(state, encoder), "when counted in two chunks")
    states = []
    for rows in chunks:
        sub, _ = table.select(rows)
        states.append(WeightState.empty(encoder.vocab_size))
        weighting.update(states[-1], sub, ref_counts[rows], cand_counts[rows])
    states[0].merge(states[1])
    same("merged states equal one pass", weighting.compute(states[0], encoder), "when two processes' counts merge")
    perm = torch.randperm(len(table), generator=gen)
    sub, _ = table.select(perm)
    same("weights independent of the order of the texts", weighting.fit(sub, ref_counts[perm], cand_counts[perm],
                                                                        encoder), "when the texts are reordered")
    if not weighting.depends_on_texts():
        few = _table(encoder, ["something else entirely"])
        same("depends_on_texts is False but the weights depend on the texts",
             weighting.fit(few, torch.ones(1, dtype=torch.float64), torch.ones(1, dtype=torch.float64), encoder),
             "over other texts")

    _check_engine_masses(weighting, encoder, texts, weights)
    rebuilt = _round_trip(Composition(weighting=weighting), "weighting").weighting
    _check_signature(weighting, rebuilt)
    same("spec round trip", rebuilt.fit(table, ref_counts, cand_counts, encoder),
         "from the weighting built from its run file")


def _check_engine_masses(weighting: Weighting, encoder: Encoder, texts: Sequence[str],
                         weights: tuple[torch.Tensor, torch.Tensor]) -> None:
    """The masses the engine gives each token from ``weights`` (fitted already): the weight of
    its id times its role, times its vector's norm before unit normalisation where the weighting
    reads norms; computed here from each text encoded alone."""
    from .engine import Pairs, encode, norms_read, settings  # the engine imports this module's neighbours

    reads = weighting.reads_norms()
    if not isinstance(reads, bool):
        raise _fail("reads_norms", f"reads_norms() returned {reads!r}, not True or False")
    composition = Composition(weighting=weighting).resolve(encoder)
    pairs = Pairs.from_pairs(list(texts), list(texts))
    encoded = encode(encoder, pairs, [composition.aggregator], norms=norms_read([composition]))
    (setting,) = settings(encoded, [composition], encoder, {weighting.signature(): weights})
    table, agg = encoded.table, composition.aggregator
    carries, _ = composition.roles(table)
    norms = []
    for i in range(len(table)):  # each text alone: no batch, no padding, no other text
        ids = table.ids[int(table.offsets[i]):int(table.offsets[i + 1])].unsqueeze(0)
        h = agg(encoder.forward(ids, torch.ones_like(ids), agg.layers_read()))[0]
        norms.append(h.norm(dim=-1) if reads else torch.ones(len(h), dtype=h.dtype))
    norm = torch.cat(norms) if norms else torch.zeros(0)
    for side, w, got in (("reference", weights[0], setting.ref_mass), ("candidate", weights[1], setting.cand_mass)):
        want = (w[table.ids] * carries * norm).double()
        got = got.detach().double().cpu()
        diff = (got - want).abs()
        if got.shape != want.shape or not bool((diff <= tolerance(torch.float32) * want.clamp_min(1.0)).all()):
            worst = float(diff.max()) if got.shape == want.shape else float("nan")
            what = "weight[id] * role" + (" * |vector|" if reads else "")
            raise _fail("engine's masses", f"a {side} token's mass differs from {what} by {worst:.2g} "
                                           f"(reads_norms() is {reads})")


def check_filter(token_filter: TokenFilter, *, encoder: Encoder | None = None, texts: Sequence[str] = _TEXTS) -> None:
    """Check the promises of a token filter (:class:`~alignscore.filters.base.TokenFilter`).

    ``keep`` gives one bool per packed token; *a text's tokens are kept independently of the
    other texts* of the table (each text alone, and the texts in another order, give the same
    answer); *spec round trip* and a *stable signature*.

    Parameters
    ----------
    token_filter : TokenFilter
        The part to check.
    encoder : Encoder, optional
        Tokenizes the texts; default :class:`WordEncoder` (WordPiece-style pieces, punctuation).
    texts : sequence of str
        The texts whose tokens it filters.

    Returns
    -------
    None
        Raises :class:`AssertionError` naming the broken promise.

    Examples
    --------
    >>> from alignscore.filters import RemoveSubwordsPunct
    >>> check_filter(RemoveSubwordsPunct())
    """
    encoder = encoder or WordEncoder()
    table = _table(encoder, texts)
    keep = token_filter.keep(table)
    if not isinstance(keep, torch.Tensor) or keep.dtype != torch.bool or keep.shape != table.ids.shape:
        raise _fail("outputs", f"keep returned {getattr(keep, 'dtype', type(keep))} "
                               f"{tuple(getattr(keep, 'shape', ()))}, not bool [{len(table.ids)}] (one per token)")

    def same(promise: str, got: torch.Tensor, want: torch.Tensor, rows: torch.Tensor, what: str) -> None:
        ordinary = ~table.special[rows]  # special tokens follow the policy, whatever a filter says
        if got.shape != want.shape or not torch.equal(got[ordinary], want[ordinary]):
            raise _fail(promise, f"the ordinary tokens kept changed {what}")

    for i in range(len(table)):
        sub, rows = table.select(torch.tensor([i]))
        same("tokens kept independently of the other texts", token_filter.keep(sub), keep[rows], rows,
             f"for text {i} ({texts[i]!r}) filtered alone")
    perm = torch.arange(len(table) - 1, -1, -1)
    sub, rows = table.select(perm)
    same("tokens kept independently of the other texts", token_filter.keep(sub), keep[rows], rows,
         "when the texts are reordered")

    rebuilt = _round_trip(Composition(roles=TokenRoles(filters=(token_filter,))), "token filter").roles.filters[0]
    _check_signature(token_filter, rebuilt)
    same("spec round trip", rebuilt.keep(table), keep, torch.arange(len(keep)),
         "by the filter built from its run file")

