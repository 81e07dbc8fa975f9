"""Sources: the mappings of options each way in hands the compiler, read and checked, with how
the user wrote each option (``--n-gram``, ``n_gram=``, ``best.toml:4: n_gram``,
``table9.toml:31: rows[3].layer``: a file's keys by the line :func:`~alignscore.textio.load_toml`
finds them on) and what each is based on (the preset or run file it names).

Every value is read here (text from the command line, files resolved against the folder of what
names them) and checked against its declaration where one declaration says it; a
:class:`Provenance` names an option in an error as the user wrote it.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..cache import CacheSpec, EmbeddingCache
from ..errors import ConfigError
from ..filters import TokenFilter
from ..settings import RequirementError, SettingError, settings_of
from ..textio import load_toml
from .presets import PRESETS
from .schema import FILTER_LIST, MODEL_OPTIONS, SOURCE_OPTIONS, STAGES, aliases, options, part_settings, registry_of

CLEAR = "none"  # --filters none: no filter from the sources below
PRESET, CONFIG = SOURCE_OPTIONS

Label = Callable[[tuple[Any, ...]], str]


def dotted(path: tuple[Any, ...]) -> str:
    """``("rows", 2, "layer")`` -> ``rows[2].layer``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" if i else str(p) for i, p in enumerate(path))


def key_label(path: str, lines: Mapping[tuple[Any, ...], int]) -> Callable[[tuple[Any, ...]], str]:
    """How a key path of the file ``path`` is named in errors: ``table9.toml:31: rows[3].layer`` (the
    line of the key, or of the nearest table that holds it)."""
    def label(p: tuple[Any, ...]) -> str:
        line = next((lines[p[:end]] for end in range(len(p), 0, -1) if p[:end] in lines), None)
        return f"{path}:{line}: {dotted(p)}" if line else f"{path}: {dotted(p)}"
    return label


def keyword_label(path: tuple[Any, ...]) -> str:
    return f"{path[0]}=" + "".join(f"[{p!r}]" for p in path[1:])


@dataclass(frozen=True)
class Naming:
    """How a way in writes options, handed in by its caller: an option the user did not give is
    named in an error as the user would write it there.

    Attributes
    ----------
    label : a key path as written (``("n_gram",)`` -> ``n_gram=``).
    switch : what a switch (an :class:`~alignscore.config.schema.Option`) takes, as written there.
    text : values are text, read as the command line reads them.
    kind : the :attr:`Source.kind` of the options given this way, which may name a run file
        (``config``); None: options in a file, which may not.

    Examples
    --------
    >>> KEYWORDS.label(("n_gram",)), KEYS.label(("n_gram",))
    ('n_gram=', 'n_gram')
    """

    label: Label
    switch: Callable[[Any], str]
    text: bool = False
    kind: str | None = None

    def name(self, option: str) -> str:
        """An option the user did not give, as written this way."""
        return self.label((option,))


#: Python's keywords (``n_gram=``)
KEYWORDS = Naming(keyword_label, lambda option: "True or False", kind="keywords")
#: a file's keys (``n_gram``; a grid's, a space's, a preset's)
KEYS = Naming(dotted, lambda option: "true or false (a TOML boolean, without quotes)")


@dataclass(frozen=True)
class Source:
    """One mapping of options, normalised (:func:`make_source`).

    Attributes
    ----------
    kind : where it comes from (``"flags"``, ``"keywords"``, ``"file"``, ``"preset"``, ``"grid"``, ...).
    values : by option name (part tables spread into the part's name and its settings; ``filters``
        as ``[(name, {setting: value})]``).
    labels : how each option was written.
    naming : how its way in names an option it does not give and reads values (:class:`Naming`).
    filter_labels : how each token filter's settings were written, by filter.
    base : the sources it is based on (the preset or run file it names), merged just below it.
    path : the run file it was read from, if it is one.

    Examples
    --------
    >>> src = make_source({"preset": "bertscore", "n_gram": 2}, "keywords", keyword_label, naming=KEYWORDS)
    >>> src.values, src.labels["n_gram"], [b.kind for b in src.base]
    ({'n_gram': 2}, 'n_gram=', ['preset'])
    """

    kind: str
    values: Mapping[str, Any]
    labels: Mapping[str, str]
    naming: Naming
    filter_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    base: tuple["Source", ...] = ()
    path: str | None = None

    def layers(self) -> list["Source"]:
        """This source after the ones it is based on (the preset or run file it names), lowest first."""
        return [*(b for src in self.base for b in src.layers()), self]


#: bert_score's keywords (``bert_score.score``, and its command line's flags) that no setting does
#: (a setting that does declares them: ``setting(bert_score=...)``), and what to know instead
BERT_SCORE_ONLY: dict[str, str] = {
    "all_layers": "a run scores one composition: score once per layer, or run a grid over the layers "
                  "(alignscore ablate)",
    "return_hash": "every result carries its signature, the whole of what bert_score's hash says "
                   "(scores.signature; the command line prints it)",
    "verbose": "the command line shows progress on stderr; a Python call is quiet",
    "nthreads": "the tokenizer is always the fast one; torch's threads are torch.set_num_threads'",
    "use_fast_tokenizer": "the tokenizer is always the fast one",
    "seg_level": "the scores of every candidate are always written, the means and signature to stderr",
}


def bert_score_name(key: str, naming: Naming) -> str | None:
    """What to use instead of bert_score's keyword (or flag) ``key``, the option named as
    ``naming`` names it: the setting that declares it, with the gist of its help, or
    :data:`BERT_SCORE_ONLY`'s note; None where ``key`` is none of bert_score's.

    Examples
    --------
    >>> bert_score_name("model_type", KEYWORDS)
    "bert_score's model_type is model= here (Hugging Face hub id or local directory)"
    >>> bert_score_name("rescale_with_baseline", KEYS)
    "bert_score's rescale_with_baseline is baseline here (Baseline file in bert_score's format)"
    """
    key = key.replace("-", "_")
    for option in options().values():
        if option.setting is not None and key in option.setting.decl.bert_score:
            gist = re.split(r" \(|\. |; ", option.help)[0].rstrip(".")
            return f"bert_score's {key} is {naming.name(option.name)} here ({gist})"
    return f"bert_score's {key} has no counterpart here: {BERT_SCORE_ONLY[key]}" if key in BERT_SCORE_ONLY else None


# -- sources ------------------------------------------------------------------------------------
def make_source(mapping: Mapping[str, Any], kind: str, label: Label, base_dir: str | Path | None = None,
                naming: Naming = KEYS) -> Source:
    """A :class:`Source` from a mapping of options; unknown options and unreadable values are
    errors naming them as written.

    Parameters
    ----------
    mapping : option names (or declared aliases) to values; ``None`` is "not given". A ``preset``
        (anywhere) or a ``config`` file (where ``naming`` has a kind) becomes the source's
        :attr:`~Source.base`, which the mapping's own keys override.
    kind : :attr:`Source.kind`; in a ``"grid"`` or ``"space"`` a preset gives its composition
        without its model (the model is the role's or the command's).
    label : names a key path as the user wrote it.
    base_dir : where relative file names are read from (the working directory by default).
    naming : :attr:`Source.naming` (default: a file's keys).

    Returns
    -------
    Source

    Examples
    --------
    >>> make_source({"layer": 4}, "keywords", keyword_label, naming=KEYWORDS).values
    {'layer': 4}
    >>> make_source({"ngram": 2}, "keywords", keyword_label, naming=KEYWORDS)
    Traceback (most recent call last):
    ...
    alignscore.errors.ConfigError: ngram=: no such option (did you mean n_gram?) ...
    """
    table, older, text = options(), aliases(), naming.text
    root = Path(base_dir) if base_dir is not None else None
    values: dict[str, Any] = {}
    labels: dict[str, str] = {}
    filter_labels: dict[str, dict[str, str]] = {}
    for key, value in mapping.items():
        name = key if key in table else older.get(key)
        if value is None or name is not None and _unset(table[name], value):
            continue
        if name == CONFIG and isinstance(value, str) and value in PRESETS.names() and not _local(value, root).exists():
            name = PRESET  # a preset by name wherever a run file is taken
        if name is None and (habit := bert_score_name(key, naming)) is not None:
            raise ConfigError(f"{label((key,))}: {habit}")
        if name is None:
            near = difflib.get_close_matches(key.replace("-", "_"), list(table), n=1)
            raise ConfigError(f"{label((key,))}: no such option{f' (did you mean {near[0]}?)' if near else ''} "
                              "(the options: docs/cli-reference.md)")
        if name in values:
            raise ConfigError(f"{label((key,))} and {labels[name]} both give {name}: give one")
        option = table[name]
        if option.group == "source" and (kind == PRESET or name == CONFIG and naming.kind is None):
            raise ConfigError(f"{label((key,))}: a {name} is a whole run: it cannot be part of one here")
        if option.multiple and value == ():
            continue
        if name in STAGES:
            part, settings = _part_value(name, value, label, (key,))
            values[name], labels[name] = part, label((key,))
            for setting, (v, lab) in settings.items():
                if setting in values or mapping.get(setting) is not None:
                    raise ConfigError(f"{lab} and {labels.get(setting) or label((setting,))} both give {setting}: "
                                      "give one")
                values[setting], labels[setting] = _read(table[setting], v, lab, text, root, naming), lab
        elif isinstance(value, EmbeddingCache):  # a cache object stands for its settings (given beside it: kept)
            spec = CacheSpec(str(Path(value.directory).resolve()), value.max_bytes, value.timeout_s)
            for s in settings_of(CacheSpec):
                if s.name == name or s.name not in mapping:
                    values[s.name], labels[s.name] = getattr(spec, s.name), label((key,))
        elif name == FILTER_LIST:
            items = _filters(value, label, (key,), text)
            values[name], labels[name] = [(n, {k: _read(table[k], v, lab, text, root, naming)
                                               for k, (v, lab) in s.items()})
                                          for n, s in items], label((key,))
            filter_labels.update({n: {k: lab for k, (_, lab) in s.items()} for n, s in items})
        else:
            values[name], labels[name] = _read(option, value, label((key,)), text, root, naming), label((key,))
    preset, config = values.pop(PRESET, None), values.pop(CONFIG, None)
    if preset is not None and config is not None:
        raise ConfigError(f"{labels[PRESET]} and {labels[CONFIG]} both give a whole run: give one (a run "
                          "file already fixes every setting; it may name its preset: preset = NAME)")
    base = (preset_source(preset, model=kind not in ("grid", "space")),) if preset is not None else \
        (file_source(config, labels[CONFIG]),) if config is not None else ()
    return Source(kind, values, labels, naming, filter_labels, base)


def _local(value: str, root: Path | None) -> Path:
    """A file name as the source reads it: relative to ``root`` where it has one."""
    path = Path(value).expanduser()
    return root / path if root is not None and not path.is_absolute() else path


def _unset(option: Any, value: Any) -> bool:
    """An empty text for an option read from an environment variable means "not given", as an
    empty variable does (``--cache ''``: no cache)."""
    return isinstance(value, str) and not value.strip() and option.setting is not None \
        and option.setting.decl.envvar is not None


def _read(option: Any, value: Any, label: str, text: bool, root: Path | None, naming: Naming) -> Any:
    """A value as the option holds it: files resolved, then read and checked by its declaration."""
    s = option.setting
    if option.file and isinstance(value, str) and not value.strip():  # not the working folder
        raise ConfigError(f"{label}: a file name, not an empty text", (option.name,))
    if option.boolean and not isinstance(value, bool):  # never read from a text: "no" is not false
        raise ConfigError(f"{label}: {naming.switch(option)}, not {value!r}", (option.name,))
    model = s is not None and s.decl.names_model and isinstance(value, str) and value.strip()
    if model or option.file and isinstance(value, (str, os.PathLike)):
        local = _local(str(value), root)
        if option.file or local.exists():  # a file, or the model as a local folder or file
            value = str(local.resolve())
    if option.multiple and isinstance(value, str):
        value = [value]
    if option.choices is not None and s is None and value not in option.choices:  # a preset
        raise ConfigError(f"{label}: one of {', '.join(option.choices)}, not {value!r}", (option.name,))
    try:  # a setting several parts share is checked by the part chosen
        return value if s is None else s.read(value, text, check=len(option.parts) <= 1)
    except SettingError as exc:
        raise ConfigError(f"{label}: {exc.reason}", (option.name,)) from None


def _part_value(stage: str, value: Any, label: Label, path: tuple[Any, ...]
                ) -> tuple[str, dict[str, tuple[Any, str]]]:
    """A stage's part as given: a name, a table ``{name = ..., setting = ...}`` or (Python) a
    part object, as its name and ``{setting: (value, label)}``."""
    registry = registry_of(stage)
    if isinstance(value, str):
        known(registry, value, label(path))
        return value, {}
    if isinstance(value, Mapping):
        name = value.get("name")
        if not isinstance(name, str):
            raise ConfigError(f"{label(path)}: a table with `name` (the {stage}'s name) and its settings, "
                              f"not {value!r}")
        known(registry, name, label(path + ("name",)))
        takes = part_settings(stage, name)
        older = {a: s.name for s in takes.values() for a in s.decl.aliases}  # valid in its table only
        out: dict[str, tuple[Any, str]] = {}
        for k, v in [(k, v) for k, v in value.items() if k != "name"]:
            setting = k if k in takes else older.get(k)
            if setting is None:
                raise ConfigError(f"{label(path + (k,))}: {stage} {name} has no setting {k!r} "
                                  f"(its settings: {', '.join(takes) or 'none'})")
            out[setting] = (v, label(path + (k,)))
        return name, out
    for name in registry.names():
        if type(value) is registry.get(name):
            return name, {s.name: (getattr(value, s.name), label(path)) for s in settings_of(type(value))
                          if s.decl.option}
    raise ConfigError(f"{label(path)}: a {stage} name ({', '.join(registry.names())}), a table with `name`, or a "
                      f"registered {stage} object, not {value!r}")


def known(registry: Any, name: str, label: str) -> None:
    """Refuse a name ``registry`` does not hold, naming those it does."""
    if name not in registry.names():
        raise ConfigError(f"{label}: no {registry.stage} {name!r} (there are: {', '.join(registry.names())})")


def _filters(value: Any, label: Label, path: tuple[Any, ...], text: bool
             ) -> list[tuple[str, dict[str, tuple[Any, str]]]]:
    if isinstance(value, (str, Mapping, TokenFilter)):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{label(path)}: a list of token filters, not {value!r}")
    items: list[Any] = []
    for item in value:
        items += [p.strip() for p in item.split(",") if p.strip()] if text and isinstance(item, str) else [item]
    if items == [CLEAR]:
        return []
    return [_part_value("filter", item, label, path + (i,) if len(items) > 1 else path) for i, item in enumerate(items)]


def file_source(path: str | Path, label: str = "config=") -> Source:
    """The source a run file gives (its keys named ``file:line: key``).

    Parameters
    ----------
    path : the run file (TOML).
    label : the option that names it, as written (a combination's file is refused, naming it).

    Returns
    -------
    Source

    Examples
    --------
    >>> import pathlib, tempfile
    >>> run = pathlib.Path(tempfile.mkdtemp()) / "run.toml"
    >>> _ = run.write_text('aligner = "wmd"\\nn_gram = 2\\n')
    >>> file_source(run).labels["n_gram"]
    '.../run.toml:2: n_gram'
    """
    data, lines = load_toml(path)
    for key, value in data.items():
        if key == CONFIG:
            raise ConfigError(f"{path}:{lines.get((key,), '?')}: {key}: a run file holds options, not another "
                              "run file (it may name a preset: preset = NAME)")
        if key == "parts":  # a combination's runs (alignscore.combination): not one run
            raise ConfigError(f"{path}:{lines.get((key,)) or lines.get((key, 0), '?')}: a combination of runs (score "
                              f"{label} scores it), not one run")
        if isinstance(value, dict) and key not in STAGES:
            raise ConfigError(f"{path}:{lines.get((key,), '?')}: [{key}]: a run file's keys are options (write "
                              f"them at the top level, e.g. batch_size = 32), not tables")
    source = make_source(data, "file", key_label(str(path), lines), Path(path).resolve().parent)
    return replace(source, path=str(Path(path).resolve()))


def input_files(sources: Sequence[Source]) -> list[str]:
    """The files ``sources`` read: the run files and every file an option of theirs names (stop
    words, a baseline, a corpus...); no output may replace one.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> run = pathlib.Path(tempfile.mkdtemp()) / "run.toml"
    >>> _ = run.write_text('stopwords = "stop.txt"\\n')
    >>> [pathlib.Path(f).name for f in input_files(sources_of({"config": str(run)}))]
    ['run.toml', 'stop.txt']
    """
    table = options()
    out: list[str] = []
    for src in flat(sources):
        out += [src.path] if src.path else []
        for name, value in src.values.items():
            if table[name].file:
                out += [str(v) for v in (value if isinstance(value, (list, tuple)) else [value])
                        if isinstance(v, (str, os.PathLike))]
    return out


def preset_source(name: str, model: bool = True) -> Source:
    """The source a preset gives (its options named ``preset NAME: key``).

    Parameters
    ----------
    name : the preset's name.
    model : ``False``: its composition only (a grid's or a space's model is the role's or the command's).

    Returns
    -------
    Source

    Examples
    --------
    >>> preset_source("moverscore-v2").values["aligner"]
    'wmd'
    >>> "model" in preset_source("moverscore-v2", model=False).values
    False
    """
    options = {k: v for k, v in PRESETS.get(name).options.items() if model or k != MODEL_OPTIONS[0]}
    return make_source(options, PRESET, lambda p: f"preset {name}: {dotted(p)}")


def model_given(sources: Sequence[Source]) -> str | None:
    """The model the highest of ``sources`` (lowest first) that names one names, or None."""
    return next((str(s.values[MODEL_OPTIONS[0]]) for s in reversed(sources) if MODEL_OPTIONS[0] in s.values), None)


def flat(sources: Sequence[Source]) -> list[Source]:
    """``sources`` with the ones each is based on before it (:meth:`Source.layers`), lowest first."""
    return [replace(s, base=()) for src in sources for s in src.layers()]


def sources_of(given: Mapping[str, Any], naming: Naming = KEYWORDS) -> list[Source]:
    """The sources a mapping of options describes: the preset or run file it names, then itself.

    Parameters
    ----------
    given : the options (:func:`make_source`'s ``mapping``).
    naming : how they are written: the caller's way in (Python's keywords by default; the
        command line hands in its flags, whose values are text to read).

    Returns
    -------
    list of Source
        Lowest first.

    Examples
    --------
    >>> [s.kind for s in sources_of({"preset": "moverscore-v2", "n_gram": 2})]
    ['preset', 'keywords']
    >>> [s.labels for s in sources_of({"layer": 4})]
    [{'layer': 'layer='}]
    """
    return flat([make_source(given, naming.kind or "file", naming.label, None, naming)])


@dataclass(frozen=True)
class Provenance:
    """How each option of a run was given, kept beside its :class:`~alignscore.config.spec.RunSpec`.
    The compiler, :func:`~alignscore.config.build.build` and the CLI name an option in an error
    through :meth:`relabel`.

    Attributes
    ----------
    labels : each given option as written (``--layer``, ``layer=``, ``run.toml:3: layer``).
    naming : how an option that was not given is named (:class:`Naming`).
    ranks : the rank of each option's source (higher wins).

    Examples
    --------
    >>> str(Provenance({"n_gram": "--n-gram"}).relabel(SettingError("n_gram", "expected an integer")))
    '--n-gram: expected an integer'
    >>> str(Provenance(naming=KEYS).relabel(SettingError("sep", "expected true or false"), "run.toml:3: weighting"))
    'run.toml:3: weighting (sep): expected true or false'
    """

    labels: Mapping[str, str] = field(default_factory=dict)
    naming: Naming = KEYWORDS
    ranks: Mapping[str, int] = field(default_factory=dict)

    def name(self, option: str) -> str:
        """The option as the user wrote it, or as its way in names it."""
        return self.labels.get(option) or self.naming.name(option)

    def relabel(self, exc: ConfigError, part: str | None = None) -> ConfigError:
        """``exc`` with the option it is about named as the user wrote it (of several, the one
        from the highest source); ``part`` labels the part whose own, not given, setting is wrong."""
        if isinstance(exc, SettingError):
            named = self.naming.name
            label = self.labels.get(exc.field) or (f"{part} ({named(exc.field)})" if part else named(exc.field))
            reason = exc.named(named) if isinstance(exc, RequirementError) else exc.reason
            return ConfigError(f"{label}: {reason}", exc.options)
        if not exc.options:
            return exc
        given = [o for o in exc.options if o in self.labels]
        label = self.name(max(given, key=lambda o: self.ranks.get(o, 0)) if given else exc.options[0])
        return ConfigError(f"{label}: {exc.message}", exc.options)


__all__ = ["BERT_SCORE_ONLY", "CLEAR", "KEYS", "KEYWORDS", "Label", "Naming", "Provenance", "Source", "bert_score_name",
           "dotted", "file_source", "flat", "input_files", "key_label", "keyword_label", "known",
           "make_source", "model_given", "preset_source", "sources_of"]
