"""Where ``alignscore score`` reads its pairs (``-c`` with ``-r`` or ``--sources`` files,
``--cand-text``/``--ref-text`` or ``--tsv``: one way per run)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import click

from ..textio import read_aligned, read_tsv
from .common import ManyValues, refuse

INPUT_OPTIONS: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
    click.option("-r", "--refs", "refs", cls=ManyValues, type=click.Path(dir_okay=False),
                 help="Reference file, one text per line; several files (-r a.txt b.txt, or -r repeated) give "
                      "several references per candidate."),
    click.option("-c", "--cands", default=None, type=click.Path(dir_okay=False),
                 help="Candidate file, one text per line."),
    click.option("--cand-text", "cand_texts", multiple=True,
                 help="A candidate given as text (repeat for more; instead of -c/-r files)."),
    click.option("--ref-text", "ref_texts", multiple=True,
                 help="A reference given as text: the n-th --ref-text is the reference of the n-th --cand-text."),
    click.option("--sources", "source_file", default=None, type=click.Path(dir_okay=False),
                 help="Instead of -r: the source each line of -c translates, one per line; scored against it "
                      "(reference-free, with a multilingual --model; --remap FILE maps its vectors)."),
    click.option("--tsv", default=None, type=click.Path(dir_okay=False),
                 help="Candidates with any number of references (instead of -c/-r): each line is "
                      "candidate<TAB>reference<TAB>reference... (an empty candidate is an empty text; "
                      "an empty reference field is an error)."),
    click.option("--tsv-sources", is_flag=True, help="With --tsv: the one field after each candidate is its source, "
                 "scored against it as with --sources (candidate<TAB>source)."),
]


def input_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed(INPUT_OPTIONS):
        fn = opt(fn)
    return fn


@dataclass(frozen=True)
class Sources:
    """The pairs to score, as the options give them (checked when built: one way, complete; a
    usage error otherwise)."""

    cands: str | None
    refs: tuple[str, ...]
    cand_texts: tuple[str, ...]
    ref_texts: tuple[str, ...]
    tsv: str | None
    source_file: str | None = None
    tsv_sources: bool = False

    def __post_init__(self) -> None:
        ways = [way for way, given in (("-c/-r files", self.cands or self.refs or self.source_file),
                                       ("--cand-text/--ref-text", self.cand_texts or self.ref_texts),
                                       ("--tsv", self.tsv)) if given]
        refuse((not ways, "nothing to score: give -c CANDS -r REFS, --cand-text TEXT --ref-text TEXT, or --tsv FILE"),
               (len(ways) > 1, f"give the pairs one way: {' or '.join(ways)}, not both"),
               (bool(self.refs and self.source_file), "give -r REFS or --sources FILE, not both"),
               (ways[:1] == ["-c/-r files"] and not (self.cands and (self.refs or self.source_file)),
                "Missing option '-c' / '--cands': -r REFS needs the candidate file" if self.refs or self.source_file
                else "Missing option '-r' / '--refs': -c CANDS needs reference files"),
               (len(self.cand_texts) != len(self.ref_texts), f"{len(self.cand_texts)} --cand-text but "
                f"{len(self.ref_texts)} --ref-text: the n-th --ref-text is the reference of the n-th --cand-text"),
               error=click.UsageError)

    @property
    def files(self) -> list[str]:
        """The input files (which no output may overwrite)."""
        return [self.tsv] if self.tsv else [self.cands, *self.sides] if self.cands else []

    @property
    def sides(self) -> tuple[str, ...]:
        """The files the candidates are scored against: the references, or the one of sources."""
        return (self.source_file,) if self.source_file else self.refs

    @property
    def against_sources(self) -> bool:
        """Whether the candidates are scored against sources (``--sources``, ``--tsv-sources``)."""
        return self.source_file is not None or self.tsv_sources

    @property
    def several_refs(self) -> bool:
        """Whether a candidate may have several references (the output names the best one)."""
        return (self.tsv is not None and not self.tsv_sources) or len(self.refs) > 1

    def read(self) -> tuple[list[str], list[list[str]]]:
        """The candidates and each one's references."""
        if self.tsv:
            return read_tsv(self.tsv, self.tsv_sources)
        if self.cands:
            return read_aligned(self.cands, self.sides)
        return list(self.cand_texts), [[r] for r in self.ref_texts]
