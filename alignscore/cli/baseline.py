"""``alignscore baseline``: a rescaling baseline for any model, in bert_score's file format, or
the one bert_score ships for a model it knows (``--bert-score LANG``)."""

from __future__ import annotations

from typing import Any

import click

from ..rescale import bert_score_baseline
from ..baseline import baseline_file
from ..textio import check_output, check_readable, is_stdout, write_output
from . import main
from ..config.schema import MODEL_OPTIONS, OPTION
from .common import given, quiet_option, refuse, require_model, seed_option
from .options import compiled_of, scorer_options, scorer_opts


@main.command()
@scorer_options(groups=("encoder", "runtime", OPTION.cache.group))
@click.option("--corpus", type=click.Path(dir_okay=False),
              help="Text corpus, one sentence per line; random pairs of its lines are scored (required, but "
                   "with --bert-score).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), default=None,
              callback=lambda ctx, param, value: None if is_stdout(value) else value,
              help="Where to write the baseline (CSV: LAYER,P,R,F, one row per layer; '-': standard output); "
                   "required, but with --bert-score, where it is a copy of bert_score's file (none: its path is "
                   "printed). A pipe or device (/dev/null) is written into.")
@click.option("--pairs", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="How many random pairs to average.")
@seed_option(0)
@click.option("--bert-score", "bert_score", metavar="LANG", default=None,
              help="Compute nothing: print the path of the baseline file bert_score ships for --model (default: "
                   "the model bert_score picks for LANG, as --lang) and texts in LANG (en, de, zh...; from the "
                   "installed bert_score package), to give to --baseline as it is; with -o, write a copy there.")
@quiet_option()
def baseline(corpus: str | None, output: str | None, pairs: int, seed: int, bert_score: str | None, quiet: bool,
             **kwargs: Any) -> None:
    """Compute BERTScore's rescaling baseline b for every layer of --model: the mean P, R and F
    of random sentence pairs from CORPUS (no idf), written as bert_score's baseline files are.
    Any model gets one this way; `alignscore score --baseline FILE` then rescales with it. The
    encoder, runtime and cache options are those of `alignscore score`.

    For the models bert_score ships baselines for (roberta-large, deberta, xlm-roberta...),
    `--bert-score LANG` prints the path of its file instead, read as it is by --baseline."""
    ctx = click.get_current_context()
    opts = scorer_opts(kwargs)
    if bert_score is not None:
        extra = [f"--{name}" for name in ("corpus", "pairs", "seed") if given(ctx, name)]
        if extra:
            raise click.UsageError(f"--bert-score reads bert_score's file: {', '.join(extra)} do not apply")
        if not any(given(ctx, name) for name in MODEL_OPTIONS):  # the model bert_score picks for LANG
            opts[OPTION.lang.name] = bert_score
        spec = compiled_of(opts, progress=not quiet).spec
        path = bert_score_baseline(spec.encoder.model, bert_score)
        if not given(ctx, "output"):
            click.echo(str(path))
            return
        check_output(output, [str(path)])
        write_output(output, path.read_text(encoding="utf-8"))
        click.echo(f"wrote {output or 'the baseline to standard output'}: bert_score's {path}", err=True)
        return
    require_model(ctx, "the model whose layers the baseline is for")
    refuse((corpus is None, "Missing option '--corpus' (the sentences whose random pairs are scored)."),
           (not given(ctx, "output"), "Missing option '-o' / '--output'."), error=click.UsageError)
    spec = compiled_of(opts, progress=not quiet, before_model=lambda: check_readable([corpus])).spec
    result = baseline_file(spec, corpus, output, pairs, seed)
    click.echo(f"wrote {output or 'the baseline to standard output'}: layers 0..{max(result.rows)}, {pairs} random "
               f"pairs of {corpus}", err=True)
