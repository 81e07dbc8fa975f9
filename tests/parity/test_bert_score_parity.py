"""Parity with bert_score 0.3.13 on WMT16 with the real all-MiniLM-L6-v2 at layer 4.

Tolerance: 1e-5 absolute on every per-pair P, R and F (the issue's bar); both sides compute in
float32, the differences come from summation order only.
"""

from __future__ import annotations

import json
import random

import pytest
import torch
from click.testing import CliRunner

import alignscore
from helpers import memoised_forward, needs
from alignscore.cli import main

bert_score = needs("bert_score")

pytestmark = [pytest.mark.slow, pytest.mark.reference]
TOL = 1e-5
LPS = ("de-en", "ru-en")  # 1,120 pairs: enough to exercise every code path, fast enough for CI


@pytest.fixture(scope="module", autouse=True)
def _forward_once():
    """bert_score's forward pass memoised per batch (its token ids, mask and model): the tests below
    give it the same batches again (with and without idf, the same pairs rescaled two ways, one
    text at a time at four depths). bert_score cuts the model to its first L layers, whose output
    is the L-th hidden state of any deeper cut: a batch's pass at one depth serves every depth
    below it (checked against bert_score's own pass at each depth's first batch, to 1e-6, a tenth
    of the tests' tolerance)."""
    encode, seen, checked = bert_score.utils.bert_encode, {}, set()

    def once(model, x, attention_mask, all_layers=False):
        depth = len(model.encoder.layer)
        key = (x.numpy().tobytes(), tuple(x.shape), attention_mask.numpy().tobytes(), model.name_or_path)
        if key not in seen or len(seen[key]) <= depth:
            with torch.no_grad():
                seen[key] = model(x, attention_mask=attention_mask, output_hidden_states=True).hidden_states
        states = seen[key]
        out = torch.stack(states[:depth + 1], dim=2) if all_layers else states[depth]
        if (depth, all_layers) not in checked:
            assert torch.allclose(out, encode(model, x, attention_mask, all_layers=all_layers), rtol=0, atol=1e-6)
            checked.add((depth, all_layers))
        return out.clone()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bert_score.utils, "bert_encode", once)
        yield


@pytest.fixture(scope="module")
def minilm(minilm_dir):
    """Our side's all-MiniLM-L6-v2, one for the module, its forward pass memoised per batch: the
    tests below score the same texts with and without idf, rescaled and not."""
    from alignscore.encoders import HFEncoder

    return memoised_forward(HFEncoder(minilm_dir))


def our_scorer(minilm, **options):
    return alignscore.bertscore(encoder=minilm, layer=4, **options)


def _reference(cands, refs, minilm_dir, **kwargs):
    p, r, f = bert_score.score(cands, refs, model_type=minilm_dir, num_layers=4, batch_size=64,
                               device="cpu", nthreads=1, **kwargs)
    return {"precision": p, "recall": r, "f1": f}


def _assert_close(ours, theirs):
    for name in ("precision", "recall", "f1"):
        diff = (ours[name].double() - theirs[name].double()).abs().max().item()
        assert diff < TOL, f"{name}: max |diff| = {diff:.2e}"


@pytest.fixture(scope="module")
def pairs(wmt_data):
    cands = [c for lp in LPS for c in wmt_data[lp]["mt-system"]]
    refs = [r for lp in LPS for r in wmt_data[lp]["reference"]]
    return cands, refs


@pytest.mark.parametrize("idf", [False, True], ids=["none", "idf-S"])
def test_api_matches_bert_score(pairs, minilm, minilm_dir, idf):
    cands, refs = pairs
    scorer = our_scorer(minilm, idf=idf)
    ours = scorer.score(cands, refs)
    _assert_close(ours.metrics, _reference(cands, refs, minilm_dir, idf=idf))
    assert ("w:idf-S" if idf else "w:none") in str(ours.signature)


@pytest.mark.parametrize("weighting", ["none", "idf-S"])
def test_cli_matches_bert_score(wmt_data, minilm_dir, tmp_path, weighting):
    from helpers import WMT16

    lp = "de-en"
    out = tmp_path / "scores.jsonl"
    result = CliRunner().invoke(main, [
        "score", "-r", str(WMT16 / f"DAseg.newstest2016.reference.{lp}"),
        "-c", str(WMT16 / f"DAseg.newstest2016.mt-system.{lp}"), "--model", minilm_dir, "--layer", "4",
        "--weighting", weighting, "--format", "jsonl", "-o", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    ours = {k: torch.tensor([row[k] for row in rows]) for k in ("precision", "recall", "f1")}
    theirs = _reference(wmt_data[lp]["mt-system"], wmt_data[lp]["reference"], minilm_dir,
                        idf=weighting == "idf-S")
    _assert_close(ours, theirs)


def _second_references(cands):
    """A second reference per candidate that sometimes wins on recall and not on precision:
    the first half of the candidate's own words."""
    return [" ".join(c.split()[: max(1, len(c.split()) // 2)]) for c in cands]


@pytest.mark.parametrize("idf", [False, True], ids=["none", "idf-S"])
def test_two_references_match_bert_score(wmt_data, minilm, minilm_dir, idf):
    lp = "de-en"
    cands, refs = wmt_data[lp]["mt-system"], wmt_data[lp]["reference"]
    groups = [[r, s] for r, s in zip(refs, _second_references(cands))]
    ours = our_scorer(minilm, idf=idf).score(cands, groups)
    _assert_close(ours.metrics, _reference(cands, groups, minilm_dir, idf=idf))
    if idf:
        return  # idf-S over two reference sets differs from idf over either one alone
    # each metric's maximum is taken independently: some candidates take P from one reference
    # and R from the other, which a "best reference" reduction would get wrong
    single = [our_scorer(minilm, idf=idf).score(cands, [g[k] for g in groups])
              for k in (0, 1)]
    p_from = torch.stack([s.precision for s in single]).argmax(0)
    r_from = torch.stack([s.recall for s in single]).argmax(0)
    assert bool((p_from != r_from).any())
    f = torch.stack([s.f1 for s in single])
    assert torch.equal(ours.best_reference, f.argmax(0))


def test_rescaling_with_our_baseline_file_matches_bert_score(pairs, minilm, minilm_dir, tmp_path, wmt_data):
    """`alignscore baseline` writes a file that bert_score reads and rescales with identically."""
    corpus = [r for lp in ("cs-en", "fi-en") for r in wmt_data[lp]["reference"]]
    corpus_file = tmp_path / "corpus.txt"
    corpus_file.write_text("\n".join(corpus) + "\n", encoding="utf-8")
    baseline_file = tmp_path / "minilm.tsv"
    result = CliRunner().invoke(main, ["baseline", "--model", minilm_dir, "--corpus", str(corpus_file),
                                       "--pairs", "300", "-o", str(baseline_file), "--quiet"])
    assert result.exit_code == 0, result.output
    lines = baseline_file.read_text().splitlines()
    assert lines[0] == "LAYER,P,R,F" and len(lines) == 1 + 7  # layers 0..6

    cands, refs = pairs
    cands, refs = cands[:300], refs[:300]
    ours = our_scorer(minilm, baseline=baseline_file).score(cands, refs)
    theirs = _reference(cands, refs, minilm_dir, rescale_with_baseline=True, lang="en",
                        baseline_path=str(baseline_file))
    _assert_close(ours.metrics, theirs)
    raw = our_scorer(minilm).score(cands, refs)
    assert not torch.allclose(raw.f1, ours.f1)  # rescaling did something

    # the baseline is what it claims: bert_score's mean P, R, F of the random pairs (drawn as
    # compute_baseline documents: random.Random(seed), two randrange calls, equal lines redrawn),
    # layer by layer. bert_score one text per batch: in a padded batch its greedy max also sees the
    # padding's similarity 0, which beats the negative similarities of the embedding layer (layer 0)
    written = alignscore.Baseline.read(baseline_file)
    texts, rng, drawn = [t.strip() for t in corpus if t.strip()], random.Random(0), []
    while len(drawn) < 300:
        i, j = rng.randrange(len(texts)), rng.randrange(len(texts))
        if texts[i] != texts[j]:
            drawn.append((i, j))
    for layer in (6, 4, 2, 0):  # deepest first: its passes serve the others
        p, r, f = bert_score.score([texts[i] for i, _ in drawn], [texts[j] for _, j in drawn], model_type=minilm_dir,
                                   num_layers=layer, batch_size=1, device="cpu", nthreads=1)
        for name, theirs in (("precision", p), ("recall", r), ("f1", f)):
            assert written.rows[layer][name] == pytest.approx(float(theirs.double().mean()), abs=1e-5), (layer, name)
    assert 0.2 < written.rows[4]["f1"] < raw.f1.mean().item()


def test_rescaling_with_a_file_bert_score_ships_matches_bert_score(pairs, minilm, minilm_dir):
    """A baseline file bert_score ships, given to alignscore as it is (found by
    ``alignscore.rescale.bert_score_baseline``), rescales as bert_score rescales with it. It has
    no file for MiniLM: roberta-large's stands in (its layer-4 row), a file of the very format."""
    from alignscore.rescale import bert_score_baseline

    path = bert_score_baseline("roberta-large", "en")
    cands, refs = pairs
    cands, refs = cands[:300], refs[:300]
    ours = our_scorer(minilm, baseline=path).score(cands, refs)
    theirs = _reference(cands, refs, minilm_dir, rescale_with_baseline=True, lang="en", baseline_path=str(path))
    _assert_close(ours.metrics, theirs)
    assert ours.signature["rescale"] == f"roberta-large.tsv#{alignscore.Baseline.read(path).digest()}"
