"""Streaming: score files of any size in bounded memory, writing rows as they are scored,
and resume an interrupted run.

The pairs are read lazily and scored in chunks of ``chunk_size`` candidates; only one chunk's
texts and vectors are in memory at a time. Weights that depend on the whole input are fitted
first, by a pass that tokenizes (never encodes) the texts: idf-S needs the document frequencies
of all references, SEP those of all candidates. Every chunk is then scored with those frozen
weights, so each row is what scoring the whole file at once gives.

The output is what ``alignscore score`` writes without streaming. TSV: a comment line with the
signature, a comment line with the means, the column names, one row per candidate; while the
run is going the means line reads ``# mean pending`` and the rows are appended chunk by chunk
(flushed); at the end the means are computed from the rows in the file and the header is put in
place (the file is rewritten through a temporary file and renamed). JSONL: one object per
candidate. With ``resume``, the complete rows already in the output are kept (a partial last
line is dropped), the TSV's signature must be the scorer's, and scoring starts after them:
chunks start at multiples of ``chunk_size``, so with the same chunk size (and no cache) the
resumed file is byte for byte the uninterrupted one. Without streaming, rows agree to float
rounding (about 1e-7: the encoder's batches differ, and so do the last bits of a matmul).
"""

from __future__ import annotations

import dataclasses
import json
from array import array
import os
import sys
import tempfile
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Iterator, Sequence

import torch
from tqdm.auto import tqdm

from .errors import ConfigError, InputError
from .scorer import Scorer, Scores
from .tokens import TokenTable
from .encoders.base import Encoder
from .engine import Pairs
from .weighting.base import WeightState, Weighting
from .weighting.schemes import Uniform

PENDING = "# mean pending"


def iter_lines(path: str | Path) -> Iterator[str]:
    """The lines of a UTF-8 file, lazily, exactly as :func:`alignscore.textio.read_lines`
    reads them (split on ``\\n`` only, a ``\\r`` before it dropped, a leading BOM ignored, no
    extra empty text after a final newline)."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", str(path)) from None
    with fh:
        for number, raw in enumerate(fh, start=1):
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start} "
                                 f"of the line)", str(path), number) from None


def count_lines(path: str | Path) -> int:
    """How many texts :func:`iter_lines` yields, counted in blocks without decoding."""
    count, last = 0, b"\n"
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def iter_pairs(cands_path: str | Path, refs_paths: Sequence[str | Path]) -> Iterator[tuple[str, list[str]]]:
    """``(candidate, [reference per reference file])``, lazily; the files must have the same
    number of lines."""
    n = count_lines(cands_path)
    for path in refs_paths:
        if count_lines(path) != n:
            raise InputError(f"{path} has {count_lines(path)} lines but {cands_path} has {n}: "
                             "every candidate needs exactly one line in each reference file")
    refs = [iter_lines(p) for p in refs_paths]
    for cand in iter_lines(cands_path):
        yield cand, [next(r) for r in refs]


@dataclass(frozen=True)
class FrozenWeighting(Weighting):
    """Token weights fitted beforehand (on the whole stream): :meth:`compute` returns them as
    they are, and the signature is the original weighting's."""

    ref: torch.Tensor
    cand: torch.Tensor
    name: str

    def update(self, state: WeightState, table: TokenTable, ref_counts: torch.Tensor,
               cand_counts: torch.Tensor) -> None:
        pass  # fitted already

    def compute(self, state: WeightState, encoder: Encoder) -> tuple[torch.Tensor, torch.Tensor]:
        return self.ref, self.cand

    def signature(self) -> str:
        return self.name


def freeze_weighting(scorer: Scorer, cands_path: str | Path, refs_paths: Sequence[str | Path],
                     chunk_size: int) -> Weighting:
    """The scorer's weighting fitted on the whole input: its document frequencies are counted
    chunk by chunk in a tokenization pass (counts add up exactly), then the weights computed once."""
    w = scorer.weighting
    if isinstance(w, Uniform):
        return w
    enc = scorer.scoring_encoder()
    state = WeightState.empty(enc.vocab_size)
    pairs = iter_pairs(cands_path, refs_paths)
    while chunk := list(islice(pairs, chunk_size)):
        batch = Pairs.from_groups([c for c, _ in chunk], [g for _, g in chunk])
        w.update(state, TokenTable.from_tokenized(enc.tokenize(batch.texts)), batch.ref_counts, batch.cand_counts)
    ref, cand = w.compute(state, enc)
    return FrozenWeighting(ref, cand, w.signature())


# -- output ------------------------------------------------------------------------------------
def rows(scores: Scores, fmt: str, multi: bool) -> list[str]:
    """The output lines of ``scores`` (as ``alignscore score`` writes them)."""
    names = list(scores.metrics)
    columns = {k: v.tolist() for k, v in scores.metrics.items()}
    best = scores.best_reference.tolist()
    out = []
    for i in range(len(scores)):
        if fmt == "jsonl":
            row = {k: columns[k][i] for k in names}
            if multi:
                row["best_ref"] = best[i]
            out.append(json.dumps(row) + "\n")
        else:
            cells = [repr(columns[k][i]) for k in names] + ([str(best[i])] if multi else [])
            out.append("\t".join(cells) + "\n")
    return out


def tsv_header(signature: str, names: Sequence[str], multi: bool, means: dict[str, float] | None) -> list[str]:
    mean_line = PENDING if means is None else "# mean " + " ".join(f"{k}={v:.6f}" for k, v in means.items())
    return [f"# {signature}\n", mean_line + "\n", "\t".join(list(names) + (["best_ref"] if multi else [])) + "\n"]


def _existing_rows(path: Path, fmt: str, header: list[str]) -> int:
    """Rows already complete in ``path`` (the file is cut after the last complete line).
    A TSV must start with the same signature and columns."""
    if not path.exists() or path.stat().st_size == 0:
        return 0
    with open(path, "rb+") as fh:
        data = fh.read()
        cut = data.rfind(b"\n") + 1
        fh.truncate(cut)
    lines = data[:cut].decode("utf-8").splitlines(keepends=True)
    if fmt == "tsv":
        if len(lines) < 3:
            return -1  # not even a header: start again
        if lines[0] != header[0] or lines[2] != header[2]:
            raise InputError("holds scores of another composition (signature or columns differ); "
                             "remove it or write elsewhere", str(path))
        return len(lines) - 3
    return len(lines)


def _column_means(path: Path, names: Sequence[str]) -> dict[str, float]:
    """Means of the TSV's metric columns, computed as :meth:`Scores.means` does (float32
    values, float64 mean), one column at a time."""
    means = {}
    for j, name in enumerate(names):
        values = array("f")
        with open(path, encoding="utf-8") as fh:
            values.extend(float(line.split("\t")[j]) for line in islice(fh, 3, None))
        means[name] = _mean(values)
    return means


def _mean(values: array) -> float:
    v = torch.frombuffer(values, dtype=torch.float32) if len(values) else torch.empty(0)
    return float(v.double().mean()) if len(v) else float("nan")


@dataclass
class StreamResult:
    """What a streamed run did: candidates in the output, how many this run scored, the
    means over the whole output and the signature."""

    total: int
    scored: int
    means: dict[str, float]
    signature: str


def score_stream(scorer: Scorer, cands_path: str | Path, refs_paths: Sequence[str | Path],
                 output: str | Path, fmt: str = "tsv", resume: bool = False,
                 chunk_size: int = 2000) -> StreamResult:
    """Score every line of ``cands_path`` against the same line of each of ``refs_paths`` in
    chunks, appending rows to ``output`` as each chunk is done (see the module docstring)."""
    if fmt not in ("tsv", "jsonl"):
        raise ConfigError(f"unknown format {fmt!r}")
    if chunk_size < 1:
        raise ConfigError("the chunk size must be at least 1")
    output = Path(output)
    multi = len(refs_paths) > 1
    total = count_lines(cands_path)
    frozen = dataclasses.replace(scorer, weighting=freeze_weighting(scorer, cands_path, refs_paths, chunk_size))
    names = list(frozen.aligner.metrics)
    signature = frozen.signature()
    header = tsv_header(signature, names, multi, None)
    done = _existing_rows(output, fmt, header) if resume else -1
    if done > total:
        raise InputError(f"has {done} rows but the input only {total} candidates", str(output))
    output.parent.mkdir(parents=True, exist_ok=True)
    if done < 0:
        with open(output, "w", encoding="utf-8") as fh:
            fh.writelines(header if fmt == "tsv" else [])
        done = 0
    # chunks always start at multiples of chunk_size, so a resumed run re-scores the chunk it
    # stopped in and writes the same rows, to the bit, as an uninterrupted run
    first = done - done % chunk_size
    pairs = islice(iter_pairs(cands_path, refs_paths), first, None)
    skip, scored = done - first, 0
    with open(output, "a", encoding="utf-8") as fh, \
            tqdm(total=total, initial=done, desc="scoring", unit="cand", disable=not scorer.progress,
                 file=sys.stderr, leave=False) as bar:
        quiet = dataclasses.replace(frozen, progress=False)
        while chunk := list(islice(pairs, chunk_size)):
            scores = quiet.score([c for c, _ in chunk], [g for _, g in chunk])
            if list(scores.metrics) != names:
                raise ConfigError(f"the scorer's metrics {list(scores.metrics)} are not its aligner's {names}")
            fh.writelines(rows(scores, fmt, multi)[skip:])
            fh.flush()
            scored += len(chunk) - skip
            bar.update(len(chunk) - skip)
            skip = 0
    means = _finish(output, fmt, names, header, multi, signature)
    return StreamResult(done + scored, scored, means, signature)


def _finish(output: Path, fmt: str, names: list[str], header: list[str], multi: bool,
            signature: str) -> dict[str, float]:
    """Means over the rows in the file; for TSV, put them into the header (atomic rename)."""
    if fmt == "jsonl":
        columns = {k: array("f") for k in names}
        with open(output, encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                for k in names:
                    columns[k].append(row[k])
        return {k: _mean(v) for k, v in columns.items()}
    means = _column_means(output, names)
    fd, tmp = tempfile.mkstemp(prefix=output.name + ".", suffix=".tmp", dir=output.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out, open(output, encoding="utf-8") as src:
            out.writelines(tsv_header(signature, names, multi, means))
            out.writelines(islice(src, 3, None))
        os.replace(tmp, output)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return means
