"""Scale-out on torch.distributed: one rank per GPU (or per node, or per CPU process).

Launch any scoring run with ``torchrun --nproc-per-node N`` (or across nodes with
``--nnodes``); each rank then

1. encodes its share of the batches of unique texts (whole batches, dealt round-robin, so every
   text sits in exactly the batch it would sit in on one process and gets the same numbers),
2. receives every other rank's token vectors (``all_gather``),
3. aligns its share of the batches of pairs, and
4. receives every rank's scores, so every rank ends with the scores of all pairs in input
   order (rank 0 writes them out).

The process group is ``gloo`` on CPU and ``nccl`` on CUDA.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Shard:
    """This process's place in a process group of ``world`` ranks."""

    rank: int
    world: int

    @classmethod
    def current(cls) -> "Shard | None":
        """The initialised default process group as a shard, or ``None`` without one (or with
        one rank: nothing to share)."""
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
            return None
        return cls(dist.get_rank(), dist.get_world_size())

    def mine(self, count: int) -> range:
        """The items (batches) this rank handles out of ``count``: ``rank, rank + world, ...``."""
        return range(self.rank, count, self.world)

    def gather(self, values: torch.Tensor, index: torch.Tensor, total: int) -> torch.Tensor:
        """Every rank passes its rows ``values [n_r]`` or ``[n_r, D]`` and their positions
        ``index [n_r]`` in a ``[total]`` or ``[total, D]`` result; every rank gets the whole
        result (rows no rank sent are 0), on ``values``' device. Ranks may hold different numbers
        of rows; a rank with none may pass any empty tensor (the others tell the shape and
        dtype). With NCCL the exchange runs on this rank's CUDA device, whatever ``values``' is."""
        import torch.distributed as dist

        device = _comm_device()
        n = len(index)
        meta = torch.tensor([n, values.dim() if n else 0, values.shape[-1] if n and values.dim() == 2 else 0,
                             _DTYPES.index(values.dtype) if n else -1], dtype=torch.long, device=device)
        metas = [torch.zeros_like(meta) for _ in range(self.world)]
        dist.all_gather(metas, meta)
        counts = [int(m[0]) for m in metas]
        ndim, width_d, code = (max(int(m[k]) for m in metas) for k in (1, 2, 3))
        dtype = _DTYPES[code] if code >= 0 else values.dtype
        tail = (width_d,) if ndim == 2 else ()
        width = max(counts)
        padded = torch.zeros((width, *tail), dtype=dtype, device=device)
        where = torch.zeros(width, dtype=torch.long, device=device)
        if n:
            padded[:n] = values.to(device=device, dtype=dtype)
            where[:n] = index.to(device)
        all_values = [torch.empty_like(padded) for _ in range(self.world)]
        all_where = [torch.empty_like(where) for _ in range(self.world)]
        dist.all_gather(all_values, padded)
        dist.all_gather(all_where, where)
        home = values.device  # where the caller keeps its rows (a rank with none passes an empty tensor there)
        out = torch.zeros((total, *tail), dtype=dtype, device=home)
        for c, v, w in zip(counts, all_values, all_where):
            out[w[:c].to(home)] = v[:c].to(home)
        return out

    def all_sum(self, values: torch.Tensor) -> torch.Tensor:
        """The element-wise sum of ``values`` over every rank (every rank gets it)."""
        import torch.distributed as dist

        out = values.to(_comm_device()).clone()
        dist.all_reduce(out, op=dist.ReduceOp.SUM)
        return out.to(values.device)


_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.bool]


def _comm_device() -> torch.device:
    import torch.distributed as dist

    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def init_from_env(device: str | None = None) -> tuple[Shard | None, str | None]:
    """Join the process group that ``torchrun`` describes in the environment (``WORLD_SIZE``,
    ``RANK``, ``LOCAL_RANK``, ``MASTER_ADDR``...), if any.

    Returns the shard (``None`` outside torchrun or with one rank) and the device this rank
    should use: ``cuda:LOCAL_RANK`` when CUDA is available and ``device`` is not given.
    """
    import torch.distributed as dist

    if int(os.environ.get("WORLD_SIZE", "1")) < 2 or not dist.is_available():
        return None, device
    local = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = (device or "").startswith("cuda") or (device is None and torch.cuda.is_available())
    if use_cuda:
        device = device if device and ":" in device else f"cuda:{local}"
        torch.cuda.set_device(torch.device(device))
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    return Shard.current(), device


def leave(shard: Shard | None) -> None:
    """Leave the process group of a finished run (no-op without one): every rank waits for the
    others, then the group is destroyed. A gloo group left for the interpreter's exit to tear
    down can abort the process ("terminate called without an active exception")."""
    import torch.distributed as dist

    if shard is not None and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
