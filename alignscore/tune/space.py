"""Search spaces of runs for ``alignscore tune``: TOML files of lists of choices.

One list per option (the names every way in uses), with ``[[subspace]]`` tables, ``[[exclude]]``
tables and ``[[published]]`` configurations (format: docs/tune-compare.md). Each candidate is a
source of the one compiler above the command's own options (what the space chooses wins).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Collection, Mapping, Sequence

from ..config.compile import Compiled, Provenance, Source, compile_labelled, make_source, preset_source
from ..config.schema import MODEL_OPTIONS
from ..config.sources import key_label, known, model_given
from ..config.presets import PRESETS
from ..config.spec import RunSpec
from ..encoders.layers import DEFAULT_MODEL
from ..errors import ConfigError
from ..settings import SettingError
from ..textio import load_toml

DEFAULT_SPACE = "default.toml"
PRESET, MODEL = PRESETS.stage, MODEL_OPTIONS[0]
#: what a [[published]] table may build on besides its own options
BASE_KEYS = (PRESET, "grid", "row", "column", "rows", "columns")

Choices = Mapping[str, tuple[Any, ...]]


@dataclass(frozen=True)
class Candidate:
    """One run of a space: the ``values`` the space gives it (as in the file), the
    ``subspace`` it comes from, the ``source`` the compiler read (each option named
    ``file:line: key[i]``), the compiled ``spec`` and how each of its options was given."""

    values: Mapping[str, Any]
    subspace: str
    source: Source
    spec: RunSpec
    provenance: Provenance = field(default_factory=Provenance, compare=False, repr=False)


@dataclass(frozen=True)
class Space:
    """A parsed space: the shared choices, the sub-spaces (each a name and its own choices) and
    the exclusions; ``path`` names the file in errors, ``base_dir`` is where files it names
    (stop words, idf corpora) are read from, ``lines`` where each key is in the file."""

    shared: Choices
    subspaces: tuple[tuple[str, Choices], ...]
    excludes: tuple[Mapping[str, Any], ...]
    path: str
    base_dir: Path | None
    lines: Mapping[tuple[Any, ...], int]
    published: tuple[tuple[str, tuple[Source, ...]], ...] = ()

    def choices(self) -> list[tuple[str, int | None, dict[str, tuple[Any, ...]]]]:
        """``(subspace name, its index or None, choices)`` of each product."""
        if not self.subspaces:
            return [("all", None, dict(self.shared))]
        return [(name, i, {**self.shared, **own}) for i, (name, own) in enumerate(self.subspaces)]

    def size(self) -> int:
        """How many runs the products hold (before exclusions and duplicates)."""
        return sum(math.prod(map(len, choices.values())) for _, _, choices in self.choices())

    def mappings(self) -> list[tuple[str, dict[str, Any], dict[str, tuple[Any, ...]]]]:
        """Every ``(subspace, values, paths)`` of the products, exclusions left out, in file
        order; ``paths`` gives each value's place in the file (``("subspace", 1, "aligner", 0)``)."""
        out = []
        for name, index, choices in self.choices():
            keys = list(choices)
            for picks in itertools.product(*(range(len(choices[k])) for k in keys)):
                values = {k: choices[k][i] for k, i in zip(keys, picks)}
                if any(all(k in values and values[k] == v for k, v in ex.items()) for ex in self.excludes):
                    continue
                paths = {k: ((k, i) if index is None or k not in dict(self.subspaces[index][1])
                             else ("subspace", index, k, i)) for k, i in zip(keys, picks)}
                out.append((name, values, paths))
        return out

    def candidates(self, flags: Sequence[Source] = (), limit: int | None = None,
                   data: Mapping[str, Any] | None = None, skip_models: Collection[str] = ()) -> list[Candidate]:
        """Every candidate compiled above the command's options ``flags`` (nothing encoded);
        ``data``: settings the data provide where a run's part takes them (an idf-L corpus);
        runs of a model in ``skip_models`` are left out.

        Raises:
            ConfigError: more than ``limit`` runs, or a run that does not compile (naming
                ``file:line: key[i]``).
        """
        if limit is not None and (size := self.size()) > limit:
            raise SettingError("max_compositions", f"{self.path} holds {size} runs, more than {limit}; narrow its "
                               "lists or raise the limit")
        out = []
        for name, values, paths in self.mappings():
            *below, source = self._sources(values, paths)
            if model_of([*flags, *below, source]) not in skip_models:
                out.append(Candidate(values, name, source, *compile_labelled([*flags, *below, source], data)))
        if not out:
            raise ConfigError(f"{self.path}: every run of the space is excluded" + (
                f" (their models are not on this machine: {', '.join(sorted(skip_models))})" if skip_models else ""))
        return out

    def published_runs(self, flags: Sequence[Source] = (), data: Mapping[str, Any] | None = None,
                       skip_models: Collection[str] = ()) -> dict[str, RunSpec]:
        """The published configurations, each compiled above the command's options (those of
        a model in ``skip_models`` left out)."""
        return {name: run.spec for name, run in self.published_compiled(flags, data, skip_models).items()}

    def published_compiled(self, flags: Sequence[Source] = (), data: Mapping[str, Any] | None = None,
                           skip_models: Collection[str] = ()) -> dict[str, Compiled]:
        """:meth:`published_runs`, each with how its options were given beside it."""
        return {name: compile_labelled([*flags, *sources], data) for name, sources in self.published
                if model_of([*flags, *sources]) not in skip_models}

    def models(self, flags: Sequence[Source] = ()) -> dict[str, str]:
        """Every model the runs name (the command's where a run names none), each with where it
        is first named (``space.toml:3: model[1]``, ``--model``)."""
        out: dict[str, str] = {}
        chains = [self._sources(values, paths) for _, values, paths in self.mappings()]
        for sources in chains + [list(s) for _, s in self.published]:
            chain = [*flags, *sources]
            given = next((s.labels[MODEL] for s in reversed(chain) if MODEL in s.values), "the default model")
            out.setdefault(model_of(chain), given)
        return out

    def _sources(self, values: Mapping[str, Any], paths: Mapping[str, tuple[Any, ...]]) -> list[Source]:
        """A run's sources above the command's: the preset it chooses as its base (on the
        command's model), then its own options."""
        at = key_label(self.path, self.lines)
        own = make_source({k: v for k, v in values.items() if k != PRESET}, "space", lambda p: at(paths[p[0]] + p[1:]),
                          self.base_dir)
        return [_preset_base(values[PRESET], at(paths[PRESET])), own] if PRESET in values else [own]


def model_of(sources: Sequence[Source]) -> str:
    """The model a run of ``sources`` (lowest first) names: the last one given, or the default."""
    return model_given(sources) or DEFAULT_MODEL


def _choices(table: Mapping[str, Any], at: tuple[Any, ...], label: Any) -> dict[str, tuple[Any, ...]]:
    """The lists of choices of a table (each checked when its candidates compile)."""
    for key, values in table.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{label(at + (key,))}: a non-empty list of choices, e.g. {key} = [...], not {values!r}")
    return {key: tuple(values) for key, values in table.items()}


def parse_space(data: Mapping[str, Any], path: str = "space", base_dir: Path | None = None,
                lines: Mapping[tuple[Any, ...], int] | None = None) -> Space:
    """A :class:`Space` from a space file's tables (its shape and its published configurations
    checked; the values of its choices are checked when its candidates compile)."""
    lines = lines or {}
    label = key_label(path, lines)
    shared = _choices({k: v for k, v in data.items() if k not in ("subspace", "exclude", "published")}, (), label)

    def tables(key: str, what: str = "") -> list[dict[str, Any]]:
        found = data.get(key, [])
        if not isinstance(found, list) or not all(isinstance(t, dict) and (t or key != "exclude") for t in found):
            raise ConfigError(f"{label((key,))}: expected [[{key}]] tables{what}")
        return found

    subspaces = []
    for i, sub in enumerate(tables("subspace")):
        name = sub.get("name", f"#{i + 1}")
        if not isinstance(name, str):
            raise ConfigError(f"{label(('subspace', i, 'name'))}: expected a text, not {name!r}")
        subspaces.append((name, _choices({k: v for k, v in sub.items() if k != "name"}, ("subspace", i), label)))
    if len({n for n, _ in subspaces}) != len(subspaces):
        raise ConfigError(f"{path}: sub-space names must be unique")
    excludes = tables("exclude", " of option = value")
    points = []
    for i, point in enumerate(tables("published", " of name and options")):
        name = point.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{label(('published', i))}: a published configuration needs a `name`")
        cells = _published(point, lambda key, i=i: label(("published", i, key)), base_dir)
        own = make_source({k: v for k, v in point.items() if k not in ("name", *BASE_KEYS)}, "space",
                          lambda p, i=i: label(("published", i, *p)), base_dir)
        points += [(cell, (*below, own)) for cell, below in cells]
    if len({n for n, _ in points}) != len(points):
        raise ConfigError(f"{path}: published names must be unique")
    return Space(shared, tuple(subspaces), tuple(excludes), path, base_dir, lines, tuple(points))


def _published(point: Mapping[str, Any], label: Any, base_dir: Path | None) -> list[tuple[str, tuple[Source, ...]]]:
    """A ``[[published]]`` table as ``(name, the sources below its own options)``: a
    ``preset`` (on the command's model) and a ``grid`` file's cells (``row`` and ``column``: one,
    named ``name``; else every cell of ``rows`` by ``columns`` (default: all) on the grid's first
    model role, each named ``NAME: ROW, COLUMN``), compiled as the grid compiles them without
    its models (:meth:`~alignscore.ablation.grid.Grid.sources`)."""
    name = point["name"]
    below = [_preset_base(point[PRESET], label(PRESET))] if PRESET in point else []
    if "grid" not in point:
        if extra := next((k for k in BASE_KEYS[2:] if k in point), None):
            raise ConfigError(f"{label(extra)}: names a cell of a grid: give the grid too (grid = \"table9.toml\")")
        return [(name, tuple(below))]
    from ..ablation.grid import load_grid

    if not isinstance(point["grid"], str):
        raise ConfigError(f"{label('grid')}: a grid file's name, not {point['grid']!r}")
    grid = load_grid((base_dir or Path.cwd()) / point["grid"])
    single = "row" in point or "column" in point
    if single and not ("row" in point and "column" in point):
        raise ConfigError(f"{label('row' if 'row' not in point else 'column')}: a cell needs a row and a column")
    rows = _named(grid.rows, [point["row"]] if single else point.get("rows"), label("row" if single else "rows"))
    columns = _named(grid.columns, [point["column"]] if single else point.get("columns"),
                     label("column" if single else "columns"))
    base, out = next(iter(grid.roles)), []
    for row, column in itertools.product(rows, columns):
        if grid.role(row, column) != base:
            if single:
                raise ConfigError(f"{label('row')}: the cell runs the grid's {grid.role(row, column)} model; "
                                  "a space runs the command's")
            continue
        cell = name if single else f"{name}: {_row_name(row)}, {column.name}"
        out.append((cell, (*below, grid.defaults.source, column.source, row.source)))
    return out


def _preset_base(name: Any, label: str) -> Source:
    """A preset's options but its model (a space runs the command's)."""
    if not isinstance(name, str):
        raise ConfigError(f"{label}: a preset's name, not {name!r}")
    known(PRESETS, name, label)
    return preset_source(name, model=False)


def _row_name(row: Any) -> str:
    try:
        return str(row.name.format(**row.source.values))  # "Layer {layer}" -> "Layer -5"
    except (KeyError, IndexError, ValueError):
        return str(row.name)


def _named(entries: Sequence[Any], names: Any, label: str) -> list[Any]:
    """The rows or columns of a grid by name (rows by their name as written out), in the
    order given; ``None``: all of them."""
    if names is None:
        return list(entries)
    known = {(_row_name(e) if "{" in e.name else e.name): e for e in entries}
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"{label}: a list of names, not {names!r}")
    if missing := [n for n in names if n not in known]:
        raise ConfigError(f"{label}: no {missing[0]!r} in the grid (it has: {', '.join(known)})")
    return [known[n] for n in names]


def load_space(path: str | Path | None = None) -> Space:
    """Read a space file (TOML); ``None``: the packaged default space."""
    with resources.as_file(resources.files("alignscore.tune") / "spaces" / DEFAULT_SPACE) as default:
        data, lines = load_toml(path or default)
        name = str(path) if path is not None else f"default space ({DEFAULT_SPACE})"
        return parse_space(data, name, Path(path or default).resolve().parent, lines)


__all__ = ["Candidate", "DEFAULT_SPACE", "Space", "load_space", "model_of", "parse_space"]
