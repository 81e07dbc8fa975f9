"""``alignscore config``: write the composition file that scorer options describe."""

from __future__ import annotations

from typing import Any

import click

from ..textio import check_output, write_output
from . import main
from .common import command_line, option_files, output_option
from .options import compiled_of, scorer_options, scorer_opts


@main.command()
@scorer_options()
@output_option("The file to write (TOML).")
def config(output: str | None, **kwargs: Any) -> None:
    """Write the run file (TOML) that the options describe, whole: every setting of the encoder,
    of each part, of the composition and of the runtime, so that `alignscore score --config
    FILE` scores as those options do, with the same signature, from any folder. Files the
    options name (the model, stop words, idf corpus, baseline) are written as absolute paths.

    \b
    alignscore config --preset moverscore-v2 --weighting none --model all-MiniLM-L6-v2 -o mover.toml
    """
    opts = scorer_opts(kwargs)
    spec = compiled_of(opts, progress=False).spec  # every setting checked, every file it names read
    comment = command_line(click.get_current_context().info_name)
    check_output(output, option_files(spec, opts))
    write_output(output, spec.toml(comment if output else None))
    if output:
        click.echo(f"wrote {output}", err=True)
