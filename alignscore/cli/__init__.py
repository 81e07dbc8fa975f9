"""The ``alignscore`` command line: one module per command, sharing the scorer options."""

from __future__ import annotations

import os
import sys
import warnings

import click

from .._version import __version__
from ..errors import AlignScoreError


class _Group(click.Group):
    """Turns every error into one line on stderr and a non-zero exit (no traceback), unless
    ``ALIGNSCORE_DEBUG=1``."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except AlignScoreError as exc:
            if os.environ.get("ALIGNSCORE_DEBUG"):
                raise
            click.echo(f"alignscore: error: {exc}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("alignscore: interrupted", err=True)
            sys.exit(130)
        except Exception as exc:  # a bug, not bad input: still one line, with how to see more
            if os.environ.get("ALIGNSCORE_DEBUG"):
                raise
            msg = (str(exc).strip().splitlines() or [""])[0]
            click.echo(f"alignscore: internal error: {type(exc).__name__}: {msg} "
                       "(set ALIGNSCORE_DEBUG=1 for the traceback)", err=True)
            sys.exit(70)


def _one_line_warnings() -> None:
    def one_line(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
        text = " ".join(str(message).split())
        print(f"alignscore: warning: {text}", file=sys.stderr)

    warnings.showwarning = one_line
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="alignscore")
def main() -> None:
    """Text-generation metrics that align contextual token embeddings."""
    _one_line_warnings()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass


from . import ablate, baseline, diff, score, show  # noqa: E402,F401  (commands register themselves on ``main``)
