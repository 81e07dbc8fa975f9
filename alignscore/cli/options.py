"""The run's options, made from the one option table (:mod:`alignscore.config.schema`): a flag
per option, help from its setting, every switch with its ``--no-`` form, compiled by the one
compiler (:mod:`alignscore.config.compile`); and the options and checks the commands share."""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterable, Mapping

import click
from click.core import ParameterSource

from ..config import PRESETS, Compiled, RunSpec, compile_labelled, sources_of
from ..config.schema import MODEL_OPTIONS, OPTION, Option, options, setting_option
from ..errors import ConfigError, InputError
from ..settings import Declaration, Options, settings_of
from ..textio import is_stdout

if TYPE_CHECKING:
    from ..combination import Combination

SEED = click.IntRange(0, 2**32 - 1)  # what numpy's generators take


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


def _decorated(fn: Callable[..., Any], table: Iterable[Option]) -> Callable[..., Any]:
    for option in reversed(list(table)):
        fn = _click_option(option)(fn)
    return fn


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


def progress_log(quiet: bool, command: str) -> Callable[[str], None]:
    """Progress messages ``[command] ...`` on stderr, or none when ``quiet``."""
    return (lambda msg: None) if quiet else (lambda msg: click.echo(f"[{command}] {msg}", err=True))


def command_line(command: str) -> str | None:
    """The command line that ran ``alignscore COMMAND`` (quoted) for its outputs; None if called otherwise."""
    return "alignscore " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == [command] else None


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
        spec, provenance = compile_labelled(sources_of(opts, style="flag"))
    except ConfigError as exc:
        if before_model is not None and MODEL_OPTIONS[0] in exc.options:  # the last check: every value passed
            before_model()
        raise
    if before_model is not None:
        before_model()
    return Compiled(replace(spec, runtime=replace(spec.runtime, progress=progress)), provenance)


def option_files(spec: RunSpec, opts: Mapping[str, Any]) -> list[str]:
    """The files a run reads besides its texts (the run file, those the spec names): no output's."""
    return ([str(opts[OPTION.config.name])] if opts.get(OPTION.config.name) else []) + spec.files()


def named_files(opts: Mapping[str, Any]) -> list[str]:
    """Files the run options name themselves (a run file, stop words, a baseline)."""
    return [str(v) for k, v in opts.items() if v is not None and options()[k].file and isinstance(v, str)]


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


def sides_specs(common: dict[str, Any], sides: list[tuple[str, str]], progress: bool,
                files: list[str] | None = None, combinations: bool = False) -> list[Compiled | Combination]:
    """The run of each ``(flag, text)`` side (``--a``, ``--b``): its options (:func:`parse_spec`;
    an empty text names none) layered on the ``common`` ones (what a side names replaces them),
    with ``combinations`` a combination where they name one (``--config`` a ``[[parts]]`` file: the
    other options apply to every part; without, the compiler refuses it); ``files`` is extended
    with the files each side reads (:func:`option_files`)."""
    from ..combination import combination_in

    out, missing = [], []
    for flag, text in sides:
        named = parse_spec(text, flag) if text.strip() else {}  # its errors name the side already
        combination = combination_in({**common, **named}, "flag", f"{flag} {text!r}") if combinations else None
        if combination is not None:  # --config names a [[parts]] file: this side is that combination
            out.append(combination)
            if files is not None:
                files += [str({**common, **named}[OPTION.config.name]),
                          *(f for p in combination.parts for f in p.spec.files())]
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


def refuse(*rules: tuple[object, str], error: type[Exception] = InputError) -> None:
    """Raise ``error`` with the message of the first ``(condition, message)`` rule that holds."""
    for condition, message in rules:
        if condition:
            raise error(message)


def given(ctx: click.Context, name: str) -> bool:
    """Whether the user gave the parameter ``name`` (on the command line or in its variable)."""
    return ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def require_model(ctx: click.Context, why: str) -> None:
    """Refuse a command run without a model (``--model``, or ``--lang`` where it takes it): ``why``
    says what the model is for."""
    if not any(given(ctx, name) for name in MODEL_OPTIONS):
        raise click.UsageError(f"Missing option '{OPTION.model.flag}' ({why}).")


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
