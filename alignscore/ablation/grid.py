"""Ablation grids: a table of runs, read from TOML (format: ``docs/ablation.md``).

Model roles (``[models.<role>]``), columns, rows and ``[defaults]``, each a mapping of options. A
cell is compiled by the one compiler from, lowest first: the role, the command's options (their
``--model`` replaces the role's, but for the ``mnli`` and ``static`` roles), ``[defaults]``, the
column, the row (:meth:`Grid.sources`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..config.schema import MODEL_OPTIONS, STAGES, options
from ..config.sources import KEYWORDS, PRESET, Source, key_label, keyword_label, make_source, model_given
from ..errors import ConfigError
from ..textio import load_toml

MNLI_ROLE = "mnli"
STATIC_ROLE = "static"


@dataclass(frozen=True)
class GridEntry:
    """A row, a column or ``[defaults]``: its ``name``, the model ``role`` it names (if any) and
    its options."""

    name: str
    role: str | None
    source: Source


@dataclass(frozen=True)
class Grid:
    """A parsed grid (every key checked; nothing built yet)."""

    title: str
    roles: Mapping[str, Source]
    columns: tuple[GridEntry, ...]
    rows: tuple[GridEntry, ...]
    defaults: GridEntry
    name: str = "grid"

    def role(self, row: GridEntry, column: GridEntry) -> str:
        """The model role of a cell: the row's, the column's, ``[defaults]``', or the first role."""
        return row.role or column.role or self.defaults.role or next(iter(self.roles))

    def sources(self, row: GridEntry, column: GridEntry, flags: Sequence[Source] = (),
                models: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None) -> list[Source]:
        """The sources of a cell, lowest first: its role, the command's options (``flags``),
        ``[defaults]``, the column, the row. ``models`` holds the models the command names per
        role kind (``{"": --model, "mnli": --mnli-model, "static": --static-model}``), ``labels``
        how the caller names each (default: ``models=['mnli']``): a role whose model the command
        replaces keeps none of its own settings (its layer was its model's)."""
        role = self.role(row, column)
        kind, base = _kind(role), self.roles[role]
        own = (models or {}).get(kind)
        command = [_for_role(s, kind) for s in flags]
        if own or kind == "" and any("model" in s.values for s in command):
            base = replace(base, values={}, labels={}, filter_labels={}, base=(), path=None)
        label = (labels or {}).get(kind) or keyword_label(("models", kind))
        naming = flags[-1].naming if flags else KEYWORDS  # the command's
        extra = [Source("flags", {"model": own}, {"model": label}, naming)] if own else []
        return [base, *command, *extra, self.defaults.source, column.source, row.source]

    def model(self, role: str, flags: Sequence[Source] = (), models: Mapping[str, str] | None = None) -> str:
        """The model a role runs (after the command's options)."""
        kind = _kind(role)
        return (models or {}).get(kind) or model_given([_for_role(s, kind) for s in flags]) \
            or str(self.roles[role].values["model"])


def _kind(role: str) -> str:
    """A role's kind: its key in :meth:`Grid.sources`' ``models`` (the command's option that replaces its model)."""
    return role if role in (MNLI_ROLE, STATIC_ROLE) else ""


def _for_role(source: Source, kind: str) -> Source:
    """The command's options that reach a role (not the model of ``mnli`` and ``static``, nor layers of ``static``)."""
    if kind == "":
        return source
    drop = set(MODEL_OPTIONS) | ({n for n, o in options().items() if o.layered} if kind == STATIC_ROLE else set())
    return replace(source, values={k: v for k, v in source.values.items() if k not in drop},
                   labels={k: v for k, v in source.labels.items() if k not in drop})


def parse_grid(data: Mapping[str, Any], lines: Mapping[tuple[Any, ...], int] | None = None,
               path: str | Path = "grid", base_dir: Path | None = None) -> Grid:
    """A :class:`Grid` from the tables of a grid file; every key and value is checked here (each
    error names ``file:line: key``)."""
    where = str(path)
    label = key_label(where, lines or {})

    known = {"title", "models", "defaults", "columns", "rows"}
    if extra := sorted(set(data) - known):
        raise ConfigError(f"{label((extra[0],))}: not a grid key (a grid has: {', '.join(sorted(known))})")
    models = data.get("models")
    if not isinstance(models, dict) or not models:
        raise ConfigError(f"{where}: a grid needs [models.<role>] tables with `model = \"...\"`")
    roles: dict[str, Source] = {}
    for role, table in models.items():
        at = ("models", role)
        if not isinstance(table, dict) or not isinstance(table.get("model"), str):
            raise ConfigError(f"{label(at)}: a role is a table with `model = \"<hub id or directory>\"`")
        roles[role] = make_source(table, "grid", lambda p, at=at: label(at + p), base_dir)

    def entry(table: Any, at: tuple[Any, ...], named: bool) -> GridEntry:
        if not isinstance(table, dict):
            raise ConfigError(f"{label(at)}: expected a table of options")
        name = table.get("name", "defaults" if not named else None)
        if not isinstance(name, str):
            raise ConfigError(f"{label(at)}: needs a `name`")
        role = table.get("model")
        if role is not None and role not in roles:
            raise ConfigError(f"{label(at + ('model',))}: names a model role of [models]: one of "
                              f"{', '.join(roles)}, not {role!r}")
        rest = {k: v for k, v in table.items() if k not in ("name", "model")}
        return GridEntry(name, role, make_source(rest, "grid", lambda p: label(at + p), base_dir))

    defaults = entry(data.get("defaults", {}), ("defaults",), named=False)
    columns, rows = (tuple(entry(t, (key, i), True) for i, t in enumerate(_tables(data, key, label, where)))
                     for key in ("columns", "rows"))
    for i, column in enumerate(columns):
        if "aligner" not in column.source.values:
            raise ConfigError(f"{label(('columns', i))}: a column names its `aligner`")
    _presets_keep_columns(rows, columns, label)
    # templates ("Layer {layer}") repeat
    for kind, names in (("row", [r.name for r in rows if "{" not in r.name]), ("column", [c.name for c in columns])):
        if len(set(names)) != len(names):
            raise ConfigError(f"{where}: {kind} names must be unique")
    return Grid(str(data.get("title", Path(where).stem)), roles, columns, rows, defaults, Path(where).stem)


def _presets_keep_columns(rows: Sequence[GridEntry], columns: Sequence[GridEntry], label: Any) -> None:
    """Refuse a row whose preset names another part than a column declares: the preset, merged
    just below the row, would replace the column's part without a trace in the table."""
    for i, row in enumerate(rows):
        for preset in (b for b in row.source.base if b.kind == PRESET):
            for column in columns:
                for stage in (s for s in STAGES if s in preset.values and s in column.source.values
                              and s not in row.source.values):
                    if preset.values[stage] != column.source.values[stage]:
                        raise ConfigError(
                            f"{label(('rows', i, PRESET))}: its preset's {stage} {preset.values[stage]} would replace "
                            f"column {column.name!r}'s {stage} {column.source.values[stage]}: a row's preset may not "
                            f"change what a column declares (give the row its settings without the preset, or make "
                            f"the columns {stage} {preset.values[stage]})")


def _tables(data: Mapping[str, Any], key: str, label: Any, where: str) -> list[Any]:
    tables = data.get(key)
    if not isinstance(tables, list) or not tables:
        raise ConfigError(f"{label((key,)) if key in data else where}: a grid needs at least one [[{key}]] table")
    return tables


def load_grid(path: str | Path) -> Grid:
    """Read and check a grid file (TOML); files it names are read from its folder."""
    data, lines = load_toml(path)
    return parse_grid(data, lines, str(path), Path(path).resolve().parent)


__all__ = ["GridEntry", "Grid", "MNLI_ROLE", "STATIC_ROLE", "load_grid", "parse_grid"]
