"""Helpers for tests of bad input on the command line: run a command in-process or as a real
process, assert the one-line error, and fingerprint files to show nothing changed."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from click.testing import CliRunner

import alignscore
from alignscore.cli import main

#: the checkout whose code the tests import: a subprocess runs the same code
CODE_ROOT = Path(alignscore.__file__).resolve().parents[1]


def invoke(*args: object) -> tuple[int, str, str]:
    """``alignscore ARGS`` in this process: exit code, stdout, stderr."""
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a crash inside the runner, not an exit of the command
    return result.exit_code, result.stdout, result.stderr


def spawn(*args: object, **kwargs) -> subprocess.Popen:
    """``alignscore ARGS`` as a real process running this checkout's code."""
    env = {**os.environ, "PYTHONPATH": str(CODE_ROOT), "TOKENIZERS_PARALLELISM": "false"}
    env.pop("ALIGNSCORE_DEBUG", None)
    return subprocess.Popen([sys.executable, "-c", "from alignscore.cli import main; main()", *map(str, args)],
                            env=env, **kwargs)


_COMMANDS = """
import json, sys
from click.testing import CliRunner
from alignscore.cli import main
done = [CliRunner().invoke(main, args) for args in json.loads(sys.argv[1])]
print(json.dumps([{"returncode": r.exit_code, "stdout": r.stdout, "stderr": r.stderr} for r in done]))
"""


def in_one_process(commands: list[list[object]], env: dict[str, str]) -> list[SimpleNamespace]:
    """``alignscore ARGS`` for each command, in order, in one real process started with ``env`` (each
    through click's runner: one process pays the imports once): each one's ``returncode``,
    ``stdout`` and ``stderr``."""
    proc = subprocess.run([sys.executable, "-c", _COMMANDS, json.dumps([[str(a) for a in c] for c in commands])],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return [SimpleNamespace(**r) for r in json.loads(proc.stdout)]


def assert_one_error(code: int, stderr: str, *needles: str) -> str:
    """A non-zero exit and, on stderr, exactly one ``alignscore: error:`` line (warnings aside),
    no traceback and no internal error; the error line contains every needle. Returns it."""
    assert code != 0, stderr
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("alignscore: error: ")]
    assert len(errors) == 1 and len(lines) == len(errors) + sum(
        ln.startswith("alignscore: warning: ") for ln in lines), stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def assert_same_tsv(got: str, want: str, tol: float = 1e-6) -> None:
    """Two ``score`` TSV outputs: the same signature and column lines, and the means and scores
    within ``tol`` (float32 rounding: another process may run other kernels, AVX2 vs AVX-512)."""
    got_lines, want_lines = got.splitlines(), want.splitlines()
    assert len(got_lines) == len(want_lines) >= 3, (got, want)
    assert got_lines[0] == want_lines[0] and got_lines[2] == want_lines[2]
    means = [[kv.split("=") for kv in lines[1].split()[2:]] for lines in (got_lines, want_lines)]
    assert [k for k, _ in means[0]] == [k for k, _ in means[1]]
    assert [float(v) for _, v in means[0]] == pytest.approx([float(v) for _, v in means[1]], abs=tol)
    for g, w in zip(got_lines[3:], want_lines[3:]):
        assert [float(x) for x in g.split("\t")] == pytest.approx([float(x) for x in w.split("\t")], abs=tol)


def fingerprint(*paths: str | Path) -> dict[str, str | None]:
    """sha256 of each file (None where there is none), and of each folder's listing and files."""
    out: dict[str, str | None] = {}
    for path in map(Path, paths):
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.is_file():
                    out[str(child)] = hashlib.sha256(child.read_bytes()).hexdigest()
            out[str(path)] = "folder:" + ",".join(sorted(p.name for p in path.iterdir()))
        else:
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    return out


def write_toml(data: dict, path: str | Path) -> Path:
    """A run file (or any TOML) with these keys, as a user would write it."""
    import tomli_w

    Path(path).write_text(tomli_w.dumps(data), encoding="utf-8")
    return Path(path)


def assert_same_run_every_way_in(opts: dict, tmp_path: Path) -> tuple[dict, list[str], Path]:
    """The run ``opts`` describes is the same from keywords, command-line flags (through the CLI's
    parser), a run file, an ablation grid row, a search-space entry and the file it writes.
    Returns the specs by way in, the flags and the written file."""
    from alignscore.ablation.grid import parse_grid
    from alignscore.cli.options import FLAGS, parse_spec
    from alignscore.config import compile_run, file_source, run_spec
    from alignscore.config.sources import sources_of
    from alignscore.tune.space import parse_space

    ways = {"keyword": run_spec(opts)}
    flags = [a for k, v in opts.items() for a in ("--" + k.replace("_", "-"),
                                                  ",".join(map(str, v)) if isinstance(v, list) else str(v))]
    ways["flag"] = compile_run(sources_of(parse_spec(" ".join(flags), "--a"), FLAGS))
    ways["file"] = compile_run([file_source(write_toml(opts, Path(tmp_path) / "run.toml"))])
    grid = parse_grid({"models": {"base": {"model": opts["model"]}}, "columns": [{"name": "c", "aligner": "greedy"}],
                       "rows": [{"name": "r", **{k: v for k, v in opts.items() if k != "model"}}]})
    ways["grid row"] = compile_run(grid.sources(grid.rows[0], grid.columns[0]))
    (candidate,) = parse_space({k: [v] for k, v in opts.items()}).candidates()
    ways["space entry"] = candidate.spec
    for way, spec in ways.items():
        assert spec == ways["keyword"], way
    written = Path(tmp_path) / "written.toml"
    written.write_text(ways["keyword"].toml(), encoding="utf-8")
    assert compile_run([file_source(written)]) == ways["keyword"]
    return ways, flags, written


def assert_score_config_reproduces(out: Path, data: Path, lang_pairs: tuple[str, ...], year: str = "2016") -> None:
    """``alignscore score --config OUT/best.toml`` on each language pair's DAseg files gives the
    scores ``alignscore fit`` wrote to ``OUT/scores.csv``, to 1e-6."""
    import csv
    import json

    import numpy as np

    from alignscore.config import compile_run, file_source

    fitted: dict[str, list[float]] = {}
    with open(out / "scores.csv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            fitted.setdefault(row["lang_pair"], []).append(float(row["score"]))
    composition = compile_run([file_source(out / "best.toml")]).composition
    metric = composition.metric or composition.aligner.primary
    for lp in lang_pairs:
        code, stdout, stderr = invoke("score", "--config", out / "best.toml", "-c",
                                      data / f"DAseg.newstest{year}.mt-system.{lp}",
                                      "-r", data / f"DAseg.newstest{year}.reference.{lp}", "--format", "jsonl", "-q")
        assert code == 0, stderr
        got = [json.loads(line)[metric] for line in stdout.splitlines() if line.strip()]
        assert np.allclose(got, fitted[lp], rtol=0, atol=1e-6), lp
