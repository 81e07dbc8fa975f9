"""A metric from several: a weighted sum of standardised runs (DESIGN.md, "Combinations").

``score = sum_i w_i * (s_i - m_i) / d_i``: ``s_i`` the primary score of part ``i`` (an ordinary
run: any model, aggregator, weighting, aligner), ``m_i`` and ``d_i`` its location and scale fixed
from training data (never from the batch being scored, so a pair's score does not depend on the
others), ``w_i >= 0`` summing to 1. Each part is compiled by the one compiler; parts whose
encoder specs are equal share one encoder and one encoding (:func:`~alignscore.config.plan_runs`,
:func:`~alignscore.scorer.score_together`).

A combination's run file holds its parts as an array of tables, each an ordinary run mapping
(the keys of a run file, a ``preset`` too) with the part's ``weight``, ``location`` and ``scale``::

    [[parts]]
    weight = 0.6
    location = 0.93
    scale = 0.021
    model = "all-MiniLM-L6-v2"
    layer = 4

    [[parts]]
    weight = 0.4
    location = 0.51
    scale = 0.034
    preset = "moverscore-v2"
    model = "all-MiniLM-L6-v2"
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import torch

from .config import Compiled, Provenance, RunSpec, compile_labelled, plan_runs, sources_of
from .config.sources import CONFIG, KEYWORDS, Naming, Source, flat, key_label, keyword_label, make_source
from .errors import ConfigError
from .scorer import Scorer, score_together
from .scores import Scores, check_sides
from .signature import Signature
from .textio import load_toml, toml_text

#: the key of a run file that makes it a combination, and the keys of a part that are not run options
PARTS = "parts"
WEIGHT, LOCATION, SCALE = "weight", "location", "scale"
OWN = (WEIGHT, LOCATION, SCALE)
#: the most parts of a combination: each part's scores of a batch are kept until they are summed, and
#: the engine keeps every part's similarities of a batch at once (one encoding shared)
MAX_PARTS = 16
#: how far the weights' sum may be from 1 (a file's decimals)
SUM_TOLERANCE = 1e-6
#: the metric a combination's scores are under; each part's own score is under ``part<i>``
METRIC = "combined"


@dataclass(frozen=True)
class Part:
    """One part of a :class:`Combination`: a run, its weight, and its fixed standardisation.

    Attributes
    ----------
    spec : the run (compiled by the one compiler).
    weight : its weight (>= 0; a combination's weights sum to 1).
    location, scale : ``m`` and ``d`` of ``(s - m) / d`` (``d > 0``), fixed from training data.
    provenance : how its options were given (errors name them so).
    label : how the part is named in errors (``best.toml: parts[1]``, ``parts[1]``).
    """

    spec: RunSpec
    weight: float = 1.0
    location: float = 0.0
    scale: float = 1.0
    provenance: Provenance = field(default_factory=Provenance)
    label: str = ""


@dataclass(frozen=True)
class Combination:
    """A run whose parts are runs: ``score = sum_i w_i (s_i - m_i) / d_i``.

    Parameters
    ----------
    parts : the parts (1 to :data:`MAX_PARTS`).

    Examples
    --------
    >>> combo = Combination.of([{"model": "all-MiniLM-L6-v2", "layer": 4},
    ...                         {"preset": "moverscore-v2", "model": "all-MiniLM-L6-v2"}],
    ...                        weights=[0.6, 0.4], locations=[0.9, 0.5], scales=[0.02, 0.03])
    >>> [p.spec.composition.aligner.name for p in combo.parts], [p.weight for p in combo.parts]
    (['greedy', 'wmd'], [0.6, 0.4])
    >>> Combination.of([{"layer": 4}], weights=[float("nan")])
    Traceback (most recent call last):
    ...
    alignscore.errors.ConfigError: combine(): parts[0].weight: expected a finite number >= 0, not nan
    """

    parts: tuple[Part, ...]

    def __post_init__(self) -> None:
        if not self.parts:
            raise ConfigError("a combination needs at least one part")
        if len(self.parts) > MAX_PARTS:
            raise ConfigError(f"a combination of {len(self.parts)} parts: at most {MAX_PARTS} (every part's "
                              "similarities of a batch are kept at once)")
        for i, p in enumerate(self.parts):
            name = p.label or f"parts[{i}]"
            _number(p.weight, f"{name}.{WEIGHT}", minimum=0.0)
            _number(p.location, f"{name}.{LOCATION}")
            _number(p.scale, f"{name}.{SCALE}", minimum=0.0, open_=True)
        total = sum(p.weight for p in self.parts)
        if abs(total - 1.0) > SUM_TOLERANCE:
            raise ConfigError(f"the parts' weights sum to {total!r}, not 1 (each >= 0, summing to 1)")

    def files(self) -> list[str]:
        """The files its parts read (as :meth:`RunSpec.files <alignscore.config.spec.RunSpec.files>`): no output's."""
        return [f for p in self.parts for f in p.spec.files()]

    # -- making one -------------------------------------------------------------------------
    @classmethod
    def of(cls, parts: Sequence[Mapping[str, Any] | RunSpec | Compiled], weights: Sequence[float] | None = None,
           locations: Sequence[float] | None = None, scales: Sequence[float] | None = None, *,
           where: str = "combine()", **options: Any) -> "Combination":
        """A combination from Python: each part a mapping of options (as :func:`alignscore.score`
        takes them), a :class:`RunSpec` or a compiled run; ``options`` apply to every part (above
        its own); equal weights, location 0 and scale 1 unless given.

        Raises
        ------
        ConfigError
            Naming the part (``combine(): parts[1]: layer=: ...``), before any model is loaded.
        """
        n = len(parts)
        try:
            own = [_column(weights, n, WEIGHT, 1.0 / max(n, 1)), _column(locations, n, LOCATION, 0.0),
                   _column(scales, n, SCALE, 1.0)]
            above = sources_of(options) if options else []
            made = []
            for i, part in enumerate(parts):
                label = f"parts[{i}]"
                if isinstance(part, (RunSpec, Compiled)):
                    if options:
                        raise ConfigError(f"{label}: a compiled run takes no options beside it; give a mapping")
                    spec, provenance = part if isinstance(part, Compiled) else (part, Provenance())
                else:
                    if not isinstance(part, Mapping):
                        raise ConfigError(f"{label}: a mapping of options or a RunSpec, not {part!r}")
                    named = flat([make_source(part, "keywords", lambda p, i=i: f"parts[{i}].{keyword_label(p)}",
                                              naming=KEYWORDS)])
                    spec, provenance = _compiled(label, [*named, *above])
                made.append(Part(spec, own[0][i], own[1][i], own[2][i], provenance, label))
            return cls(tuple(made))
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}", exc.options) from None

    @classmethod
    def read(cls, path: str | Path, overrides: Sequence[Source] = ()) -> "Combination":
        """The combination a run file holds (:func:`is_combination`); ``overrides`` (the command
        line's options, compiled) apply to every part, above the file.

        Raises
        ------
        ConfigError, InputError
            Naming the file, the line and the part (``best.toml:7: parts[1].layer: ...``).
        """
        data, lines = load_toml(path)
        label = key_label(str(path), lines)

        extra = [k for k in data if k != PARTS]
        if extra:
            raise ConfigError(f"{label((extra[0],))}: a combination's file holds its [[{PARTS}]] only (options for "
                              "every part go in each part, or on the command line)")
        parts = data[PARTS]
        if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
            raise ConfigError(f"{label((PARTS,))}: an array of tables ([[{PARTS}]]), one per part")
        if not parts:
            raise ConfigError(f"{label((PARTS,))}: a combination needs at least one part")
        made = []
        for i, table in enumerate(parts):
            where = lambda p, i=i: label((PARTS, i, *p))  # noqa: E731
            values = []
            for key, default in zip(OWN, (None, 0.0, 1.0)):
                if key not in table and default is None:
                    raise ConfigError(f"{where(())}: no {key} (each part has a {WEIGHT}, and its {LOCATION} and "
                                      f"{SCALE} from the data it was fitted on)")
                values.append(_number(table.get(key, default), where((key,)), minimum=0.0 if key != LOCATION else None,
                                      open_=key == SCALE))
            mapping = {k: v for k, v in table.items() if k not in OWN}
            if not mapping:
                raise ConfigError(f"{where(())}: a part names its run (a model, a preset, its settings)")
            source = make_source(mapping, "file", where, Path(path).resolve().parent)
            spec, provenance = _compiled(f"{PARTS}[{i}]", [*source.layers(), *overrides], where(()))
            made.append(Part(spec, *values, provenance=provenance, label=where(())))  # type: ignore[misc]
        return cls(tuple(made))

    # -- writing it back ----------------------------------------------------------------------
    def toml(self, comment: str | None = None) -> str:
        """The combination as a run file: each part's whole run (:meth:`RunSpec.to_mapping`) with
        its weight, location and scale (written exactly: ``repr`` of each float)."""
        parts = [{WEIGHT: p.weight, LOCATION: p.location, SCALE: p.scale, **p.spec.to_mapping()} for p in self.parts]
        return toml_text({PARTS: parts}, comment)

    def build(self, against_sources: bool = False) -> "CombinedScorer":
        """Its scorer: every part built and checked against its model (configuration and
        tokenizer, not its weights), parts of equal encoder specs sharing one encoder; every
        part's error collected (:func:`~alignscore.config.plan_runs`) before any is raised."""
        plan = plan_runs([Compiled(p.spec, p.provenance) for p in self.parts], sources=against_sources)
        return CombinedScorer(self, plan.scorers())


@dataclass
class CombinedScorer:
    """A :class:`Combination` ready to score: one :class:`Scorer` per part (those of one model
    share its encoder, so each text is encoded once per model).

    Examples
    --------
    >>> from alignscore.testing import WordEncoder
    >>> encoder = WordEncoder()
    >>> combo = Combination((Part(RunSpec(), 1.0),))
    >>> scorer = CombinedScorer(combo, [Scorer(encoder)])
    >>> s = scorer.score(["the cat sat"], ["the cat"])
    >>> float(s.combined[0]) == float(s.part0[0])   # one part, location 0, scale 1: the part itself
    True
    """

    combination: Combination
    scorers: list[Scorer]

    def part_scores(self, cands: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]] | None = None, *,
                    sources: Sequence[str] | None = None) -> tuple[list[Scores], torch.Tensor]:
        """Each part's :class:`Scores` and its primary scores as ``[parts, N]`` float64."""
        cands, groups = check_sides(cands, refs, sources)
        against = sources is not None
        found = score_together(self.scorers, cands, [g[0] for g in groups] if against else groups, against)
        primary = torch.stack([s[sc.resolved().metric].double() for s, sc in zip(found, self.scorers)])
        return found, primary

    def combine(self, primary: torch.Tensor) -> torch.Tensor:
        """``sum_i w_i (s_i - m_i) / d_i`` of ``[parts, N]`` primary scores, float64."""
        out = torch.zeros(primary.shape[1], dtype=torch.float64)
        for p, s in zip(self.combination.parts, primary):
            out += p.weight * ((s - p.location) / p.scale)
        return out

    def score(self, cands: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]] | None = None, *,
              sources: Sequence[str] | None = None) -> Scores:
        """The combination's score of each candidate (``combined``), then each part's own
        primary score (``part0``, ``part1``, ...), as :meth:`Scorer.score` takes its texts."""
        found, _ = self.part_scores(cands, refs, sources=sources)
        return self.scores_of(found, sources is not None)

    def scores_of(self, found: Sequence[Scores], against_sources: bool = False) -> Scores:
        """The combination's :class:`Scores` from each part's (scored together by the engine,
        :func:`~alignscore.scorer.score_together`, here or by a command comparing it with
        other runs)."""
        primary = torch.stack([s[sc.resolved().metric].double() for s, sc in zip(found, self.scorers)])
        metrics = dict(zip(self.metrics, [self.combine(primary), *primary.float()]))
        empty = torch.stack([s.empty for s in found]).any(dim=0)
        return Scores(metrics, found[0].best_reference, empty, self.signature(against_sources))

    @property
    def metrics(self) -> tuple[str, ...]:
        """The columns of its scores: ``combined``, then each part's primary score."""
        return (METRIC, *(f"part{i}" for i in range(len(self.scorers))))

    def signature(self, sources: bool = False) -> Signature:
        """The combination's fields (its formula and size), then per part its weight, location,
        scale and whole signature (``|`` written ``;`` inside a part)."""
        fields = {"combination": f"sum w(s-m)/d of {len(self.scorers)}"}
        for i, (p, s) in enumerate(zip(self.combination.parts, self.scorers)):
            fields[f"part{i}"] = (f"w={p.weight!r},m={p.location!r},d={p.scale!r},"
                                  + s.signature(sources).format().replace("|", ";"))
        return Signature.of(fields)


def scorers_of(scorer: Scorer | CombinedScorer) -> list[Scorer]:
    """The scorers of a run: itself, or a combination's parts (for the commands that take either)."""
    return scorer.scorers if isinstance(scorer, CombinedScorer) else [scorer]


def build_runs(runs: Sequence[RunSpec | Compiled | Combination]) -> list[Scorer | CombinedScorer]:
    """Each run's scorer, a combination's of its parts': every run built together
    (:func:`~alignscore.config.plan_runs`), so that runs of one model share one encoder, for the
    commands that take either (diff, compare)."""
    flat = [[Compiled(p.spec, p.provenance) for p in run.parts] if isinstance(run, Combination) else [run]
            for run in runs]
    scorers = plan_runs([r for side in flat for r in side]).scorers()
    out: list[Scorer | CombinedScorer] = []
    for run, side in zip(runs, flat):
        mine, scorers = scorers[:len(side)], scorers[len(side):]
        out.append(CombinedScorer(run, mine) if isinstance(run, Combination) else mine[0])
    return out


def score_runs(scorers: Sequence[Scorer | CombinedScorer], cands: Sequence[str],
               groups: Sequence[Sequence[str]]) -> list[tuple[Scores, str]]:
    """Each run's :class:`Scores` of the same pairs and the metric it ranks by (a combination's
    ``combined``), every run and part scored in one engine call
    (:func:`~alignscore.scorer.score_together`: each text encoded once per model)."""
    sides = [scorers_of(s) for s in scorers]
    found = score_together([p for side in sides for p in side], cands, groups)
    out = []
    for scorer, side in zip(scorers, sides):
        mine, found = found[:len(side)], found[len(side):]
        if isinstance(scorer, CombinedScorer):
            out.append((scorer.scores_of(mine), METRIC))
        else:
            out.append((mine[0], scorer.composition.metric))
    return out


def is_combination(path: str | Path) -> bool:
    """Whether the run file ``path`` holds a combination (a ``[[parts]]`` array); False when it
    cannot be read (the compiler then says why)."""
    try:
        data, _ = load_toml(path)
    except Exception:  # noqa: BLE001 - any unreadable file is the compiler's to report
        return False
    return PARTS in data


def combination_in(options: Mapping[str, Any], naming: Naming = KEYWORDS, where: str = "") -> Combination | None:
    """The combination the run file ``options`` names as ``config`` holds, the other options
    applying to every part; None where ``config`` names no combination (an ordinary run).

    Examples
    --------
    >>> combination_in({"layer": 4}) is None
    True
    """
    path = options.get(CONFIG)
    if path is None or not is_combination(path):
        return None
    rest = {k: v for k, v in options.items() if k != CONFIG}
    try:
        return Combination.read(path, sources_of(rest, naming) if rest else [])
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}" if where else str(exc), exc.options) from None


def combine(parts: Sequence[Mapping[str, Any] | RunSpec | Compiled], weights: Sequence[float] | None = None,
            locations: Sequence[float] | None = None, scales: Sequence[float] | None = None,
            **options: Any) -> CombinedScorer:
    """A combination's scorer from Python (:meth:`Combination.of`, then :meth:`Combination.build`),
    as the preset functions give a run's.

    Examples
    --------
    >>> scorer = combine([{"layer": 4}, {"aligner": "wmd"}], model="all-MiniLM-L6-v2")
    >>> scorer.scorers[0].encoder is scorer.scorers[1].encoder   # one model: one encoding
    True
    """
    return Combination.of(parts, weights, locations, scales, **options).build()


def _compiled(tag: str, sources: Sequence[Source], label: str | None = None) -> Compiled:
    """The part's run; an error that does not name the part (an option it did not give) is
    prefixed with ``label`` (default ``tag``)."""
    try:
        return compile_labelled(sources)
    except ConfigError as exc:
        raise ConfigError(str(exc) if tag in str(exc) else f"{label or tag}: {exc}", exc.options) from None


def _column(values: Sequence[float] | None, n: int, name: str, default: float) -> list[float]:
    if values is None:
        return [default] * n
    values = list(values)
    if len(values) != n:
        raise ConfigError(f"{name}s: {len(values)} for {n} parts")
    return [_number(v, f"parts[{i}].{name}", minimum=0.0 if name != LOCATION else None, open_=name == SCALE)
            for i, v in enumerate(values)]


def _number(value: Any, label: str, minimum: float | None = None, open_: bool = False) -> float:
    """``value`` as a finite float (``> minimum`` where ``open_``, else ``>=``), or an error naming ``label``."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and (
        minimum is None or (value > minimum if open_ else value >= minimum))
    if not ok:
        bound = "" if minimum is None else f" {'>' if open_ else '>='} {minimum:g}"
        raise ConfigError(f"{label}: expected a finite number{bound}, not {value!r}")
    return float(value)


__all__ = ["Combination", "CombinedScorer", "METRIC", "Part", "combination_in", "combine", "is_combination",
           "scorers_of"]
