"""Pairwise matrices: ``Scorer.pairwise`` equals scoring every (candidate, reference) pair, each
text is encoded once, and the engine's chunked alignment of blocks of pairs."""

from __future__ import annotations

import math

import pytest
import torch

from alignscore import WMD, HFEncoder, IdfS, Pairs, Runtime, Scorer, SingleLayer, score_many
from alignscore.blocks import align_chunks, score_blocks
from alignscore.engine import Blocks, align, aligner_inputs, encode
from alignscore.errors import ConfigError, InputError

from helpers import compose, wmt16
from fakes import CountingEncoder

TOL = 1e-6


def _texts(n: int, m: int) -> tuple[list[str], list[str]]:
    data = wmt16("de-en")
    return data["mt-system"][:n], data["reference"][:m]


SCORERS = {
    "greedy": dict(aggregator=SingleLayer(3)),
    "greedy idf-S": dict(aggregator=SingleLayer(3), weighting=IdfS()),
    "greedy idf-S+sep": dict(aggregator=SingleLayer(2), weighting=IdfS(sep=True), special_tokens="drop"),
    "wmd": dict(aggregator=SingleLayer(3), aligner=WMD(), special_tokens="drop"),
    "wmd idf-S": dict(aggregator=SingleLayer(3), aligner=WMD(), weighting=IdfS(), special_tokens="keep"),
}


@pytest.mark.parametrize("name", list(SCORERS))
def test_pairwise_equals_score_on_every_pair(tiny_bert_dir, name):
    cands, refs = _texts(7, 5)  # N != M
    refs[3] = cands[1]  # a text on both sides is encoded once and still scored both ways
    scorer = compose(HFEncoder(tiny_bert_dir), **SCORERS[name])
    matrix = scorer.pairwise(cands, refs, max_pairs=8)  # several chunks, rows split across them
    flat_cands = [c for c in cands for _ in refs]
    flat_refs = [r for _ in cands for r in refs]
    if isinstance(scorer.weighting, IdfS):
        # the weights pairwise documents: idf-S over the M references (each once), SEP over the N
        # candidates (each once): score the N x M pairs with exactly those counts
        pairs = Pairs.from_groups(cands, [refs] * len(cands))
        pairs.ref_counts = pairs.ref_counts / len(cands)
        (result,) = score_many(scorer.encoder, pairs, [scorer.resolved()])
        expected = result.metrics
    else:
        expected = scorer.score(flat_cands, flat_refs).metrics
    assert set(matrix.metrics) == set(expected)
    for metric, values in expected.items():
        assert matrix[metric].shape == (len(cands), len(refs))
        assert (matrix[metric].reshape(-1).double() - values.double()).abs().max() < TOL, metric
    assert str(matrix.signature) == str(scorer.signature())


def test_pairwise_idf_is_fitted_on_the_references_not_the_pairs(tiny_bert_dir):
    """Scoring the N x M pairs as flat lists counts each reference N times: other idf weights."""
    cands, refs = _texts(6, 4)
    scorer = compose(HFEncoder(tiny_bert_dir), SingleLayer(3), weighting=IdfS())
    matrix = scorer.pairwise(cands, refs)
    flat = scorer.score([c for c in cands for _ in refs], [r for _ in cands for r in refs])
    assert (matrix.f1.reshape(-1) - flat.f1).abs().max() > 1e-4
    # one row: candidate i against each reference once, as score_many counts a group
    enc = scorer.encoder
    (row,) = score_many(enc, Pairs.from_groups(cands[:1], [refs]), [scorer.resolved()])
    assert (matrix.f1[0] - row.metrics["f1"]).abs().max() < TOL


def test_pairwise_encodes_each_unique_text_once(tiny_bert_dir):
    cands, refs = _texts(9, 12)
    refs += cands[:2]  # shared texts count once
    enc = CountingEncoder(tiny_bert_dir)
    compose(enc, SingleLayer(3), batch_size=4).pairwise(cands, refs, max_pairs=10)
    unique = len({t.strip() for t in cands + refs})
    assert enc.calls == math.ceil(unique / 4) and enc.texts == unique


def test_pairwise_empty_inputs_and_empty_texts(tiny_bert_dir):
    scorer = compose(HFEncoder(tiny_bert_dir), SingleLayer(3))
    assert scorer.pairwise([], ["a b"]).f1.shape == (0, 1)
    assert scorer.pairwise(["a b", "c"], []).f1.shape == (2, 0)
    assert scorer.pairwise([], []).empty.shape == (0, 0)
    with pytest.warns(UserWarning, match="2 pair"):
        m = scorer.pairwise(["", "people like cars"], ["foreign cars", "cars"])
    assert m.empty.tolist() == [[True, True], [False, False]]
    assert m.f1[0].tolist() == [0.0, 0.0] and bool(torch.isfinite(m.f1).all()) and float(m.f1[1].min()) > 0


def test_pairwise_bad_input_is_one_error(tiny_bert_dir):
    scorer = compose(HFEncoder(tiny_bert_dir), SingleLayer(3))
    with pytest.raises(InputError, match="candidates must be a list"):
        scorer.pairwise("one text", ["a"])
    with pytest.raises(InputError, match="reference 1 is"):
        scorer.pairwise(["a"], ["b", 3])
    with pytest.raises(ConfigError, match="max_pairs"):
        scorer.pairwise(["a"], ["b"], max_pairs=0)


def test_score_blocks_equals_align_of_every_pair(tiny_bert_dir):
    """Blocks of different shapes (one without candidates, one without references), chunks that
    span blocks: each block's matrix is align() of its pairs over one encoding."""
    texts = wmt16("de-en")["reference"][:12]
    spec = [(texts[0:3], texts[3:5]), ([], texts[5:6]), (texts[6:8], []), (texts[8:12], texts[8:12])]
    blocks = Blocks.of(spec)
    enc = HFEncoder(tiny_bert_dir)
    comps = [s.resolve(enc) for s in (compose(enc, SingleLayer(2)).composition,
                                      compose(enc, SingleLayer(3), aligner=WMD()).composition)]
    got = list(score_blocks(enc, blocks, comps, Runtime(), max_pairs=5))
    assert len(got) == len(spec)
    encoded = encode(enc, blocks.pairs, [c.aggregator for c in comps])
    sets = aligner_inputs(encoded, comps, enc)
    for (cands, refs), b_cands, b_refs, results in zip(spec, blocks.cands, blocks.refs, got):
        ref = b_refs.repeat(len(b_cands))
        cand = b_cands.repeat_interleave(len(b_refs))
        (whole,) = align_chunks(encoded, comps, sets, [(ref, cand)])
        for comp, result, expected in zip(comps, results, whole):
            assert result.empty.shape == (len(cands), len(refs))
            for name in comp.metrics:
                assert result.metrics[name].shape == (len(cands), len(refs))
                assert torch.allclose(result.metrics[name].reshape(-1).double(), expected[name].double(),
                                      rtol=0, atol=TOL)


def test_align_chunks_equals_align_of_all_pairs(tiny_bert_dir):
    refs, cands = wmt16("de-en")["reference"][:10], wmt16("de-en")["mt-system"][:10]
    enc = HFEncoder(tiny_bert_dir)
    comp = compose(enc, SingleLayer(3)).resolved()
    encoded = encode(enc, Pairs.from_pairs(refs, cands), [comp.aggregator])
    sets = aligner_inputs(encoded, [comp], enc)
    (whole,) = align(encoded, [comp], sets)
    p = encoded.pairs
    parts = list(align_chunks(encoded, [comp], sets, [(p.ref[:4], p.cand[:4]), (p.ref[4:], p.cand[4:])]))
    assert len(parts) == 2
    for name in comp.metrics:
        assert (torch.cat([parts[0][0][name], parts[1][0][name]]) - whole[name]).abs().max() < TOL


def test_cli_pairwise_writes_the_matrix_as_npy(tiny_bert_dir, tmp_path):
    import numpy as np

    from cli_checks import invoke

    texts = wmt16("de-en")["reference"][:6] + [""]
    path = tmp_path / "texts.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    out = tmp_path / "self.npy"
    code, _, err = invoke("score", "--pairwise", "-c", path, "--model", tiny_bert_dir, "--layer", 3,
                          "--aligner", "wmd", "-o", out, "-q")
    assert code == 0, err
    got = np.load(out)
    assert got.dtype == np.float32 and got.shape == (7, 7)
    expected = compose(HFEncoder(tiny_bert_dir), SingleLayer(3), aligner=WMD()).pairwise(texts, texts).score
    assert np.abs(got - expected.numpy()).max() < TOL
    assert "7 x 7 score matrix" in err and "signature: model:" in err


@pytest.mark.parametrize("args, needle", [
    (["-r", "{path}", "-o", "{tmp}/m.npy"], "give no -r"),
    (["-o", "{tmp}/m.tsv"], "-o OUT.npy"),
    ([], "-o OUT.npy"),
    (["-o", "{tmp}/m.npy", "--stream"], "--stream"),
    (["-o", "{path}.npy", "--format", "jsonl"], "--format"),
])
def test_cli_pairwise_bad_options_are_one_error(tiny_bert_dir, tmp_path, args, needle):
    from cli_checks import assert_one_error, invoke

    path = tmp_path / "texts.txt"
    path.write_text("a b\nc d\n", encoding="utf-8")
    args = [a.format(path=path, tmp=tmp_path) for a in args]
    code, _, err = invoke("score", "--pairwise", "-c", path, "--model", tiny_bert_dir, *args)
    assert_one_error(code, err, needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["texts.txt"]
