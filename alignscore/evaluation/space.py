"""Search spaces of compositions for ``alignscore tune``: TOML files of lists of choices.

A space is a product of lists, one list per key of the composition vocabulary
(:mod:`alignscore.composition`; every key but ``model``, which the command names), with optional
sub-spaces and exclusions::

    # shared by every sub-space: each list holds the choices of one key
    layer = [-4, -3, -2]                    # layers from the top fit any model depth
    weighting = ["none", "idf-S"]
    filters = [[], ["rm"]]                  # each choice is one list of filters ("rm" alone: ["rm"])

    [[subspace]]                            # a product of its own lists and the shared ones
    name = "greedy"
    aligner = ["greedy"]
    metric = ["precision", "recall", "f1"] # by output name, as ``score --format jsonl`` keys

    [[subspace]]
    name = "wmd"
    aligner = [{ name = "wmd", n_gram = 1 }, { name = "wmd", n_gram = 2 }]
    special_tokens = ["keep"]               # replaces the shared list for this sub-space

    [[exclude]]                             # drop every candidate whose keys equal all of these
    weighting = "none"
    sep = true

Without ``[[subspace]]`` tables the space is the product of the shared lists. A key a candidate
does not name takes the composition default (layer: the model's default layer). Candidates that
come out the same (same signature) are kept once.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from ..composition import SPEC_KEYS, Composition, build, check_spec, load_toml
from ..encoders.base import Encoder
from ..errors import ConfigError

SPACE_KEYS = tuple(k for k in SPEC_KEYS if k != "model")
DEFAULT_SPACE = "default.toml"


@dataclass(frozen=True)
class Candidate:
    """One composition of a space: its ``spec`` (the keys the space gives it), the ``subspace``
    it comes from, the built (unresolved) ``composition`` and ``where`` it is in the file."""

    spec: Mapping[str, Any]
    subspace: str
    composition: Composition
    where: str

    def resolve(self, encoder: Encoder) -> Composition:
        """The composition for ``encoder``'s model; a ConfigError names the file and sub-space."""
        try:
            return self.composition.resolve(encoder)
        except ConfigError as exc:
            raise ConfigError(f"{self.where}: {exc}") from None


@dataclass(frozen=True)
class Space:
    """A parsed space: the shared choices, the sub-spaces (each a name and its own choices) and
    the exclusions; ``source`` names the file in errors, ``base_dir`` is where files it names
    (stop words, idf corpora) are read from."""

    shared: Mapping[str, tuple[Any, ...]]
    subspaces: tuple[tuple[str, Mapping[str, tuple[Any, ...]]], ...]
    excludes: tuple[Mapping[str, Any], ...]
    source: str
    base_dir: Path

    def specs(self) -> list[tuple[str, dict[str, Any]]]:
        """Every ``(subspace, spec)`` of the product, exclusions left out, in file order."""
        out = []
        for name, own in self.subspaces or (("all", {}),):
            choices = {**self.shared, **own}
            keys = [k for k in SPACE_KEYS if k in choices]
            for values in itertools.product(*(choices[k] for k in keys)):
                spec = dict(zip(keys, values))
                if not any(all(k in spec and spec[k] == v for k, v in ex.items()) for ex in self.excludes):
                    out.append((name, spec))
        return out

    def size(self) -> int:
        """How many specs the product holds (before exclusions and duplicates)."""
        total = 0
        for _, own in self.subspaces or (("all", {}),):
            n = 1
            for values in {**self.shared, **own}.values():
                n *= len(values)
            total += n
        return total

    def candidates(self, limit: int | None = None) -> list[Candidate]:
        """Every candidate built (each spec checked and its parts constructed; nothing encoded).

        Raises:
            ConfigError: more than ``limit`` specs, or a spec that does not build (the message
                names the file, the sub-space and the key).
        """
        size = self.size()
        if limit is not None and size > limit:
            raise ConfigError(f"{self.source}: the space holds {size} compositions, more than "
                              f"--max-compositions {limit}; narrow its lists or raise the limit")
        out = []
        for name, spec in self.specs():
            where = f"{self.source} [subspace {name}]" if self.subspaces else self.source
            try:
                composition = build(spec, self.base_dir, where=where)
            except ConfigError as exc:
                raise (exc if where in str(exc) else ConfigError(f"{where}: {exc}")) from None
            out.append(Candidate(spec, name, composition, where))
        if not out:
            raise ConfigError(f"{self.source}: every composition of the space is excluded")
        return out


def _choices(table: Mapping[str, Any], where: str) -> dict[str, tuple[Any, ...]]:
    """The lists of choices of a table, each choice checked as a value of its key."""
    out = {}
    for key, values in table.items():
        if key == "model":
            raise ConfigError(f"{where}: `model` is not searched here: give the model with --model")
        if key not in SPACE_KEYS:
            raise ConfigError(f"{where}: unknown key {key!r}; a space lists choices of: {', '.join(SPACE_KEYS)}")
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{where}.{key}: expected a non-empty list of choices, e.g. {key} = [...], "
                              f"not {values!r}")
        for value in values:
            check_spec({key: value}, f"{where}.{key}")
        out[key] = tuple(values)
    return out


def parse_space(data: Mapping[str, Any], source: str = "space", base_dir: Path = Path(".")) -> Space:
    """A :class:`Space` from parsed TOML (every key and value checked; nothing built yet)."""
    shared = _choices({k: v for k, v in data.items() if k not in ("subspace", "exclude")}, source)
    subs = data.get("subspace", [])
    if not isinstance(subs, list) or not all(isinstance(s, dict) for s in subs):
        raise ConfigError(f"{source}.subspace: expected [[subspace]] tables")
    subspaces = []
    for i, sub in enumerate(subs):
        name = sub.get("name", f"#{i + 1}")
        if not isinstance(name, str):
            raise ConfigError(f"{source}.subspace[{i}].name: expected a string, not {name!r}")
        own = _choices({k: v for k, v in sub.items() if k != "name"}, f"{source}.subspace[{i}] ({name})")
        subspaces.append((name, own))
    if len({n for n, _ in subspaces}) != len(subspaces):
        raise ConfigError(f"{source}: sub-space names must be unique")
    excludes = data.get("exclude", [])
    if not isinstance(excludes, list) or not all(isinstance(e, dict) and e for e in excludes):
        raise ConfigError(f"{source}.exclude: expected [[exclude]] tables of key = value")
    for i, ex in enumerate(excludes):
        unknown = set(ex) - set(SPACE_KEYS)
        if unknown:
            raise ConfigError(f"{source}.exclude[{i}]: unknown key {sorted(unknown)[0]!r}")
    return Space(shared, tuple(subspaces), tuple(excludes), source, base_dir)


def load_space(path: str | Path | None = None) -> Space:
    """Read a space file (TOML); ``None``: the packaged default space."""
    if path is None:
        ref = resources.files("alignscore.evaluation") / "spaces" / DEFAULT_SPACE
        with resources.as_file(ref) as p:
            return parse_space(load_toml(Path(p)), f"default space ({DEFAULT_SPACE})", Path("."))
    path = Path(path)
    return parse_space(load_toml(path), str(path), path.resolve().parent)


__all__ = ["Candidate", "DEFAULT_SPACE", "SPACE_KEYS", "Space", "load_space", "parse_space"]
