"""Pick a model's default layer the way BERTScore Appendix B did: the layer whose F (no idf)
has the best mean |Pearson r| with the WMT16 to-English DA scores.

    python examples/tune_layer.py all-MiniLM-L6-v2 ../shared/data/wmt16-da-seg

Every unique sentence is encoded once with all layers; each layer is then scored from those states.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from scipy.stats import pearsonr

from alignscore import HFEncoder
from alignscore.aligners import Greedy
from alignscore.filters import token_roles
from alignscore.pipeline import align_pairs, embed, unique_texts, unit
from alignscore.textio import read_lines
from alignscore.tokens import TokenTable


def main(model: str, data: Path) -> None:
    lps = sorted(p.name.rsplit(".", 1)[1] for p in data.glob("DAseg.*.human.*"))
    cands, refs, human, lp_of = [], [], [], []
    for lp in lps:
        c = read_lines(next(data.glob(f"DAseg.*.mt-system.{lp}")))
        cands += c
        refs += read_lines(next(data.glob(f"DAseg.*.reference.{lp}")))
        human += [float(x) for x in read_lines(next(data.glob(f"DAseg.*.human.{lp}")))]
        lp_of += [lp] * len(c)
    enc = HFEncoder(model)
    texts, inverse = unique_texts(refs + cands)
    table = TokenTable.from_tokenized(enc.tokenize(texts))
    layers = list(range(enc.num_layers + 1))
    states = embed(enc, table, layers, lambda s: s.permute(1, 2, 0, 3).flatten(2), progress=True)
    states = states.view(len(states), len(layers), -1)
    mass, match = token_roles(table, (), "match-only")
    for k in layers:
        f1 = align_pairs(Greedy(), unit(states[:, k]), table, mass.float(), mass.float(), match,
                         inverse[: len(refs)], inverse[len(refs):])["f1"]
        rs = []
        for lp in lps:
            idx = torch.tensor([i for i, x in enumerate(lp_of) if x == lp])
            rs.append(abs(pearsonr(f1[idx].numpy(), [human[i] for i in idx.tolist()])[0]))
        print(f"layer {k}: mean |r| = {sum(rs) / len(rs):.4f}  " + " ".join(f"{lp}={r:.3f}" for lp, r in zip(lps, rs)))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
