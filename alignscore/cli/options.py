"""The scorer options of every command that scores, made from the one option table
(:mod:`alignscore.options`): a flag per option, help from the setting it sets, every boolean
with its ``--no-`` form. What a command receives is compiled by :func:`run_spec` (the CLI adds
nothing of its own but the short names ``-m`` and ``-l``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import click

from ..errors import ConfigError
from ..options import option_files, options, run_spec
from ..scorer import Scorer
from ..spec import RunSpec, build
from ..textio import is_stdout

SHORT = {"model": "-m", "layer": "-l"}  # bert-score's short names


class _Parsed(click.ParamType):
    """An option's value read by the option table's own parser, so a bad value is click's usage
    error ("Invalid value for '--batch-size': ...", exit 2), found before the command runs."""

    def __init__(self, option: Any) -> None:
        self.option = option
        self.name = option.flag[2:].upper().replace("-", "_")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return self.option.parse(value)
        except ConfigError as exc:
            self.fail(str(exc).replace(f"{self.option.flag}: ", ""), param, ctx)


def _click_option(option: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    names = [option.flag + ("/--no-" + option.flag[2:] if option.boolean and option.target != "run" else "")]
    if option.name in SHORT:
        names.insert(0, SHORT[option.name])
    kwargs: dict[str, Any] = {"default": None, "help": option.help}
    if option.boolean:  # a switch of a part: --x/--no-x, None when neither is given
        kwargs.update(is_flag=True, default=False if option.target == "run" else None)
    elif option.multiple:
        kwargs.update(multiple=True, type=click.Choice(option.choices) if option.choices else str, default=())
    elif option.choices:
        kwargs["type"] = click.Choice(option.choices)
    else:
        kwargs["type"] = _Parsed(option)
    if option.envvar:
        kwargs.update(envvar=option.envvar, show_envvar=True)
    return click.option(*names, option.name, **kwargs)


def output_option(help: str, required: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``-o/--output FILE``: ``-`` (or no option, unless ``required``) is standard output, as in
    most tools (:func:`alignscore.textio.is_stdout`)."""
    return click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), default=None,
                        required=required, callback=lambda ctx, param, value: None if is_stdout(value) else value,
                        help=help + (" '-': standard output." if required else " '-' or none: standard output.")
                        + " A pipe or device (/dev/null) is written into.")


def scorer_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a command with every scorer option (the option table's, in its order)."""
    for option in reversed(list(options().values())):
        fn = _click_option(option)(fn)
    return fn


def scorer_opts(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The scorer options among a command's keyword arguments."""
    names = options()
    return {k: v for k, v in kwargs.items() if k in names}


def spec_of(opts: dict[str, Any], progress: bool) -> RunSpec:
    """The run the options describe, with progress bars on stderr or not."""
    spec = run_spec(opts, style="cli")
    return replace(spec, runtime=replace(spec.runtime, progress=progress))


def build_scorer(opts: dict[str, Any], progress: bool) -> Scorer:
    """The :class:`Scorer` of the parsed scorer options."""
    return build(spec_of(opts, progress))


class ManyValues(click.Option):
    """A repeatable option that also takes the arguments after it, up to the next option or
    ``--``: ``-r a.txt b.txt`` is ``-r a.txt -r b.txt`` (bert-score's habit). For commands
    without positional arguments, which these extra values would otherwise be. Click has no
    public hook for this: the option's parser entry is wrapped (tests/test_cli_habits.py checks
    that nothing else is taken)."""

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
