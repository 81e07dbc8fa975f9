"""Scale-out: ``torchrun`` with two CPU processes (gloo) gives the single process's scores, to
the bit, whichever rank encoded or aligned what."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cli_checks import CODE_ROOT, in_one_process

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


def _run(args, env):
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


WEIGHTINGS = ("none", "idf-S", "norm")  # norm: the kept norms go through the gather too
#: threads pinned alike in both runs (torchrun gives each rank one thread by default); this checkout's code,
#: not an installed copy
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(CODE_ROOT)}


def _args(files: dict[str, Path], model: str, weighting: str) -> list[str]:
    return ["score", "-c", str(files["c"]), "-r", str(files["r"]), "-r", str(files["r2"]), "--model", model,
            "--layer", "3", "--weighting", weighting, "--batch-size", "16", "-q", "--device", "cpu"]


@pytest.fixture(scope="module")
def single(wmt_data, tiny_bert_dir, tmp_path_factory) -> tuple[dict[str, Path], dict[str, str]]:
    """The input files, and each weighting's output of one process (one thread; the three runs in one
    process, which pays the imports once)."""
    tmp, files = tmp_path_factory.mktemp("single"), {}
    for name, lines in (("c", wmt_data["de-en"]["mt-system"][:150] + [""]),
                        ("r", wmt_data["de-en"]["reference"][:150] + ["x"]),
                        ("r2", wmt_data["cs-en"]["reference"][:151])):
        files[name] = tmp / f"{name}.txt"
        files[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = in_one_process([[*_args(files, tiny_bert_dir, w), "-o", tmp / f"{w}.tsv"] for w in WEIGHTINGS], ENV)
    assert [d.returncode for d in done] == [0] * len(WEIGHTINGS), [d.stderr for d in done]
    return files, {w: (tmp / f"{w}.tsv").read_text() for w in WEIGHTINGS}


_RANKS = """
import json, os, sys
from click.testing import CliRunner
from alignscore.cli import main
os.environ["TORCHELASTIC_USE_AGENT_STORE"] = "False"  # each run's group on a store rank 0 holds
for port, args in json.loads(sys.argv[1]):
    os.environ["MASTER_PORT"] = str(port)
    done = CliRunner().invoke(main, args)
    sys.stderr.write(done.stderr)
    if done.exit_code:
        sys.exit(done.exit_code)
"""


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def test_two_ranks_give_the_single_process_scores(single, tiny_bert_dir, tmp_path):
    """Each weighting's run on two ranks, one after the other in one ``torchrun`` (one launch instead of
    three): each run joins a process group and leaves it, as one command does, its store on a port of
    its own (a group left cannot be joined again through torchrun's agent store)."""
    files, outputs = single
    script = tmp_path / "ranks.py"
    script.write_text(_RANKS, encoding="utf-8")
    runs = [[port, [*_args(files, tiny_bert_dir, w), "-o", str(tmp_path / f"{w}.tsv")]]
            for port, w in zip(_free_ports(len(WEIGHTINGS)), WEIGHTINGS)]
    proc = _run([str(BIN / "torchrun"), "--standalone", "--nproc-per-node", "2", str(script), json.dumps(runs)], ENV)
    for weighting in WEIGHTINGS:
        # byte for byte: the ranks run the single process's batches, one thread each (same shapes, same kernels)
        assert (tmp_path / f"{weighting}.tsv").read_text() == outputs[weighting], weighting
        assert len(outputs[weighting].splitlines()) == 3 + 151
    assert proc.stderr.count("candidates:") == len(WEIGHTINGS)  # rank 0 alone reports


def _gather_worker(rank: int, world: int, init: str, out: str) -> None:
    import torch
    import torch.distributed as dist

    from alignscore.distributed import Shard

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    shard = Shard.current()
    assert shard == Shard(rank, world)
    # rank 0 holds rows 0, 2, 4; rank 1 holds rows 1 and 3; a 1-D gather where rank 1 has none
    mine = torch.tensor(list(shard.mine(5)))
    rows = shard.gather(mine.double().unsqueeze(1).repeat(1, 3) * 10, mine, 5)
    flat = shard.gather(torch.tensor([7.0, 8.0]) if rank == 0 else torch.empty(0),
                        torch.tensor([3, 1]) if rank == 0 else torch.empty(0, dtype=torch.long), 4)
    torch.save({"rows": rows, "flat": flat}, f"{out}.{rank}")
    dist.destroy_process_group()


def test_gather_puts_every_rank_rows_in_place(tmp_path):
    import torch
    import torch.multiprocessing as mp

    init = f"file://{tmp_path / 'store'}"
    mp.start_processes(_gather_worker, args=(2, init, str(tmp_path / "out")), nprocs=2, start_method="spawn")
    for rank in (0, 1):
        got = torch.load(tmp_path / f"out.{rank}")
        assert torch.equal(got["rows"], torch.arange(5).double().unsqueeze(1).repeat(1, 3) * 10)
        assert torch.equal(got["flat"], torch.tensor([0.0, 8.0, 0.0, 7.0]))
