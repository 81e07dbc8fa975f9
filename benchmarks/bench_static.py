"""The static mode against bert_score and alignscore's contextual mode: whole-process time, pairs/s, |r|.

Cases, each one process as a user runs it (interpreter start, imports, loading, scoring, writing
the scores), alternated round by round, medians reported:

- ``bert_score``         bert_score 0.3.13's ``score`` with all-MiniLM-L6-v2 at layer 4 (the layer
                         alignscore picks for it, as bench_greedy.py runs it), its defaults otherwise;
- ``contextual``         ``alignscore score --model all-MiniLM-L6-v2`` (greedy, layer 4);
- ``static``             ``alignscore score --model benchmarks/models/minilm-static`` (greedy F1);
- ``static_wmd``         the same table under WMD-1 with idf (``--aligner wmd --cost sqeuclidean --idf``,
                         MoverScore v1's cost).

Sizes (``--sizes``): the first N WMT16 to-English pairs, all 3,360, and beyond that the WMT16
pairs again with each copy perturbed (copy k deletes, or for odd rounds doubles, word k of each
text), so that no text repeats and nothing is served by de-duplication. The |r| column is the
average over the six language pairs of |Pearson r| with the human scores, from the run over the
3,360 WMT16 pairs (it needs that size in ``--sizes``).

The static model is distilled first when missing (``alignscore distill --model all-MiniLM-L6-v2 -o
benchmarks/models/minilm-static``; untimed).

    python benchmarks/bench_static.py --rounds 3 --sizes 100,3360,100000 --record
    python benchmarks/bench_static.py --rounds 1 --sizes 20 --only static      # a quick check
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import LANG_PAIRS, WMT16, machine, wmt_pairs  # noqa: E402

STATIC_MODEL = ROOT / "benchmarks" / "models" / "minilm-static"
PAIRS_PER_LP = 560
CASES = ("bert_score", "contextual", "static", "static_wmd")
LABELS = {
    "bert_score": "bert_score 0.3.13, MiniLM L4",
    "contextual": "alignscore, MiniLM L4 (contextual)",
    "static": "alignscore static, greedy F1",
    "static_wmd": "alignscore static, WMD-1 (sqeuclidean) + idf",
}
BERT_SCORE = """
import sys
import bert_score
from alignscore.encoders.layers import packaged_model_dir
from alignscore.textio import read_lines
cands, refs = read_lines(sys.argv[1]), read_lines(sys.argv[2])
_, _, f = bert_score.score(cands, refs, model_type=str(packaged_model_dir("all-MiniLM-L6-v2")), num_layers=4)
open(sys.argv[3], "w").write("".join(f"{x:.9f}\\n" for x in f.tolist()))
"""


def alignscore_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "alignscore", "score", *args, "-q"]


def perturbed(texts: list[str], k: int) -> list[str]:
    """Copy ``k`` of ``texts``: word ``k mod n`` deleted (even rounds) or doubled (odd rounds); a
    one-word text is never emptied (bert_score fails on empty texts): its word is doubled."""
    out = []
    for text in texts:
        words = text.split()
        if not words:
            out.append(text)
            continue
        i = k % len(words)
        delete = (k // len(words)) % 2 == 0 and len(words) > 1
        words = words[:i] + words[i + 1:] if delete else words[:i + 1] + words[i:]
        out.append(" ".join(words))
    return out


def pairs_of_size(n: int) -> tuple[list[str], list[str]]:
    cands, refs = wmt_pairs()
    out_c, out_r = cands[:n], refs[:n]
    k = 0
    while len(out_c) < n:
        k += 1
        out_c += perturbed(cands, k)[:n - len(out_c)]
        out_r += perturbed(refs, k + 7)[:n - len(out_r)]
    return out_c, out_r


def commands(work: Path, size: int) -> dict[str, list[str]]:
    cands, refs = pairs_of_size(size)
    c, r = work / f"c{size}.txt", work / f"r{size}.txt"
    c.write_text("\n".join(cands) + "\n", encoding="utf-8")
    r.write_text("\n".join(refs) + "\n", encoding="utf-8")
    files = ["-c", str(c), "-r", str(r)]
    out = lambda case: ["-o", str(work / f"{case}-{size}.tsv")]  # noqa: E731
    return {
        "bert_score": [sys.executable, "-c", BERT_SCORE, str(c), str(r), str(work / f"bert_score-{size}.tsv")],
        "contextual": alignscore_cmd(*files, "--model", "all-MiniLM-L6-v2", *out("contextual")),
        "static": alignscore_cmd(*files, "--model", str(STATIC_MODEL), *out("static")),
        "static_wmd": alignscore_cmd(*files, "--model", str(STATIC_MODEL), "--aligner", "wmd", "--cost", "sqeuclidean",
                                     "--idf", *out("static_wmd")),
    }


def read_scores(path: Path) -> list[float]:
    """The primary score of each line: bert_score's F1 file, or alignscore's TSV (f1 or score)."""
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln and not ln.startswith("#")]
    if "\t" not in lines[0] and not lines[0][0].isalpha():
        return [float(x) for x in lines]
    header = lines[0].split("\t")
    col = header.index("f1") if "f1" in header else header.index("score")
    return [float(ln.split("\t")[col]) for ln in lines[1:]]


def mean_abs_r(scores: list[float]) -> float:
    """Average |Pearson r| with the WMT16 human scores over the six language pairs."""
    import numpy as np

    from alignscore.textio import read_lines

    rs = []
    for i, lp in enumerate(LANG_PAIRS):
        human = np.array([float(x) for x in read_lines(WMT16 / f"DAseg.newstest2016.human.{lp}")])
        mine = np.array(scores[i * PAIRS_PER_LP:(i + 1) * PAIRS_PER_LP])
        rs.append(abs(float(np.corrcoef(mine, human)[0, 1])))
    return float(np.mean(rs))


def ensure_static_model() -> None:
    if (STATIC_MODEL / "model.safetensors").is_file():
        return
    print(f"distilling {STATIC_MODEL} (untimed)", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "alignscore", "distill", "--model", "all-MiniLM-L6-v2", "-o",
                    str(STATIC_MODEL)], check=True, cwd=ROOT)


def run(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="100,3360,100000", help="numbers of pairs, comma-separated")
    ap.add_argument("--only", nargs="*", default=None, choices=CASES, help="cases to run (default: all)")
    ap.add_argument("--record", action="store_true", help="append the table to benchmarks/RESULTS.md")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    names = [n for n in CASES if args.only is None or n in args.only]
    ensure_static_model()
    work = Path(tempfile.mkdtemp(prefix="bench-static-"))
    times: dict[tuple[str, int], list[float]] = {}
    for name in names:  # untimed: the operating system's file cache holds the models and the libraries
        run(commands(work, 20)[name])
    for size in sizes:
        cases = commands(work, size)
        for r in range(args.rounds):
            for name in names:
                times.setdefault((name, size), []).append(run(cases[name]))
                print(f"size {size} round {r + 1} {name}: {times[name, size][-1]:.2f} s", file=sys.stderr)
    med = {key: statistics.median(t) for key, t in times.items()}
    r = {name: mean_abs_r(read_scores(work / f"{name}-3360.tsv")) for name in names if 3360 in sizes}
    lines = [f"machine: {machine()}", "",
             "| case | " + " | ".join(f"{s:,} pairs: s (pairs/s)" for s in sizes) + " | avg abs r, WMT16 |",
             "|---|" + "---:|" * (len(sizes) + 1)]
    for name in names:
        cells = [f"{med[name, s]:.2f} ({s / med[name, s]:,.0f})" for s in sizes]
        lines.append(f"| {LABELS[name]} | " + " | ".join(cells) + f" | {r[name]:.3f} |" if name in r else
                     f"| {LABELS[name]} | " + " | ".join(cells) + " | - |")
    if "bert_score" in names:
        for name in names[1:]:
            ratios = ", ".join(f"{s:,}: {med['bert_score', s] / med[name, s]:.1f}x" for s in sizes)
            lines.append(f"\n{LABELS[name]} vs bert_score, whole process: {ratios}")
    command = "python benchmarks/bench_static.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    text = "\n".join(lines)
    print(f"`{command}`\n\n{text}")
    if args.record:
        with open(ROOT / "benchmarks" / "RESULTS.md", "a", encoding="utf-8") as f:
            f.write(f"\n### static mode vs bert_score (`{command}`)\n\n{text}\n")


if __name__ == "__main__":
    main()
