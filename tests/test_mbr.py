"""MBR selection: the API and ``alignscore mbr`` select the brute-force argmax of the expected
utility computed with ``Scorer.score`` on every (i, j) pair of each block."""

from __future__ import annotations

import json

import pytest
import torch

from alignscore import WMD, HFEncoder, Scorer, SingleLayer
from alignscore.errors import InputError
from alignscore.mbr import expected_utility, mbr_select

from cli_checks import assert_one_error, fingerprint, invoke
from helpers import compose, wmt16
from fakes import CountingEncoder

K = 4


def _samples(blocks: int = 3) -> list[str]:
    """Blocks of K samples: a reference, two system outputs and a near copy of the first."""
    data = wmt16("de-en")
    out = []
    for b in range(blocks):
        ref, hyp = data["reference"][b], data["mt-system"][b]
        out += [hyp, ref, data["mt-system"][b + 10], hyp + " ."]
    return out


def _brute_force(scorer: Scorer, samples: list[str], exclude_self: bool) -> list[list[float]]:
    """Each block's expected utilities, pair by pair through ``Scorer.score``."""
    out = []
    for b in range(0, len(samples), K):
        block = samples[b:b + K]
        expected = []
        for i in range(K):
            js = [j for j in range(K) if not (exclude_self and j == i)]
            scores = scorer.score([block[i]] * len(js), [block[j] for j in js])
            expected.append(float(scores[scorer.resolved().metric].double().mean()))
        out.append(expected)
    return out


@pytest.mark.parametrize("exclude_self", [False, True])
@pytest.mark.parametrize("aligner", ["greedy", "wmd"])
def test_selection_equals_brute_force_argmax(tiny_bert_dir, exclude_self, aligner):
    samples = _samples()
    extra = dict(aligner=WMD(), special_tokens="drop") if aligner == "wmd" else {}
    scorer = compose(HFEncoder(tiny_bert_dir), SingleLayer(3), **extra)
    got = mbr_select(scorer, samples, K, exclude_self=exclude_self, max_pairs=6)
    expected = _brute_force(scorer, samples, exclude_self)
    assert [s.block for s in got] == list(range(len(expected)))
    for s, utilities in zip(got, expected):
        best = max(range(K), key=lambda i: (utilities[i], -i))
        # the argmax, or a sample within float noise of it (a near copy can tie its original)
        assert s.index == best or utilities[s.index] > utilities[best] - 1e-6
        assert abs(s.utility - utilities[s.index]) < 1e-6
        assert s.text == samples[s.block * K + s.index]


def test_self_included_or_excluded_and_ties():
    u = torch.tensor([[1.0, 0.2, 0.4], [0.2, 1.0, 0.4], [0.4, 0.4, 1.0]])
    assert torch.allclose(expected_utility(u), u.double().mean(1))
    assert torch.allclose(expected_utility(u, exclude_self=True), torch.tensor([0.3, 0.3, 0.4], dtype=torch.float64))
    tie = torch.ones(3, 3)
    assert int(torch.argmax(expected_utility(tie))) == 0  # ties: the first
    with pytest.raises(InputError):
        expected_utility(torch.ones(1, 1), exclude_self=True)


def test_every_text_is_encoded_once_for_the_whole_file(tiny_bert_dir):
    samples = _samples(3)
    samples[K] = samples[0]  # a text in two blocks
    enc = CountingEncoder(tiny_bert_dir)
    mbr_select(compose(enc, SingleLayer(3), batch_size=100), samples, K)
    assert enc.calls == 1 and enc.texts == len({t.strip() for t in samples})


def test_cli_tsv_and_jsonl(tiny_bert_dir, tmp_path):
    samples = _samples()
    path = tmp_path / "samples.txt"
    path.write_text("\n".join(samples) + "\n", encoding="utf-8")
    scorer = compose(HFEncoder(tiny_bert_dir), SingleLayer(3))
    expected = mbr_select(scorer, samples, K, exclude_self=True)
    out = tmp_path / "sel.jsonl"
    code, _, err = invoke("mbr", "-c", path, "--samples", K, "--exclude-self", "--model", tiny_bert_dir,
                          "--layer", 3, "--format", "jsonl", "-o", out, "-q")
    assert code == 0, err
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [list(r) for r in rows] == [["block", "index", "utility", "text"]] * len(expected)
    assert [(r["block"], r["index"], r["text"]) for r in rows] == [(s.block, s.index, s.text) for s in expected]
    assert all(abs(r["utility"] - s.utility) < 1e-9 for r, s in zip(rows, expected))
    assert "mbr:K=4,self=out" in err

    code, tsv, err = invoke("mbr", "-c", path, "--samples", K, "--model", tiny_bert_dir, "--layer", 3, "-q")
    assert code == 0, err
    lines = tsv.splitlines()
    assert lines[0].startswith("# model:") and lines[0].endswith("|mbr:K=4,self=in")
    assert lines[1] == "block\tindex\tutility\ttext"
    included = mbr_select(scorer, samples, K)
    assert [tuple(line.split("\t")) for line in lines[2:]] == [
        (str(s.block), str(s.index), repr(s.utility), s.text) for s in included]


def test_cli_bad_input_is_one_error_before_any_output(tiny_bert_dir, tmp_path):
    path = tmp_path / "samples.txt"
    path.write_text("\n".join(_samples(2)[:7]) + "\n", encoding="utf-8")
    out = tmp_path / "out.tsv"
    out.write_text("keep me\n", encoding="utf-8")
    before = fingerprint(path, out)
    code, _, err = invoke("mbr", "-c", path, "--samples", K, "--model", tiny_bert_dir, "-o", out)
    assert_one_error(code, err, str(path), "7 lines", "multiple of --samples 4")
    code, _, err = invoke("mbr", "-c", path, "--samples", 1, "--exclude-self", "--model", tiny_bert_dir, "-o", out)
    assert_one_error(code, err, "--exclude-self")
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    code, _, err = invoke("mbr", "-c", empty, "--model", tiny_bert_dir, "-o", out)
    assert_one_error(code, err, "no samples")
    code, _, err = invoke("mbr", "-c", path, "--samples", 7, "--model", tiny_bert_dir, "-o", path)
    assert_one_error(code, err, "also an input")
    assert fingerprint(path, out) == before


def test_api_bad_blocks_are_one_error(tiny_bert_dir):
    scorer = compose(HFEncoder(tiny_bert_dir), SingleLayer(3))
    with pytest.raises(InputError, match="there are 7 samples, which is not a multiple of k= 4"):
        mbr_select(scorer, _samples(2)[:7], K)
    with pytest.raises(InputError, match="^exclude_self= needs k= >= 2"):
        mbr_select(scorer, _samples(1), 1, exclude_self=True)
    with pytest.raises(InputError, match="samples must be a list"):
        mbr_select(scorer, "one text", 1)
    assert mbr_select(scorer, [], K) == []
