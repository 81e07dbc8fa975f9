"""``alignscore score --stream`` killed with SIGKILL at random points of its output, then
``--resume``d: the final file is byte for byte the file of an uninterrupted run (same chunk size,
no cache)."""

from __future__ import annotations

import os
import random
import signal
import subprocess

import pytest

from cli_checks import CODE_ROOT, invoke


# Runs ``alignscore ARGS`` with its streamed output written through a file object that SIGKILLs the
# process once LIMIT characters of rows are written (the last write cut there, flushed first): a
# kill -9 at an exact, random point of the output, whatever the machine's speed.
KILLER = """
import contextlib, os, signal, sys
import alignscore.stream as stream

limit = int(sys.argv.pop(1))
opened = stream._open_output


class Killing:
    def __init__(self, fh):
        self.fh, self.left = fh, limit

    def writelines(self, lines):
        data = "".join(lines)
        if len(data) >= self.left:
            self.fh.write(data[:self.left])
            self.fh.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        self.left -= len(data)
        self.fh.write(data)

    def __getattr__(self, name):
        return getattr(self.fh, name)


@contextlib.contextmanager
def open_output(*args, **kwargs):
    with opened(*args, **kwargs) as fh:
        yield Killing(fh)


stream._open_output = open_output
from alignscore.cli import main
main()
"""


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["tsv", "jsonl"])
def test_kill_9_at_random_points_then_resume_gives_the_uninterrupted_file(wmt_data, tiny_bert_dir, tmp_path, fmt,
                                                                         warm):
    rng = random.Random(f"kill-9-{fmt}")
    paths = {}
    for name, lines in (("c", wmt_data["de-en"]["mt-system"][:150]), ("r", wmt_data["de-en"]["reference"][:150])):
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = ["score", "-c", paths["c"], "-r", paths["r"], "--model", tiny_bert_dir, "--layer", "3",
            "--weighting", "idf-S", "-q", "--format", fmt, "--chunk-size", "5"]
    want_path = tmp_path / f"want.{fmt}"
    code, _, err = invoke(*args, "-o", want_path, "--stream")
    assert code == 0, err
    want = want_path.read_bytes()

    out = tmp_path / f"out.{fmt}"
    log = open(tmp_path / "stderr.txt", "w")
    # real processes, each a fork of one that imported alignscore (tests/warm_server.py)
    python, variables = warm
    env = {**os.environ, **variables, "PYTHONPATH": str(CODE_ROOT), "TOKENIZERS_PARALLELISM": "false"}
    written = 0  # characters of rows the runs so far wrote (resumed runs rewrite their chunk: approximate)
    for attempt in range(4):
        # the first run is killed anywhere from its first row, the others somewhere in the rest of the rows
        limit = rng.randrange(0, 40) if attempt == 0 else rng.randrange(1, max(2, (len(want) - written) // 2))
        proc = subprocess.run([*python, "-c", KILLER, str(limit), *map(str, args), "-o", str(out),
                               "--resume" if attempt else "--stream"], env=env, stdout=subprocess.DEVNULL,
                              stderr=log, timeout=300)
        assert proc.returncode == -signal.SIGKILL, (tmp_path / "stderr.txt").read_text()
        written += limit
        assert out.exists() and out.stat().st_size < len(want)  # killed part-way through the output
    final = subprocess.run([*python, *map(str, args), "-o", str(out), "--resume"], env=env,
                           stdout=subprocess.DEVNULL, stderr=log, timeout=300)
    assert final.returncode == 0, (tmp_path / "stderr.txt").read_text()
    log.close()
    assert out.read_bytes() == want
    if fmt == "jsonl":
        assert (tmp_path / "out.jsonl.signature").read_text() == (tmp_path / "want.jsonl.signature").read_text()
