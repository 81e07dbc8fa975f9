"""``alignscore score --stream`` killed with SIGKILL at random points, then ``--resume``d: the
final file is byte for byte the file of an uninterrupted run (same chunk size, no cache)."""

from __future__ import annotations

import random
import subprocess
import time

import pytest

from cli_checks import invoke, spawn


def _wait_then_kill(proc: subprocess.Popen, out, target_bytes: float | None, delay: float) -> None:
    """SIGKILL ``proc`` once ``out`` has ``target_bytes`` (polled every 2 ms), or after ``delay``
    seconds when no target is given; a process that ends first is left alone."""
    start = time.monotonic()
    while proc.poll() is None and time.monotonic() - start < 300:
        if target_bytes is None and time.monotonic() - start >= delay:
            break
        if target_bytes is not None and out.exists() and out.stat().st_size >= target_bytes:
            break
        time.sleep(0.002)
    proc.kill()
    proc.wait()


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["tsv", "jsonl"])
def test_kill_9_at_random_points_then_resume_gives_the_uninterrupted_file(wmt_data, tiny_bert_dir, tmp_path, fmt):
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
    cut_mid_way = 0
    for attempt in range(3):
        proc = spawn(*args, "-o", out, "--resume" if attempt else "--stream", stdout=subprocess.DEVNULL, stderr=log)
        if attempt == 0:  # anywhere from start-up to the first rows
            _wait_then_kill(proc, out, None, rng.uniform(0.5, 8.0))
        else:  # somewhere in the rest of the file
            have = out.stat().st_size if out.exists() else 0
            _wait_then_kill(proc, out, have + rng.uniform(0.05, 0.6) * (len(want) - have), 0)
        assert proc.returncode in (-9, 0), (tmp_path / "stderr.txt").read_text()
        size = out.stat().st_size if out.exists() else 0
        cut_mid_way += proc.returncode == -9 and 0 < size < len(want)
    final = spawn(*args, "-o", out, "--resume", stdout=subprocess.DEVNULL, stderr=log)
    assert final.wait(300) == 0, (tmp_path / "stderr.txt").read_text()
    log.close()
    assert cut_mid_way >= 2  # the runs really were killed part-way through the output
    assert out.read_bytes() == want
    if fmt == "jsonl":
        assert (tmp_path / "out.jsonl.signature").read_text() == (tmp_path / "want.jsonl.signature").read_text()
