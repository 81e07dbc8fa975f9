"""How a run is executed, apart from what it computes: batching, token budget, device, sharding
and progress. Nothing here changes a score.

:func:`embed` is the encoder loop: texts in batches of similar length (longest first), at most
``batch_size`` texts and, with a token budget, at most that many padded tokens each; with a shard,
this process encodes its share of the batches and receives the others' vectors.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Sequence, TypeVar

import torch
from tqdm.auto import tqdm

from .distributed import Shard
from .errors import ConfigError
from .settings import SettingError, check_settings, keyword, setting
from .tokens import TokenTable, pad_gather

if TYPE_CHECKING:
    from .encoders.base import Encoder

T = TypeVar("T")


DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu")  # devices that compute (not "meta", which only holds shapes)


def check_device(name: object) -> str:
    """A device name that torch reads, that computes (``cpu``, ``cuda``, ``cuda:1``, ``mps``, ...)
    and that this machine has."""
    try:
        device = torch.device(name) if isinstance(name, str) and name.strip() else None
    except (RuntimeError, ValueError):
        device = None
    if device is None or device.type not in DEVICE_TYPES:
        raise SettingError("device", f"one of {', '.join(DEVICE_TYPES)} (cuda:1, ...), not {name!r}")
    backend = getattr(torch, device.type, None) if device.type != "cpu" else None
    if backend is not None and not backend.is_available():
        build = f"torch {torch.__version__}" + (" is built for the CPU" if torch.version.cuda is None else
                                                 " finds no device")
        raise SettingError("device", f"{name!r}: no {device.type} device here ({build})")
    if backend is not None and device.index is not None and device.index >= backend.device_count():
        raise SettingError("device", f"{name!r}: this machine has {backend.device_count()} {device.type} device(s)")
    return name  # type: ignore[return-value]


def _token_budget(text: str) -> int | str:
    return text if text == "auto" else int(text)


@dataclass(frozen=True)
class Runtime:
    """How to run: batching, device, progress and sharding; a score changes by float rounding at
    most with any of them.

    Parameters
    ----------
    batch_size : int
        Texts per encoder batch.
    token_budget : int or "auto", optional
        Also at most this many padded tokens per encoder batch (bounds the encoder's memory on
        long texts, whose attention grows with ``B T^2``); ``None``: only ``batch_size``;
        ``"auto"``: on CUDA, from the free GPU memory (:func:`auto_token_budget`), on a CPU
        none. On CUDA, a batch that runs out of memory is split in halves and retried (a
        warning says so once; later batches keep to the smaller size).
    pair_batch_size : int
        Pairs per alignment batch (64: large padded batches cost more in page faults than they
        save on a CPU).
    progress : bool
        Progress bars on stderr.
    device : str, optional
        Where encoders built for this run place their weights (``"cpu"``, ``"cuda"``,
        ``"cuda:1"``; ``None``: CUDA when available).
    shard : Shard, optional
        This process's place in a torch.distributed group: the ranks split the encoding and
        the alignment, and every rank receives every result.
    _naming : callable, optional
        How the run's options are named in what running says (:meth:`name`): as they were given
        (the compiler passes its provenance's naming); default ``batch_size=``.

    Examples
    --------
    >>> Runtime(batch_size=16).pair_batch_size
    64
    >>> Runtime(batch_size=0)
    Traceback (most recent call last):
    alignscore.settings.SettingError: batch_size: expected an integer >= 1, not 0
    """

    batch_size: int = setting(64, ge=1, help="Texts per encoder batch (changes scores by float rounding at most).")
    token_budget: int | str | None = setting(None, ge=1, choices=("auto",), parse=_token_budget, help=(
        "Also at most this many padded tokens per encoder batch (bounds memory on long texts); 'auto': from "
        "the free GPU memory (none on a CPU)."))
    pair_batch_size: int = setting(64, ge=1, help=(
        "Pairs per alignment batch (changes scores by float rounding at most)."))
    progress: bool = setting(False, option=False)
    device: str | None = setting(None, unset="CUDA when available, else the CPU",
                                 help="cpu, cuda, cuda:1, ... Default: CUDA when available.")
    shard: Shard | None = setting(None, option=False)
    _naming: Callable[[str], str] = field(default=keyword, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_settings(self)
        if self.device is not None:
            check_device(self.device)

    def name(self, option: str) -> str:
        """The run's ``option`` as the user names it (``--batch-size``, ``batch_size=``), for what
        running says about it (out of memory: a smaller batch)."""
        return self._naming(option)

    def mine(self, count: int) -> range:
        """The items (batches) of ``count`` that this process handles (all without a shard)."""
        return self.shard.mine(count) if self.shard is not None else range(count)

    def bar(self, items: Iterable[T], desc: str, **kwargs: object) -> Iterable[T]:
        """``items`` with a progress bar on stderr when :attr:`progress` is on."""
        return tqdm(items, desc=desc, disable=not self.progress, file=sys.stderr, leave=False, **kwargs)


def plan_batches(lengths: torch.Tensor, batch_size: int, token_budget: int | None = None,
                 shape: Callable[[int], tuple[int, int]] | None = None) -> list[tuple[int, int]]:
    """``[start, end)`` bounds of consecutive batches over texts of ``lengths``, sorted longest
    first: at most ``batch_size`` rows each and, with a ``token_budget``, at most that many
    padded tokens (``rows x the widest row``; a single larger text forms a batch of its own).
    ``shape(length) -> (rows, width)`` is what a text costs the encoder
    (:meth:`~alignscore.encoders.base.Encoder.forward_shape`: a text encoded in windows counts
    as its windows); default: one row of its length."""
    if token_budget is None and shape is None:
        return [(s, min(s + batch_size, len(lengths))) for s in range(0, len(lengths), batch_size)]
    costs = [shape(n) if shape is not None else (1, n) for n in lengths.tolist()]
    bounds, start, n = [], 0, len(costs)
    while start < n:
        width, rows, end = max(costs[start][1], 1), costs[start][0], start + 1
        while end < n and rows + costs[end][0] <= batch_size and (
                token_budget is None or (rows + costs[end][0]) * width <= token_budget):
            rows += costs[end][0]
            end += 1
        bounds.append((start, end))
        start = end
    return bounds


# Share of the free GPU memory that an encoder batch may take under ``token_budget="auto"``.
AUTO_MEMORY_SHARE = 0.5


def auto_token_budget(encoder: Encoder, layers: Sequence[int]) -> int | None:
    """Padded tokens per encoder batch that fit in half the free memory of the encoder's CUDA
    device (``None`` elsewhere: no budget on a CPU).

    For a model of width ``D``, feed-forward width ``I``, ``H`` attention heads, ``s`` bytes per
    value (its dtype) and ``L = max(layers)`` blocks run, one token of a batch whose texts have
    ``T`` tokens holds at most::

        s * ((L + 1) * D        hidden states of every block run (kept for the output)
             + I + 3 * D        the largest transient: feed-forward activations, or q, k, v
             + H * T)           attention scores (T: the model's length limit, the worst case)
        + 4 * D                 the float32 states the aggregator reads

    and the budget is ``AUTO_MEMORY_SHARE * free / that`` (``torch.cuda.mem_get_info``).
    """
    device = encoder.device
    if device.type != "cuda":
        return None
    model = getattr(encoder, "inner", encoder)  # a CachedEncoder's own encoder
    config = getattr(model, "config", None)
    width = int(getattr(config, "hidden_size", 1024))
    ffn = int(getattr(config, "intermediate_size", 4 * width))
    heads = int(getattr(config, "num_attention_heads", 16))
    spec = getattr(model, "spec", None)  # the encoder's settings (its precision), where it has them
    size = {"float16": 2, "bfloat16": 2}.get(spec.dtype if spec is not None else "float32", 4)
    per_token = size * ((max(layers) + 1) * width + ffn + 3 * width + heads * encoder.model_max_length) + 4 * width
    free, _total = torch.cuda.mem_get_info(device)
    return max(1, int(AUTO_MEMORY_SHARE * free / per_token))


def _out_of_memory(exc: BaseException) -> bool:
    return isinstance(exc, torch.OutOfMemoryError) or "out of memory" in str(exc).lower()


class _Fitting:
    """Runs the encoder on a padded batch in pieces that fit: after an out-of-memory error the
    piece is halved and retried, and later batches keep to at most :attr:`cap` padded tokens
    (warned once). A single text that does not fit raises :class:`ConfigError`."""

    def __init__(self, encoder: Encoder, layers: Sequence[int],
                 aggregate: Callable[[torch.Tensor], torch.Tensor], name: Callable[[str], str] = keyword) -> None:
        self.encoder, self.layers, self.aggregate, self.name = encoder, list(layers), aggregate, name
        self.cap: int | None = None

    def __call__(self, ids: torch.Tensor, valid: torch.Tensor) -> Iterable[tuple[slice, torch.Tensor]]:
        """``(rows, vectors)`` pieces covering the batch's rows in order."""
        n, width = ids.shape
        step = n if self.cap is None else max(1, min(n, self.cap // max(width, 1)))
        start = 0
        while start < n:
            end = min(n, start + step)
            try:
                vectors = self.aggregate(self.encoder.forward(ids[start:end], valid[start:end].long(), self.layers))
            except (RuntimeError, MemoryError) as exc:
                if not _out_of_memory(exc):
                    raise
                if end - start == 1:
                    raise ConfigError(f"out of memory on a single text of {width} tokens: use a smaller model, "
                                      f"{self.name('dtype')} bfloat16, or a device with more memory") from None
                if self.cap is None:
                    warnings.warn(f"out of memory on an encoder batch of {end - start} texts x {width} tokens: "
                                  f"splitting batches (scores do not change; set {self.name('token_budget')} or "
                                  f"{self.name('batch_size')} lower to avoid the retries)", stacklevel=3)
                step = max(1, (end - start) // 2)
                self.cap = step * width
                del exc
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
                continue
            yield slice(start, end), vectors
            start = end


def embed(encoder: Encoder, table: TokenTable, layers: Sequence[int],
          aggregate: Callable[[torch.Tensor], torch.Tensor], runtime: Runtime = Runtime(),
          desc: str = "encoding") -> torch.Tensor:
    """Token vectors ``[N, D]`` for every token of ``table``, packed in the same order, on the
    encoder's device.

    ``aggregate`` maps the ``[L, B, T, D]`` hidden states of ``layers`` to ``[B, T, D']``. The
    result depends on the batching by float rounding at most (another batch shape may take another
    matrix kernel): padding is masked out of attention. Nothing comes
    back to the host: on CUDA each batch's vectors are scattered into the packed buffer on the
    device by an index built on the host (one transfer to the device, no synchronisation).
    """
    order = torch.argsort(table.lengths, descending=True, stable=True)
    out: torch.Tensor | None = None
    pad = encoder.pad_id
    budget = runtime.token_budget
    if budget == "auto":
        budget = auto_token_budget(encoder, layers)
    bounds = plan_batches(table.lengths[order], runtime.batch_size, budget, encoder.forward_shape)
    fitting = _Fitting(encoder, layers, aggregate, runtime.name)
    filled = []
    for b in runtime.bar(runtime.mine(len(bounds)), desc):
        texts = order[bounds[b][0]:bounds[b][1]]
        index, valid = pad_gather(table.offsets, texts)
        ids = torch.where(valid, table.ids[index], torch.full((), pad, dtype=torch.long))
        for rows, vectors in fitting(ids, valid):
            if out is None:
                # zeros, not empty: filling the fresh buffer in one pass maps its pages faster than
                # the copies below would one by one
                out = torch.zeros(int(table.offsets[-1]), vectors.shape[-1], dtype=vectors.dtype,
                                  device=vectors.device)
            _scatter(out, vectors, table, texts[rows], index[rows], valid[rows])
        if runtime.shard is not None:
            filled.append(index[valid])
    if runtime.shard is not None:
        rows = torch.cat(filled) if filled else torch.empty(0, dtype=torch.long)
        mine_out = out[rows.to(out.device)] if out is not None else torch.empty(0, 0, device=encoder.device)
        return runtime.shard.gather(mine_out, rows, int(table.offsets[-1]))
    if out is None:
        out = torch.empty(0, 0, device=encoder.device)
    return out


def _scatter(out: torch.Tensor, vectors: torch.Tensor, table: TokenTable, texts: torch.Tensor, index: torch.Tensor,
             valid: torch.Tensor) -> None:
    """Copy the batch's token vectors ``vectors [B, T, D]`` (of ``texts``; ``index``/``valid`` from
    :func:`~alignscore.tokens.pad_gather`) into their rows of the packed ``out``."""
    if out.device.type == "cpu":
        # each text's tokens are one contiguous block of ``out``: copy block by block (a loop
        # over the batch's texts, far cheaper on CPU than a scatter through an index tensor)
        for row, (start, n) in enumerate(zip(table.offsets[texts].tolist(), table.lengths[texts].tolist())):
            out[start:start + n] = vectors[row, :n].to(out.device)
        return
    # on a GPU one indexed copy instead of a kernel per text; the positions are found on the host
    b, t = valid.nonzero(as_tuple=True)
    dest, b, t = (x.to(out.device, non_blocking=True) for x in (index[b, t], b, t))
    out[dest] = vectors[b, t].to(out.dtype)


def peak_memory_mib() -> float | None:
    """This process's peak resident set in MiB, where the system says it (None on Windows)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def quiet_libraries() -> None:
    """Tokenizers' parallelism, transformers' own messages and its progress bars off, without
    importing transformers (a run whose states are all cached never does): the variables are
    read when it is first imported; when it already is, its logging is set directly."""
    import os
    import sys

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if "transformers" in sys.modules:  # already imported (the command line called from Python)
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
