"""Learning a cross-lingual remapping (:class:`alignscore.remap.Remapping`) from parallel
sentences (``alignscore remap``).

Each word's vector at a layer is the mean of its sub-token vectors (words as the encoder's
tokenizer splits them, special tokens left out); in each sentence pair, a source word and a
target word are paired where each is the other's most similar word by cosine (mutual best
matches in the encoder's own space: the reference pairs words with fast_align instead). The
paired vectors, source rows ``X`` and target rows ``Z``, give the weights of each method
(:data:`alignscore.remap.METHODS`; the formulas are in :mod:`alignscore.remap`).

Every method needs at least as many word pairs as the vectors' width (:func:`pairs_needed`): the
least-squares map is not determined by fewer (``X^T X`` is singular); the orthogonal one is not
either (``Z^T X`` has rank below the width, and its SVD leaves the map free on the rest of the
space); and UMD's direction is the leading one of the ``[D, D]`` covariance of ``X - Z``, which
fewer rows than ``D`` estimate with a rank below ``D``, so its leading direction is only one of
the few the pairs happen to span. Two pairs learned a "map" taking their mean cosine from .40 to
.999: a fit to the pairs, not a remapping. More parallel text: several files per side, or folders.
"""

from __future__ import annotations

import os
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import torch

from ..errors import ConfigError, InputError
from ..remap import METHODS, Remapping, model_digest, save_remapping
from ..settings import Options, SettingError, setting

if TYPE_CHECKING:
    from ..encoders.base import Encoder
    from ..runtime import Runtime


def word_vectors(states: torch.Tensor, word: torch.Tensor) -> torch.Tensor:
    """``[W, D]`` float64: the mean of the token vectors ``states [T, D]`` of each word, ``word
    [T]`` giving each token's word (0..W-1; -1 for tokens of no word, left out).

    >>> states = torch.tensor([[1.0, 0.0], [3.0, 2.0], [5.0, 5.0], [9.0, 9.0]])
    >>> word_vectors(states, torch.tensor([-1, 0, 0, 1])).tolist()
    [[4.0, 3.5], [9.0, 9.0]]
    """
    keep = word >= 0
    n = int(word[keep].max()) + 1 if bool(keep.any()) else 0
    sums = torch.zeros(n, states.shape[-1], dtype=torch.float64, device=states.device)
    sums.index_add_(0, word[keep], states[keep].double())
    counts = torch.bincount(word[keep], minlength=n).clamp(min=1).to(sums)
    return sums / counts.unsqueeze(1)


def mutual_best(x: torch.Tensor, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices ``(i, j)`` of the rows of ``x [n, D]`` and ``z [m, D]`` that are each other's most
    similar row by cosine (ties: the first row); empty where either has no rows.

    >>> x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1]])
    >>> z = torch.tensor([[0.0, 2.0], [1.0, 0.05]])
    >>> [t.tolist() for t in mutual_best(x, z)]
    [[0, 1], [1, 0]]
    """
    if len(x) == 0 or len(z) == 0:
        empty = torch.empty(0, dtype=torch.long)
        return empty, empty
    sim = _unit(x) @ _unit(z).T
    best_z, best_x = sim.argmax(1), sim.argmax(0)
    i = torch.nonzero(best_x[best_z] == torch.arange(len(x), device=x.device)).squeeze(1)
    return i, best_z[i]


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp(min=1e-12)


def learn_clp(x: torch.Tensor, z: torch.Tensor, orthogonal: bool = False) -> torch.Tensor:
    """``W [D, D]`` (float64) with ``x W ~ z`` for paired rows ``x, z [N, D]``: least squares, or,
    ``orthogonal``, the orthogonal ``W = V U^T`` from the SVD ``z^T x = U S V^T``.

    >>> x = torch.eye(3, dtype=torch.float64)
    >>> bool(torch.allclose(learn_clp(x, 2 * x), 2 * x))
    True
    """
    x, z = x.double().cpu(), z.double().cpu()
    if orthogonal:
        u, _, vh = torch.linalg.svd(z.T @ x)
        return vh.T @ u.T
    return torch.linalg.lstsq(x, z, driver="gelsd").solution


def learn_umd(x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """``b [D]`` (float64, unit length): the first right singular vector of ``x - z``, its sign
    chosen so that its largest coordinate in absolute value is positive (either sign removes
    the same component).

    >>> x = torch.tensor([[1.0, 0.0], [2.0, 1.0]]); z = torch.tensor([[1.0, 3.0], [2.0, -2.0]])
    >>> learn_umd(x, z).round(decimals=6).tolist()
    [0.0, 1.0]
    """
    _, _, vh = torch.linalg.svd(x.double().cpu() - z.double().cpu(), full_matrices=False)
    b = vh[0]
    return b * torch.sign(b[b.abs().argmax()])


def mean_cosine(x: torch.Tensor, z: torch.Tensor) -> float:
    """The mean cosine of the paired rows of ``x`` and ``z`` (0 where there are none)."""
    if len(x) == 0:
        return 0.0
    return float((_unit(x.double()) * _unit(z.double())).sum(-1).mean())


def paired_words(encoder: Encoder, sources: Sequence[str], targets: Sequence[str], layer: int,
                 runtime: Runtime | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The word vectors ``(X, Z)`` (float64, ``[N, D]`` each) of the word pairs of the parallel
    sentences ``sources[i]``/``targets[i]`` at ``layer``: each word the mean of its tokens'
    vectors, pairs the mutual best matches by cosine within each sentence pair."""
    from ..runtime import Runtime, embed
    from ..tokens import TokenTable

    if len(sources) != len(targets):
        raise ConfigError(f"{len(sources)} source sentences but {len(targets)} target sentences: they must be parallel")
    table = TokenTable.from_tokenized(encoder.tokenize(list(sources) + list(targets)))
    states = embed(encoder, table, [layer], lambda h: h[0], runtime or Runtime(), desc="encoding").cpu()
    starts = table.word_start & ~table.special
    word = torch.cumsum(starts.long(), 0) - 1  # one running word count over every text
    word = torch.where(table.special | (word < 0), torch.full_like(word, -1), word)
    vectors = word_vectors(states, word)
    per_text = torch.bincount(table.text_index()[starts], minlength=len(table))
    bounds = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(per_text, 0)]).tolist()
    n = len(sources)
    xs, zs = [], []
    for k in range(n):
        src = vectors[bounds[k]:bounds[k + 1]]
        tgt = vectors[bounds[n + k]:bounds[n + k + 1]]
        i, j = mutual_best(src, tgt)
        xs.append(src[i])
        zs.append(tgt[j])
    width = vectors.shape[-1] if vectors.dim() == 2 else 0
    cat = (lambda rows: torch.cat(rows) if rows else torch.empty(0, width, dtype=torch.float64))
    return cat(xs), cat(zs)


def pairs_needed(method: str, width: int) -> int:
    """The fewest word pairs ``method`` learns a remapping of ``width``-dimensional vectors from:
    the width, for every method (the module's docstring says why).

    >>> pairs_needed("umd", 384)
    384
    """
    if method not in METHODS:
        raise ConfigError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    return width


def learn_weights(method: str, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """The weights of ``method`` learned from the paired rows ``x ~ z``.

    Raises
    ------
    ConfigError
        Fewer pairs than :func:`pairs_needed`, saying how many were found and how many it needs.
    """
    need = pairs_needed(method, x.shape[-1])
    if len(x) < need:
        raise ConfigError(f"{len(x)} word pairs found in the parallel sentences; {method} needs at least {need} "
                          "(the vectors' width): give more parallel sentences (several files or a folder per side)")
    if method == "umd":
        return learn_umd(x, z)
    return learn_clp(x, z, orthogonal=method == "clp-orthogonal")


def learn(encoder: Encoder, sources: Sequence[str], targets: Sequence[str], layer: int = 8,
          method: str = "clp-orthogonal", lang: str | None = None,
          runtime: Runtime | None = None) -> tuple[Remapping, dict[str, float]]:
    """A :class:`Remapping` of ``encoder``'s ``layer`` learned from the parallel sentences, and
    ``{"pairs", "cosine_before", "cosine_after"}``: how many word pairs, and their mean cosine
    before and after the remapping of the source side."""
    if method not in METHODS:
        raise ConfigError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    x, z = paired_words(encoder, sources, targets, layer, runtime)
    remapping = Remapping(method, learn_weights(method, x, z), encoder.name, model_digest(encoder), layer, lang, len(x))
    stats = {"pairs": float(len(x)), "cosine_before": mean_cosine(x, z),
             "cosine_after": mean_cosine(remapping.apply(x), z)}
    return remapping, stats


def parallel_files(src: Sequence[str], tgt: Sequence[str]) -> list[tuple[str, str]]:
    """The pairs of parallel files that ``src`` and ``tgt`` name, in order: each a file, or a folder
    standing for its files (not hidden, sorted by name). Raises :class:`InputError` where the two
    sides name different numbers of files, or one file on both sides.

    >>> parallel_files(["a.de", "b.de"], ["a.en", "b.en"])
    [('a.de', 'a.en'), ('b.de', 'b.en')]
    """
    def files(paths: Sequence[str]) -> list[str]:
        out = []
        for path in paths:
            folder = Path(path)
            if folder.is_dir():
                found = sorted(str(p) for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
                if not found:
                    raise InputError("a folder with no files: nothing to learn from", str(path))
                out += found
            else:
                out.append(str(path))
        return out

    sources, targets = files(src), files(tgt)
    if len(sources) != len(targets):
        raise InputError(f"{len(sources)} source files but {len(targets)} target files: give one target file "
                         "per source file, in the same order (a folder stands for its files sorted by name)")
    for a, b in zip(sources, targets):
        if Path(a).resolve() == Path(b).resolve():
            raise InputError("given as both the source and the target side: give the sentences and their "
                             "translations in two files", a)
    return list(zip(sources, targets))


@dataclass(frozen=True)
class RemapOptions(Options):
    """The options of learning a remapping (``alignscore remap``'s flags, :func:`learn_files`'s
    keywords); the encoder and the runtime are a run's options.

    Examples
    --------
    >>> RemapOptions.given({"src": ["de.txt"], "tgt": ["en.txt"], "output": "de.remap", "method": "umd"}).src
    ('de.txt',)
    >>> RemapOptions.given({"src": ["de.txt"], "tgt": ["en.txt"], "output": "de.remap", "layer": -1})
    Traceback (most recent call last):
    alignscore.errors.ConfigError: layer=: expected an integer >= 0, not -1
    """

    src: tuple[str, ...] = setting(MISSING, metavar="PATH", help=(
        "Source-language sentences, one per line (the side the remapping moves): a file or a folder (its files, "
        "sorted by name); repeat it for more."))
    tgt: tuple[str, ...] = setting(MISSING, metavar="PATH", help=(
        "Their translations in the target language, line by line: as many files as --src, in the same order (a "
        "folder: its files, sorted by name)."))
    output: str | os.PathLike = setting(MISSING, short="-o", metavar="FILE", help=(  # type: ignore[type-arg]
        "The remapping file to write (safetensors with a checksum)."))
    layer: int = setting(8, ge=0, help="The encoder layer whose vectors are remapped (XMoverScore: 8 of mBERT).")
    method: str = setting("clp-orthogonal", choices=METHODS, help=(
        "clp: least-squares linear map; clp-orthogonal: the orthogonal one (Procrustes); umd: remove the first "
        "singular direction of the source-target differences."))
    lang: str | None = setting(None, metavar="LANG", help=(
        "The source language the remapping is for (recorded in the file), e.g. de."))

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.lang is not None and not self.lang.strip():
            raise self.relabel(SettingError("lang", "a language code (de, cs, ...), not an empty name"))
        if str(self.output) == "-":
            raise self.relabel(SettingError("output", "a remapping is a binary file, not text for standard output; "
                                                      "give a file name"))


def learn_files(encoder: Encoder, runtime: Runtime, opts: RemapOptions, inputs: Sequence[str] = ()
                ) -> tuple[Remapping, dict[str, float]]:
    """:func:`learn` from the parallel files of ``opts`` (line i of a source file translates line i
    of its target file): its ``src`` and ``tgt`` each files or folders (:func:`parallel_files`),
    the pairs of files concatenated; saved to its ``output`` (which may not be one of the inputs
    nor of ``inputs``, the other files the run reads). The statistics add ``sentences`` (the sentence
    pairs read) and ``files`` (the pairs of files).

    Raises
    ------
    InputError, ConfigError
        An output that cannot be written or is an input, files that are not parallel or hold no
        pair of non-empty lines, a file on both sides, a layer the model does not have: before
        the weights load. Too few word pairs (:func:`learn_weights`): before anything is written.
    """
    from ..textio import check_output, read_lines, replacing

    files = parallel_files(opts.src, opts.tgt)
    output, layer = str(opts.output), opts.layer
    check_output(output, [f for pair in files for f in pair] + list(inputs))  # before any work
    sources: list[str] = []
    targets: list[str] = []
    for s_file, t_file in files:
        s_lines, t_lines = read_lines(s_file), read_lines(t_file)
        if len(s_lines) != len(t_lines):
            raise InputError(f"{t_file} has {len(t_lines)} lines but {s_file} has {len(s_lines)}: the files must be "
                             "parallel, one sentence and its translation per line")
        sources += s_lines
        targets += t_lines
    if not any(s.strip() and t.strip() for s, t in zip(sources, targets)):
        where = files[0][0] if len(files) == 1 else f"the {len(files)} source files"
        other = files[0][1] if len(files) == 1 else "their target files"
        raise InputError(f"and {other} have no line where both sentences are non-empty: nothing to learn from", where)
    if layer > encoder.num_layers:  # the model's configuration only: its weights load later
        raise opts.relabel(SettingError("layer", f"{layer} does not exist: model {encoder.name!r} has layers "
                                                 f"0..{encoder.num_layers}"))
    encoder.check()
    remapping, stats = learn(encoder, sources, targets, layer=layer, method=opts.method,
                             lang=opts.lang.strip() if opts.lang else None, runtime=runtime)
    with replacing(output) as tmp:
        save_remapping(remapping, tmp)
    return remapping, {**stats, "sentences": float(len(sources)), "files": float(len(files))}


__all__ = ["RemapOptions", "learn", "learn_clp", "learn_files", "learn_umd", "learn_weights", "mean_cosine", "mutual_best", "paired_words",
           "pairs_needed", "parallel_files", "word_vectors"]
