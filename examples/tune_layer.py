"""Pick a model's default layer the way BERTScore Appendix B did: the layer whose F (no idf)
has the best mean |Pearson r| with the WMT16 to-English DA scores.

    python examples/tune_layer.py all-MiniLM-L6-v2 ../shared/data/wmt16-da-seg

One composition per layer, all scored by the engine from one encoding of every sentence.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from alignscore import Composition, HFEncoder, Pairs, Runtime, SingleLayer, score_many
from alignscore.evaluation import correlation, load_daseg


def main(model: str, data: Path) -> None:
    lang_pairs = load_daseg(data)
    refs = [r for lp in lang_pairs for r in lp.references]
    cands = [c for lp in lang_pairs for c in lp.candidates]
    enc = HFEncoder(model)
    layers = range(enc.num_layers + 1)
    results = score_many(enc, Pairs.from_pairs(refs, cands), [Composition(SingleLayer(k)) for k in layers],
                         Runtime(progress=True))
    bounds = np.cumsum([0] + [len(lp) for lp in lang_pairs])
    for k, result in zip(layers, results):
        f1 = result.metrics["f1"].double().numpy()
        rs = [abs(correlation(f1[a:b], lp.human)[0]) for a, b, lp in zip(bounds, bounds[1:], lang_pairs)]
        print(f"layer {k}: mean |r| = {sum(rs) / len(rs):.4f}  "
              + " ".join(f"{lp.name}={r:.3f}" for lp, r in zip(lang_pairs, rs)))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
