"""``alignscore remap``: a cross-lingual remapping (CLP or UMD) learned from parallel sentences."""

from __future__ import annotations

from typing import Any

import click

from ..config import encoder_of
from ..errors import ConfigError, InputError
from ..remap import METHODS, learn, save_remapping
from ..textio import check_output, read_lines, replacing
from . import main
from .options import given, scorer_options, scorer_opts, spec_of


@main.command()
@click.option("--src", required=True, type=click.Path(dir_okay=False),
              help="Source-language sentences, one per line (the side the remapping moves).")
@click.option("--tgt", required=True, type=click.Path(dir_okay=False),
              help="Their translations in the target language, line by line.")
# the encoder's and runtime's options (nothing is scored: no composition); --lang here is the source's
@scorer_options(groups=("encoder", "runtime"), exclude=("lang",))
@click.option("--layer", type=click.IntRange(min=0), default=8, show_default=True,
              help="The encoder layer whose vectors are remapped (XMoverScore: 8 of mBERT).")
@click.option("--method", type=click.Choice(METHODS), default="clp-orthogonal", show_default=True,
              help="clp: least-squares linear map; clp-orthogonal: the orthogonal one (Procrustes); "
                   "umd: remove the first singular direction of the source-target differences.")
@click.option("--lang", default=None, metavar="LANG",
              help="The source language the remapping is for (recorded in the file), e.g. de.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The remapping file to write (safetensors with a checksum).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def remap(src: str, tgt: str, layer: int, method: str, lang: str | None, output: str, quiet: bool,
          **kwargs: Any) -> None:
    """Learn a cross-lingual remapping of --model's --layer from parallel sentences (--src, --tgt:
    line i of one translates line i of the other): words paired by mutual best match in the
    encoder's own space, then CLP or UMD (XMoverScore; docs/reference-free.md)."""
    ctx = click.get_current_context()
    if not given(ctx, "model"):
        raise click.UsageError("Missing option '--model' (the multilingual encoder the remapping is for).")
    if output == "-":
        raise InputError("-o -: a remapping is a binary file, not text for standard output; give a file name")
    if lang is not None and not lang.strip():
        raise ConfigError("--lang: a language code (de, cs, ...), not an empty name")
    spec = spec_of(scorer_opts(kwargs), progress=not quiet)
    check_output(output, [src, tgt, *spec.files()])  # before any work: writable, and not an input
    sources, targets = read_lines(src), read_lines(tgt)
    if len(sources) != len(targets):
        raise InputError(f"{tgt} has {len(targets)} lines but {src} has {len(sources)}: the files must be parallel, "
                         "one sentence and its translation per line")
    if not any(s.strip() and t.strip() for s, t in zip(sources, targets)):
        raise InputError(f"and {tgt} have no line where both sentences are non-empty: nothing to learn from", src)
    encoder = encoder_of(spec.encoder, spec.runtime.device)
    if layer > encoder.num_layers:  # the model's configuration only: its weights load later
        raise ConfigError(f"--layer {layer}: model {encoder.name!r} has layers 0..{encoder.num_layers}")
    encoder.check()
    remapping, stats = learn(encoder, sources, targets, layer=layer, method=method,
                             lang=lang.strip() if lang else None, runtime=spec.runtime)
    with replacing(output) as tmp:
        save_remapping(remapping, tmp)
    click.echo(f"wrote {output}: {method} remapping of layer {layer}{f' ({remapping.lang})' if lang else ''}, "
               f"{remapping.pairs} word pairs, their mean cosine {stats['cosine_before']:.4f} -> "
               f"{stats['cosine_after']:.4f}", err=True)
