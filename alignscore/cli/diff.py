"""``alignscore diff``: two compositions on the same pairs, and the pairs where they disagree most."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any, TextIO

import click
from click.core import ParameterSource

from ..config import PRESETS, Compiled, build_all
from ..errors import ConfigError, InputError
from ..evaluation.agreement import disagreements
from ..explain import Explanation, explain
from ..render import text_report, write
from ..textio import check_output_folder, make_output_folder, read_aligned, replacing
from . import main
from .options import ManyValues, compiled_of, option_files, scorer_options, scorer_opts


def _spec_command() -> click.Command:
    @click.command(add_help_option=False)
    @scorer_options()
    def spec(**kwargs: Any) -> None:  # pragma: no cover - parsed only, never invoked
        pass

    return spec


def parse_spec(spec: str, flag: str) -> dict[str, Any]:
    """The scorer options a ``--a``/``--b`` string sets: a preset name (``moverscore-v2``) or
    options as on the command line (``"--aligner wmd --n-gram 2"``). Only the options the
    string names are returned, so they override the options shared by both sides."""
    try:
        args = shlex.split(spec)
    except ValueError as exc:  # unbalanced quotes, a trailing escape
        raise ConfigError(f"{flag} {spec!r}: cannot split it into options ({exc})") from None
    if len(args) == 1 and not args[0].startswith("-"):
        if args[0] not in PRESETS.names():
            raise ConfigError(f"{flag} {spec!r}: not a preset ({', '.join(PRESETS.names())}) "
                              "nor a list of options")
        args = ["--preset", args[0]]
    cmd = _spec_command()
    try:
        ctx = cmd.make_context(flag, args, resilient_parsing=False)
    except click.ClickException as exc:
        raise ConfigError(f"{flag} {spec!r}: {exc.format_message()}") from None
    return {k: v for k, v in ctx.params.items() if ctx.get_parameter_source(k) == ParameterSource.COMMANDLINE}


def side_specs(common: dict[str, Any], spec_a: str, spec_b: str, progress: bool) -> tuple[Compiled, Compiled]:
    """The runs of ``--a`` and ``--b``: each side's options layered on the options shared by
    both (what a side names replaces the shared value)."""
    run_a, run_b = sides_specs(common, [("--a", spec_a), ("--b", spec_b)], progress)
    return run_a, run_b


def sides_specs(common: dict[str, Any], sides: list[tuple[str, str]], progress: bool) -> list[Compiled]:
    """The run of each ``(flag, text)`` side: its options (:func:`parse_spec`; an empty text
    names none) layered on the shared ones."""
    out = []
    for flag, text in sides:
        named = parse_spec(text, flag) if text.strip() else {}  # its errors name the side already
        try:
            out.append(compiled_of({**common, **named}, progress))
        except ConfigError as exc:
            raise ConfigError(f"{flag} {text!r}: {exc}") from None
    return out


@main.command()
@click.option("-r", "--refs", "refs", cls=ManyValues, required=True, type=click.Path(dir_okay=False),
              help="Reference file, one text per line; several files (-r a.txt b.txt, or -r repeated) give "
                   "several references per candidate.")
@click.option("-c", "--cands", required=True, type=click.Path(dir_okay=False),
              help="Candidate file, one text per line.")
@click.option("--a", "spec_a", required=True,
              help="Composition A: a preset name or scorer options in quotes, e.g. \"--aligner greedy\".")
@click.option("--b", "spec_b", required=True, help="Composition B, as --a.")
@scorer_options()
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True,
              help="How many of the most disputed pairs to list and explain.")
@click.option("--format", "fmt", type=click.Choice(["text", "png", "svg", "html"]), default="text",
              show_default=True, help="How the alignments are shown: text tables on stdout (or in -o DIR), "
                                     "or png/svg/html files in -o DIR.")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Folder for diff.tsv (every pair) and the alignments (line<N>-a.<fmt>, line<N>-b.<fmt>).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
def diff(refs: tuple[str, ...], cands: str, spec_a: str, spec_b: str, top: int, fmt: str,
         out_dir: str | None, quiet: bool, **kwargs: Any) -> None:
    """Score the same pairs with two compositions, A and B, and list the pairs where they
    disagree most, with both alignments, to see what changing one part does.

    Scales differ between compositions, so pairs are compared by rank: each composition ranks
    the pairs by its primary score (1 = best; F1 for greedy, the score for OT) and pairs are
    ordered by |rank A - rank B|. Options outside --a/--b apply to both sides; --a/--b override.

    \b
    alignscore diff -r refs.txt -c cands.txt --model all-MiniLM-L6-v2 \\
        --a "--aligner greedy --layer 4" --b "--aligner wmd --layer 4" --top 5
    """
    if fmt in ("png", "svg", "html") and out_dir is None:
        raise ConfigError(f"--format {fmt} writes files: give a folder with -o DIR")
    common = scorer_opts(kwargs)
    run_a, run_b = side_specs(common, spec_a, spec_b, progress=not quiet)
    if out_dir is not None:  # before any work: the folder must be writable and hold none of the inputs
        _check_folder(Path(out_dir), [cands, *refs, *option_files(run_a.spec, common),
                                      *option_files(run_b.spec, common)], fmt)
    cand_texts, ref_groups = read_aligned(cands, refs)
    scorer_a, scorer_b = build_all([run_a, run_b])  # one model when both sides' encoders are the same
    d = disagreements(scorer_a, scorer_b, cand_texts, ref_groups)
    ra, rb, shown = d.ranks_a, d.ranks_b, d.order[:top].tolist()
    if out_dir is not None:
        make_output_folder(out_dir)
        with replacing(Path(out_dir) / "diff.tsv") as tmp, open(tmp, "w", encoding="utf-8") as fh:
            d.write_tsv(fh)
    _echo_table(d.head(), d.columns(), [d.row(i) for i in shown], click.get_text_stream("stdout"))
    if not shown:
        return
    expl_a = explain(scorer_a, [cand_texts[i] for i in shown], [ref_groups[i] for i in shown])
    expl_b = explain(scorer_b, [cand_texts[i] for i in shown], [ref_groups[i] for i in shown])
    for rank, (i, ea, eb) in enumerate(zip(shown, expl_a, expl_b), start=1):
        if out_dir is None:
            click.echo(f"\n=== #{rank}: line {i + 1}: A ranks it {float(ra[i]):g}, B ranks it "
                       f"{float(rb[i]):g} of {len(cand_texts)} ===")
            click.echo("--- A ---\n" + text_report(ea, matrix=False), nl=False)
            click.echo("--- B ---\n" + text_report(eb, matrix=False), nl=False)
        else:
            _write_pair(Path(out_dir), i + 1, ea, eb, fmt)
    if out_dir is not None:
        click.echo(f"wrote {Path(out_dir) / 'diff.tsv'} and the alignments of {len(shown)} pair(s)", err=True)


def _suffix(fmt: str) -> str:
    return "txt" if fmt == "text" else fmt


def _check_folder(folder: Path, inputs: list[str], fmt: str) -> None:
    """``diff -o FOLDER`` can write ``diff.tsv`` and ``line<N>-a|b.<fmt>`` there, none of them an input."""
    check_output_folder(folder, ["diff.tsv"], inputs)
    pattern = re.compile(rf"line\d+-[ab]\.{_suffix(fmt)}")
    for path in inputs:
        if pattern.fullmatch(Path(path).name) and Path(path).resolve().parent == folder.resolve():
            raise InputError(f"is an input in the output folder {folder}, where diff writes its alignments; "
                             "write elsewhere", path)


def _write_pair(folder: Path, line: int, ea: Explanation, eb: Explanation, fmt: str) -> None:
    for name, expl in (("a", ea), ("b", eb)):
        with replacing(folder / f"line{line}-{name}.{_suffix(fmt)}") as tmp:
            write(expl, tmp, fmt)


def _echo_table(head: list[str], columns: list[str], rows: list[list[str]], out: TextIO) -> None:
    """The ranked pairs, columns aligned (texts cut to 50 characters)."""
    cut = lambda s: s if len(s) <= 50 else s[:49] + "…"  # noqa: E731
    rows = [[cut(c) for c in r] for r in rows]
    widths = [max(len(r[k]) for r in rows + [columns]) for k in range(len(columns))]
    out.write("\n".join(head) + "\n")
    for r in [columns] + rows:
        out.write("  ".join(c.ljust(w) if k >= 6 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths))).rstrip()
                  + "\n")
