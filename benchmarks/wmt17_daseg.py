"""WMT17's segment-level direct assessments to English as a DAseg folder, for the checks on a
year that no test uses (``--holdout`` of ``alignscore fit`` and ``alignscore tune``, reference-free
scoring against sources).

The source is the test set the XMoverScore authors publish with their code (Apache-2.0):
https://github.com/AIPHES/ACL20-Reference-Free-MT-Evaluation, folder ``WMT17/testset/``
(``testset_<lp>.tsv``: LP, source, translation, reference, HUMAN_score, sentBLEU; 560 segments per
pair, 435 for lv-en; checked at commit 2026e18c8874e5659ea6c03f82ec3e600d0feac1). This machine cannot
download it (no network but the package registries): clone or download that folder elsewhere, then

    python benchmarks/wmt17_daseg.py TESTSET_DIR OUT_DIR

writes ``DAseg.newstest2017.{source,reference,mt-system,human}.<lp>`` for every ``testset_<lp>.tsv``
in TESTSET_DIR, which :func:`alignscore.evaluation.wmt.load_daseg` reads.
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

KINDS = ("source", "mt-system", "reference", "human")
COLUMNS = ("source", "translation", "reference", "HUMAN_score")


def convert(testset: Path, out: Path) -> list[str]:
    """Write the DAseg files of every ``testset_<lp>.tsv`` in ``testset``; the language pairs."""
    out.mkdir(parents=True, exist_ok=True)
    done = []
    for path in sorted(testset.glob("testset_*.tsv")):
        lp = path.stem.removeprefix("testset_")
        with open(path, encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
        for row in rows:
            if row["LP"] != lp or not math.isfinite(float(row["HUMAN_score"])):
                raise SystemExit(f"{path}: a row of {row['LP']} or a human score that is not a number")
            if any("\n" in row[c] or "\r" in row[c] for c in COLUMNS):
                raise SystemExit(f"{path}: a field holds a line break")
        for kind, column in zip(KINDS, COLUMNS):
            target = out / f"DAseg.newstest2017.{kind}.{lp}"
            target.write_text("".join(row[column] + "\n" for row in rows), encoding="utf-8")
        done.append(f"{lp} ({len(rows)})")
    if not done:
        raise SystemExit(f"{testset}: no testset_<lp>.tsv files")
    return done


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    print("wrote", ", ".join(convert(Path(sys.argv[1]), Path(sys.argv[2]))))
