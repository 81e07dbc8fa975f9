"""``alignscore remap``: a cross-lingual remapping (CLP or UMD) learned from parallel sentences."""

from __future__ import annotations

from typing import Any

import click

from ..errors import ConfigError
from ..config import encoder_of
from ..fit.remap import learn_files
from ..remap import METHODS
from . import main
from ..config.schema import OPTION
from .options import compiled_of, quiet_option, refuse, require_model, scorer_options, scorer_opts


@main.command()
@click.option("--src", required=True, multiple=True, type=click.Path(),
               help="Source-language sentences, one per line (the side the remapping moves): a file or a folder "
                    "(its files, sorted by name); repeat it for more.")
@click.option("--tgt", required=True, multiple=True, type=click.Path(),
              help="Their translations in the target language, line by line: as many files as --src, in the same "
                   "order (a folder: its files, sorted by name).")
# the encoder's and runtime's options (nothing is scored: no composition); --lang here is the source's
@scorer_options(groups=("encoder", "runtime"), exclude=(OPTION.lang.name,))
@click.option("--layer", type=click.IntRange(min=0), default=8, show_default=True,
              help="The encoder layer whose vectors are remapped (XMoverScore: 8 of mBERT).")
@click.option("--method", type=click.Choice(METHODS), default="clp-orthogonal", show_default=True,
              help="clp: least-squares linear map; clp-orthogonal: the orthogonal one (Procrustes); "
                   "umd: remove the first singular direction of the source-target differences.")
@click.option("--lang", "source_lang", default=None, metavar="LANG",
              help="The source language the remapping is for (recorded in the file), e.g. de.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The remapping file to write (safetensors with a checksum).")
@quiet_option("No progress bar.")
def remap(src: tuple[str, ...], tgt: tuple[str, ...], layer: int, method: str, source_lang: str | None, output: str,
          quiet: bool, **kwargs: Any) -> None:
    """Learn a cross-lingual remapping of --model's --layer from parallel sentences (--src, --tgt:
    line i of one translates line i of the other; several files or folders per side for more text):
    words paired by mutual best match in the encoder's own space, then CLP or UMD, from at least as
    many word pairs as the vectors' width (XMoverScore; docs/reference-free.md)."""
    require_model(click.get_current_context(), "the multilingual encoder the remapping is for")
    refuse((output == "-", "-o -: a remapping is a binary file, not text for standard output; give a file name"))
    refuse((source_lang is not None and not source_lang.strip(),
            "--lang: a language code (de, cs, ...), not an empty name"),
           error=ConfigError)
    spec = compiled_of(scorer_opts(kwargs), progress=not quiet).spec
    encoder = encoder_of(spec.encoder, spec.runtime.device)
    refuse((layer > encoder.num_layers, f"--layer {layer}: model {encoder.name!r} has layers 0..{encoder.num_layers}"),
           error=ConfigError)  # the model's configuration only: its weights load later
    remapping, stats = learn_files(encoder, spec.runtime, src, tgt, output, layer, method,
                                   source_lang.strip() if source_lang else None, spec.files())
    files = int(stats["files"])
    click.echo(f"wrote {output}: {method} remapping of layer {layer}{f' ({remapping.lang})' if source_lang else ''}, "
               f"learned from {remapping.pairs} word pairs of {stats['sentences']:.0f} sentence pairs "
               f"({files} pair{'s' if files > 1 else ''} of files), their mean cosine {stats['cosine_before']:.4f} "
               f"-> {stats['cosine_after']:.4f}", err=True)
