"""The engine: many compositions over one encoding, the same numbers as each composition alone;
composition files; every module importable alone; parts registered from outside the package."""

from __future__ import annotations

import ast
import graphlib
import importlib
import json
import math
import os
import random
import textwrap
from pathlib import Path

import pytest
import torch


from alignscore import (WMD, Composition, HFEncoder, IdfS, Pairs, PowerMeans, Runtime, Scorer, SingleLayer,
                        TokenRoles, score_many)
from alignscore.config import compile_run, file_source
from cli_checks import in_one_process, write_toml
from alignscore.errors import ConfigError
from alignscore.filters import RemoveSubwordsPunct
from alignscore.baseline import compute_baseline
from alignscore.scorer import composition_signature

from helpers import REPO, compose, wmt16
from fakes import CountingEncoder

TOL = 1e-6  # other batches change float32 summation order only


def _pairs(n=40):
    data = wmt16("de-en")
    return data["reference"][:n], data["mt-system"][:n]


COMPOSITIONS = {
    "greedy L3": Composition(SingleLayer(3)),
    "greedy L2 idf-S+sep rm": Composition(SingleLayer(2), TokenRoles("drop", (RemoveSubwordsPunct(),)), IdfS(sep=True)),
    "wmd pmeans": Composition(PowerMeans((1, 2, 3)), TokenRoles("keep"), IdfS(), WMD(cost="sqeuclidean", n_gram=2)),
    "wmd L3": Composition(SingleLayer(3), TokenRoles("drop"), aligner=WMD()),
}


def test_many_compositions_over_one_encoding_equal_each_alone(tiny_bert_dir):
    refs, cands = _pairs()
    enc = CountingEncoder(tiny_bert_dir)
    comps = [c.resolve(enc) for c in COMPOSITIONS.values()]
    together = score_many(enc, Pairs.from_pairs(refs, cands), comps, Runtime(batch_size=16))
    texts = len({t.strip() for t in refs + cands})
    assert enc.calls == math.ceil(texts / 16) and enc.texts == texts  # one pass, layers 1-3 for all four
    for comp, result in zip(COMPOSITIONS.values(), together):
        alone = Scorer(HFEncoder(tiny_bert_dir), comp).score(cands, refs)
        for name in comp.metrics:
            assert (result.metrics[name] - alone[name]).abs().max() < TOL, name


def test_baseline_for_every_layer_is_one_encoding(tiny_bert_dir):
    refs, cands = _pairs(30)
    enc = CountingEncoder(tiny_bert_dir)
    baseline = compute_baseline(enc, refs + cands, pairs=200, seed=0, runtime=Runtime(batch_size=1000))
    assert sorted(baseline.rows) == list(range(enc.num_layers + 1))
    assert enc.calls == 1  # every layer 0..4 from one forward pass over the drawn texts
    assert baseline.rows[2]["f1"] != baseline.rows[3]["f1"]
    assert all(0 < row["f1"] < 1 for row in baseline.rows.values())
    # the documented draw, scored pair by pair by a plain scorer: the layer's row is their mean
    texts, rng, drawn = [t.strip() for t in refs + cands if t.strip()], random.Random(0), []
    while len(drawn) < 200:
        i, j = rng.randrange(len(texts)), rng.randrange(len(texts))
        if texts[i] != texts[j]:
            drawn.append((i, j))
    alone = compose(HFEncoder(tiny_bert_dir), SingleLayer(2)).score([texts[i] for i, _ in drawn],
                                                                  [texts[j] for _, j in drawn])
    for m in ("precision", "recall", "f1"):
        assert baseline.rows[2][m] == pytest.approx(float(alone[m].double().mean()), abs=1e-6), m


def test_diff_encodes_each_text_once(tiny_bert_dir, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from alignscore.cli import main
    from alignscore.encoders import huggingface

    refs, cands = _pairs(30)
    (tmp_path / "r.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    (tmp_path / "c.txt").write_text("\n".join(cands) + "\n", encoding="utf-8")
    seen = []
    forward = huggingface.HFEncoder.forward
    monkeypatch.setattr(huggingface.HFEncoder, "forward",
                        lambda self, ids, mask, layers: seen.append(len(ids)) or forward(self, ids, mask, layers))
    result = CliRunner().invoke(main, ["diff", "-r", str(tmp_path / "r.txt"), "-c", str(tmp_path / "c.txt"),
                                       "--model", tiny_bert_dir, "--batch-size", "1000", "--top", "0",
                                       "--a", "--layer 3", "--b", "--layer 2 --aligner wmd --special-tokens drop"])
    assert result.exit_code == 0, result.output
    assert seen == [len({t.strip() for t in refs + cands})]  # both sides from one batch of every text


def test_weights_accumulate_over_chunks_and_merge(tiny_bert_dir):
    from alignscore.tokens import TokenTable
    from alignscore.weighting import WeightState

    refs, cands = _pairs(30)
    enc = HFEncoder(tiny_bert_dir)
    weighting = IdfS(sep=True)
    whole = Pairs.from_pairs(refs, cands)
    want = weighting.token_weights(TokenTable.from_tokenized(enc.tokenize(whole.texts)), whole.ref_counts, whole.cand_counts, enc)
    states = []
    for lo, hi in ((0, 7), (7, 30)):  # two "processes" or chunks
        part = Pairs.from_pairs(refs[lo:hi], cands[lo:hi])
        state = WeightState.empty(enc.vocab_size)
        weighting.update(state, TokenTable.from_tokenized(enc.tokenize(part.texts)), part.ref_counts, part.cand_counts)
        states.append(state)
    states[0].merge(states[1])
    got = weighting.compute(states[0], enc)
    # bit for bit: document frequencies are whole counts, added exactly in any order
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


# -- composition files ------------------------------------------------------------------------------
def test_composition_files_round_trip(tmp_path, tiny_bert_dir):
    (tmp_path / "stop.txt").write_text("the\nof\n", encoding="utf-8")
    (tmp_path / "corpus.txt").write_text("\n".join(wmt16("de-en")["reference"][:50]) + "\n", encoding="utf-8")
    spec = {"model": tiny_bert_dir, "aggregator": {"name": "pmeans", "layers": [-3, -2, -1],
                                                   "powers": [-math.inf, 1.0, math.inf]},
            "special_tokens": "keep", "filters": ["rm", {"name": "stopwords", "file": "stop.txt"}],
            "weighting": "idf-L", "idf_corpus": "corpus.txt", "sep": True,
            "aligner": {"name": "wmd", "n_gram": 2, "cost": "sqeuclidean"}, "multi_ref": "mean"}
    path = write_toml(spec, tmp_path / "comp.toml")
    enc = HFEncoder(tiny_bert_dir)
    first = compile_run([file_source(path)])
    again = tmp_path / "again.toml"
    again.write_text(first.toml(), encoding="utf-8")
    second = compile_run([file_source(again)])
    assert first == second
    sig = str(composition_signature(first.composition.resolve(enc), enc))
    assert sig == str(composition_signature(second.composition.resolve(enc), enc))
    assert "pmeans(L2,3,4" in sig and "stop(stop.txt#" in sig and ",n=2)" in sig


def test_score_config_equals_the_same_options(tmp_path, tiny_bert_dir):
    from click.testing import CliRunner

    from alignscore.cli import main

    refs, cands = _pairs(12)
    (tmp_path / "r.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    (tmp_path / "c.txt").write_text("\n".join(cands) + "\n", encoding="utf-8")
    write_toml({"model": tiny_bert_dir, "layer": 3, "special_tokens": "drop", "weighting": "idf-S",
                "aligner": {"name": "wmd", "n_gram": 2}}, tmp_path / "comp.toml")
    common = ["score", "-r", str(tmp_path / "r.txt"), "-c", str(tmp_path / "c.txt"), "-q"]
    by_file = CliRunner().invoke(main, common + ["--config", str(tmp_path / "comp.toml")])
    by_options = CliRunner().invoke(main, common + ["--model", tiny_bert_dir, "--layer", "3", "--special-tokens",
                                                    "drop", "--weighting", "idf-S", "--aligner", "wmd",
                                                    "--n-gram", "2"])
    assert by_file.exit_code == 0 and by_options.exit_code == 0, by_file.output + by_options.output
    assert by_file.stdout == by_options.stdout and "align:wmd(euclidean,1-d,n=2)" in by_file.stdout


def test_bad_composition_files_are_one_clear_error(tmp_path):
    from click.testing import CliRunner

    from alignscore.cli import main

    (tmp_path / "r.txt").write_text("a b\n", encoding="utf-8")
    cases = {"unknown key": 'colour = "red"\n', "unknown part": 'aligner = "magic"\n',
             "bad setting": 'aligner = { name = "wmd", reg = 2 }\n', "not toml": "aligner = \n"}
    for name, text in cases.items():
        (tmp_path / "c.toml").write_text(text, encoding="utf-8")
        result = CliRunner().invoke(main, ["score", "-r", str(tmp_path / "r.txt"), "-c", str(tmp_path / "r.txt"),
                                           "--config", str(tmp_path / "c.toml")])
        assert result.exit_code == 1, name
        assert result.stderr.startswith("alignscore: error: ") and result.stderr.count("\n") == 1, result.stderr


def test_compositions_check_their_parts():
    with pytest.raises(ConfigError, match="aggregator must be"):
        Composition(aggregator="single")
    with pytest.raises(ConfigError, match="no output 'f1'"):
        Composition(aligner=WMD(), metric="f1")
    with pytest.raises(ConfigError, match="multi_ref"):
        Composition(multi_ref="min")


# -- the package -----------------------------------------------------------------------------------
def _modules() -> list[str]:
    root = REPO / "alignscore"
    out = []
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append(".".join(parts))
    return out


def _imports(module: str, path: Path, modules: set[str]) -> set[str]:
    """The package modules ``module`` imports anywhere in its source (functions and
    ``TYPE_CHECKING`` blocks too), with the packages that importing each one runs first."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            names = [f"{target}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            while name and name != module and not module.startswith(name + "."):
                found.add(name)
                name = name.rpartition(".")[0]
    return found


def test_every_module_imports_alone():
    """Read from the source: the package's import graph has no cycle, so a module imports alone
    whatever was imported before it; then every module imports (module-level code runs)."""
    paths = {m: REPO / (m.replace(".", "/") + ".py") for m in _modules()}
    paths = {m: p if p.is_file() else p.with_suffix("") / "__init__.py" for m, p in paths.items()}
    graph = {m: _imports(m, p, set(paths)) for m, p in paths.items()}
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        raise AssertionError(f"import cycle: {' -> '.join(exc.args[1])}") from None
    assert "alignscore.cli.options" in graph["alignscore.cli.score"]  # the reader sees relative imports
    for module in order:
        importlib.import_module(module)


def test_the_engine_and_the_parts_import_no_configuration_module():
    """The engine, the scorer and every part are built parts: nothing they import, directly or
    through another module (the root package's own __init__ aside), is in alignscore.config."""
    paths = {m: REPO / (m.replace(".", "/") + ".py") for m in _modules()}
    paths = {m: p if p.is_file() else p.with_suffix("") / "__init__.py" for m, p in paths.items()}
    graph = {m: _imports(m, p, set(paths)) - {"alignscore"} for m, p in paths.items()}
    for start in ("alignscore.engine", "alignscore.scorer", "alignscore.composition", "alignscore.aggregators",
                  "alignscore.aligners", "alignscore.weighting", "alignscore.filters", "alignscore.encoders"):
        seen, todo = set(), [start]
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo += graph[module]
        assert not {m for m in seen if m.startswith("alignscore.config")}, start


PLUGIN = '''
"""An aligner from outside alignscore: the share of candidate tokens whose best match is above 0.5."""
from dataclasses import dataclass

import torch

from alignscore import ALIGNERS, Aligner
from alignscore.aligners import weighted_mean


@ALIGNERS.register("overlap")
@dataclass(frozen=True)
class Overlap(Aligner):
    threshold: float = 0.5
    name = "overlap"
    metrics = ("overlap",)
    primary = "overlap"

    def __call__(self, batch):
        sim = torch.bmm(batch.cand, batch.ref.transpose(1, 2))
        sim = sim.masked_fill(~batch.ref_match.unsqueeze(1), float("-inf"))
        best = sim.amax(dim=2) if sim.shape[2] else torch.zeros(sim.shape[:2])
        return {"overlap": weighted_mean((best > self.threshold).double(), batch.cand_mass.double())}

    def signature(self):
        return f"overlap(>{self.threshold:g})"
'''


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    """A package registering aligner "overlap" through the ``alignscore.parts`` entry points."""
    root = tmp_path_factory.mktemp("plugin")
    (root / "overlap_plugin.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    info = root / "overlap_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: overlap-plugin\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[alignscore.parts]\noverlap = overlap_plugin\n", encoding="utf-8")
    return root


@pytest.mark.slow
def test_an_aligner_registered_outside_runs_through_cli_grid_and_file(plugin_path, tiny_bert_dir, tmp_path):
    refs, cands = _pairs(12)
    (tmp_path / "r.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    (tmp_path / "c.txt").write_text("\n".join(cands) + "\n", encoding="utf-8")
    (tmp_path / "comp.toml").write_text(f'model = "{tiny_bert_dir}"\nlayer = 3\naligner = '
                                        '{ name = "overlap", threshold = 0.5 }\n', encoding="utf-8")

    data = tmp_path / "daseg"
    data.mkdir()
    for lp in ("de-en", "ru-en"):
        files = wmt16(lp)
        for kind in ("reference", "mt-system", "human"):
            (data / f"DAseg.newstest2016.{kind}.{lp}").write_text("\n".join(files[kind][:20]) + "\n", encoding="utf-8")
    (tmp_path / "grid.toml").write_text(textwrap.dedent(f"""
        [models.base]
        model = "{tiny_bert_dir}"
        layer = 3
        [[columns]]
        name = "Overlap"
        aligner = "overlap"
        threshold = 0.4
        [[columns]]
        name = "F"
        aligner = "greedy"
        [[rows]]
        name = "Vanilla"
        """), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_path), str(REPO)])}  # the plugin found at start-up
    by_option, by_file, grid = in_one_process([
        ["score", "-r", str(tmp_path / "r.txt"), "-c", str(tmp_path / "c.txt"), "--model", tiny_bert_dir, "--layer",
         "3", "--aligner", "overlap", "--format", "jsonl", "-q"],
        ["score", "-r", str(tmp_path / "r.txt"), "-c", str(tmp_path / "c.txt"), "--config", str(tmp_path / "comp.toml"),
         "--format", "jsonl", "-q"],
        ["ablate", str(tmp_path / "grid.toml"), "--data", str(data), "--bootstrap", "0", "-q", "-o",
         str(tmp_path / "out")]], env)
    assert by_option.returncode == 0, by_option.stderr
    rows = [json.loads(line) for line in by_option.stdout.splitlines()]
    assert len(rows) == 12 and all(0 <= r["overlap"] <= 1 for r in rows)
    assert "align:overlap(>0.5)" in by_option.stderr
    assert by_file.returncode == 0, by_file.stderr
    assert by_file.stdout == by_option.stdout
    assert grid.returncode == 0, grid.stderr
    assert "align:overlap(>0.4)" in (tmp_path / "out" / "signatures.tsv").read_text(encoding="utf-8")
    assert "Overlap" in (tmp_path / "out" / "table.md").read_text(encoding="utf-8")


def test_scores_unpack_to_their_metrics_in_bert_score_order(tiny_bert_dir) -> None:
    """``P, R, F = alignscore.score(...)`` as with bert_score; the named fields stay; an index
    picks a metric in the aligner's order; the OT aligners give their one score."""
    import alignscore

    cands, refs = ["the cat sat on the mat", "a dog ran"], ["a cat sat on a mat", "the dog was running"]
    scores = alignscore.score(cands, refs, model=tiny_bert_dir, layer=2)
    P, R, F = alignscore.score(cands, refs, model=tiny_bert_dir, layer=2)
    for got, name in ((P, "precision"), (R, "recall"), (F, "f1")):
        assert torch.equal(got, scores[name]) and torch.equal(got, getattr(scores, name))
    assert [torch.equal(scores[i], scores[m]) for i, m in ((0, "precision"), (2, "f1"), (-1, "f1"))] == [True] * 3
    assert len(scores) == 2  # still the number of candidates
    with pytest.raises(IndexError, match="metric 3 of 3"):
        scores[3]
    with pytest.raises(KeyError):
        scores["score"]
    *_, fbeta = alignscore.score(cands, refs, model=tiny_bert_dir, layer=2, beta=2.0)
    assert list(alignscore.score(cands, refs, model=tiny_bert_dir, layer=2, beta=2.0).metrics)[-1] == "fbeta"
    assert fbeta.shape == (2,)
    (wmd,) = alignscore.score(cands, refs, model=tiny_bert_dir, layer=2, aligner="wmd")
    assert torch.equal(wmd, alignscore.score(cands, refs, model=tiny_bert_dir, layer=2, aligner="wmd").score)
    scorer = alignscore.bertscore(tiny_bert_dir, layer=2)
    P, R, F = scorer.pairwise(cands, refs)
    assert P.shape == (2, 2) and torch.equal(F, scorer.pairwise(cands, refs).f1)


def test_a_nan_vector_is_a_non_finite_error_not_a_configuration_error() -> None:
    """NaN in the token vectors stops the run before any score, with its own error type: the
    options may be fine (a float16 overflow, a broken model)."""
    from alignscore.errors import AlignScoreError, NonFiniteError
    from alignscore.testing import WordEncoder

    class Overflowing(WordEncoder):
        def forward(self, input_ids, attention_mask, layers):
            out = super().forward(input_ids, attention_mask, layers)
            return out.masked_fill(input_ids.unsqueeze(-1) == 2, float("nan"))  # [SEP]'s vector

    with pytest.raises(NonFiniteError, match="the token vectors hold NaN or infinity") as info:
        Scorer(Overflowing()).score(["the cat sat"], ["a cat sat"])
    assert isinstance(info.value, AlignScoreError) and not isinstance(info.value, ConfigError)
