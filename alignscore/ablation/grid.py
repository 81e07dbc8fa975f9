"""Ablation grids: a table of metric compositions, read from TOML (format: ``docs/ablation.md``).

A grid has named models, columns (an aligner and the score it reports) and rows (the other
parts). A cell is a row composed with a column: every part is named by its registry name
(``AGGREGATORS``, ``FILTERS``, ``WEIGHTINGS``, ``ALIGNERS``), so new grids need no code.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from ..aligners import ALIGNERS
from ..composition import PartSpec, check_spec, load_toml, part_spec
from ..errors import ConfigError

# Keys that compose a cell's parts; they may appear in [defaults], in a column or in a row.
PART_KEYS = ("model", "aggregator", "layer", "weighting", "sep", "filters", "special_tokens")
MNLI_ROLE = "mnli"
STATIC_ROLE = "static"


@dataclass(frozen=True)
class ModelSpec:
    """A model role of the grid (``[models.<key>]``): a hub id or directory, and the layer the
    single-layer rows of this role use (``None``: the model's tuned default layer)."""

    key: str
    model: str
    layer: int | None = None


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

    def spec(self, model: str, layer: int | None) -> dict[str, Any]:
        """The composition spec of this cell (:mod:`alignscore.composition`) with the model of its
        role and the single layer that applies when the row names none (the role's)."""
        single_layer = self.layer if self.layer is not None else dict(self.aggregator.args).get("layer", layer)
        return {"model": model, "aggregator": self.aggregator,
                "layer": single_layer if self.aggregator.name == "single" else None,
                "special_tokens": self.special_tokens, "filters": self.filters, "weighting": self.weighting,
                "sep": self.sep, "aligner": self.aligner, "metric": self.metric}


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
                    mnli_model: str | None = None, static_model: str | None = None) -> "Grid":
        """The grid with its models overridden: ``model`` replaces every role but ``mnli`` and
        ``static``, ``mnli_model`` the ``mnli`` role, ``static_model`` the ``static`` role (a
        static table: a model2vec folder or a word2vec file), ``layer`` the single layer of every
        role but ``static`` (a static table has no layers)."""
        models = {}
        for key, spec in self.models.items():
            name = {MNLI_ROLE: mnli_model, STATIC_ROLE: static_model}.get(key, model) or spec.model
            models[key] = ModelSpec(key, name, None if key == STATIC_ROLE else layer if layer is not None else
                                    (spec.layer if name == spec.model else None))
        return replace(self, models=models)


def _parts(table: Mapping[str, Any], where: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    """The part keys of a row, column or ``[defaults]``, checked with the composition vocabulary
    (``model`` names a model role here)."""
    unknown = set(table) - set(allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r}; a part is one of: {', '.join(allowed)}")
    model = table.get("model")
    if model is not None and not isinstance(model, str):
        raise ConfigError(f"{where}.model: expected a model role name")
    out = check_spec({k: v for k, v in table.items() if k != "model"}, where)
    if "weighting" in out:
        out["weighting"] = out["weighting"].name if not out["weighting"].args else out["weighting"]
    if "filters" in out:
        out["filters"] = list(out["filters"])
    if model is not None:
        out["model"] = model
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
        aligner = part_spec(col["aligner"], f"{where}.aligner", ALIGNERS)
        if args:
            aligner = part_spec({"name": aligner.name, **aligner.kwargs, **args}, f"{where}.aligner", ALIGNERS)
        metric = col.get("metric")
        if metric is not None:  # an aligner's metrics may depend on its settings: ask an instance
            metrics = ALIGNERS.build(aligner.name, **aligner.kwargs).metrics
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
    data = load_toml(path)
    try:
        return parse_grid(data, base_dir=path.resolve().parent, name=path.stem)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
