"""Minimum Bayes risk (MBR) selection: for each source, the sample that agrees most with the
others under a metric.

Each block of K samples (one source's) gives a utility matrix ``U [K, K]``, ``U[i, j]`` the
composition's primary score (``composition.metric``) of sample i as the candidate against sample
j as the reference. The expected utility of sample i is the mean of its row: over every j (self
included), or over ``j != i`` (``exclude_self``). The selection is the argmax (ties: the first).
Every text is encoded once for the whole input, through :func:`~alignscore.blocks.score_blocks`.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Sequence, TextIO

import torch

from .rescale import rescale
from .blocks import score_blocks
from .errors import InputError
from .pairs import Blocks
from .scores import check_texts, why_empty
from .settings import Options, keyword, setting
from .signature import Signature

if TYPE_CHECKING:
    from .config import Provenance, RunSpec
    from .scorer import Scorer

__all__ = ["MbrOptions", "Selection", "expected_utility", "mbr_file", "mbr_select", "mbr_signature", "read_samples",
           "write_selections"]


@dataclass(frozen=True)
class MbrOptions(Options):
    """``alignscore mbr``'s own options (its flags, :func:`mbr_file`'s ``opts``): the blocks and
    how the selections are written; the utility's options are the scorer's.

    Examples
    --------
    >>> MbrOptions.given({"k": 0})
    Traceback (most recent call last):
    alignscore.errors.ConfigError: k=: expected an integer >= 1, not 0
    """

    k: int | None = setting(None, ge=1, flag="samples", metavar="K", help=(
        "Samples per source (K). Default: the whole file is one block."))
    exclude_self: bool = setting(False, help="Expected utility over the other samples of the block only (j != i).")
    format: str = setting("tsv", choices=("tsv", "jsonl"), help=(
        "tsv: a signature comment line, then 'block index utility text' rows; jsonl: one object per block with "
        "those keys."))


@dataclass(frozen=True)
class Selection:
    """The sample chosen for one block: its ``index`` in the block (0-based), its expected
    ``utility`` and its ``text``."""

    block: int
    index: int
    utility: float
    text: str


def expected_utility(utility: torch.Tensor, exclude_self: bool = False) -> torch.Tensor:
    """``[K]`` float64: the mean of each row of ``utility [K, K]``, over every column, or over
    the columns ``j != i`` with ``exclude_self`` (needs K >= 2)."""
    u = utility.double()
    k = u.shape[0]
    if not exclude_self:
        return u.mean(1)
    if k < 2:
        raise InputError(f"{keyword('exclude_self')} needs at least 2 samples per block: one sample has no other")
    return (u.sum(1) - u.diagonal()) / (k - 1)


def check_blocks(n_samples: int, k: int, exclude_self: bool, path: str | None = None,
                 label: Callable[[str], str] = keyword) -> int:
    """The number of blocks of ``k`` samples among ``n_samples`` (the lines of ``path``, when
    given); InputError when they do not divide, or when ``exclude_self`` leaves a block's
    samples nothing to be compared with (``label`` names the options as the caller does).

    >>> check_blocks(8, 4, False)
    2
    >>> try:
    ...     check_blocks(7, 4, False)
    ... except InputError as exc:
    ...     print(str(exc)[:53])
    there are 7 samples, which is not a multiple of k= 4:
    """
    if k < 1:
        raise InputError(f"{label('k')} must be >= 1, not {k}")
    if n_samples % k:
        what = f"has {n_samples} lines" if path is not None else f"there are {n_samples} samples"
        raise InputError(f"{what}, which is not a multiple of {label('k')} {k}: every block of {k} consecutive "
                         "samples must hold one source's samples", path)
    if exclude_self and k < 2:
        raise InputError(f"{label('exclude_self')} needs {label('k')} >= 2: a block of one sample has no other "
                         "sample")
    return n_samples // k


def mbr_select(scorer: Scorer, samples: Sequence[str], k: int, exclude_self: bool = False,
               max_pairs: int = 1 << 16, label: Callable[[str], str] = keyword) -> list[Selection]:
    """MBR over ``samples`` in blocks of ``k`` consecutive texts (one source's samples each):
    one :class:`Selection` per block. Every unique text is encoded once for all the blocks; the
    weights of an idf weighting are fitted on every sample, each once per block it appears in
    (as candidate and as reference). Pairs with an empty side score 0, with a warning. ``label``
    names ``k`` and ``exclude_self`` in errors as the caller does."""
    return list(_select(scorer, check_texts(samples, "samples"), k, exclude_self, max_pairs, label))


def _select(scorer: Scorer, samples: list[str], k: int, exclude_self: bool, max_pairs: int,
            label: Callable[[str], str]) -> Iterator[Selection]:
    n_blocks = check_blocks(len(samples), k, exclude_self, label=label)
    composition = scorer.resolved()
    blocks = Blocks.of([(samples[b * k:(b + 1) * k],) * 2 for b in range(n_blocks)])
    baseline = composition.baseline_values()
    reasons = []
    for b, (result,) in enumerate(score_blocks(scorer.scoring_encoder(), blocks, [composition], scorer.runtime,
                                                max_pairs)):
        values = {composition.metric: result.metrics[composition.metric]}
        utility = (rescale(values, baseline) if baseline is not None else values)[composition.metric]
        expected = expected_utility(utility, exclude_self)
        best = int(torch.argmax(expected))  # the first of equal maxima
        reasons.append(result.reasons.reshape(-1, 2))
        yield Selection(b, best, float(expected[best]), samples[b * k + best])
    if reasons:
        for message in why_empty(torch.cat(reasons), blocks.pairs, composition, not scorer.encoder.has_layers,
                                 scorer.runtime.name):
            warnings.warn(message, stacklevel=3)


def mbr_signature(signature: Signature, k: int, exclude_self: bool) -> Signature:
    """The scorer's signature with the MBR settings: ``...|mbr:K=16,self=in``."""
    return signature.with_fields(mbr=f"K={k},self={'out' if exclude_self else 'in'}")


def write_selections(selections: Sequence[Selection], signature: Signature | str, fmt: str, out: TextIO) -> None:
    """The selections as ``alignscore mbr`` writes them: ``tsv``, a signature comment line then
    ``block index utility text`` rows (backslash, tab, carriage return and newline in a text
    written as ``\\\\``, ``\\t``, ``\\r``, ``\\n``); ``jsonl``, one object per block with those keys.

    Examples
    --------
    >>> import sys
    >>> write_selections([Selection(0, 1, 0.75, "a\\tb")], "sig", "tsv", sys.stdout)
    # sig
    block index utility text
    0 1 0.75 a\\tb
    """
    if fmt == "jsonl":
        out.writelines(json.dumps({"block": s.block, "index": s.index, "utility": s.utility, "text": s.text},
                                  ensure_ascii=False) + "\n" for s in selections)
        return
    out.write(f"# {signature}\nblock\tindex\tutility\ttext\n")
    out.writelines(f"{s.block}\t{s.index}\t{s.utility!r}\t{_escaped(s.text)}\n" for s in selections)


def _escaped(text: str) -> str:
    """A text as one TSV field."""
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\r", "\\r").replace("\n", "\\n")


def read_samples(samples_file: str, opts: MbrOptions | None = None) -> tuple[list[str], int]:
    """The lines of ``samples_file`` and the block size (``opts.k``, None: the whole file),
    checked (:func:`check_blocks`): what a command reads before its model is looked up."""
    from .textio import read_lines

    samples = read_lines(samples_file)
    if not samples:
        raise InputError("is empty: there are no samples to select from", samples_file)
    opts = opts or MbrOptions()
    k = opts.k or len(samples)
    check_blocks(len(samples), k, opts.exclude_self, samples_file, opts.label)
    return samples, k


def mbr_file(spec: RunSpec, samples_file: str, opts: MbrOptions | None = None, output: str | None = None,
             files: Sequence[str] = (), provenance: Provenance | None = None) -> list[str]:
    """:func:`mbr_select` on the lines of ``samples_file`` (blocks of ``opts.k``; None: one block)
    with the run ``spec`` as the utility (its options named as ``provenance`` says they were
    given), the selections written as ``opts.format`` to ``output`` (None: standard output),
    which may not be one of the ``files`` the run reads.

    Returns
    -------
    list of str
        The blocks and their mean selected utility; the signature.
    """
    from .config import build
    from .textio import check_output, output_stream

    check_output(output, [samples_file, *files])
    opts = opts or MbrOptions()
    samples, k = read_samples(samples_file, opts)
    scorer = build(spec, provenance=provenance)
    selections = mbr_select(scorer, samples, k, opts.exclude_self, label=opts.label)
    signature = mbr_signature(scorer.signature(), k, opts.exclude_self)
    with output_stream(output) as fh:
        write_selections(selections, signature, opts.format, fh)
    mean = sum(s.utility for s in selections) / len(selections)
    return [f"{len(selections)} blocks of {k} samples: mean selected utility={mean:.6f}", f"signature: {signature}"]
