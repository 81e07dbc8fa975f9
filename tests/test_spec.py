"""One description of a run: every way in (keywords, flags, a file written by `alignscore config`,
a preset with overrides) compiles to one RunSpec and gives the same scores and signature; the
defects of the hand-kept translations stay fixed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import alignscore
from alignscore import Composition, Runtime, RunSpec, Scorer, Signature, run_spec
from alignscore.errors import ConfigError
from alignscore.options import options
from cli_checks import CODE_ROOT, assert_one_error, invoke

CANDS = ["the cat sat on the mat", "a dog ran in the park", "hello there, world"]
REFS = ["a cat sat on a mat", "the dog was running in a park", "hello world"]


def _cli_args(opts: dict) -> list[str]:
    """The command-line form of keyword options (lists as comma lists, booleans as flags)."""
    table = options()
    args: list[str] = []
    for key, value in opts.items():
        option = table[key]
        if option.boolean:
            args.append(option.flag if value else "--no-" + option.flag[2:])
        elif option.multiple:
            for v in value:
                args += [option.flag, str(v)]
        elif isinstance(value, (list, tuple)):
            args += [option.flag, ",".join(map(str, value))]
        else:
            args += [option.flag, str(value)]
    return args


def _rows(tsv: str) -> tuple[str, list[list[float]]]:
    lines = tsv.splitlines()
    return lines[0][2:], [[float(x) for x in line.split("\t")] for line in lines[3:]]


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
    code, out, err = invoke(*texts, *_cli_args(opts))
    assert code == 0, err
    config = tmp_path / "run.toml"
    code, _, err = invoke("config", *_cli_args(opts), "-o", config)
    assert code == 0, err
    code, from_file, err = invoke(*texts, "--config", config)
    assert code == 0, err
    metrics = list(api.metrics)
    for tsv in (out, from_file):
        signature, rows = _rows(tsv)
        assert signature == str(api.signature)
        for i, row in enumerate(rows):  # the same computation through the same engine: bit for bit
            assert row[:len(metrics)] == [float(api[m][i]) for m in metrics]
    assert RunSpec.read(config) == run_spec(opts)


def test_a_preset_with_overrides_is_the_preset_function_with_those_keywords(tiny_bert_dir) -> None:
    spec = run_spec({"preset": "moverscore-v2", "model": tiny_bert_dir, "n_gram": 2})
    via_function = alignscore.moverscore_v2(tiny_bert_dir, n_gram=2)
    assert spec.composition == run_spec({"preset": "moverscore-v2", "model": tiny_bert_dir, "n_gram": 2},
                                        style="cli").composition
    assert via_function.signature() == alignscore.build(spec).signature()
    assert str(alignscore.score(CANDS, REFS, preset="moverscore-v2", model=tiny_bert_dir, n_gram=2).signature) == \
        via_function.score(CANDS, REFS).signature


# -- the defects of hand-kept translations ---------------------------------------------------------
def test_diff_sides_share_an_encoder_only_when_their_encoder_specs_are_equal(files, tiny_bert_dir, tmp_path):
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
    with pytest.warns(UserWarning, match="truncated"):
        sb = b.score([long], [long + " extra"])
    assert float(a.score([long], [long + " extra"]).f1[0]) != float(sb.f1[0])


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
    no_sep = run_spec({"preset": "moverscore-v2", "model": tiny_bert_dir, "sep": False})
    assert "w:idf-S|" in str(alignscore.build(no_sep).signature())  # idf of the references on both sides
    code, _, err = invoke("score", "-c", c, "-r", r, "--model", tiny_bert_dir, "--weighting", "none", "--sep")
    assert_one_error(code, err, "--sep", "idf-S", "none")


def test_a_scorer_holds_its_runtime_whole(tiny_bert_dir) -> None:
    runtime = Runtime(batch_size=3, pair_batch_size=5, device="cpu")
    scorer = Scorer(alignscore.HFEncoder(tiny_bert_dir), Composition(), runtime)
    assert scorer.runtime is runtime and scorer.runtime.pair_batch_size == 5
    built = alignscore.build(run_spec({"model": tiny_bert_dir, "pair_batch_size": 5, "device": "cpu"}))
    assert built.runtime.pair_batch_size == 5 and built.runtime.device == "cpu"
    assert built.encoder.model_device.type == "cpu"


def test_integrations_do_not_import_the_command_line() -> None:
    script = ("import sys, alignscore, alignscore.integrations.hf_evaluate, alignscore.integrations.torchmetrics\n"
              "alignscore.run_spec({'model': 'x', 'aligner': 'wmd'})\n"
              "print(sorted(m for m in sys.modules if m.startswith('alignscore.cli')))")
    env = {**os.environ, "PYTHONPATH": str(CODE_ROOT)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "[]"


def test_signatures_name_the_settings_that_differ() -> None:
    a = Signature("model:m|layers:L4|w:none|align:greedy(cos)|v:x")
    assert a.differences("model:m|layers:L5|w:idf-S|align:greedy(cos)|v:x") == ["layers L4 vs L5", "w none vs idf-S"]
    assert a.fields["align"] == "greedy(cos)" and str(a) == "model:m|layers:L4|w:none|align:greedy(cos)|v:x"


# -- override semantics ------------------------------------------------------------------------------
@pytest.mark.parametrize("opts, part, want", [
    ({"preset": "moverscore-v1", "aligner": "sinkhorn"}, "aligner",
     ("sinkhorn", {"cost": "sqeuclidean", "score": "1-d"})),  # the settings both take are kept
    ({"preset": "moverscore-v2", "weighting": "idf-L", "idf_corpus": __file__}, "weighting",
     ("idf-L", {"sep": True, "corpus": __file__})),
    ({"layer": 3}, "aggregator", ("single", {"layer": 3})),
    ({"preset": "moverscore-v1", "layer": 3}, "aggregator", ("single", {"layer": 3})),  # layer selects single
    ({"powers": [1.0]}, "aggregator", ("pmeans", {"powers": (1.0,)})),  # the one part that takes powers
    ({"aligner": "wmd", "n_gram": 2}, "aligner", ("wmd", {"n_gram": 2})),
])
def test_options_override_parts_predictably(opts, part, want) -> None:
    got = getattr(run_spec(opts).composition, part)
    assert (got.name, dict(got.args)) == want


@pytest.mark.parametrize("opts, needles", [
    ({"aggregator": "pmeans", "layer": 3}, ["layer=", "single", "pmeans"]),
    ({"n_gram": 2}, ["n_gram=", "sinkhorn or wmd", "greedy"]),
    ({"layers": [1, 2, 3]}, ["layers=", "pmeans or routing or stack", "name one"]),
    ({"layers": "1-3"}, ["layers= expects a number or a list"]),
    ({"idf": True, "weighting": "none"}, ["idf=", "weighting="]),
    ({"lang": "en", "model": "x"}, ["lang=", "model="]),
    ({"rescale": True}, ["rescale=", "baseline="]),
    ({"reg": 0.1}, ["reg=", "baryscore or sinkhorn", "greedy"]),
    ({"no_such_option": 1}, ["unknown option", "no_such_option"]),
])
def test_conflicts_between_settings_the_caller_gave_name_both(opts, needles) -> None:
    with pytest.raises(ConfigError) as info:
        run_spec(opts)
    for needle in needles:
        assert needle in str(info.value), str(info.value)


# -- outside parts ------------------------------------------------------------------------------------
def test_an_outside_aligner_gets_flags_help_and_a_cost(tmp_path) -> None:
    plugin = tmp_path / "outside_part.py"
    plugin.write_text(
        "from dataclasses import dataclass\nimport torch\n"
        "from alignscore import ALIGNERS, Aligner\nfrom alignscore.settings import setting\n"
        "@ALIGNERS.register('overlap2')\n@dataclass(frozen=True)\nclass Overlap(Aligner):\n"
        "    threshold: float = setting(0.5, help='similarity above which a token counts as matched')\n"
        "    strict: bool = False\n"
        "    name = 'overlap2'\n    metrics = ('overlap',)\n    primary = 'overlap'\n    seconds_per_pair = 0.001\n"
        "    def __call__(self, batch):\n        return {'overlap': torch.zeros(len(batch.ref))}\n"
        "    def signature(self):\n        return f'overlap2({self.threshold},{self.strict})'\n", encoding="utf-8")
    script = ("import outside_part\nfrom alignscore.cli import main\n"
              "from alignscore.options import run_spec\nfrom alignscore.evaluation.search import aligner_cost\n"
              "spec = run_spec({'aligner': 'overlap2', 'threshold': '0.7', 'strict': True}, style='cli')\n"
              "print(spec.composition.aligner)\nprint(aligner_cost(spec.composition.build()))\n"
              "main(['score', '--help'])\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(CODE_ROOT)])}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert "overlap2(strict=True,threshold=0.7)" in out.stdout, out.stderr
    assert "0.001" in out.stdout
    assert "--threshold" in out.stdout and "--strict / --no-strict" in out.stdout
    assert "similarity above which a token counts as matched" in " ".join(out.stdout.split())


def test_every_boolean_flag_has_its_no_form() -> None:
    code, out, _ = invoke("score", "--help")
    flags = [o for o in options().values() if o.boolean and o.target != "run"]
    assert flags and all(f"--no-{o.flag[2:]}" in out for o in flags)


def test_config_writes_a_file_that_scores_as_the_options(files, tiny_bert_dir, tmp_path) -> None:
    c, r = files("c.txt", CANDS), files("r.txt", REFS)
    stop = files("stop.txt", ["the", "a"])
    opts = ["--model", tiny_bert_dir, "--layer", "3", "--aligner", "wmd", "--n-gram", "2", "--idf", "--sep",
            "--stopwords", stop]
    code, _, err = invoke("config", *opts, "-o", tmp_path / "m.toml")
    assert code == 0, err
    _, direct, _ = invoke("score", "-c", c, "-r", r, *opts, "-q")
    _, via_file, _ = invoke("score", "-c", c, "-r", r, "--config", tmp_path / "m.toml", "-q")
    assert direct == via_file and direct.startswith("# model:")
    code, _, err = invoke("config", *opts, "-o", stop)  # a file the options name is an input
    assert_one_error(code, err, "stop.txt")
    assert open(stop, encoding="utf-8").read() == "the\na\n"
