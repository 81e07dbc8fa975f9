"""What the commands share besides making the run's options (:mod:`alignscore.cli.options`): the
output, quiet and seed flags, a repeatable option that takes several values, progress
messages, the command line that ran, the checks of a command's parameters (a model given, an
option given without the one it applies with), the files a run reads (no output may replace
one) and the runs of the two sides (``--a``, ``--b``) of the commands that compare runs."""

from __future__ import annotations

import shlex
import sys
from typing import TYPE_CHECKING, Any, Callable, Mapping

import click
from click.core import ParameterSource

from ..config import Compiled, RunSpec
from ..config.schema import MODEL_OPTIONS, OPTION
from ..errors import ConfigError, InputError
from ..textio import is_stdout
from .options import FLAGS, compiled_of, parse_spec

if TYPE_CHECKING:
    from ..combination import Combination

SEED = click.IntRange(0, 2**32 - 1)  # what numpy's generators take


def output_option(help: str, required: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``-o/--output FILE``: ``-`` (or no option, unless ``required``) is standard output."""
    return click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), default=None,
                        required=required, callback=lambda ctx, param, value: None if is_stdout(value) else value,
                        help=help + (" '-': standard output." if required else " '-' or none: standard output.")
                        + " A pipe or device (/dev/null) is written into.")


def quiet_option(help: str = "No progress bars.") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``-q/--quiet``."""
    return click.option("-q", "--quiet", is_flag=True, help=help)


def seed_option(default: int, help: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--seed N`` (what numpy's generators take)."""
    return click.option("--seed", type=SEED, default=default, show_default=True, help=help)


def progress_log(quiet: bool, command: str) -> Callable[[str], None]:
    """Progress messages ``[command] ...`` on stderr, or none when ``quiet``."""
    return (lambda msg: None) if quiet else (lambda msg: click.echo(f"[{command}] {msg}", err=True))


def command_line(command: str) -> str | None:
    """The command line that ran ``alignscore COMMAND`` (quoted) for its outputs; None if called otherwise."""
    return "alignscore " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == [command] else None


def refuse(*rules: tuple[object, str], error: type[Exception] = InputError) -> None:
    """Raise ``error`` with the message of the first ``(condition, message)`` rule that holds."""
    for condition, message in rules:
        if condition:
            raise error(message)


def given(ctx: click.Context, name: str) -> bool:
    """Whether the user gave the parameter ``name`` (on the command line or in its variable)."""
    return ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def flag_of(ctx: click.Context) -> Callable[[str], str]:
    """The command's parameter ``name`` as its long flag (``skip_missing`` -> ``--skip-missing``):
    how the library names the command's own options in what it says."""
    flags = {p.name: max(p.opts, key=len) for p in ctx.command.params}
    return lambda name: flags[name]


def needs(ctx: click.Context, table: Mapping[str, str | tuple[str, ...]]) -> None:
    """Refuse an option given without one it applies with: ``table`` maps a parameter to the one
    it needs, or to several of which one will do (``{"chunk_size": ("stream", "resume")}``)."""
    flags = flag_of(ctx)  # each parameter's long form
    for name, needed in table.items():
        alternatives = (needed,) if isinstance(needed, str) else needed
        if given(ctx, name) and not any(ctx.params.get(n) for n in alternatives):
            raise ConfigError(f"{flags(name)} applies with {' or '.join(flags(n) for n in alternatives)} only")


def require_model(ctx: click.Context, why: str) -> None:
    """Refuse a command run without a model (``--model``, or ``--lang`` where it takes it): ``why``
    says what the model is for."""
    if not any(given(ctx, name) for name in MODEL_OPTIONS):
        raise click.UsageError(f"Missing option '{OPTION.model.flag}' ({why}).")


def option_files(run: RunSpec | Combination, opts: Mapping[str, Any]) -> list[str]:
    """The files a run (or a combination) reads besides its texts (the run file, those the spec or
    its parts name): no output's."""
    return ([str(opts[OPTION.config.name])] if opts.get(OPTION.config.name) else []) + run.files()


def sides_specs(common: dict[str, Any], sides: list[tuple[str, str]], progress: bool,
                files: list[str] | None = None, combinations: bool = False) -> list[Compiled | Combination]:
    """The run of each ``(flag, text)`` side (``--a``, ``--b``): its options (:func:`~alignscore.cli.options.parse_spec`;
    an empty text names none) layered on the ``common`` ones (what a side names replaces them),
    with ``combinations`` a combination where they name one (``--config`` a ``[[parts]]`` file: the
    other options apply to every part; without, the compiler refuses it); ``files`` is extended
    with the files each side reads (:func:`option_files`)."""
    from ..combination import combination_in

    out, missing = [], []
    for flag, text in sides:
        named = parse_spec(text, flag) if text.strip() else {}  # its errors name the side already
        combination = combination_in({**common, **named}, FLAGS, f"{flag} {text!r}") if combinations else None
        if combination is not None:  # --config names a [[parts]] file: this side is that combination
            out.append(combination)
            if files is not None:
                files += option_files(combination, {**common, **named})
            continue
        try:
            out.append(compiled_of({**common, **named}, progress))
        except ConfigError as exc:
            if MODEL_OPTIONS[0] not in exc.options:
                raise ConfigError(f"{flag} {text!r}: {exc}") from None
            # the model's absence after every side's values; a side's own only where it names one
            missing.append(ConfigError(f"{flag} {text!r}: {exc}") if any(k in named for k in MODEL_OPTIONS) else exc)
            continue
        if files is not None:
            files += option_files(out[-1].spec, {**common, **named})
    if missing:
        raise missing[0]
    return out


class ManyValues(click.Option):
    """A repeatable option that takes the arguments after it up to the next option or ``--``
    (``-r a.txt b.txt``: bert-score's habit); click's parser entry is wrapped (no public hook)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, multiple=True, **kwargs)

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        option = next(parser._long_opt.get(o) or parser._short_opt.get(o) for o in self.opts)
        take = option.process

        def process(value: Any, state: Any) -> None:
            take(value, state)
            while state.rargs and not (state.rargs[0][:1] in parser._opt_prefixes and len(state.rargs[0]) > 1):
                take(state.rargs.pop(0), state)

        option.process = process
