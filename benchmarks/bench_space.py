"""Compiling the packaged tune space: what `alignscore tune` does before it scores anything (every
run of the space read, checked and planned for the model: 1,658 runs on all-MiniLM-L6-v2).

Imports and transformers' lazy modules load before the timing; each round compiles the space anew
in this process (the first round also reads each part class's settings once).

    python benchmarks/bench_space.py --rounds 3
    PYTHONPATH=/path/to/other/checkout python benchmarks/bench_space.py   # another version's code
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import transformers

    import alignscore
    from alignscore.cli.options import FLAGS
    from alignscore.config import sources_of
    from alignscore.tune.space import load_space

    transformers.AutoTokenizer  # noqa: B018  its lazy imports, out of the timing
    corpus = {"idf_corpus": ("a corpus sentence", "another one")}
    times = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        runs = load_space().candidates(sources_of({"model": args.model}, FLAGS), data=corpus)
        times.append(time.perf_counter() - start)
    print(f"{alignscore.__file__}: {len(runs)} runs compiled in", ", ".join(f"{t:.2f} s" for t in times))


if __name__ == "__main__":
    main()
