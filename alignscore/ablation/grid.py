"""Ablation grids: a table of metric compositions, read from TOML (format: ``ablations/README.md``).

A grid has named models, columns (an aligner and the score it reports) and rows (the other
parts). A cell is a row composed with a column: every part is named by its registry name
(``AGGREGATORS``, ``FILTERS``, ``WEIGHTINGS``, ``ALIGNERS``), so new grids need no code.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from ..aggregators import AGGREGATORS
from ..aligners import ALIGNERS
from ..errors import ConfigError, InputError
from ..filters import FILTERS, check_special_policy
from ..weighting import WEIGHTINGS

# Keys that compose a cell's parts; they may appear in [defaults], in a column or in a row.
PART_KEYS = ("model", "aggregator", "layer", "weighting", "sep", "filters", "special_tokens")
MNLI_ROLE = "mnli"


@dataclass(frozen=True)
class ModelSpec:
    """A model role of the grid (``[models.<key>]``): a hub id or directory, and the layer the
    single-layer rows of this role use (``None``: the model's tuned default layer)."""

    key: str
    model: str
    layer: int | None = None


@dataclass(frozen=True)
class PartSpec:
    """A registry name and its keyword arguments (``"rm"`` or ``{ name = "pmeans", ... }``)."""

    name: str
    args: tuple[tuple[str, Any], ...] = ()

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.args)

    def __str__(self) -> str:
        if not self.args:
            return self.name
        return self.name + "(" + ",".join(f"{k}={v}" for k, v in self.args) + ")"


@dataclass(frozen=True)
class CellSpec:
    """Everything a cell is made of, once the row, its column and the defaults are merged."""

    model: str
    aggregator: PartSpec
    layer: int | None
    weighting: str
    sep: bool
    filters: tuple[PartSpec, ...]
    special_tokens: str
    aligner: PartSpec
    metric: str | None


@dataclass(frozen=True)
class Column:
    name: str
    aligner: PartSpec
    metric: str | None = None
    parts: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Row:
    name: str
    parts: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Grid:
    """A parsed grid. ``cell(row, column)`` merges defaults < column < row (``filters`` of the
    three are concatenated, duplicates dropped)."""

    title: str
    models: dict[str, ModelSpec]
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    base_dir: Path = Path(".")
    name: str = "grid"

    def cell(self, row: Row, column: Column) -> CellSpec:
        merged: dict[str, Any] = {"model": next(iter(self.models)), "aggregator": PartSpec("single"),
                                  "layer": None, "weighting": "none", "sep": False,
                                  "special_tokens": "match-only"}
        filters: list[PartSpec] = []
        for source in (self.defaults, column.parts, row.parts):
            for key, value in source.items():
                if key == "filters":
                    filters += [f for f in value if f not in filters]
                else:
                    merged[key] = value
        return CellSpec(filters=tuple(filters), aligner=column.aligner, metric=column.metric, **merged)

    def with_models(self, model: str | None = None, layer: int | None = None,
                    mnli_model: str | None = None) -> "Grid":
        """The grid with its models overridden: ``model`` replaces every role but ``mnli``,
        ``mnli_model`` the ``mnli`` role, ``layer`` the single layer of every role."""
        models = {}
        for key, spec in self.models.items():
            name = (mnli_model if key == MNLI_ROLE else model) or spec.model
            models[key] = ModelSpec(key, name, layer if layer is not None else
                                    (spec.layer if name == spec.model else None))
        return replace(self, models=models)


def _load_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib  # type: ignore[import-not-found,no-redef]
        except ImportError:
            raise ConfigError("reading grid files on Python 3.10 needs `pip install tomli`") from None
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise InputError(f"cannot read grid file: {exc.strerror or exc}", str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", str(path)) from None


def _part(value: Any, where: str, registry: Any) -> PartSpec:
    if isinstance(value, str):
        name, args = value, {}
    elif isinstance(value, dict) and isinstance(value.get("name"), str):
        args = {k: v for k, v in value.items() if k != "name"}
        name = value["name"]
    else:
        raise ConfigError(f"{where}: expected a name or a table with `name`, not {value!r}")
    registry.get(name)  # unknown names fail here, with the list of known ones
    return PartSpec(name, tuple(sorted((k, _freeze(v)) for k, v in args.items())))


def _freeze(value: Any) -> Any:
    return tuple(_freeze(v) for v in value) if isinstance(value, list) else value


def _parts(table: Mapping[str, Any], where: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key {key!r}; a part is one of: {', '.join(allowed)}")
        if key == "aggregator":
            out[key] = _part(value, f"{where}.aggregator", AGGREGATORS)
        elif key == "filters":
            if not isinstance(value, list):
                raise ConfigError(f"{where}.filters: expected a list")
            out[key] = [_part(v, f"{where}.filters", FILTERS) for v in value]
        elif key == "weighting":
            if not isinstance(value, str):
                raise ConfigError(f"{where}.weighting: expected a name")
            WEIGHTINGS.get(value)
            out[key] = value
        elif key == "sep":
            if not isinstance(value, bool):
                raise ConfigError(f"{where}.sep: expected true or false")
            out[key] = value
        elif key == "layer":
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"{where}.layer: expected a layer number")
            out[key] = value
        elif key == "special_tokens":
            out[key] = check_special_policy(value)
        elif key == "model":
            if not isinstance(value, str):
                raise ConfigError(f"{where}.model: expected a model role name")
            out[key] = value
    return out


def parse_grid(data: Mapping[str, Any], base_dir: Path = Path("."), name: str = "grid") -> Grid:
    """Build a :class:`Grid` from the parsed TOML tables; every part name is checked here."""
    known = {"title", "models", "defaults", "columns", "rows"}
    extra = set(data) - known
    if extra:
        raise ConfigError(f"unknown top-level key(s) {', '.join(sorted(extra))}; a grid has: "
                          f"{', '.join(sorted(known))}")
    models_raw = data.get("models")
    if not isinstance(models_raw, dict) or not models_raw:
        raise ConfigError("a grid needs [models.<role>] tables with `model = \"...\"`")
    models = {}
    for key, spec in models_raw.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("model"), str):
            raise ConfigError(f"models.{key}: expected a table with `model = \"<hub id or directory>\"`")
        unknown = set(spec) - {"model", "layer"}
        if unknown:
            raise ConfigError(f"models.{key}: unknown key(s) {', '.join(sorted(unknown))} (model, layer)")
        layer = spec.get("layer")
        if layer is not None and (not isinstance(layer, int) or isinstance(layer, bool)):
            raise ConfigError(f"models.{key}.layer: expected a layer number")
        models[key] = ModelSpec(key, spec["model"], layer)

    defaults = _parts(data.get("defaults", {}), "defaults", PART_KEYS)

    columns = []
    for i, col in enumerate(data.get("columns") or []):
        where = f"columns[{i}]"
        if not isinstance(col, dict) or not isinstance(col.get("name"), str) or "aligner" not in col:
            raise ConfigError(f"{where}: a column needs `name` and `aligner`")
        part_keys = {k: v for k, v in col.items() if k in PART_KEYS}
        args = {k: v for k, v in col.items() if k not in PART_KEYS and k not in ("name", "aligner", "metric")}
        aligner = _part(col["aligner"], f"{where}.aligner", ALIGNERS)
        if args:
            aligner = PartSpec(aligner.name, tuple(sorted(aligner.args + tuple((k, _freeze(v))
                                                                             for k, v in args.items()))))
        metric = col.get("metric")
        if metric is not None:  # an aligner's metrics may depend on its settings: ask an instance
            try:
                metrics = ALIGNERS.build(aligner.name, **aligner.kwargs).metrics
            except TypeError as exc:
                raise ConfigError(f"{where}: aligner {aligner}: {exc}") from None
            if metric not in metrics:
                raise ConfigError(f"{where}: aligner {aligner.name!r} has no metric {metric!r} "
                                  f"(it reports {', '.join(metrics)})")
        columns.append(Column(col["name"], aligner, metric, _parts(part_keys, where, PART_KEYS)))
    if not columns:
        raise ConfigError("a grid needs at least one [[columns]] table (name, aligner)")

    rows = []
    for i, row in enumerate(data.get("rows") or []):
        where = f"rows[{i}]"
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            raise ConfigError(f"{where}: a row needs a `name`")
        rows.append(Row(row["name"], _parts({k: v for k, v in row.items() if k != "name"}, where, PART_KEYS)))
    if not rows:
        raise ConfigError("a grid needs at least one [[rows]] table")
    names = [r.name for r in rows if "{" not in r.name]  # templates ("Layer {layer}") repeat
    if len(set(names)) != len(names):
        raise ConfigError("row names must be unique")
    if len({c.name for c in columns}) != len(columns):
        raise ConfigError("column names must be unique")

    grid = Grid(str(data.get("title", name)), models, tuple(columns), tuple(rows), defaults, base_dir, name)
    for row in rows:
        for col in columns:
            spec = grid.cell(row, col)
            if spec.model not in models:
                raise ConfigError(f"row {row.name!r}: no model role {spec.model!r} in [models] "
                                  f"(roles: {', '.join(models)})")
            if spec.layer is not None and spec.aggregator.name != "single":
                raise ConfigError(f"row {row.name!r}: `layer` selects the single-layer aggregator, "
                                  f"but the aggregator is {spec.aggregator.name!r} (give it `layers_spec`)")
    return grid


def load_grid(path: str | Path) -> Grid:
    """Read and check a grid file (TOML)."""
    path = Path(path)
    return parse_grid(_load_toml(path), base_dir=path.resolve().parent, name=path.stem)
