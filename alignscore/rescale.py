"""Baseline rescaling (BERTScore): ``x' = (x - b) / (1 - b)`` per metric, and baseline files.

``b`` is the mean score of random sentence pairs for the model and layer
(:func:`alignscore.baseline.compute_baseline` computes it, for any model: ``alignscore baseline``).
Baseline files use bert_score's format: CSV text with header ``LAYER,P,R,F`` and one row per
layer, row 0 the embeddings. bert_score ships such files for the models it knows
(``bert_score/rescale_baseline/<lang>/<model>.tsv``, CSV despite the suffix); they are read as
they are, and :func:`bert_score_baseline` finds the one for a model in an installed bert_score
(``alignscore baseline --model M --bert-score LANG`` prints its path).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import torch

from .encoders.layers import canonical_name, known_model_of
from .errors import ConfigError, InputError
from .signature import content_digest

_COLUMNS = {"P": "precision", "R": "recall", "F": "f1"}


def _row_problem(layer: object, row: dict[str, float]) -> str | None:
    """Why ``row`` cannot rescale, or None: each ``b`` must be finite and below 1 (the rescaled
    score divides by ``1 - b``)."""
    if isinstance(layer, bool) or not isinstance(layer, int) or layer < 0:
        return f"the layer must be an integer >= 0 (0: the embeddings), not {layer!r}"
    for metric, b in row.items():
        if isinstance(b, bool) or not isinstance(b, (int, float)) or not math.isfinite(b):
            return f"layer {layer}: the {metric} baseline {b!r} is not a finite number"
        if b >= 1:
            return f"layer {layer}: the {metric} baseline {b!r} is not below 1 (rescaling divides by 1 - b)"
    return None


def _layer_list(layers: Sequence[int]) -> str:
    """``0..24`` for consecutive layers, else ``0, 2, 5``."""
    layers = sorted(layers)
    if layers and layers == list(range(layers[0], layers[-1] + 1)):
        return f"{layers[0]}..{layers[-1]}"
    return ", ".join(map(str, layers))


@dataclass(frozen=True)
class Baseline:
    """Per-layer baseline values for rescaling, each finite and below 1.

    Parameters
    ----------
    rows : dict of int to dict of str to float
        ``{layer: {"precision": b_P, "recall": b_R, "f1": b_F}}``; checked here
        (:class:`~alignscore.errors.ConfigError`).
    name : str
        Its file's name (or a label).
    source : str, optional
        The file it was read from (absolute), if any; not part of equality.

    Examples
    --------
    The signature names it by both name and values (:meth:`signature`):

    >>> toy = Baseline({9: {"precision": 0.83, "recall": 0.83, "f1": 0.83}}, name="toy")
    >>> toy.signature(), toy.csv()
    ('toy#d4f8da3ec8df', 'LAYER,P,R,F\\n9,0.83,0.83,0.83\\n')
    >>> Baseline({9: {"precision": 1.5, "recall": 0.8, "f1": 0.8}}, name="toy")
    Traceback (most recent call last):
    alignscore.errors.ConfigError: baseline toy: layer 9: the precision baseline 1.5 is not below 1 (rescaling divides by 1 - b)
    """

    rows: dict[int, dict[str, float]]
    name: str = "baseline"
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.rows, dict) or not self.rows:
            raise ConfigError(f"baseline {self.name}: rows must be a non-empty dict {{layer: {{metric: b}}}}")
        for layer, row in self.rows.items():
            problem = _row_problem(layer, row) if isinstance(row, dict) else f"layer {layer!r}: not a dict"
            if problem:
                raise ConfigError(f"baseline {self.name}: {problem}")

    @classmethod
    def read(cls, path: str | Path) -> "Baseline":
        """Read a bert_score baseline file: header ``LAYER,P,R,F``, then one row per layer, each
        taken by its LAYER column (an integer, once), with finite values below 1."""
        path = Path(path)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read baseline file: {exc}", str(path)) from None
        numbered = [(n, ln) for n, ln in enumerate(lines, start=1) if ln.strip()]
        if not numbered or [c.strip() for c in numbered[0][1].split(",")][1:] != ["P", "R", "F"]:
            raise InputError("not a baseline file: the header must be LAYER,P,R,F", str(path),
                             numbered[0][0] if numbered else None)
        rows: dict[int, dict[str, float]] = {}
        seen: dict[int, int] = {}
        for n, line in numbered[1:]:
            cells = [c.strip() for c in line.split(",")]
            try:
                if len(cells) != 4:
                    raise ValueError
                layer = int(cells[0])
                row = {name: float(c) for name, c in zip(_COLUMNS.values(), cells[1:])}
            except ValueError:
                raise InputError("a baseline row must be LAYER,P,R,F: an integer layer and three numbers",
                                 str(path), n) from None
            if layer in seen:
                raise InputError(f"layer {layer} has a second row (the first is on line {seen[layer]})", str(path), n)
            problem = _row_problem(layer, row)
            if problem:
                raise InputError(problem, str(path), n)
            rows[layer], seen[layer] = row, n
        if not rows:
            raise InputError("the baseline file has no rows", str(path))
        return cls(rows, name=path.name, source=str(path.resolve()))

    def csv(self) -> str:
        """The table as bert_score's baseline file: ``LAYER,P,R,F``, one row per layer."""
        lines = ["LAYER,P,R,F"]
        for layer in sorted(self.rows):
            r = self.rows[layer]
            lines.append(f"{layer}," + ",".join(repr(r[m]) for m in _COLUMNS.values()))
        return "\n".join(lines) + "\n"

    def digest(self) -> str:
        """12 hex digits of the SHA-256 of the table as :meth:`csv` writes it (of a file
        ``alignscore baseline`` wrote: its ``sha256sum``): the same values give the same digest
        whatever file, name or number format they came from."""
        return content_digest(self.csv().splitlines())

    def signature(self) -> str:
        """``<name>#<digest>``: what the signature's ``rescale`` field says.

        Examples
        --------
        >>> b = Baseline({4: {"precision": 0.8, "recall": 0.8, "f1": 0.8}}, name="minilm.csv")
        >>> b.signature()
        'minilm.csv#d8768b597d5e'
        >>> Baseline({4: {"precision": 0.8, "recall": 0.8, "f1": 0.79}}, name="minilm.csv").signature() != b.signature()
        True
        """
        return f"{self.name}#{self.digest()}"

    def write(self, path: str | Path) -> None:
        Path(path).write_text(self.csv(), encoding="utf-8")

    def values(self, layer: int) -> dict[str, float]:
        if layer not in self.rows:
            raise ConfigError(f"baseline {self.name} has no row for layer {layer} "
                              f"(it has layers {_layer_list(list(self.rows))})")
        return self.rows[layer]


def bert_score_baseline(model: str, lang: str) -> Path:
    """The baseline file bert_score ships for ``model`` and texts in ``lang``, in the installed
    bert_score package (``bert_score/rescale_baseline/<lang>/<model>.tsv``; bert_score is found,
    not imported). A local copy of a known model, or another spelling of its hub id
    (``FacebookAI/roberta-large``), finds the known model's file. The file is read as it is by
    ``--baseline`` (``baseline=``): bert_score's format is alignscore's.

    Parameters
    ----------
    model : str
        The model's hub id as bert_score names it (``roberta-large``,
        ``microsoft/deberta-xlarge-mnli``) or a local copy of one.
    lang : str
        bert_score's language folder: ``en``, ``en-sci``, ``de``, ``zh``...

    Returns
    -------
    Path
        The file.

    Raises
    ------
    ConfigError
        bert_score is not installed, or has no baseline for this model and language (the
        message lists those it has; ``alignscore baseline`` computes one for any model).

    Examples
    --------
    Where bert_score is installed (the file's row of layer 17)::

        path = bert_score_baseline("roberta-large", "en")
        Baseline.read(path).values(17)  # {'precision': 0.83150584, 'recall': 0.8314941, 'f1': 0.83122575}
    """
    import importlib.util

    found = importlib.util.find_spec("bert_score")
    places = list(found.submodule_search_locations or []) if found is not None else []
    if not places:
        raise ConfigError("bert_score is not installed (pip install bert-score): its baseline files come with it; "
                          "`alignscore baseline` computes a baseline for any model")
    root = (Path(places[0]) / "rescale_baseline").resolve()
    langs = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    if lang not in langs:
        raise ConfigError(f"bert_score has no baselines for the language {lang!r} (it has {', '.join(langs)})")
    names = [model, canonical_name(model)] + ([known_model_of(model) or ""] if Path(model).is_dir() else [])
    for name in dict.fromkeys(n for n in names if n):
        path = (root / lang / f"{name}.tsv").resolve()
        if path.is_file() and root / lang in path.parents:
            return path
    shipped = sorted(str(p.relative_to(root / lang))[:-len(".tsv")] for p in (root / lang).rglob("*.tsv"))
    raise ConfigError(f"bert_score has no baseline for {model!r} in {lang!r} (it has: {', '.join(shipped)}); "
                      "the `alignscore baseline` command computes one for any model")


def rescale(values: dict[str, torch.Tensor], baseline: dict[str, float]) -> dict[str, torch.Tensor]:
    """``(x - b) / (1 - b)`` for every metric the baseline has; others unchanged."""
    return {k: (v - baseline[k]) / (1 - baseline[k]) if k in baseline else v for k, v in values.items()}
