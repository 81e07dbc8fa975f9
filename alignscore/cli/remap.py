"""``alignscore remap``: a cross-lingual remapping (CLP or UMD) learned from parallel sentences."""

from __future__ import annotations

from typing import Any

import click

from ..encoders import encoder_of
from ..config.schema import OPTION
from ..fit.remap import RemapOptions, learn_files
from . import main
from .common import quiet_option, require_model
from .options import command_options, command_opts, compiled_of, scorer_options, scorer_opts


@main.command()
# the encoder's and runtime's options (nothing is scored: no composition); --lang here is the source's
@scorer_options(groups=("encoder", "runtime"), exclude=(OPTION.lang.name,))
@command_options(RemapOptions)
@quiet_option("No progress bar.")
def remap(quiet: bool, **kwargs: Any) -> None:
    """Learn a cross-lingual remapping of --model's --layer from parallel sentences (--src, --tgt:
    line i of one translates line i of the other; several files or folders per side for more text):
    words paired by mutual best match in the encoder's own space, then CLP or UMD, from at least as
    many word pairs as the vectors' width (XMoverScore; docs/reference-free.md)."""
    require_model(click.get_current_context(), "the multilingual encoder the remapping is for")
    opts = command_opts(RemapOptions, kwargs)  # before anything loads
    spec = compiled_of(scorer_opts(kwargs), progress=not quiet).spec
    encoder = encoder_of(spec.encoder, spec.runtime.device, spec.runtime.name)
    remapping, stats = learn_files(encoder, spec.runtime, opts, spec.files())
    files = int(stats["files"])
    click.echo(f"wrote {opts.output}: {opts.method} remapping of layer {opts.layer}"
               f"{f' ({remapping.lang})' if remapping.lang else ''}, learned from {remapping.pairs} word pairs of "
               f"{stats['sentences']:.0f} sentence pairs ({files} pair{'s' if files > 1 else ''} of files), their mean "
               f"cosine {stats['cosine_before']:.4f} -> {stats['cosine_after']:.4f}", err=True)
