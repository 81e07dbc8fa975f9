"""``alignscore distill``: a static model (model2vec's format) distilled from a Hugging Face model."""

from __future__ import annotations

import os

import click

from ..encoders.distill import SIF_COEFFICIENT, distill as run_distill
from ..errors import ConfigError
from . import main
from .options import given, scorer_options, compiled_of


@main.command()
@scorer_options(names=("model", "device"))
@click.option("-o", "--output", required=True, type=click.Path(), help="New (or empty) folder for the static model.")
@click.option("--dims", type=click.IntRange(min=1), default=256, show_default=True,
              help="PCA components kept (at most the model's hidden size).")
@click.option("--sif", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=SIF_COEFFICIENT,
              show_default=True, help="SIF coefficient a of the Zipf weighting a / (a + p).")
@click.option("--batch-size", type=click.IntRange(min=1), default=512, show_default=True,
              help="Vocabulary tokens per forward pass.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def distill(model: str | None, output: str, dims: int, sif: float, batch_size: int, device: str | None,
            quiet: bool) -> None:
    """Distil a static model from --model: every vocabulary token through the model alone, PCA
    to --dims, Zipf/SIF weighting (model2vec's method), saved in model2vec's format. Score with
    it by `--model OUTPUT` (docs/static.md). Offline: the model must be on this machine."""
    if not given(click.get_current_context(), "model"):
        raise click.UsageError("Missing option '--model' (the Hugging Face model to distil).")
    spec = compiled_of({"model": model, "device": device}, progress=not quiet).spec  # the checks of every command
    if spec.encoder.static is not None:
        raise ConfigError(f"--model {model}: already a static table; distil a Hugging Face model")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    out = run_distill(spec.encoder.model, output, dims=dims, sif=sif, batch_size=batch_size,
                      device=spec.runtime.device, progress=not quiet)
    click.echo(f"wrote {out} (model2vec format, {dims} dimensions)", err=True)
