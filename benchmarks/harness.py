"""A small benchmark harness shared by the ``bench_*.py`` scripts.

Every measurement runs in a fresh Python process, so that each case pays its own model loading
and its peak resident memory (``VmHWM``: what the operating system saw, torch's allocations
included, which ``tracemalloc`` misses) is its own. Cases are interleaved round by round
(A, B, C, A, B, C, ...) so that every case sees the same background load, and each round's
ratios are taken between runs of the same round.

A case is a function ``case(**kwargs) -> Work``, importable as ``"module:function"`` from the
repository root. Everything before the returned ``Work.run`` is set-up and is not timed
(reading data, imports); ``Work.run()`` is timed and returns the per-pair scores
``{metric: tensor [P]}`` (or ``{}``), which the harness compares between cases.

    from benchmarks.harness import Case, interleave, summarize, markdown
    results = interleave([Case("ref", "benchmarks.bench_greedy:bert_score_case", {...}), ...], rounds=3)
    print(markdown(summarize(results, reference="ref", diff_against="ref")))
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ALIGNSCORE_DATA", REPO.parent / "shared" / "data"))
WMT16 = DATA / "wmt16-da-seg"
LANG_PAIRS = ("cs-en", "de-en", "fi-en", "ro-en", "ru-en", "tr-en")


@dataclass
class Work:
    """What a case does: ``run()`` is timed; ``pairs`` is how many pairs it scores."""

    pairs: int
    run: Callable[[], dict[str, Any]]
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Case:
    name: str
    target: str  # "module:function"
    kwargs: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Result:
    case: str
    round: int
    seconds: float
    pairs: int
    cpu_seconds: float  # user + system time of the timed part (all threads)
    peak_rss_mib: float  # the process's high-water mark (VmHWM), imports and model included
    rss_before_mib: float  # resident memory when the timed part started
    load_before: float  # 1-minute load average before and after the run
    load_after: float
    scores_file: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def pairs_per_s(self) -> float:
        return self.pairs / self.seconds if self.seconds > 0 else float("inf")


# -- child side -----------------------------------------------------------------------------------
def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_rss_mib() -> float:
    """This process's resident high-water mark (``VmHWM``). Not ``ru_maxrss``: Linux carries
    the parent's peak over ``exec`` into it."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _child(spec: dict[str, Any]) -> None:
    module, fn = spec["target"].split(":")
    work: Work = getattr(importlib.import_module(module), fn)(**spec["kwargs"])
    before = _rss_mib()
    load_before = os.getloadavg()[0]
    cpu_start = _cpu_seconds()
    start = time.perf_counter()
    scores = work.run()
    seconds = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu_start
    peak = _peak_rss_mib()
    scores_file = None
    if scores:
        import torch

        scores_file = spec["out"] + ".pt"
        torch.save({k: torch.as_tensor(v).double().cpu() for k, v in scores.items()}, scores_file)
    result = dict(seconds=seconds, cpu_seconds=cpu, pairs=work.pairs, peak_rss_mib=peak, rss_before_mib=before,
                  load_before=load_before, load_after=os.getloadavg()[0], scores_file=scores_file,
                  info=work.info)
    Path(spec["out"]).write_text(json.dumps(result))


# -- parent side ----------------------------------------------------------------------------------
def run_case(case: Case, round_: int = 0, workdir: str | Path | None = None, timeout: float | None = None,
             echo: bool = True) -> Result:
    """Run one case in a fresh process and return its measurement."""
    workdir = Path(workdir or tempfile.mkdtemp(prefix="bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / f"{case.name}-{round_}.json"
    spec = {"target": case.target, "kwargs": case.kwargs, "out": str(out)}
    env = {**os.environ, "PYTHONPATH": str(REPO), "TOKENIZERS_PARALLELISM": "false",
           "TRANSFORMERS_VERBOSITY": "error", **case.env}
    proc = subprocess.run([sys.executable, "-m", "benchmarks.harness", "--child", json.dumps(spec)],
                          cwd=REPO, env=env, timeout=timeout, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"case {case.name} failed:\n{proc.stderr[-4000:]}")
    data = json.loads(out.read_text())
    result = Result(case=case.name, round=round_, **data)
    if echo:
        print(f"  round {round_} {case.name:<28} {result.seconds:8.2f} s (cpu {result.cpu_seconds:7.2f} s) "
              f"{result.pairs_per_s:9.1f} pairs/s  "
              f"peak {result.peak_rss_mib:7.0f} MiB  load {result.load_before:.1f}->{result.load_after:.1f}",
              file=sys.stderr, flush=True)
    return result


def interleave(cases: list[Case], rounds: int = 3, workdir: str | Path | None = None,
               timeout: float | None = None) -> list[Result]:
    """``rounds`` rounds; in each, every case once, in the given order."""
    workdir = Path(workdir or tempfile.mkdtemp(prefix="bench-"))
    return [run_case(c, r, workdir, timeout) for r in range(rounds) for c in cases]


def max_abs_diff(a_file: str | None, b_file: str | None) -> float | None:
    """The largest per-pair difference over the metrics both score files share."""
    if not a_file or not b_file:
        return None
    import torch

    a, b = torch.load(a_file), torch.load(b_file)
    shared = [k for k in a if k in b]
    if not shared:
        return None
    return max(float((a[k] - b[k]).abs().max()) for k in shared)


@dataclass
class Row:
    case: str
    pairs: int
    seconds_median: float
    seconds_min: float
    pairs_per_s: float  # from the median time
    ratio: float | None  # median over rounds of reference time / this case's time (>1: faster)
    peak_rss_mib: float  # median over rounds
    max_diff: float | None  # largest per-pair score difference to ``diff_against``
    load: float  # mean 1-minute load average over the runs
    cpu_median: float = 0.0  # median CPU seconds (user + system, all threads)
    ratios: list[float] = field(default_factory=list)  # the per-round ratios behind ``ratio``


def summarize(results: list[Result], reference: str | None = None, diff_against: str | None = None) -> list[Row]:
    by_case: dict[str, list[Result]] = {}
    for r in results:
        by_case.setdefault(r.case, []).append(r)
    rows = []
    for name, rs in by_case.items():
        med = statistics.median(r.seconds for r in rs)
        ratio, ratios = None, []
        if reference is not None and reference in by_case:
            ref_by_round = {r.round: r.seconds for r in by_case[reference]}
            ratios = [ref_by_round[r.round] / r.seconds for r in rs if r.round in ref_by_round]
            ratio = statistics.median(ratios) if ratios else None
        diff = None
        if diff_against is not None and diff_against in by_case and name != diff_against:
            diff = max_abs_diff(by_case[diff_against][0].scores_file, rs[0].scores_file)
        rows.append(Row(name, rs[0].pairs, med, min(r.seconds for r in rs), rs[0].pairs / med, ratio,
                        statistics.median(r.peak_rss_mib for r in rs), diff,
                        statistics.mean((r.load_before + r.load_after) / 2 for r in rs),
                        statistics.median(r.cpu_seconds for r in rs), ratios))
    return rows


def markdown(rows: list[Row], reference: str | None = None, diff_against: str | None = None) -> str:
    head = ["case", "pairs", "median s", "best s", "CPU s", "pairs/s",
            f"speed vs {reference} (per round)" if reference else "speed ratio", "peak RSS MiB",
            f"max abs diff vs {diff_against}" if diff_against else "max abs diff", "load"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        spread = " (" + ", ".join(f"{x:.2f}" for x in r.ratios) + ")" if len(r.ratios) > 1 else ""
        cells = [r.case, str(r.pairs), f"{r.seconds_median:.2f}", f"{r.seconds_min:.2f}", f"{r.cpu_median:.1f}",
                 f"{r.pairs_per_s:.1f}", f"{r.ratio:.2f}x{spread}" if r.ratio is not None else "-",
                 f"{r.peak_rss_mib:.0f}",
                 f"{r.max_diff:.1e}" if r.max_diff is not None else "-", f"{r.load:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    """Date, CPU, cores, memory and library versions, for the results file."""
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for dist in ("torch", "transformers", "onnxruntime", "bert-score", "moverscore", "POT"):
        try:
            versions[dist] = version(dist)
        except PackageNotFoundError:
            versions[dist] = "absent"
    gpu = "none"
    try:
        import torch

        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001
        pass
    return {"date": _dt.date.today().isoformat(), "cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem, 1),
            "gpu": gpu, "python": platform.python_version(), **versions, "load": os.getloadavg()}


def wmt_pairs(lps: tuple[str, ...] = LANG_PAIRS) -> tuple[list[str], list[str]]:
    """Candidates (mt-system) and references of the WMT16 DAseg language pairs, in order."""
    from alignscore.textio import read_lines

    cands, refs = [], []
    for lp in lps:
        cands += read_lines(WMT16 / f"DAseg.newstest2016.mt-system.{lp}")
        refs += read_lines(WMT16 / f"DAseg.newstest2016.reference.{lp}")
    return cands, refs


def save_json(path: str | Path, payload: Any) -> None:
    def default(o: Any) -> Any:
        return asdict(o) if hasattr(o, "__dataclass_fields__") else str(o)

    Path(path).write_text(json.dumps(payload, indent=1, default=default))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", required=True)
    _child(json.loads(parser.parse_args().child))
