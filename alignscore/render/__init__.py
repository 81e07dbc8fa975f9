"""Render explained alignments (:mod:`alignscore.explain`): a text table, a figure (PNG/SVG) or a
self-contained HTML page, each from the same row model (:mod:`alignscore.render.rows`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..errors import ConfigError
from ..explain import Explanation
from ..textio import check_output, replacing, require_folder
from .figure import figure, pair_title, save_figure, wrap_signature
from .html import html_report
from .rows import UnitRow, marks, matches, side_metrics, unit_rows
from .text import text_report

if TYPE_CHECKING:
    from ..combination import Combination
    from ..config import Provenance, RunSpec

FORMATS = ("text", "png", "svg", "html")

__all__ = ["FORMATS", "UnitRow", "figure", "format_for", "html_report", "marks", "matches", "pair_title",
           "save_figure", "show", "show_combination", "side_metrics", "text_report", "unit_rows", "wrap_signature",
           "write"]


def write(expl: Explanation, path: str | Path | None, fmt: str, ref_index: int | None = None) -> str | None:
    """Write ``expl`` as ``fmt`` (text, png, svg, html) to ``path``; text and html without a
    path are returned instead."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    if fmt in ("png", "svg"):
        if path is None:
            raise ConfigError(f"{fmt} output needs a file (-o FILE.{fmt})")
        save_figure(expl, path, ref_index, fmt)
        return None
    text = text_report(expl) if fmt == "text" else html_report(expl)
    if path is None:
        return text
    require_folder(path)  # no output creates a folder (alignscore.textio)
    Path(path).write_text(text, encoding="utf-8")
    return None


def format_for(path: str | Path | None, fmt: str | None, label: str = "fmt=") -> str:
    """The output format: ``fmt`` when given, else from the file's suffix, else text (``label``:
    the option ``fmt`` as the caller names it, for the error).

    >>> try:
    ...     format_for("figure.jpeg", None)
    ... except ConfigError as exc:
    ...     print(str(exc)[-27:])
    .html or .txt, or give fmt=
    """
    if fmt:
        return fmt
    if path is None:
        return "text"
    suffix = Path(path).suffix.lstrip(".").lower()
    if suffix == "txt":
        return "text"
    if suffix in ("htm",):
        return "html"
    if suffix not in FORMATS:
        raise ConfigError(f"cannot tell the format of {path} from its suffix: use .png, .svg, .html "
                          f"or .txt, or give {label}")
    return suffix


def show(spec: RunSpec, cand: str, refs: Sequence[str], output: str | None, fmt: str | None = None,
         ref_index: int | None = None, inputs: Sequence[str | None] = (), provenance: Provenance | None = None
         ) -> tuple[Explanation, str | None]:
    """Explain the score of ``cand`` against ``refs`` under the run ``spec`` (its options named
    as ``provenance`` says they were given) and write it as
    ``fmt`` (default: from ``output``'s suffix, :func:`format_for`) to ``output``, which may not
    be one of the ``inputs`` (checked before any work).

    Returns
    -------
    (Explanation, str or None)
        The explanation, and its text when there is no ``output`` (None for a figure).
    """
    from ..config import build
    from ..explain import explain

    fmt = format_for(output, fmt)
    if output is not None:  # before any work: writable, and none of the inputs
        check_output(output, inputs)
    scorer = build(spec, provenance=provenance)
    expl = explain(scorer, [cand], [list(refs)])[0]  # warns when a side carries no mass, and why
    if output is None:
        return expl, write(expl, None, fmt, ref_index)
    with replacing(output) as tmp:
        write(expl, tmp, fmt, ref_index)
    return expl, None


def part_path(output: str | Path, index: int) -> Path:
    """Where :func:`show_combination` writes part ``index``: ``OUT.part<index>.<suffix>``.

    Examples
    --------
    >>> part_path("pair.png", 1).name
    'pair.part1.png'
    """
    out = Path(output)
    return out.with_name(f"{out.stem}.part{index}{out.suffix}")


def show_combination(combination: Combination, cand: str, refs: Sequence[str], output: str | None,
                     fmt: str | None = None, ref_index: int | None = None, inputs: Sequence[str | None] = ()
                     ) -> tuple[list[Explanation], float, str | None]:
    """:func:`show` for each part of a combination (its scorers built together: one encoding per
    model), each part's alignment written to :func:`part_path` of ``output`` (checked, every one,
    before any work) or, as text, returned one after the other, each under a line with the part's
    weight, standardisation and score (:func:`part_heading`).

    Returns
    -------
    (list of Explanation, float, str or None)
        Each part's explanation, the combined score (``sum w (s - m) / d`` of the parts' primary
        scores, as :meth:`~alignscore.combination.CombinedScorer.score` gives it) and the text
        (None when written).
    """
    import torch

    from ..explain import explain

    fmt = format_for(output, fmt)
    if output is None and fmt != "text":
        raise ConfigError(f"{fmt} output of a combination needs a file: one per part (-o FILE.{fmt})")
    paths = [part_path(output, i) for i in range(len(combination.parts))] if output is not None else []
    for path in paths:  # before any work: every part's file writable, and none of the inputs
        check_output(path, inputs)
    scorer = combination.build()
    expls = [explain(s, [cand], [list(refs)])[0] for s in scorer.scorers]
    primary = torch.tensor([[e.scores[e.primary]] for e in expls], dtype=torch.float64)
    combined = float(scorer.combine(primary)[0])
    texts = []
    for i, (part, expl, path) in enumerate(zip(combination.parts, expls, paths or [None] * len(expls))):
        if path is None:
            texts.append(f"== {part_heading(i, part.weight, part.location, part.scale, expl)}\n"
                         + (write(expl, None, fmt, ref_index) or ""))
            continue
        with replacing(path) as tmp:
            write(expl, tmp, fmt, ref_index)
    return expls, combined, "\n".join(texts) if output is None else None


def part_heading(index: int, weight: float, location: float, scale: float, expl: Explanation) -> str:
    """One line on a combination's part: its weight, standardisation and score."""
    s = expl.scores[expl.primary]
    return (f"part {index}: weight {weight:.6g}, location {location:.6g}, scale {scale:.6g}; {expl.primary} {s:.6f}, "
            f"standardised {(s - location) / scale:+.6f}")
