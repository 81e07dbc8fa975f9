"""The ``alignscore`` command line: one module per command, sharing the scorer options."""

from __future__ import annotations

import os
import sys
import warnings

import click

from .._version import __version__
from ..config.sources import bert_score_name
from ..errors import AlignScoreError, ConfigErrors
from ..registry import load_plugins
from ..runtime import quiet_libraries
from .options import FLAGS


class _Group(click.Group):
    """Every error as one line on stderr (a line each when found together) and a non-zero exit,
    unless ``ALIGNSCORE_DEBUG=1``; a closed stdout (``| head``) ends the run quietly (status 1)."""

    def make_context(self, info_name, args, parent=None, **extra):  # type: ignore[no-untyped-def]
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.ClickException as exc:
            _usage_error(exc)

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except click.ClickException as exc:
            _usage_error(exc)
        except BrokenPipeError:
            raise  # click's main ends quietly on EPIPE
        except (AlignScoreError, OSError) as exc:  # OSError: the system refused (disk full, permissions)
            if os.environ.get("ALIGNSCORE_DEBUG"):
                raise
            for error in exc.errors if isinstance(exc, ConfigErrors) else (exc,):  # several: a line each
                click.echo(f"alignscore: error: {one_line(str(error))}", err=True)
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


def one_line(text: str) -> str:
    """``text`` on one line: line breaks (a quoted text, a file name) become spaces."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def _usage_error(exc: click.ClickException) -> None:
    """A bad command line as one line with where to read the usage; a bare ``alignscore`` prints the help."""
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        raise exc
    ctx = getattr(exc, "ctx", None)
    hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    message = exc.format_message()
    habit = bert_score_name(exc.option_name.lstrip("-"), FLAGS) if isinstance(exc, click.NoSuchOption) else None
    if habit is not None:  # bert-score's own flag: what it is here, not the nearest spelling
        message = f"no such option {exc.option_name}: {habit}"
    click.echo(f"alignscore: error: {' '.join(message.split())}{hint}", err=True)
    sys.exit(exc.exit_code)


def _one_line_warnings() -> None:
    warnings.showwarning = lambda message, *_, **__: print(f"alignscore: warning: {one_line(str(message))}",
                                                           file=sys.stderr)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="alignscore")
def main() -> None:
    """Text-generation metrics that align contextual token embeddings."""
    _one_line_warnings()
    quiet_libraries()


def _load_plugins() -> None:
    """The plugins' parts, loaded before the commands' options are made from the table: one that
    cannot load is skipped with a one-line warning (at start-up, before ``main`` runs)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_plugins()
    for warning in caught:
        print(f"alignscore: warning: {one_line(str(warning.message))}", file=sys.stderr)


_load_plugins()
from . import ablate, baseline, challenge, compare, config, diff, distill, fit, mbr, perturb, remap, score, show, tune  # noqa: E402,F401  (commands register themselves on ``main``)
