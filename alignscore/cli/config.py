"""``alignscore config``: write the composition file that scorer options describe."""

from __future__ import annotations

import sys
from typing import Any

import click

from ..options import option_files
from ..textio import check_output, write_output
from . import main
from .options import output_option, scorer_options, scorer_opts, spec_of


@main.command()
@scorer_options
@output_option("The file to write (TOML).")
def config(output: str | None, **kwargs: Any) -> None:
    """Write the composition file (TOML) that the scorer options describe: `alignscore score
    --config FILE` then scores as those options do, with the same signature. Files the options
    name (stop words, idf corpus, baseline) are written as absolute paths.

    \b
    alignscore config --preset moverscore-v2 --weighting none --model all-MiniLM-L6-v2 -o mover.toml
    """
    opts = scorer_opts(kwargs)
    spec = spec_of(opts, progress=False)
    spec.composition.build()  # a composition that cannot be built (a missing file, a bad setting) fails here
    comment = "alignscore config " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["config"] else None
    check_output(output, option_files(spec, opts))
    write_output(output, spec.toml(comment if output else None))
    if output:
        click.echo(f"wrote {output}", err=True)
