"""``alignscore show``: the alignment behind one candidate's score, as a figure, HTML page or table."""

from __future__ import annotations

from typing import Any, Sequence

import click

from ..combination import combination_in
from ..errors import InputError
from ..render import FORMATS, format_for, part_heading, part_path, show as show_pair, show_combination
from ..textio import read_lines
from . import main
from .common import option_files, output_option
from .options import FLAGS, compiled_of, scorer_options, scorer_opts


def pick_texts(refs: Sequence[str], cand: str | None, refs_files: Sequence[str], cands_file: str | None,
               line: int | None) -> tuple[str, list[str]]:
    """The candidate and its references from texts given directly (-c/-r) and/or line ``line``
    (1-based) of files (--cands-file/--refs-file and --line)."""
    if (refs_files or cands_file) and line is None:
        raise InputError("--refs-file/--cands-file need --line N (1-based) to pick the pair")
    if line is not None and not (refs_files or cands_file):
        raise InputError("--line picks a line of --refs-file/--cands-file; give one of them")

    def at(path: str) -> str:
        lines = read_lines(path)
        if not 1 <= line <= len(lines):  # type: ignore[operator]
            raise InputError(f"no line {line}: the file has {len(lines)} line(s)", path)
        return lines[line - 1]  # type: ignore[operator]

    if cand is not None and cands_file:
        raise InputError("give the candidate once: -c TEXT or --cands-file FILE --line N")
    if cand is None and not cands_file:
        raise InputError("no candidate: give -c TEXT (or --cands-file FILE --line N)")
    candidate = cand if cand is not None else at(cands_file)  # type: ignore[arg-type]
    references = list(refs) + [at(p) for p in refs_files]
    if not references:
        raise InputError("no reference: give -r TEXT (or --refs-file FILE --line N)")
    return candidate, references


@main.command()
@click.option("-r", "--ref", "refs", multiple=True, help="Reference text; repeat for several references.")
@click.option("-c", "--cand", default=None, help="Candidate text.")
@click.option("--refs-file", multiple=True, type=click.Path(dir_okay=False),
              help="Take a reference from line --line of this file (repeatable; adds to -r).")
@click.option("--cands-file", type=click.Path(dir_okay=False), default=None,
              help="Take the candidate from line --line of this file.")
@click.option("--line", type=click.IntRange(min=1), default=None, help="Line number (1-based) in the files.")
@scorer_options()
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="text (a table on stdout), png, svg or html. Default: from -o's suffix, text without -o.")
@output_option("Output file: FILE.png, FILE.svg, FILE.html (or .txt).")
@click.option("--ref-index", type=click.IntRange(min=0), default=None,
              help="With several references, the one a PNG/SVG draws (0-based; default: the best). "
                   "Text and HTML show every reference.")
def show(refs: tuple[str, ...], cand: str | None, refs_file: tuple[str, ...], cands_file: str | None,
         line: int | None, fmt: str | None, output: str | None, ref_index: int | None, **kwargs: Any) -> None:
    """Show why CAND scores what it does against REF: each side's tokens and masses, the
    similarity (greedy) or cost (optimal transport) matrix, the matches or the transport plan,
    and each token's contribution to each score (they sum to the score).

    \b
    alignscore show -r "people like foreign cars" -c "consumers prefer imported cars" \\
        --model all-MiniLM-L6-v2 --layer 4 -o docs/show-greedy.png
    """
    candidate, references = pick_texts(refs, cand, refs_file, cands_file, line)
    fmt = format_for(output, fmt, "--format")
    opts = scorer_opts(kwargs)
    combination = combination_in(opts, FLAGS)
    if combination is not None:  # --config names a [[parts]] file: each part shown, then the combined score
        files = [*refs_file, cands_file, *option_files(combination, opts)]
        expls, combined, text = show_combination(combination, candidate, references, output, fmt, ref_index, files)
        if text is not None:  # each part under its line (weight, standardisation, signature)
            click.echo(text, nl=False)
        for i, (part, expl) in enumerate(zip(combination.parts, expls) if output is not None else ()):
            click.echo(f"wrote {part_path(output, i)}: {part_heading(i, part.weight, part.location, part.scale, expl)}"
                       f"; signature {expl.signature}", err=True)
        click.echo(f"scores: combined={combined:.6f}", err=True)
        return
    spec, provenance = compiled_of(opts, progress=False)
    expl, text = show_pair(spec, candidate, references, output, fmt, ref_index,
                           [*refs_file, cands_file, *option_files(spec, opts)], provenance)
    if text is not None:
        click.echo(text, nl=False)
    if output is not None:
        click.echo(f"wrote {output}", err=True)
    click.echo(f"scores: {'  '.join(f'{k}={v:.6f}' for k, v in expl.scores.items())}", err=True)
    if len(references) > 1:
        click.echo(f"best reference: [{expl.best_reference}] {expl.references[expl.best_reference]}", err=True)
