"""Two compositions on the same pairs, and the pairs where they disagree most, with both
alignments: what ``alignscore diff`` writes, as library functions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Sequence, TextIO

from ..errors import InputError
from ..textio import check_output_folder, make_output_folder, read_aligned, replacing
from .agreement import Disagreements, disagreements

if TYPE_CHECKING:
    from ..combination import Combination
    from ..config import Compiled, RunSpec

__all__ = ["check_diff_folder", "diff_table", "write_diff"]


def _suffix(fmt: str) -> str:
    return "txt" if fmt == "text" else fmt


def check_diff_folder(folder: str | Path, inputs: Sequence[str], fmt: str) -> None:
    """Check that ``folder`` can take ``diff.tsv`` and ``line<N>-a|b.<fmt>``, none of them an input.

    Raises
    ------
    InputError
        When the folder cannot be written or would hold an input under one of those names.
    """
    folder = Path(folder)
    check_output_folder(folder, ["diff.tsv"], inputs)
    pattern = re.compile(rf"line\d+-[ab](\.part\d+)?\.{_suffix(fmt)}")
    for path in inputs:
        if pattern.fullmatch(Path(path).name) and Path(path).resolve().parent == folder.resolve():
            raise InputError(f"is an input in the output folder {folder}, where diff writes its alignments; "
                             "write elsewhere", path)


def diff_table(d: Disagreements, lines: Sequence[int]) -> str:
    """The head and the rows of the pairs ``lines`` (0-based), columns aligned, texts cut to 50
    characters."""
    cut = lambda s: s if len(s) <= 50 else s[:49] + "…"  # noqa: E731
    columns = d.columns()
    rows = [[cut(c) for c in d.row(i)] for i in lines]
    widths = [max(len(r[k]) for r in rows + [columns]) for k in range(len(columns))]
    return "\n".join(d.head()) + "\n" + "".join(
        "  ".join(c.ljust(w) if k >= 6 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths))).rstrip() + "\n"
        for r in [columns] + rows)


def write_diff(run_a: RunSpec | Compiled | Combination, run_b: RunSpec | Compiled | Combination, cands: str,
               refs: Sequence[str], top: int, fmt: str, out_dir: str | None, out: TextIO) -> int:
    """Score the pairs of the files ``cands`` and ``refs`` with both runs and write the ``top``
    most disputed pairs' table to ``out``, then their alignments: as text to ``out`` when
    ``out_dir`` is None, else as ``fmt`` files in ``out_dir`` beside ``diff.tsv`` (every pair).
    A side that is a combination is ranked by its combined score and shows each part's alignment
    (``line<N>-a.part<i>.<fmt>``).

    Returns
    -------
    int
        How many pairs were shown.
    """
    from ..combination import CombinedScorer, build_runs, scorers_of
    from ..explain import explain
    from ..render import part_path, text_report, write

    cand_texts, ref_groups = read_aligned(cands, refs)
    scorer_a, scorer_b = build_runs([run_a, run_b])  # one model when the sides' encoders are the same
    d = disagreements(scorer_a, scorer_b, cand_texts, ref_groups)
    shown = d.order[:top].tolist()
    if out_dir is not None:
        make_output_folder(out_dir)
        with replacing(Path(out_dir) / "diff.tsv") as tmp, open(tmp, "w", encoding="utf-8") as fh:
            d.write_tsv(fh)
    out.write(diff_table(d, shown))
    if not shown:
        return 0
    texts = [cand_texts[i] for i in shown], [ref_groups[i] for i in shown]
    sides = [(name, isinstance(scorer, CombinedScorer), [explain(s, *texts) for s in scorers_of(scorer)])
             for name, scorer in (("a", scorer_a), ("b", scorer_b))]
    for rank, i in enumerate(shown, start=1):
        if out_dir is None:
            out.write(f"\n=== #{rank}: line {i + 1}: A ranks it {float(d.ranks_a[i]):g}, B ranks it "
                      f"{float(d.ranks_b[i]):g} of {len(cand_texts)} ===\n")
        for name, combined, parts in sides:
            for k, expls in enumerate(parts):
                if out_dir is None:
                    out.write(f"--- {name.upper()}{f' part {k}' if combined else ''} ---\n"
                              + text_report(expls[rank - 1], matrix=False))
                    continue
                path = Path(out_dir) / f"line{i + 1}-{name}.{_suffix(fmt)}"
                with replacing(part_path(path, k) if combined else path) as tmp:
                    write(expls[rank - 1], tmp, fmt)
        out.flush()
    return len(shown)
