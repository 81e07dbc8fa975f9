"""One thread against torch's threads under load: all-MiniLM-L6-v2 (layer 4) scoring 64 WMT16
de-en pairs, the two alternately, three rounds each (what ``alignscore.tune.cost.fastest_threads``
decides at the probe). Usage: ``python benchmarks/threads_under_load.py`` (prints one line)."""

import time, sys, os, torch
import alignscore
from alignscore.config import run_spec
from alignscore.evaluation.wmt import load_daseg
lp = load_daseg(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/wmt16-da-seg", ["de-en"])[0]
cands, refs = lp.candidates[:64], lp.references[:64]
scorer = alignscore.build(run_spec({"model": "all-MiniLM-L6-v2", "layer": 4}))
scorer.score(cands[:8], refs[:8])  # warm-up
most = torch.get_num_threads()
times = {most: [], 1: []}
for n in (most, 1) * 3:
    torch.set_num_threads(n)
    t = time.perf_counter()
    scorer.score(cands, refs)
    times[n].append(time.perf_counter() - t)
print("load", os.getloadavg(), "threads", most, {k: [round(x, 2) for x in v] for k, v in times.items()},
      "min", {k: round(min(v), 2) for k, v in times.items()}, flush=True)
