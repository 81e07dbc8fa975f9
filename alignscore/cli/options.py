"""The run's options, made from the one option table (:mod:`alignscore.config.schema`): a flag
per option, help from its setting, every switch with its ``--no-`` form, compiled by the one
compiler (:mod:`alignscore.config.compile`), the command line's :data:`FLAGS` naming handed to it;
a command's own options (:class:`~alignscore.settings.Options`) made the same way; the options a
side (``--a``/``--b``) names. What the commands share besides: :mod:`alignscore.cli.common`."""

from __future__ import annotations

import functools
import shlex
from dataclasses import replace
from typing import Any, Callable, Collection, Iterable, Mapping

import click
from click.core import ParameterSource

from ..config import PRESETS, Compiled, Naming, compile_labelled, sources_of
from ..config.schema import MODEL_OPTIONS, Option, options, setting_option
from ..errors import ConfigError
from ..settings import Declaration, Options, settings_of


def flag_label(path: tuple[Any, ...]) -> str:
    """A key path as the command line writes it: ``--n-gram``, ``--filters (1)``."""
    return "--" + str(path[0]).replace("_", "-") + "".join(f" ({p})" for p in path[1:])


#: how the command line writes the run's options (its values are text to read), for the compiler
FLAGS = Naming(flag_label, lambda option: f"{option.flag} or --no-{option.flag[2:]}", text=True, kind="flags")


def _click_option(option: Option) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    decl = option.setting.decl if option.setting is not None else Declaration()
    names = [*filter(None, [decl.short]), option.flag + (f"/--no-{option.flag[2:]}" if option.boolean else "")]
    kwargs: dict[str, Any] = {"default": None, "help": option.help, "envvar": decl.envvar,
                              "show_envvar": bool(decl.envvar)}
    if option.boolean:  # --x/--no-x, None when neither is given
        kwargs.update(is_flag=True)
    elif option.multiple:
        kwargs.update(multiple=True, default=(), metavar=option.metavar)
    else:  # the text as typed: the compiler reads and checks it (one check, naming the flag)
        kwargs["metavar"] = (f"[{'|'.join(option.choices)}]" if option.choices else
                             option.metavar or option.flag[2:].upper().replace("-", "_"))
    return click.option(*names, option.name, **kwargs)


def _decorated(fn: Callable[..., Any], table: Iterable[Option]) -> Callable[..., Any]:
    return functools.reduce(lambda f, option: _click_option(option)(f), reversed(list(table)), fn)


def command_table(cls: type[Options]) -> dict[str, Option]:
    """The options of a command's own :class:`Options` (fit's, tune's) that have a flag, made as the run's are."""
    return {s.name: replace(setting_option(s, "command"), multiple=s.sequence is str) for s in settings_of(cls)
            if s.decl.option}


def command_options(cls: type[Options]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A flag per option of :func:`command_table`: the text as typed, read and checked once by :meth:`Options.given`."""
    return lambda fn: _decorated(fn, command_table(cls).values())


def command_opts(cls: type[Options], kwargs: dict[str, Any]) -> Any:
    """The command's own options among its keyword arguments (taken out of them), each error naming its flag."""
    given = {k: kwargs.pop(k) for k in cls.names() if k in kwargs}
    return cls.given({k: v for k, v in given.items() if v not in (None, ())},
                     {k: o.flag for k, o in command_table(cls).items()}, text=True)


def scorer_options(groups: Collection[str] | None = None, exclude: Collection[str] = (),
                   names: Collection[str] | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The run's options (the table's, in its order): all, those of ``groups`` (``"encoder"``,
    ...) or those ``names``d, but the ``exclude``d."""
    return lambda fn: _decorated(fn, [o for o in options().values() if (groups is None or o.group in groups)
                                       and (names is None or o.name in names) and o.name not in exclude])


def scorer_opts(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The run's options among a command's keyword arguments."""
    table = options()
    return {k: v for k, v in kwargs.items() if k in table}


def compiled_of(opts: Mapping[str, Any], progress: bool, before_model: Callable[[], Any] | None = None) -> Compiled:
    """The run the options describe (progress bars on stderr or not), with how each option was
    given beside the spec (for ``build``). ``before_model``: the command's own checks (its input
    files), run after every option's value is checked and before the model's absence is said."""
    try:
        spec, provenance = compile_labelled(sources_of(opts, FLAGS))
    except ConfigError as exc:
        if before_model is not None and MODEL_OPTIONS[0] in exc.options:  # the last check: every value passed
            before_model()
        raise
    if before_model is not None:
        before_model()
    return Compiled(replace(spec, runtime=replace(spec.runtime, progress=progress)), provenance)


def parse_spec(spec: str, flag: str) -> dict[str, Any]:
    """The options a ``--a``/``--b`` string names (a preset's name or options as on the command
    line, ``"--aligner wmd --n-gram 2"``): only those, to override the options shared by the sides."""
    try:
        args = shlex.split(spec)
    except ValueError as exc:  # unbalanced quotes, a trailing escape
        raise ConfigError(f"{flag} {spec!r}: cannot split it into options ({exc})") from None
    if len(args) == 1 and not args[0].startswith("-"):
        if args[0] not in PRESETS.names():
            raise ConfigError(f"{flag} {spec!r}: not a preset ({', '.join(PRESETS.names())}) nor a list of options")
        args = ["--preset", args[0]]
    try:
        command = click.command(add_help_option=False)(scorer_options()(lambda **kwargs: None))  # parsed only
        ctx = command.make_context(flag, args, resilient_parsing=False)
    except click.ClickException as exc:
        raise ConfigError(f"{flag} {spec!r}: {exc.format_message()}") from None
    return {k: v for k, v in ctx.params.items() if ctx.get_parameter_source(k) == ParameterSource.COMMANDLINE}
