"""``alignscore distill``: a static model (model2vec's format) distilled from a Hugging Face model."""

from __future__ import annotations

import os
from typing import Any

import click

from ..encoders.distill import SIF_COEFFICIENT, distill as run_distill
from ..errors import ConfigError
from . import main
from ..config.schema import OPTION
from .common import require_model
from .options import compiled_of, scorer_options, scorer_opts


@main.command()
@scorer_options(names=(OPTION.model.name, OPTION.device.name))
@click.option("-o", "--output", required=True, type=click.Path(), help="New (or empty) folder for the static model.")
@click.option("--dims", type=click.IntRange(min=1), default=256, show_default=True,
              help="PCA components kept (at most the model's hidden size).")
@click.option("--sif", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=SIF_COEFFICIENT,
              show_default=True, help="SIF coefficient a of the Zipf weighting a / (a + p).")
@click.option("--batch-size", type=click.IntRange(min=1), default=512, show_default=True,
              help="Vocabulary tokens per forward pass.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def distill(output: str, dims: int, sif: float, batch_size: int, quiet: bool, **kwargs: Any) -> None:
    """Distil a static model from --model: every vocabulary token through the model alone, PCA
    to --dims, Zipf/SIF weighting (model2vec's method), saved in model2vec's format. Score with
    it by `--model OUTPUT` (docs/static.md). Offline: the model must be on this machine."""
    require_model(click.get_current_context(), "the Hugging Face model to distil")
    if not 0 < sif < 1:  # NaN passes click's range
        raise click.BadParameter(f"{sif} is not in the range 0<x<1.", param_hint="'--sif'")
    spec = compiled_of(scorer_opts(kwargs), progress=not quiet).spec  # the checks of every command
    if spec.encoder.static is not None:
        raise ConfigError(f"{OPTION.model.flag} {kwargs[OPTION.model.name]}: already a static table; distil a "
                          "Hugging Face model")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    out = run_distill(spec.encoder.model, output, dims=dims, sif=sif, batch_size=batch_size,
                      device=spec.runtime.device, progress=not quiet)
    click.echo(f"wrote {out} (model2vec format, {dims} dimensions)", err=True)
