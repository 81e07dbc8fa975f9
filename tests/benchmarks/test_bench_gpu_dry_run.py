"""benchmarks/bench_gpu.py: one clear line without CUDA, and its dry run on the CPU (the same
code paths as on the GPU, tiny sizes) writes its results files with float32 parity."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from helpers import REPO, WMT16, needs

SCRIPT = REPO / "benchmarks" / "bench_gpu.py"


def assets(root: Path, minilm_dir: str) -> Path:
    """What gpu_assets.py prepares, for all-MiniLM-L6-v2 only, from the files on this machine."""
    model = root / "models" / "all-MiniLM-L6-v2"
    model.mkdir(parents=True)
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy2(Path(minilm_dir) / name, model / name)
    shutil.copytree(WMT16, root / "data" / "wmt16-da-seg")
    return root


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=REPO)


@pytest.mark.slow  # a fresh interpreter importing torch: CI's tier
@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_without_cuda_one_line_and_status_2(tmp_path):
    result = run("--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "bench_gpu: error: no CUDA device: this benchmark runs on a GPU (use --dry-run to check it on the CPU)"]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # a fresh interpreter importing torch: CI's tier
def test_missing_assets_one_line(tmp_path):
    result = run("--dry-run", "--assets", str(tmp_path), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "gpu_assets.py" in result.stderr


@pytest.mark.slow
@pytest.mark.reference
def test_dry_run_writes_results(tmp_path, minilm_dir, wmt_data):
    needs("bert_score")
    needs("moverscore_v2", load=False)  # importing it loads a model from the hub
    out = tmp_path / "out"
    result = run("--dry-run", "--assets", str(assets(tmp_path / "assets", minilm_dir)), "--out", str(out),
                 "--models", "all-MiniLM-L6-v2", "--large", "8")
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["dry_run"] and results["pairs"] == {"wmt16": 24, "large": 8}
    greedy = {row["corpus"]: row for row in results["greedy"]}
    assert set(greedy) == {"wmt16", "large"}
    for row in greedy.values():
        assert row["max_abs_diff_vs_bert_score"] < 1e-5  # float32 parity, the same code as on the GPU
        assert row["ours_pairs_per_s"] > 0 and row["bert_score_pairs_per_s"] > 0
        assert set(row["stages_s"]) == {"tokenize", "encode", "align"}
    for row in results["precision"]:
        assert row["dtype"] == "bfloat16" and 0 < row["max_abs_drift_vs_float32"] < 0.05
    ot = {row["side"].split(" (")[0]: row for row in results["ot"]}
    assert ot["alignscore wmd"]["max_abs_diff_vs_moverscore_v2"] < 1e-4
    markdown = (out / "results.md").read_text()
    assert "DRY RUN on CPU: not a measurement" in markdown
    assert "| all-MiniLM-L6-v2 (layer 4) | float32 | wmt16 |" in markdown
