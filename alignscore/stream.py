"""Streaming: score files of any size in bounded memory, writing rows as they are scored,
and resume an interrupted run.

The pairs are read lazily and scored in chunks of ``chunk_size`` candidates; only one chunk's
texts and vectors are in memory at a time. Weights that depend on the whole input are fitted
first, by a pass that tokenizes (never encodes) the texts: idf-S needs the document frequencies
of all references, SEP those of all candidates. Every chunk is then scored with those frozen
weights, so each row is what scoring the whole file at once gives.

Nothing is written before every input has been read once: each file must be valid UTF-8, the
candidate file must not be empty, the reference files as long as it, and the output must be
writable and none of the inputs; the first chunk is scored before the output is opened too.

The output is what ``alignscore score`` writes without streaming. TSV: a comment line with the
signature, a comment line with the means, the column names, one row per candidate; while the
run is going the means line reads ``# mean pending`` and the rows are appended chunk by chunk
(flushed); at the end the means are computed from the rows in the file and the header is put in
place (the file is rewritten through a temporary file and renamed). JSONL: one object per
candidate. Next to either, a signature file ``OUT.signature``, one JSON object
``{"format": ..., "signature": ..., "columns": [...], "inputs": {...}}`` (``inputs``: the SHA-256
of every input file and the fingerprint of the model's files), written before the first row (an
earlier one is removed before ``OUT`` is truncated, so the pair never claims another run's
signature) and kept afterwards; any other run that writes ``OUT`` removes it.

With ``resume``, the output must be one that this very run would write: same format, signature,
columns and inputs (the signature file), every complete row well formed; otherwise the run is
refused with a message naming what differs (the settings, or the inputs that changed), and the
file is left untouched. The files the settings name (an idf-L corpus, stop words, a baseline, a
word-vector table) are in the signature by their content's digest as well
(:func:`~alignscore.signature.content_digest`): a resume with another file of the same name, or
with one edited since, is refused as another composition, naming the field. The complete rows are kept (a partial last line, where the run was
killed, is dropped) and scoring starts after them: chunks start at multiples of
``chunk_size``, so with the same chunk size (and no cache) the resumed file is byte for byte
the uninterrupted one on the same machine and thread count (the same batches take the same
kernels). Without streaming, rows agree to float rounding (about 1e-7: the encoder's batches
differ, and so do the last bits of a matmul).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from array import array
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence, TextIO

import torch
from tqdm.auto import tqdm

from .combination import CombinedScorer, scorers_of
from .encoders.base import Encoder
from .encoders.fingerprint import file_digest
from .engine import Pairs
from .errors import ConfigError, InputError
from .lm import UnreadableTexts
from .scorer import Scorer
from .signature import differences_text
from .textio import check_inputs, check_output, is_stream, iter_lines, iter_pairs, replacing, rows, tsv_header
from .tokens import TokenTable
from .weighting.base import WeightState, Weighting


@dataclass(frozen=True)
class FrozenWeighting(Weighting):
    """Token weights fitted beforehand (on the whole stream): :meth:`compute` returns them as
    they are, and the signature is the original weighting's, as is whether the masses are scaled
    by the vectors' norms (``norms``: :meth:`~Weighting.reads_norms`) and the per-token
    multipliers (``source``'s :meth:`~Weighting.token_multipliers`: its token-class weights)."""

    ref: torch.Tensor
    cand: torch.Tensor
    name: str
    norms: bool = False
    source: Weighting | None = None

    def reads_norms(self) -> bool:
        return self.norms

    def token_multipliers(self, table: TokenTable) -> torch.Tensor | None:
        return None if self.source is None else self.source.token_multipliers(table)

    def update(self, state: WeightState, table: TokenTable, ref_counts: torch.Tensor,
               cand_counts: torch.Tensor) -> None:
        pass  # fitted already

    def depends_on_texts(self) -> bool:
        return False

    def compute(self, state: WeightState, encoder: Encoder) -> tuple[torch.Tensor, torch.Tensor]:
        return self.ref, self.cand

    def signature(self) -> str:
        return self.name


def count_texts(weighting: Weighting, encoder: Encoder, chunks: Iterable[tuple[Sequence[str], Sequence[Sequence[str]]]],
                state: WeightState | None = None) -> WeightState:
    """What ``weighting`` counts (:meth:`Weighting.update`) over ``chunks`` of pairs (candidates and
    each one's references), added to ``state`` (a new one by default). Counts are sums: chunks
    counted apart (by other processes, by Ray tasks) and merged give the state of them all."""
    state = WeightState.empty(encoder.vocab_size) if state is None else state
    for cands, groups in chunks:
        batch = Pairs.from_groups(cands, groups)
        weighting.update(state, TokenTable.from_tokenized(encoder.tokenize(batch.texts)), batch.ref_counts,
                         batch.cand_counts)
    return state


def frozen_weighting(weighting: Weighting, state: WeightState, encoder: Encoder) -> FrozenWeighting:
    """``weighting``'s weights from ``state`` (what it counted over the whole input), computed once."""
    ref, cand = weighting.compute(state, encoder)
    return FrozenWeighting(ref, cand, weighting.signature(), weighting.reads_norms(), weighting)


def with_weighting(scorer: Scorer, weighting: Weighting) -> Scorer:
    """``scorer`` with another weighting (the same encoder, runtime and cache)."""
    return dataclasses.replace(scorer, composition=dataclasses.replace(scorer.composition, weighting=weighting))


def freeze_weighting(scorer: Scorer, cands_path: str | Path, refs_paths: Sequence[str | Path],
                     chunk_size: int) -> Weighting:
    """The scorer's weighting fitted on the whole input: its document frequencies are counted
    chunk by chunk in a tokenization pass (counts add up exactly), then the weights computed once."""
    w = scorer.weighting
    if not w.depends_on_texts():  # nothing to fit on the stream
        return w
    enc = scorer.scoring_encoder()
    pairs = iter_pairs(cands_path, refs_paths)
    chunks = iter(lambda: list(islice(pairs, chunk_size)), [])
    state = count_texts(w, enc, (([c for c, _ in chunk], [g for _, g in chunk]) for chunk in chunks))
    return frozen_weighting(w, state, enc)


def sidecar_path(output: str | Path) -> Path:
    """``OUT.signature``: where a streamed JSONL output keeps its signature and columns."""
    output = Path(output)
    return output.with_name(output.name + ".signature")


def read_sidecar(output: str | Path) -> dict | None:
    """The signature file of the streamed output ``output``: ``{"format", "signature",
    "columns", "inputs"}``, or None when there is none (or the file there is not one)."""
    try:
        data = json.loads(sidecar_path(output).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and {"format", "signature", "columns"} <= set(data) else None


def clear_sidecar(output: str | Path) -> None:
    """Remove the signature file of an earlier streamed output at ``output`` (a file there that
    is not a signature file is left alone): ``output`` is being replaced."""
    if read_sidecar(output) is not None:
        sidecar_path(output).unlink()


def _resume_point(path: Path, fmt: str, signature: str, columns: list[str], header: bytes,
                  inputs: dict[str, str], naming: Callable[[str], str]) -> tuple[int, int] | None:
    """``(rows, end)``: the complete rows already in the output ``path`` and the byte offset
    where they end (a partial last row after it is to be dropped); None when there is nothing to
    keep (no file, an empty one, or a TSV cut inside its header). The file must be an output of
    this very run: same format, signature and columns, made from the same ``inputs`` (content
    digests), every row well formed; else an error, and the file is left as it is (nothing is
    modified here)."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    with open(path, "rb") as fh:
        head = fh.read(len(header))
        if fmt == "tsv" and len(head) < len(header) and header.startswith(head):
            return None  # stopped while writing the header
        fh.seek(0)
        first = fh.readline()
        sidecar = read_sidecar(path)
        if sidecar is None:
            what = ("an output of a run that was not streamed: it is complete"
                    if first.startswith((b"# model:", b"# combination:"))
                    else "not an output of alignscore score")
            raise InputError(f"is {what} (no {sidecar_path(path).name} beside it): nothing to resume; remove it "
                             "or write elsewhere", str(path))
        found = (str(sidecar["format"]), str(sidecar["signature"]))
        if found[0] != fmt:
            raise InputError(f"holds scores in another format ({found[0]}; this run writes {fmt}), refusing to mix "
                             "them; resume with the options that wrote it, or write elsewhere", str(path))
        if found[1] != signature:
            raise InputError(f"holds scores of another composition, refusing to mix them: "
                             f"{differences_text(found[1], signature)}; resume with the options that wrote it, or "
                             "write elsewhere", str(path))
        made_from = sidecar.get("inputs") if isinstance(sidecar.get("inputs"), dict) else {}
        changed = [name for name in dict.fromkeys([*made_from, *inputs]) if made_from.get(name) != inputs.get(name)]
        if changed:
            raise InputError(f"was made from other inputs: {', '.join(changed)} changed since (content digests "
                             f"differ), refusing to mix two runs; score it again without {naming('resume')}", str(path))
        if fmt == "tsv":
            mean, names = fh.readline(), fh.readline()
            found_columns = names.decode("utf-8", "replace").rstrip("\n").split("\t")
            if not mean.startswith(b"# mean "):
                raise InputError("is not an output of alignscore score (no means line): refusing to resume it",
                                 str(path), 2)
            number, end = 3, len(first) + len(mean) + len(names)
        else:
            found_columns, number, end = sidecar["columns"], 0, 0
            fh.seek(0)
        if found_columns != columns:
            raise InputError(f"has the columns {found_columns}, this run writes {columns} (another number of "
                             "reference files?): refusing to resume it", str(path))
        rows = 0
        for number, line in enumerate(fh, start=number + 1):
            if not line.endswith(b"\n"):
                break  # the partial last row of an interrupted run
            if not _is_row(line, fmt, columns):
                raise InputError("is not a row of scores: refusing to resume this file", str(path), number)
            rows, end = rows + 1, end + len(line)
    return rows, end


def _is_row(line: bytes, fmt: str, columns: list[str]) -> bool:
    """Whether ``line`` is one row of an output with ``columns``: a number in each."""
    try:
        if fmt == "jsonl":
            row = json.loads(line)
            values = list(row.values()) if isinstance(row, dict) and list(row) == columns else None
        else:
            cells = line.decode("utf-8").rstrip("\n").split("\t")
            values = [float(c) for c in cells] if len(cells) == len(columns) else None
    except ValueError:  # not JSON, not UTF-8, not a number
        return False
    return values is not None and all(isinstance(v, (int, float)) for v in values)


def _open_output(output: Path, fmt: str, point: tuple[int, int] | None, header: list[str], signature: str,
                 columns: list[str], inputs: dict[str, str]) -> TextIO:
    """The output, ready for rows: cut after its complete rows and continued (``point``), or
    started afresh (an earlier signature file removed first, then the TSV header and the new
    signature file written: the file never carries a signature that is not its own)."""
    if point is not None:
        os.truncate(output, point[1])
        return open(output, "a", encoding="utf-8")
    clear_sidecar(output)
    fh = open(output, "w", encoding="utf-8")
    if fmt == "tsv":
        fh.writelines(header)
        fh.flush()
    with replacing(sidecar_path(output)) as tmp:
        tmp.write_text(json.dumps({"format": fmt, "signature": signature, "columns": columns, "inputs": inputs}) +
                       "\n", encoding="utf-8")
    return fh


def made_from(scorer: Scorer | CombinedScorer, files: Sequence[str | Path]) -> dict[str, str]:
    """What a streamed output is made from, by name: the SHA-256 of each input file and the
    fingerprint of the model's files, of each part's model for a combination (a resume must find
    them unchanged)."""
    out = {str(path): file_digest(Path(path)) for path in dict.fromkeys(map(str, files))}
    seen: set[int] = set()
    for i, part in enumerate(scorers_of(scorer)):
        if id(part.encoder) in seen:  # parts of one model share its encoder
            continue
        seen.add(id(part.encoder))
        try:
            out["model files" + (f" (part {i})" if i else "")] = part.encoder.fingerprint()
        except ConfigError:  # an encoder without a fingerprint: its name is in the signature
            pass
    return out


def _each_part(scorer: Scorer | CombinedScorer, change: Callable[[Scorer], Scorer]) -> Scorer | CombinedScorer:
    """``scorer`` with ``change`` applied to it, or to each part of a combination."""
    if isinstance(scorer, Scorer):
        return change(scorer)
    return dataclasses.replace(scorer, scorers=[change(s) for s in scorer.scorers])


def _metrics(scorer: Scorer | CombinedScorer) -> list[str]:
    """The metric columns of a run's scores: its aligner's, or a combination's."""
    return list(scorer.aligner.metrics if isinstance(scorer, Scorer) else scorer.metrics)


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


def score_stream(scorer: Scorer | CombinedScorer, cands_path: str | Path, refs_paths: Sequence[str | Path],
                 output: str | Path, fmt: str = "tsv", resume: bool = False,
                 chunk_size: int = 2000, files: Sequence[str | Path] = (), against_sources: bool = False
                 ) -> StreamResult:
    """Score every line of ``cands_path`` against the same line of each of ``refs_paths`` in
    chunks, appending rows to ``output`` as each chunk is done (see the module docstring).
    ``files``: the other files the run reads (idf corpus, stop words, composition file), which a
    resume must find unchanged as well. ``against_sources``: the one file of ``refs_paths``
    holds sources (:meth:`Scorer.score <alignscore.scorer.Scorer.score>` with ``sources=``). A
    combination (:class:`~alignscore.combination.CombinedScorer`) streams as a run does, each
    part's weighting fitted on the whole input."""
    if fmt not in ("tsv", "jsonl"):
        raise ConfigError(f"unknown format {fmt!r}")
    if chunk_size < 1:
        raise ConfigError("the chunk size must be at least 1")
    inputs = [cands_path, *refs_paths, *files]
    output = check_output(output, inputs)
    name = scorers_of(scorer)[0].runtime.name  # how the run names its options (a combination's parts alike)
    if is_stream(output):
        raise InputError(f"is a pipe or a device: {name('stream')} and {name('resume')} "
                         "write a file they can reopen and complete; write to a file", str(output))
    check_output(sidecar_path(output), inputs)
    total = check_inputs(cands_path, refs_paths)
    if against_sources:
        if len(refs_paths) != 1:
            raise InputError(f"scoring against sources reads one file of sources, not {len(refs_paths)}")
        for part in scorers_of(scorer):
            part.resolved().check_side(True, name)
            _check_readable(part, cands_path, chunk_size)  # every candidate, before a row is written
    multi = len(refs_paths) > 1
    frozen = _each_part(scorer, lambda s: with_weighting(s, freeze_weighting(s, cands_path, refs_paths, chunk_size)))
    names = _metrics(frozen)
    columns = names + (["best_ref"] if multi else [])
    signature = str(frozen.signature(against_sources))
    header = tsv_header(signature, columns, None)
    sources = made_from(scorer, inputs)
    point = _resume_point(output, fmt, signature, columns, "".join(header).encode("utf-8"), sources,
                          name) if resume else None
    done = point[0] if point else 0
    if done > total:
        raise InputError(f"has {done} rows but the input only {total} candidates", str(output))
    # chunks always start at multiples of chunk_size, so a resumed run re-scores the chunk it
    # stopped in and writes the same rows, to the bit, as an uninterrupted run
    first = done - done % chunk_size
    pairs = islice(iter_pairs(cands_path, refs_paths), first, None)
    quiet = _each_part(frozen, lambda s: dataclasses.replace(s, runtime=dataclasses.replace(s.runtime, progress=False)))
    blocks = _scored_rows(quiet, pairs, chunk_size, fmt, multi, against_sources)
    skip, scored = done - first, 0
    progress = scorers_of(scorer)[0].runtime.progress
    with tqdm(total=total, initial=done, desc="scoring", unit="cand", disable=not progress,
              file=sys.stderr, leave=False) as bar:
        block = next(blocks, None)  # scored before the output is touched: a run that cannot score leaves it be
        with _open_output(output, fmt, point, header, signature, columns, sources) as fh:
            while block is not None:
                fh.writelines(block[skip:])
                fh.flush()
                scored += len(block) - skip
                bar.update(len(block) - skip)
                skip, block = 0, next(blocks, None)
    means = _finish(output, fmt, names, columns, signature)
    return StreamResult(done + scored, scored, means, signature)


def _check_readable(scorer: Scorer, cands_path: str | Path, chunk_size: int) -> None:
    """Raise :class:`~alignscore.lm.UnreadableTexts`, naming the line, where the language model
    of ``scorer``'s composition cannot read a candidate of the file (read ``chunk_size`` at a time)."""
    lm = scorer.composition.lm
    if lm is None:
        return
    model = lm.model(scorer.runtime.device, scorer.runtime.batch_size)
    lines, start = iter_lines(cands_path), 0
    while chunk := list(islice(lines, chunk_size)):
        try:
            model.token_ids(chunk)
        except UnreadableTexts as exc:
            raise exc.shifted(start) from None
        start += len(chunk)


def _scored_rows(scorer: Scorer | CombinedScorer, pairs: Iterator[tuple[str, list[str]]], chunk_size: int, fmt: str,
                 multi: bool, against_sources: bool = False) -> Iterator[list[str]]:
    """The output rows of ``pairs``, one list per chunk of ``chunk_size`` candidates."""
    names = _metrics(scorer)
    while chunk := list(islice(pairs, chunk_size)):
        cands = [c for c, _ in chunk]
        scores = (scorer.score(cands, sources=[g[0] for _, g in chunk]) if against_sources else
                  scorer.score(cands, [g for _, g in chunk]))
        if list(scores.metrics) != names:
            raise ConfigError(f"the scorer's metrics {list(scores.metrics)} are not the run's {names}")
        yield rows(scores, fmt, multi)


def _finish(output: Path, fmt: str, names: list[str], columns: list[str], signature: str) -> dict[str, float]:
    """Means over the rows in the file; for TSV, put them into the header (atomic rename)."""
    if fmt == "jsonl":
        values = {k: array("f") for k in names}
        with open(output, encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                for k in names:
                    values[k].append(row[k])
        return {k: _mean(v) for k, v in values.items()}
    means = _column_means(output, names)
    with replacing(output) as tmp, open(tmp, "w", encoding="utf-8") as out, \
            open(output, encoding="utf-8") as src:
        out.writelines(tsv_header(signature, columns, means))
        out.writelines(islice(src, 3, None))
    return means
