"""One schema, one compiler: every way in (flags, keywords, run files, grid cells, search
spaces, presets) describes a run with the same names and compiles to the same RunSpec; every
setting is checked before a model loads, and an error names the option as the user wrote it."""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import alignscore
from alignscore import Composition, Runtime, RunSpec, Scorer, Signature, run_spec
from alignscore.ablation import parse_grid
from alignscore.cli.options import FLAGS, parse_spec
from alignscore.config import compile_run, file_source
from alignscore.config.compile import sources_of
from alignscore.config.sources import KEYWORDS, Naming
from alignscore.config.schema import STAGES, options, part_settings
from alignscore.encoders.huggingface import HFEncoder
from alignscore.errors import ConfigError
from alignscore.remap import Remapping, model_digest, save_remapping
from alignscore.tune.space import parse_space
from alignscore.settings import Setting
from cli_checks import CODE_ROOT, assert_one_error, fingerprint, invoke, write_toml

CANDS = ["the cat sat on the mat", "a dog ran in the park", "hello there, world"]
REFS = ["a cat sat on a mat", "the dog was running in a park", "hello world"]


# -- every option, five ways in ---------------------------------------------------------------------
def _example(s: Setting, files: dict[str, str]) -> Any:
    """A valid value of a setting that is not its default."""
    d = s.decl
    if d.file:
        return files["text"]
    if s.boolean:
        return not s.default
    if d.choices and s.kinds <= {str}:
        return next(c for c in d.choices if c != s.default)
    if s.sequence is int:
        return (-2, -1)
    if s.sequence is float:
        return (1.0, math.inf)
    if int in s.kinds:
        low = d.ge if d.ge is not None else (d.gt + 1 if d.gt is not None else 1)
        return int(max(low, 0)) + 2
    if float in s.kinds:
        base = s.default if isinstance(s.default, float) else 0.5
        value = base * 2
        return min(value, d.le) if d.le is not None else value
    if str in s.kinds:
        return "v1"
    raise AssertionError(f"no example for {s}")


# the other settings a part or setting needs to be made at all
NEEDS = {"baryscore": {"aggregator": "stack"}, "idf-L": {"idf_corpus": "text"},
         "stopwords": {"stopwords": "text"}, "window_stride": {"long_texts": "window"},
         "cache_size": {"cache": "dir"}, "cache_timeout": {"cache": "dir"}, "rescale": {"baseline": "baseline"},
         "lowercase": {"model": "vec"}, "sinkhorn_dtype": {"reg": 0.05},
         "revision": {"model": "roberta-large"},  # a hub id: a local folder has no revisions
         "mix_weights": {"layers": (-2, -1)}, "lm_weight": {"lm": "v1"}, "lm_score": {"lm": "v1"},
         "lm_location": {"lm": "v1"}, "lm_scale": {"lm": "v1"}, "special_weight": {"special_tokens": "keep"}}
# sources and shorthands (tested on their own); the metric and the baseline: examples of their own below
SKIP = {"preset", "config", "lang", "idf", "model", "device", "metric", "baseline", "remap"}


def _cases(files: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """``(name, options)``: every registered part by name, and every setting of every part,
    of the encoder, the composition, the runtime and the cache, each with a non-default value."""
    def needs(key: str) -> dict[str, Any]:
        return {k: files.get(v, v) if isinstance(v, str) else v for k, v in NEEDS.get(key, {}).items()}

    out: list[tuple[str, dict[str, Any]]] = []
    for stage, registry in STAGES.items():
        for name in registry.names():
            base = {stage: name, **needs(name)}
            out.append((f"{stage}={name}", base))
            for s in part_settings(stage, name).values():
                out.append((f"{name}.{s.name}", {**base, s.name: _example(s, files), **needs(s.name)}))
    for name in ("rm", "ms2-punct"):
        out.append((f"filters={name}", {"filters": [name]}))
    out.append(("stopwords", {"stopwords": files["text"]}))
    out.append(("stopwords_unit", {"stopwords": files["text"], "stopwords_unit": "token"}))
    table = options()
    for option in table.values():
        if option.group in ("encoder", "runtime", "cache", "composition") and option.name not in SKIP \
                and option.name not in STAGES and option.name != "filters" and option.setting is not None:
            out.append((option.name, {option.name: _example(option.setting, files), **needs(option.name)}))
    out += [("special_tokens", {"special_tokens": "keep"}), ("metric", {"metric": "recall"}),
            ("multi_ref", {"multi_ref": "mean"}), ("rescale", {"rescale": True, "baseline": files["baseline"]}),
            ("baseline", {"baseline": files["baseline"]}), ("device", {"device": "cpu"}), ("lang", {"lang": "zh"}),
            ("remap", {"remap": files["remap"], "layer": 2})]
    return out


def _flags(opts: dict[str, Any]) -> list[str]:
    """The command-line form of options (lists as comma lists, switches as --x / --no-x)."""
    table = options()
    args: list[str] = []
    for key, value in opts.items():
        option = table[key]
        if option.boolean:
            args.append(option.flag if value else "--no-" + option.flag[2:])
        elif isinstance(value, (list, tuple)):
            args += [option.flag, ",".join("inf" if v == math.inf else str(v) for v in value)]
        else:
            args += [option.flag, str(value)]
    return args


@pytest.fixture(scope="module")
def example_files(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: str) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("examples")
    (folder / "words.txt").write_text("the cat\nsat on\na mat\n", encoding="utf-8")
    (folder / "small.vec").write_text("2 3\nthe 1 0 0\ncat 0 1 0\n", encoding="utf-8")
    (folder / "base.csv").write_text("LAYER,P,R,F\n" + "".join(f"{k},0.5,0.5,0.5\n" for k in range(5)),
                                     encoding="utf-8")
    encoder = HFEncoder(tiny_bert_dir)
    save_remapping(Remapping("umd", torch.ones(encoder.load_model().config.hidden_size, dtype=torch.float64),
                             tiny_bert_dir, model_digest(encoder), 2), folder / "de.remap")
    return {"text": str(folder / "words.txt"), "vec": str(folder / "small.vec"), "dir": str(folder / "cache"),
            "baseline": str(folder / "base.csv"), "model": tiny_bert_dir, "remap": str(folder / "de.remap")}


def test_every_option_compiles_the_same_from_every_way_in(example_files, tmp_path) -> None:
    """The same value as a flag, a Python keyword, a run-file key, a grid cell and a search-space
    entry compiles to the same RunSpec and the same signature: for every registered part and
    every setting of every part, of the encoder, the composition, the runtime and the cache."""
    encoders: dict[Any, Any] = {}
    cases = _cases(example_files)
    assert len(cases) > 60
    for i, (name, opts) in enumerate(cases):
        opts = {"model": example_files["model"], **opts}
        if "lang" in opts:
            opts.pop("model")
        single = isinstance(run_spec(opts).composition.aggregator, alignscore.SingleLayer)
        if single and "layer" not in opts and "lang" not in opts and opts.get("model") != example_files["vec"]:
            opts["layer"] = 2  # the tiny model has no default layer
        ways: dict[str, RunSpec] = {}
        ways["keyword"] = run_spec(opts)
        ways["flag"] = compile_run(sources_of(parse_spec(shlex.join(_flags(opts)), "--a"), FLAGS))
        run_file = write_toml({k: list(v) if isinstance(v, tuple) else v for k, v in opts.items()},
                              tmp_path / f"run{i}.toml")
        ways["file"] = compile_run([file_source(run_file)])
        model = opts.pop("model", None)
        role = {"model": model} if model else {"model": example_files["model"]}
        row = {"name": "r", **{k: list(v) if isinstance(v, tuple) else v for k, v in opts.items()}}
        column = {"name": "c", "aligner": row.pop("aligner", "greedy")}
        grid = parse_grid({"models": {"base": role}, "columns": [column], "rows": [row]})
        ways["grid cell"] = compile_run(grid.sources(grid.rows[0], grid.columns[0]))
        space = parse_space({k: [list(v) if isinstance(v, tuple) else v] for k, v in {**role, **opts}.items()
                             if not (k == "model" and "lang" in opts)})
        (candidate,) = space.candidates()
        ways["space entry"] = candidate.spec
        for way, spec in ways.items():
            assert spec == ways["keyword"], f"{name}: {way} differs"
        key = (ways["keyword"].encoder, ways["keyword"].runtime.device)
        if key not in encoders:
            encoders[key] = alignscore.build(ways["keyword"], check=False).encoder
        if "lang" in opts or name == "revision":
            continue  # zh and the revision's hub id name models that are not here
        signatures = {str(Scorer(encoders[key], spec.composition).signature()) for spec in ways.values()}
        assert len(signatures) == 1, name


def test_the_written_file_fixes_every_setting_and_reads_back_to_the_same_run(example_files, tmp_path) -> None:
    for i, (name, opts) in enumerate(_cases(example_files)):
        if "lang" in opts:
            continue
        spec = run_spec({"model": example_files["model"], **opts})
        path = tmp_path / f"w{i}.toml"
        path.write_text(spec.toml(), encoding="utf-8")
        again = compile_run([file_source(path)])
        assert again == spec, name
        written = set(spec.to_mapping())
        for stage in STAGES:
            part = getattr(spec.composition, stage)
            settings = part_settings(stage, STAGES[stage].name_of(part))
            assert {s for s in settings if getattr(part, s) is not None} <= written, name


@st.composite
def run_options(draw: st.DrawFn) -> dict:
    opts: dict = {"layer": draw(st.integers(1, 4))}
    aligner = draw(st.sampled_from(["greedy", "wmd", "sinkhorn"]))
    opts["aligner"] = aligner
    if aligner != "greedy":
        opts["n_gram"] = draw(st.sampled_from([1, 2, "sentence"]))
        opts["cost"] = draw(st.sampled_from(["euclidean", "sqeuclidean"]))
        opts["score_form"] = draw(st.sampled_from(["1-d", "1/(1+d)"]))
    elif draw(st.booleans()):
        opts["beta"] = draw(st.sampled_from([0.5, 2.0]))
    if aligner == "sinkhorn":
        opts["reg"] = 0.05
    weighting = draw(st.sampled_from(["none", "idf-S"]))
    opts["weighting"] = weighting
    if weighting == "idf-S" and draw(st.booleans()):
        opts["sep"] = True
    opts["special_tokens"] = draw(st.sampled_from(["match-only", "drop", "keep"]))
    filters = draw(st.lists(st.sampled_from(["rm", "ms2-punct"]), unique=True, max_size=2))
    if filters:
        opts["filters"] = filters
    if draw(st.booleans()):
        opts["multi_ref"] = "mean"
    if draw(st.booleans()):
        opts["long_texts"] = "window"
    return opts


@pytest.mark.slow
@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(opts=run_options())
def test_every_way_in_gives_the_same_scores_and_signature(tiny_bert_dir, tmp_path, opts) -> None:
    opts = {"model": tiny_bert_dir, **opts}
    refs = [[r, c] for r, c in zip(REFS, CANDS)]
    api = alignscore.score(CANDS, refs, **opts)
    c, r1, r2 = (tmp_path / f"{n}.txt" for n in ("c", "r1", "r2"))
    for path, lines in ((c, CANDS), (r1, REFS), (r2, CANDS)):
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    texts = ["score", "-c", c, "-r", r1, r2, "-q"]
    code, out, err = invoke(*texts, *_flags(opts))
    assert code == 0, err
    config = tmp_path / "run.toml"
    code, _, err = invoke("config", *_flags(opts), "-o", config)
    assert code == 0, err
    code, from_file, err = invoke(*texts, "--config", config)
    assert code == 0, err
    metrics = list(api.metrics)
    for tsv in (out, from_file):
        lines = tsv.splitlines()
        assert lines[0][2:] == str(api.signature)
        for i, line in enumerate(lines[3:]):  # the same computation through the same engine: bit for bit
            assert [float(x) for x in line.split("\t")][:len(metrics)] == [float(api[m][i]) for m in metrics]
    assert compile_run([file_source(config)]) == run_spec(opts)


def test_a_run_file_scores_as_its_flags_from_any_folder(files, tiny_bert_dir, tmp_path) -> None:
    """`config` writes every file it names absolute (the model too), so `score --config` from
    another folder gives the output of the flags, byte for byte."""
    work = tmp_path / "work"
    work.mkdir()
    for name, lines in (("c.txt", CANDS), ("r.txt", REFS), ("stop.txt", ["the", "a"]), ("corpus.txt", REFS + CANDS)):
        (work / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    model = work / "model"
    model.symlink_to(tiny_bert_dir, target_is_directory=True)
    opts = ["--model", "model", "--layer", "3", "--aligner", "wmd", "--n-gram", "2", "--weighting", "idf-L",
            "--idf-corpus", "corpus.txt", "--sep", "--stopwords", "stop.txt", "--batch-size", "2"]

    def cli(*args: object, cwd: Path) -> tuple[int, str, str]:
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(cwd)
            return invoke(*args)

    code, _, err = cli("config", *opts, "-o", "run.toml", cwd=work)
    assert code == 0, err
    text = (work / "run.toml").read_text(encoding="utf-8")
    assert f'model = "{model.resolve()}"' in text and str(work / "corpus.txt") in text and str(work / "stop.txt") in text
    direct = cli("score", "-c", "c.txt", "-r", "r.txt", *opts, "-q", cwd=work)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    via_file = cli("score", "-c", work / "c.txt", "-r", work / "r.txt", "--config", work / "run.toml", "-q",
                   cwd=elsewhere)
    assert direct[0] == 0 and via_file[0] == 0, direct[2] + via_file[2]
    assert direct[1] == via_file[1] and direct[1].startswith("# model:")


def test_a_grid_row_with_encoder_settings_equals_score_with_those_flags(files, tiny_bert_dir, tmp_path) -> None:
    """`ablate` with a `dtype = "bfloat16"` row, and with a window-mode row, equals `score` with
    --dtype bfloat16 and --long-texts window on the same pairs."""
    from alignscore.ablation import load_grid, run_grid
    from alignscore.evaluation.wmt import LangPair
    import numpy as np

    long = " ".join(f"word{i} and more" for i in range(40))
    refs, cands = REFS + [long + " extra"], CANDS + [long]
    grid = tmp_path / "g.toml"
    grid.write_text(f'[models.base]\nmodel = "{tiny_bert_dir}"\nlayer = 2\nmax_length = 32\n'
                    '[[columns]]\nname = "F"\naligner = "greedy"\n[[rows]]\nname = "plain"\n'
                    '[[rows]]\nname = "bf16"\ndtype = "bfloat16"\n[[rows]]\nname = "window"\nlong_texts = "window"\n',
                    encoding="utf-8")
    place = LangPair("2016", "xx", "en", refs, cands, np.arange(len(cands), dtype=float))
    with pytest.warns(UserWarning, match="truncated"):
        run = run_grid(load_grid(grid), [place])
    c, r = files("c.txt", cands), files("r.txt", refs)
    for row, extra in ((1, ["--dtype", "bfloat16"]), (2, ["--long-texts", "window"])):
        code, out, err = invoke("score", "-c", c, "-r", r, "--model", tiny_bert_dir, "--layer", "2",
                                "--max-length", "32", "-q", "--format", "jsonl", *extra)
        assert code == 0, err
        cell = run.cell(row, 0, "xx-en")
        assert cell.scores.tolist() == [json.loads(line)["f1"] for line in out.splitlines()]
        assert cell.signature == err.splitlines()[-1].removeprefix("signature: ")
    assert run.cell(1, 0, "xx-en").scores.tolist() != run.cell(0, 0, "xx-en").scores.tolist()
    assert run.cell(2, 0, "xx-en").scores[-1] != run.cell(0, 0, "xx-en").scores[-1]


# -- precedence and parts -----------------------------------------------------------------------------
@pytest.mark.parametrize("opts, stage, want", [
    ({"preset": "moverscore-v1", "aligner": "sinkhorn"}, "aligner",
     ("Sinkhorn", {"cost": "sqeuclidean", "score_form": "1-d"})),  # the settings both take are kept
    ({"preset": "moverscore-v2", "weighting": "idf-L", "idf_corpus": __file__}, "weighting",
     ("IdfL", {"sep": True, "idf_corpus": __file__})),
    ({"layer": 3}, "aggregator", ("SingleLayer", {"layer": 3})),
    ({"preset": "moverscore-v1", "layer": 3}, "aggregator", ("SingleLayer", {"layer": 3})),  # layer selects single
    ({"powers": [1.0]}, "aggregator", ("PowerMeans", {"powers": (1.0,)})),  # the one part that takes powers
    ({"aligner": "wmd", "n_gram": 2}, "aligner", ("WMD", {"n_gram": 2})),
    ({"preset": "baryscore", "layers": [-3, -2, -1]}, "aligner", ("BaryScore", {"stack": 3})),  # fitted to the stack
])
def test_options_override_parts_predictably(opts, stage, want) -> None:
    part = getattr(run_spec(opts).composition, stage)
    assert type(part).__name__ == want[0]
    assert {k: getattr(part, k) for k in want[1]} == want[1]


@pytest.mark.parametrize("opts, message", [
    ({"aggregator": "pmeans", "layer": 3}, "layer=: applies to aggregator single, not to aggregator pmeans (aggregator=)"),
    ({"n_gram": 2}, "n_gram=: applies to aligner sinkhorn or wmd, not to aligner greedy (the default); name one"),
    ({"layers": [1, 2, 3]}, "layers=: applies to aggregator mix or pmeans or routing or stack, not to aggregator single"),
    ({"layers": "1-3", "aggregator": "stack"}, None),  # a list of layers as text reads as on the command line
    ({"idf": True, "weighting": "none"}, "idf= means weighting idf-S; it cannot go with weighting= none"),
    ({"lang": "en", "model": "x"}, "lang= means model roberta-large; it cannot go with model= x"),
    ({"rescale": True}, "rescale=: applies with baseline= FILE only"),
    ({"reg": 0.1}, "reg=: applies to aligner baryscore or sinkhorn, not to aligner greedy"),
    ({"no_such_option": 1}, "no_such_option=: no such option"),
    ({"preset": "baryscore", "aggregator": "pmeans"}, "aggregator=: aligner baryscore reads a stack of layers"),
    ({"preset": "moverscore-v2", "config": __file__}, "preset= and config= both give a whole run: give one"),
    ({"cache_size": "1G"}, "cache_size=: applies with cache= DIR only"),
    ({"window_stride": 8}, "window_stride=: applies with long_texts= window only"),
    ({"aggregator": "routing", "alpha": math.nan}, "alpha=: expected a number > 0, not nan"),
    ({"aggregator": "routing", "routing_iter": 0}, "routing_iter=: expected an integer >= 1, not 0"),
    ({"max_length": 1}, "max_length=: expected an integer >= 2, not 1"),
    ({"seed": 1}, "seed=: no such option"),
])
def test_every_check_names_the_option_as_given(opts, message) -> None:
    if message is None:
        assert run_spec(opts).composition.aggregator.layers == (1, 2, 3)
        return
    with pytest.raises(ConfigError) as info:
        run_spec(opts)
    assert str(info.value).startswith(message) or message in str(info.value), str(info.value)


def test_a_lower_source_s_setting_goes_with_what_a_higher_one_replaces(tiny_bert_dir, tmp_path) -> None:
    run_file = write_toml({"model": tiny_bert_dir, "long_texts": "window", "window_stride": 8,
                           "aligner": "sinkhorn", "reg": 0.05}, tmp_path / "run.toml")
    spec = run_spec({"config": str(run_file), "long_texts": "truncate", "aligner": "wmd"})
    assert spec.encoder.window_stride is None and spec.composition.aligner.name == "wmd"
    with pytest.raises(ConfigError, match="--window-stride: applies with --long-texts window only"):
        run_spec({"long_texts": "truncate", "window_stride": 8}, FLAGS)


def test_signatures_are_records_formatted_at_the_edge() -> None:
    a = Signature.of({"model": "m", "layers": "L4", "w": "none", "align": "greedy(cos)", "v": "x"})
    assert a.differences(Signature.parse("model:m|layers:L5|w:idf-S|align:greedy(cos)|v:x")) == \
        ["layers L4 vs L5", "w none vs idf-S"]
    assert a["align"] == "greedy(cos)" and str(a) == "model:m|layers:L4|w:none|align:greedy(cos)|v:x"
    assert Signature.parse(str(a)) == a and a.with_fields(mbr="K=2")["mbr"] == "K=2"


# -- the ten cases of the issue: one line naming the option, nothing written, no model loaded --------
NO_MODEL = "./no-such-model-here"


def _no_model_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HFEncoder, "load_model", lambda self: pytest.fail("a model's weights were loaded"))
    monkeypatch.setattr(HFEncoder, "load_tokenizer", lambda self: pytest.fail("a tokenizer was loaded"))


def test_case_1_a_preset_and_a_run_file_are_refused_together(files, tmp_path, tiny_bert_dir, monkeypatch) -> None:
    code, _, err = invoke("config", "-m", tiny_bert_dir, "-o", tmp_path / "bert.toml")
    assert code == 0, err
    text = (tmp_path / "bert.toml").read_text(encoding="utf-8")
    for key in ("aggregator = \"single\"", "filters = []", "special_tokens = \"match-only\"", "weighting = \"none\"",
                "aligner = \"greedy\"", "metric = \"f1\"", "multi_ref = \"max\"", "rescale = false"):
        assert key in text, key  # the whole run: nothing left for a preset to fill in
    assert "layer = the model's tuned layer" in text  # the one setting left to the model, said so
    _no_model_loads(monkeypatch)
    c, r, out = files("c.txt", CANDS), files("r.txt", REFS), tmp_path / "o.tsv"
    for order in (["--preset", "moverscore-v2", "--config", tmp_path / "bert.toml"],
                  ["--config", tmp_path / "bert.toml", "--preset", "moverscore-v2"]):
        code, _, err = invoke("score", "-c", c, "-r", r, "-o", out, *order)
        assert_one_error(code, err, "--preset and --config both give a whole run: give one")
    assert not out.exists()


@pytest.mark.parametrize("command, status", [
    (["score", "-c", "{c}", "-r", "{r}", "--confidence"], 2),
    (["challenge", "{set}"], 1),  # its own options are declared (ChallengeOptions): checked as fit's and tune's
    (["ablate", "{grid}", "--challenge", "{set}"], 2),
    (["compare", "-c", "{c}", "-r", "{r}", "--human", "{h}", "--a", "--layer 1", "--b", "--layer 2"], 2),
])
def test_case_2_a_negative_seed_is_refused_first(command, status, files, tmp_path, monkeypatch) -> None:
    _no_model_loads(monkeypatch)
    paths = {"c": files("c.txt", CANDS), "r": files("r.txt", REFS), "h": files("h.txt", ["1", "2", "3"]),
             "set": files("s.jsonl", ['{"refs": ["a"], "good": "a", "bad": "b", "category": "x"}']),
             "grid": files("g.toml", ['[models.base]', f'model = "{NO_MODEL}"', '[[columns]]', 'name = "F"',
                                      'aligner = "greedy"', '[[rows]]', 'name = "v"'])}
    args = [a.format(**paths) for a in command]
    code, out, err = invoke(*args, "--model", NO_MODEL, "--seed", "-1")
    assert code == status and "--seed" in err and out == "", err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("device, needle", [("xyz", "--device: one of cpu, cuda, mps, xpu"),
                                            ("cuda", "--device: 'cuda': no cuda device here")])
def test_case_3_distill_checks_its_device_as_score_does(device, needle, tmp_path, tiny_bert_dir) -> None:
    import torch

    if device == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    for command in (["distill", "--model", tiny_bert_dir, "-o", tmp_path / "out"],
                    ["score", "--model", tiny_bert_dir, "--cand-text", "a", "--ref-text", "b"]):
        code, _, err = invoke(*command, "--device", device)
        assert_one_error(code, err, needle)
    assert not (tmp_path / "out").exists()


def test_case_4_baryscore_reads_the_stack_its_aggregator_declares(tmp_path, monkeypatch, tiny_bert_dir) -> None:
    code, _, err = invoke("config", "--preset", "baryscore", "--bary-layers", "3")
    assert code == 2 and "No such option '--bary-layers'" in err
    code, out, err = invoke("config", "--preset", "baryscore", "--layers=-3,-2,-1")
    assert code == 0, err
    assert "layers = [\n    -3,\n    -2,\n    -1,\n]" in out and "bary_layers" not in out
    assert run_spec({"preset": "baryscore", "layers": [-3, -2, -1]}).composition.aligner.stack == 3
    _no_model_loads(monkeypatch)
    code, _, err = invoke("score", "--preset", "baryscore", "--aggregator", "pmeans", "--model", tiny_bert_dir,
                          "--cand-text", "a", "--ref-text", "b", "-o", tmp_path / "o.tsv")
    assert_one_error(code, err, "--aggregator: aligner baryscore reads a stack of layers")
    assert not (tmp_path / "o.tsv").exists()


@pytest.mark.parametrize("args, needle", [
    (["--ray-actors", "2"], "--ray-actors applies with --ray only"),
    (["--ray-gpus", "1"], "--ray-gpus applies with --ray only"),
    (["--chunk-size", "10"], "--chunk-size applies with --stream or --resume only"),
    (["--bootstrap", "100"], "--bootstrap applies with --confidence only"),
    (["--seed", "3"], "--seed applies with --confidence only"),
    (["--cache-size", "1G"], "--cache-size: applies with --cache DIR only"),
    (["--window-stride", "8"], "--window-stride: applies with --long-texts window only"),
])
def test_case_5_an_option_without_the_one_it_needs_is_refused(args, needle, files, tmp_path, monkeypatch) -> None:
    _no_model_loads(monkeypatch)
    out = tmp_path / "o.tsv"
    code, _, err = invoke("score", "-c", files("c.txt", CANDS), "-r", files("r.txt", REFS), "--model", NO_MODEL,
                          "-o", out, *args)
    assert_one_error(code, err, needle)
    assert not out.exists()


def test_case_6_messages_name_what_the_user_typed(files, tmp_path, monkeypatch) -> None:
    _no_model_loads(monkeypatch)
    code, _, err = invoke("score", "-c", files("c.txt", CANDS), "-r", files("r.txt", REFS), "--model", NO_MODEL,
                          "--aggregator", "routing", "--routing-iter", "0")
    assert_one_error(code, err, "--routing-iter", "expected an integer >= 1, not 0")
    assert "max_iter" not in err
    with pytest.raises(ConfigError, match=r"^score\(\): alpha=: expected a number > 0, not nan$"):
        alignscore.score(CANDS, REFS, model=NO_MODEL, aggregator="routing", alpha=float("nan"))


def test_case_7_a_token_limit_that_leaves_no_text_is_refused_before_the_model_loads(files, tiny_bert_dir,
                                                                                      monkeypatch) -> None:
    c, r = files("c.txt", CANDS), files("r.txt", REFS)
    code, _, err = invoke("score", "-c", c, "-r", r, "--model", tiny_bert_dir, "--max-length", "1")
    assert_one_error(code, err, "--max-length", "expected an integer >= 2, not 1")
    monkeypatch.setattr(HFEncoder, "load_model", lambda self: pytest.fail("the model's weights were loaded"))
    code, _, err = invoke("score", "-c", c, "-r", r, "--model", tiny_bert_dir, "--max-length", "2")
    assert_one_error(code, err, "--max-length: a limit of 2 tokens leaves no room for text", "2 special tokens")


def test_case_8_every_switch_has_its_no_form_and_it_switches_a_file_s_off(files, tiny_bert_dir, tmp_path,
                                                                           example_files) -> None:
    code, out, _ = invoke("score", "--help")
    switches = [o for o in options().values() if o.boolean]
    assert {"idf", "rescale", "sep", "normalize", "lowercase"} <= {o.name for o in switches}
    assert all(f"{o.flag} / --no-{o.flag[2:]}" in out for o in switches)
    run_file = write_toml({"model": tiny_bert_dir, "layer": 2, "baseline": example_files["baseline"],
                           "weighting": "idf-S"}, tmp_path / "run.toml")
    c, r = files("c.txt", CANDS), files("r.txt", REFS)
    _, with_file, _ = invoke("score", "-c", c, "-r", r, "--config", run_file, "-q")
    assert "|w:idf-S|" in with_file and "|rescale:base.csv#" in with_file
    code, off, err = invoke("score", "-c", c, "-r", r, "--config", run_file, "--no-rescale", "--no-idf", "-q")
    assert code == 0, err
    _, plain, _ = invoke("score", "-c", c, "-r", r, "--model", tiny_bert_dir, "--layer", "2", "-q")
    assert off == plain and "|rescale:no|" in off and "|w:none|" in off


@pytest.mark.slow  # subprocesses: out of the edit loop's tier, in CI's
def test_case_10_model_paths(files, tmp_path, tiny_bert_dir, warm) -> None:
    vec = tmp_path / "tiny.vec"
    vec.write_text("2 3\nthe 1 0 0\ncat 0 1 0\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(CODE_ROOT)}
    python, variables = warm  # processes started in another folder (forks of tests/warm_server.py)
    made = subprocess.run([*python, "config", "--model", "tiny.vec", "--lowercase"],
                          cwd=tmp_path, env={**env, **variables}, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0 and f'model = "{vec}"' in made.stdout, made.stderr
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    (elsewhere / "run.toml").write_text(made.stdout, encoding="utf-8")
    scored = subprocess.run([*python, "score", "--config", "run.toml", "--cand-text", "the cat", "--ref-text",
                             "the cat", "-q"], cwd=elsewhere, env={**env, **variables}, capture_output=True,
                            text=True, timeout=120)
    assert scored.returncode == 0, scored.stderr
    code, _, err = invoke("score", "--model", "./no-such-model", "--cand-text", "a", "--ref-text", "b")
    assert_one_error(code, err, "--model: no such model folder or file: ./no-such-model")
    quick = {**env, "HF_ENDPOINT": "http://127.0.0.1:9"}  # a hub that does not answer (read at import: a fresh process)
    quick.pop("HF_HUB_OFFLINE", None)
    quick.pop("TRANSFORMERS_OFFLINE", None)
    start = time.perf_counter()
    offline = subprocess.run([sys.executable, "-m", "alignscore", "score", "--cand-text", "a", "--ref-text", "b"],
                             env=quick, capture_output=True, text=True, timeout=120)
    assert time.perf_counter() - start < 20
    assert offline.returncode == 1 and "cannot be reached" in offline.stderr and offline.stderr.count("\n") == 1


# -- what stays true ------------------------------------------------------------------------------------
def test_a_preset_with_overrides_is_the_preset_function_with_those_keywords(tiny_bert_dir) -> None:
    spec = run_spec({"preset": "moverscore-v2", "model": tiny_bert_dir, "n_gram": 2})
    via_function = alignscore.moverscore_v2(tiny_bert_dir, n_gram=2)
    assert spec == run_spec({"preset": "moverscore-v2", "model": tiny_bert_dir, "n_gram": "2"}, FLAGS)
    assert str(via_function.signature()) == str(alignscore.build(spec).signature())


def test_diff_sides_share_an_encoder_only_when_their_encoder_specs_are_equal(files, tiny_bert_dir):
    """diff --a "--long-texts window" --b "--long-texts truncate": B is truncated (its signature
    says so) and its scores of the long text differ from A's."""
    long = " ".join(f"word{i} and more" for i in range(60))
    c = files("c.txt", [long, "a short one"])
    r = files("r.txt", [long + " extra", "a short two"])
    code, out, err = invoke("diff", "-c", c, "-r", r, "--model", tiny_bert_dir, "--layer", "2", "-q", "--top", "0",
                            "--a", "--long-texts window", "--b", "--long-texts truncate")
    assert code == 0, err
    lines = out.splitlines()
    assert "+window" in lines[0] and "+window" not in lines[1], lines[:2]
    a_spec = run_spec({"model": tiny_bert_dir, "layer": 2, "long_texts": "window"})
    b_spec = run_spec({"model": tiny_bert_dir, "layer": 2})
    a, b = alignscore.build_all([a_spec, b_spec])
    assert a.encoder is not b.encoder
    same_a, same_b = alignscore.build_all([a_spec, a_spec])
    assert same_a.encoder is same_b.encoder


def test_moverscore_v2_with_uniform_weights_from_every_way_in(tiny_bert_dir, files) -> None:
    """--preset moverscore-v2 --weighting none is moverscore_v2(idf=False): SEP served idf-S and
    goes with it; --no-sep says the same; --weighting none --sep is one error naming both."""
    want = alignscore.moverscore_v2(tiny_bert_dir, idf=False)
    assert "w:none" in str(want.signature())
    for extra in ({}, {"sep": False}):  # --no-sep beside a weighting without SEP says nothing more
        spec = run_spec({"preset": "moverscore-v2", "model": tiny_bert_dir, "weighting": "none", **extra})
        assert str(alignscore.build(spec).signature()) == str(want.signature())
    c, r = files("c.txt", CANDS), files("r.txt", REFS)
    code, out, err = invoke("score", "-c", c, "-r", r, "--preset", "moverscore-v2", "--model", tiny_bert_dir,
                            "--weighting", "none", "-q", "--format", "jsonl")
    assert code == 0, err
    assert [json.loads(line)["score"] for line in out.splitlines()] == want.score(CANDS, REFS).score.tolist()
    code, _, err = invoke("score", "-c", c, "-r", r, "--model", tiny_bert_dir, "--weighting", "none", "--sep")
    assert_one_error(code, err, "--sep: applies to weighting idf-L or idf-S, not to weighting none (--weighting)")


def test_a_scorer_holds_its_runtime_whole(tiny_bert_dir) -> None:
    runtime = Runtime(batch_size=3, pair_batch_size=5, device="cpu")
    scorer = Scorer(alignscore.HFEncoder(tiny_bert_dir), Composition(), runtime)
    assert scorer.runtime is runtime and scorer.runtime.pair_batch_size == 5
    built = alignscore.build(run_spec({"model": tiny_bert_dir, "layer": 2, "pair_batch_size": 5, "device": "cpu"}))
    assert built.runtime.pair_batch_size == 5 and built.runtime.device == "cpu"
    assert built.encoder.model_device.type == "cpu"


@pytest.mark.slow  # subprocesses: out of the edit loop's tier, in CI's
def test_integrations_do_not_import_the_command_line() -> None:
    script = ("import sys, alignscore, alignscore.integrations.hf_evaluate, alignscore.integrations.torchmetrics\n"
              "alignscore.run_spec({'model': 'x', 'aligner': 'wmd'})\n"
              "print(sorted(m for m in sys.modules if m.startswith('alignscore.cli')))")
    env = {**os.environ, "PYTHONPATH": str(CODE_ROOT)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow  # a command line built again with a plugin's part: out of the edit loop's tier, in CI's
def test_an_outside_aligner_gets_its_flags_and_help(tmp_path) -> None:
    plugin = tmp_path / "outside_part.py"
    plugin.write_text(
        "from dataclasses import dataclass\nimport torch\n"
        "from alignscore import ALIGNERS, Aligner\nfrom alignscore.settings import check_settings, setting\n"
        "@ALIGNERS.register('overlap2')\n@dataclass(frozen=True)\nclass Overlap(Aligner):\n"
        "    threshold: float = setting(0.5, gt=0, le=1, help='similarity above which a token counts as matched')\n"
        "    strict: bool = setting(False)\n"
        "    name = 'overlap2'\n    metrics = ('overlap',)\n    primary = 'overlap'\n"
        "    def __post_init__(self):\n        check_settings(self)\n"
        "    def __call__(self, batch):\n        return {'overlap': torch.zeros(len(batch.ref))}\n"
        "    def signature(self):\n        return f'overlap2({self.threshold},{self.strict})'\n", encoding="utf-8")
    script = ("import outside_part\nfrom alignscore.cli import main\nfrom alignscore.cli.options import FLAGS\n"
              "from alignscore import run_spec\n"
              "spec = run_spec({'aligner': 'overlap2', 'threshold': '0.7', 'strict': True}, FLAGS)\n"
              "print(spec.composition.aligner)\nprint(spec.toml())\n"
              "try:\n    run_spec({'threshold': 2.0})\nexcept Exception as exc:\n    print(exc)\n"
              "main(['score', '--help'])\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(CODE_ROOT)])}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert "Overlap(threshold=0.7, strict=True)" in out.stdout, out.stderr
    assert 'aligner = "overlap2"\nthreshold = 0.7\nstrict = true' in out.stdout
    assert "threshold=: expected a number > 0 and <= 1, not 2.0" in out.stdout
    assert "--threshold" in out.stdout and "--strict / --no-strict" in out.stdout
    assert "similarity above which a token counts as matched" in " ".join(out.stdout.split())


def test_config_refuses_to_overwrite_a_file_it_names(files, tiny_bert_dir, tmp_path) -> None:
    stop = files("stop.txt", ["the", "a"])
    before = fingerprint(stop)
    code, _, err = invoke("config", "--model", tiny_bert_dir, "--stopwords", stop, "-o", stop)
    assert_one_error(code, err, "stop.txt")
    assert fingerprint(stop) == before


@pytest.mark.parametrize("naming, label", [(KEYWORDS, "lang="), (FLAGS, "--lang")])
def test_a_language_that_is_no_code_is_named_as_written(naming: Naming, label: str) -> None:
    with pytest.raises(ConfigError, match=f"^{label} 'XX' is not a language code"):
        compile_run(sources_of({"lang": "XX"}, naming))
