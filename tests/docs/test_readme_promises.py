"""What the README promises of the command line, each checked against a computation that does not
go through the option it tests: --multi-ref, --metric, --aggregator, --dtype, the TSV's means,
options over a --config file's keys, --ref-index, MBR with idf, RoBERTa (BPE) parity with
bert_score, and the README's own example output."""

from __future__ import annotations

import json
import re

import pytest
import torch

import alignscore
from alignscore import Composition, HFEncoder, IdfS, PowerMeans, Routing, Runtime, Scorer, SingleLayer
from cli_checks import invoke
from helpers import REPO, needs

CANDS = ["the cat sat on the mat", "a dog ran in the park", "hello there, world"]
REFS = ["a cat sat on a mat", "the dog was running in a park", "hello world"]
REFS2 = ["cats sit on mats", "a dog ran", "hello world, it is me"]


@pytest.fixture
def cli(files, tiny_bert_dir):
    c, r, r2 = files("c.txt", CANDS), files("r.txt", REFS), files("r2.txt", REFS2)

    def run(*args, refs=(r,)):
        code, out, err = invoke("score", "-c", c, "-r", *refs, "--model", tiny_bert_dir, "-q", "--format", "jsonl",
                                *args)
        assert code == 0, err
        return [json.loads(line) for line in out.splitlines()], err

    run.two = (r, r2)
    return run


def _alone(encoder, composition, cands, refs):
    return Scorer(encoder, composition, Runtime()).score(cands, refs)


def test_multi_ref_mean_and_max_against_each_reference_alone(cli, tiny_bert_dir):
    enc = HFEncoder(tiny_bert_dir)
    one = _alone(enc, Composition(SingleLayer(2)), CANDS, REFS)
    two = _alone(enc, Composition(SingleLayer(2)), CANDS, REFS2)
    mean, _ = cli("--layer", "2", "--multi-ref", "mean", refs=cli.two)
    high, _ = cli("--layer", "2", refs=cli.two)
    for m in ("precision", "recall", "f1"):
        assert [r[m] for r in mean] == pytest.approx(((one[m] + two[m]) / 2).tolist(), abs=1e-6), m
        assert [r[m] for r in high] == pytest.approx(torch.maximum(one[m], two[m]).tolist(), abs=1e-6), m
    assert [r["best_ref"] for r in high] == (two.f1 > one.f1).long().tolist()


def test_metric_picks_the_best_reference_by_that_output(cli, tiny_bert_dir):
    enc = HFEncoder(tiny_bert_dir)
    one = _alone(enc, Composition(SingleLayer(2)), CANDS, REFS)
    two = _alone(enc, Composition(SingleLayer(2)), CANDS, REFS2)
    rows, err = cli("--layer", "2", "--metric", "precision", refs=cli.two)
    assert "metric:precision" in err
    best = (two.precision > one.precision).long()
    assert best.tolist() != (two.f1 > one.f1).long().tolist()  # the data tells the two metrics apart
    assert [r["best_ref"] for r in rows] == best.tolist()
    # each output is still its own maximum over the references (bert_score's reduction)
    assert [r["recall"] for r in rows] == pytest.approx(torch.maximum(one.recall, two.recall).tolist(), abs=1e-6)


@pytest.mark.parametrize("args, aggregator", [
    (["--aggregator", "pmeans", "--layers", "1-3", "--powers", "1,inf"], PowerMeans((1, 2, 3), (1.0, float("inf")))),
    (["--aggregator", "routing", "--layers", "2,3"], Routing((2, 3))),
])
def test_aggregators_on_the_command_line(cli, tiny_bert_dir, args, aggregator):
    rows, err = cli(*args)
    want = _alone(HFEncoder(tiny_bert_dir), Composition(aggregator), CANDS, REFS)
    assert [r["f1"] for r in rows] == pytest.approx(want.f1.tolist(), abs=1e-6)


@pytest.mark.parametrize("dtype, tol", [("bfloat16", 0.03), ("float16", 0.01)])
def test_dtype_on_the_command_line(cli, tiny_bert_dir, dtype, tol):
    rows, err = cli("--layer", "2", "--dtype", dtype)
    assert f"+{dtype}|" in err
    full, _ = cli("--layer", "2")
    assert [r["f1"] for r in rows] == pytest.approx([r["f1"] for r in full], abs=tol)
    assert [r["f1"] for r in rows] != [r["f1"] for r in full]  # the precision did change the numbers


def test_tsv_means_are_the_means_of_the_rows(files, tiny_bert_dir):
    c, r = files("c.txt", CANDS), files("r.txt", REFS)
    code, out, err = invoke("score", "-c", c, "-r", r, "--model", tiny_bert_dir, "--layer", "2", "-q")
    assert code == 0, err
    lines = out.splitlines()
    means = dict(kv.split("=") for kv in lines[1].split()[2:])
    columns = lines[2].split("\t")
    rows = [[float(x) for x in line.split("\t")] for line in lines[3:]]
    for j, name in enumerate(columns):
        assert float(means[name]) == pytest.approx(sum(row[j] for row in rows) / len(rows), abs=1e-6), name


def test_options_override_a_config_files_keys(files, tiny_bert_dir, tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(f'model = "{tiny_bert_dir}"\nlayer = 2\nweighting = "idf-S"\nmulti_ref = "mean"\n',
                      encoding="utf-8")
    c, r = files("c.txt", CANDS), files("r.txt", REFS)
    code, out, err = invoke("score", "-c", c, "-r", r, "--config", config, "--layer", "3", "-q", "--format", "jsonl")
    assert code == 0, err
    assert "layers:L3|" in err and "w:idf-S|" in err and "refs:mean|" in err  # the file's other keys hold
    want = _alone(HFEncoder(tiny_bert_dir), Composition(SingleLayer(3), weighting=IdfS(), multi_ref="mean"), CANDS,
                  REFS)
    assert [json.loads(line)["f1"] for line in out.splitlines()] == pytest.approx(want.f1.tolist(), abs=1e-6)


@pytest.mark.slow  # a figure: out of the edit loop's tier, in CI's
def test_show_ref_index_draws_that_reference(tiny_bert_dir, tmp_path):
    svgs = []
    for index in (0, 1):
        out = tmp_path / f"s{index}.svg"
        code, _, err = invoke("show", "-c", "the cat sat", "-r", "a cat sat", "-r", "zebra zebra", "--model",
                              tiny_bert_dir, "--layer", "2", "--ref-index", index, "-o", out)
        assert code == 0, err
        svgs.append(out.read_text(encoding="utf-8"))
    assert "zebra" in svgs[1] and "zebra" not in svgs[0] and "best reference: [0]" in err
    code, _, err = invoke("show", "-c", "x", "-r", "y", "--model", tiny_bert_dir, "--layer", "2", "--ref-index", 3,
                          "-o", tmp_path / "bad.svg")
    assert code != 0 and "reference index 3 out of range" in err


def test_mbr_with_idf_is_the_brute_force_argmax(files, tiny_bert_dir):
    samples = ["the cat sat", "a cat sat down", "the cat was sitting", "dogs bark", "a dog barks", "the dog barked"]
    path = files("s.txt", samples)
    code, out, err = invoke("mbr", "-c", path, "--samples", 3, "--model", tiny_bert_dir, "--layer", "2", "--idf",
                            "-q", "--format", "jsonl")
    assert code == 0, err
    got = [json.loads(line) for line in out.splitlines()]
    # the documented weights: idf over every sample (each once per block); pairwise() of all the
    # samples fits idf-S on its references, each once, which is the same here
    matrix = Scorer(HFEncoder(tiny_bert_dir), Composition(SingleLayer(2), weighting=IdfS())).pairwise(samples,
                                                                                                   samples).f1
    for block, row in enumerate(got):
        utility = matrix[3 * block:3 * block + 3, 3 * block:3 * block + 3].double().mean(1)
        assert row["index"] == int(utility.argmax()) and row["utility"] == pytest.approx(float(utility.max()), abs=1e-6)


@pytest.mark.reference
def test_roberta_bpe_scores_match_bert_score(tiny_roberta_dir, monkeypatch):
    """roberta-large is the default model: a tiny RoBERTa (byte-level BPE) scores as bert_score
    scores it, idf and not. bert_score encodes RoBERTa text with ``add_prefix_space=True``, which
    transformers 5 ignores at call time (tests/parity/test_bert_score_token_ids.py): the oracle is bert_score with
    that prefix space restored, its own arithmetic untouched."""
    bert_score = needs("bert_score")
    utils = needs("bert_score.utils")
    original = utils.sent_encode

    def with_prefix_space(tokenizer, sent):  # what bert_score asks of its tokenizer for RoBERTa
        sent = sent.strip()
        if not sent:
            return original(tokenizer, sent)
        return tokenizer.encode(" " + sent, add_special_tokens=True, max_length=tokenizer.model_max_length,
                                truncation=True)

    monkeypatch.setattr(utils, "sent_encode", with_prefix_space)
    cands = ["The cat sat on the mat.", "People like foreign cars!", "a b c"]
    refs = ["A cat was sitting on the mat.", "consumers prefer imported cars", "d e f"]
    for idf in (False, True):
        p, r, f = bert_score.score(cands, refs, model_type=tiny_roberta_dir, num_layers=2, idf=idf, batch_size=2,
                                   device="cpu", nthreads=1)
        ours = alignscore.bertscore(tiny_roberta_dir, layer=2, idf=idf).score(cands, refs)
        for name, theirs in (("precision", p), ("recall", r), ("f1", f)):
            assert ours[name].tolist() == pytest.approx(theirs.tolist(), abs=1e-5), (idf, name)


@pytest.mark.slow
def test_the_readme_first_example_is_make_score_and_prints_what_the_readme_shows(minilm_dir):
    """The README's first console block is the command of the Makefile's `score` target, and the
    output shown under it is what that command prints (numbers to 1e-6; the signature's version
    field aside). tests/docs/test_docs_examples_run.py runs every block; this one also ties it to `make score`."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command, shown = re.search(r"```console\n\$ (alignscore score [^\n]*)\n(.*?)```", readme, re.S).groups()
    recipe = re.search(r"^score:.*\n\t\$\(BIN\)/(alignscore score .*)$", (REPO / "Makefile").read_text(), re.M)
    assert command.split() == recipe.group(1).split()
    block = shown.splitlines()
    args = [REPO / a if a.startswith("examples/") else a for a in command.split()[2:]]
    code, out, err = invoke("score", *args, "-q")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == len(block)
    assert lines[0].split("|v:")[0] == block[0].split("|v:")[0]
    numbers = lambda text: [float(x) for x in re.findall(r"\d+\.\d+", text)]  # noqa: E731
    for got, want in zip(lines[1:], block[1:]):
        assert numbers(got) == pytest.approx(numbers(want), abs=1e-6), (got, want)
