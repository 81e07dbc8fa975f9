"""Token-class weights: the masses of special tokens, punctuation, stop words and subword
continuations multiplied by a weight per class, a setting of every built-in weighting. All 1 is
today's metric bit for bit; 0 is the matching filter where the aligner ignores tokens without mass;
a fitted run (class weights, a layer mix, a soft greedy match, F-beta) scores the same from every
way in."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace

import pytest
import torch

import alignscore
from alignscore import run_spec
from alignscore.errors import ConfigError
from alignscore.filters import RemoveSubwordsPunct, StopWords
from alignscore.testing import WordEncoder, check_weighting
from alignscore.tokens import TokenTable
from alignscore.weighting import (TOKEN_CLASSES, IdfS, Norm, Uniform, token_class_multipliers, token_classes)
from cli_checks import assert_same_run_every_way_in, invoke

CANDS = ["the cat sat on the mat, quietly.", "a dog ran in the park!", "hello there, world",
         "unbelievable alignments of ourselves"]
REFS = ["a cat sat on a mat.", "the running dogs were barking loudly", "hello, world!", "the alignments of themselves"]
STOP = ["the", "a", "on", "in", "of", "ourselves", "themselves", "were", "there"]
ONES = dict(special_weight=1.0, punct_weight=1.0, stopword_weight=1.0, subword_weight=1.0)


def _score(model: str, **opts) -> dict[str, torch.Tensor]:
    return alignscore.score(CANDS, REFS, model=model, layer=2, **opts)


@pytest.mark.parametrize("aligner", [{"aligner": "greedy"}, {"aligner": "wmd"}, {"aligner": "sinkhorn", "reg": 0.1}])
@pytest.mark.parametrize("weighting", ["none", "idf-S", "norm"])
def test_all_ones_are_todays_scores_bit_for_bit(tiny_bert_dir, aligner, weighting) -> None:
    today = _score(tiny_bert_dir, weighting=weighting, **aligner)
    ones = _score(tiny_bert_dir, weighting=weighting, **aligner, **ONES, class_stopwords=STOP)
    for metric in alignscore.build(run_spec({"model": tiny_bert_dir, "layer": 2, **aligner})).composition.metrics:
        assert torch.equal(today[metric], ones[metric]), metric
    assert str(today.signature) == str(ones.signature) and "classes" not in str(today.signature)


@pytest.mark.parametrize("aligner", [{"aligner": "wmd"}, {"aligner": "sinkhorn", "reg": 0.1}])
@pytest.mark.parametrize("weighting", ["none", "idf-S"])
def test_weight_zero_is_the_filter_for_transport(tiny_bert_dir, aligner, weighting) -> None:
    opts = dict(weighting=weighting, **aligner)
    rm = _score(tiny_bert_dir, **opts, filters=["rm"])["score"]
    zero = _score(tiny_bert_dir, **opts, punct_weight=0.0, subword_weight=0.0)["score"]
    assert torch.allclose(rm, zero, atol=1e-6), (rm, zero)
    stop = _score(tiny_bert_dir, **opts, stopwords=STOP)["score"]
    zero = _score(tiny_bert_dir, **opts, stopword_weight=0.0, class_stopwords=STOP)["score"]
    assert torch.allclose(stop, zero, atol=1e-6), (stop, zero)
    both = _score(tiny_bert_dir, **opts, filters=["rm"], stopwords=STOP)["score"]
    zero = _score(tiny_bert_dir, **opts, punct_weight=0.0, subword_weight=0.0, stopword_weight=0.0,
                  class_stopwords=STOP)["score"]
    assert torch.allclose(both, zero, atol=1e-6)
    half = _score(tiny_bert_dir, **opts, stopword_weight=0.5, class_stopwords=STOP)["score"]
    assert not torch.allclose(half, zero, atol=1e-4) and not torch.allclose(half, rm, atol=1e-4)


@pytest.mark.parametrize("aligner", ["greedy", "wmd"])
def test_special_weight_zero_under_keep_is_match_only(tiny_bert_dir, aligner) -> None:
    match_only = _score(tiny_bert_dir, aligner=aligner, special_tokens="match-only")
    zero = _score(tiny_bert_dir, aligner=aligner, special_tokens="keep", special_weight=0.0)
    keep = _score(tiny_bert_dir, aligner=aligner, special_tokens="keep")
    half = _score(tiny_bert_dir, aligner=aligner, special_tokens="keep", special_weight=0.5)
    for metric in match_only.metrics:
        assert torch.allclose(match_only[metric], zero[metric], atol=1e-6), metric
    primary = "f1" if aligner == "greedy" else "score"
    assert not torch.allclose(keep[primary], half[primary], atol=1e-5)


def test_greedy_weight_zero_keeps_the_tokens_as_match_targets(tiny_bert_dir) -> None:
    """The filter takes stop words out of both sums and out of the targets; weight 0 out of the
    sums only, as match-only does for special tokens: recall differs, and no score is NaN."""
    filtered = _score(tiny_bert_dir, stopwords=STOP)
    zero = _score(tiny_bert_dir, stopword_weight=0.0, class_stopwords=STOP)
    assert torch.isfinite(zero["f1"]).all() and not torch.allclose(filtered["recall"], zero["recall"], atol=1e-5)
    # a candidate token's best similarity can only grow with more targets
    assert (zero["recall"] >= filtered["recall"] - 1e-6).all() and (zero["precision"] >= filtered["precision"] - 1e-6).all()


@pytest.mark.parametrize("aligner", ["greedy", "wmd"])
def test_every_token_weighing_zero_scores_zero_with_a_warning_never_nan(tiny_bert_dir, aligner) -> None:
    with pytest.warns(UserWarning, match=r"every token weighs 0 \(token-class weights punct_weight = 0, "
                                         r"stopword_weight = 0"):
        out = alignscore.score(["the cat.", "of the ,"], ["a cat", "a dog"], model=tiny_bert_dir, layer=2,
                               aligner=aligner, punct_weight=0.0, stopword_weight=0.0, class_stopwords=STOP)
    for metric in out.metrics:
        assert torch.isfinite(out[metric]).all(), metric
        assert out[metric][1].item() == 0.0 and out[metric][0].item() != 0.0, metric


def test_classes_follow_the_filters_and_multiply() -> None:
    table = TokenTable.from_tokenized(WordEncoder().tokenize(["The alignment, of themselves.", "done"]))
    stop = StopWords(stopwords=("the", "of", "themselves"))
    classes = token_classes(table, stop)
    bit = {name: 1 << c for c, name in enumerate(TOKEN_CLASSES)}
    assert torch.equal((classes & bit["special"]) > 0, table.special)
    ordinary = ~table.special
    # the filters drop exactly the tokens of their classes
    assert torch.equal(ordinary & ~RemoveSubwordsPunct().keep(table),
                       ordinary & ((classes & (bit["punct"] | bit["subword"])) > 0))
    assert torch.equal(ordinary & ~stop.keep(table), (classes & bit["stopword"]) > 0)
    weights = torch.tensor([0.5, 2.0, 3.0, 5.0], dtype=torch.float64)
    got = token_class_multipliers(classes, weights)
    want = torch.tensor([float(torch.prod(weights[[c for c in range(4) if int(k) >> c & 1]])) for k in classes],
                        dtype=torch.float64)
    assert torch.equal(got, want)


def test_multipliers_are_differentiable_over_padded_batches() -> None:
    torch.manual_seed(0)
    classes = torch.randint(0, 16, (3, 5))
    classes[1, 3:] = 0  # padding
    weights = (torch.rand(4, dtype=torch.float64) * 3).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda w: token_class_multipliers(classes, w), (weights,))
    at_zero = torch.tensor([0.0, 1.0, 1.0, 1.0], dtype=torch.float64, requires_grad=True)
    token_class_multipliers(classes, at_zero).sum().backward()
    assert at_zero.grad[0].item() == float((classes & 1).sum())  # the product rule at 0, no NaN


@pytest.mark.parametrize("weighting", [Uniform(punct_weight=0.5, subword_weight=2.0),
                                       IdfS(sep=True, stopword_weight=0.0, class_stopwords=("the", "cat")),
                                       Norm(subword_weight=3.0, punct_weight=0.0)])
def test_the_part_kit_accepts_class_weights(weighting) -> None:
    check_weighting(weighting)


def test_signature_only_when_not_all_one() -> None:
    assert Uniform().signature() == "none" and IdfS(**ONES).signature() == "idf-S"
    sig = IdfS(sep=True, punct_weight=0.0, stopword_weight=2.0, class_stopwords=("the", "a")).signature()
    assert sig.startswith("idf-S+sep+classes(punct=0.0,stopword=2.0@stop(list#") and ",n=2)" in sig
    assert sig != IdfS(sep=True, punct_weight=0.0, stopword_weight=2.0, class_stopwords=("the",)).signature()
    # the list only matters with a stop-word weight: not in the signature without one
    assert Uniform(class_stopwords=("the",)).signature() == "none"
    assert "stopwords-en.txt#" in Uniform(stopword_weight=0.5).signature()  # the packaged list by default


@pytest.mark.parametrize("opts, message", [
    ({"punct_weight": -1.0}, "punct_weight=: expected a number >= 0 and <= 10"),
    ({"subword_weight": 11.0}, "subword_weight=: expected a number >= 0 and <= 10"),
    ({"stopword_weight": float("nan")}, "stopword_weight="),
    ({"special_weight": 0.5}, "special_weight=: applies with special_tokens= keep only"),
    ({"stopword_weight": 0.5, "class_stopwords": ["  "]}, "class_stopwords=: "),
    ({"class_stopwords": ["  "]}, "class_stopwords=: "),  # read where given, whatever the weight
])
def test_bad_values_are_one_clear_error(opts, message) -> None:
    with pytest.raises(ConfigError, match=message):
        run_spec({"model": "m", **opts})


def test_a_fitted_run_scores_the_same_from_every_way_in(tiny_bert_dir, tmp_path) -> None:
    """What a fit writes to best.toml (a layer mix, a soft greedy match, F-beta, an idf exponent
    and token-class weights) through flags, keywords, a run file, a grid row and a space entry:
    one spec, one signature, the same scores."""
    stop_file = tmp_path / "stop.txt"
    stop_file.write_text("\n".join(STOP) + "\n", encoding="utf-8")
    opts = {"model": tiny_bert_dir, "aggregator": "mix", "layers": [1, 3], "mix_weights": [0.25, -1.5],
            "temperature": 0.05, "metric": "fbeta", "beta": 2.0, "weighting": "idf-S", "idf_power": 0.5,
            "punct_weight": 0.5, "stopword_weight": 0.0, "subword_weight": 2.0, "class_stopwords": str(stop_file),
            "special_tokens": "keep", "special_weight": 0.5}
    ways, flags, written = assert_same_run_every_way_in(opts, tmp_path)

    want = alignscore.score(CANDS, REFS, **opts)
    sig = str(want.signature)
    assert "mix(L1,3;w=" in sig and "T=0.05" in sig and "metric:fbeta" in sig
    assert "w:idf-S^0.5+classes(special=0.5,punct=0.5,stopword=0.0@stop(stop.txt#" in sig and "subword=2.0)" in sig
    assert torch.isfinite(want["fbeta"]).all()
    for way in ("file", "grid row", "space entry"):
        got = alignscore.build(ways[way]).score(CANDS, REFS)
        assert torch.equal(got["fbeta"], want["fbeta"]) and str(got.signature) == sig, way
    cands, refs = tmp_path / "c.txt", tmp_path / "r.txt"
    cands.write_text("\n".join(CANDS) + "\n", encoding="utf-8")
    refs.write_text("\n".join(REFS) + "\n", encoding="utf-8")
    for cli in (flags, ["--config", str(written)]):
        code, out, err = invoke("score", "-c", cands, "-r", refs, *cli, "-q", "--format", "jsonl")
        assert code == 0, err
        rows = [json.loads(line) for line in out.splitlines()]
        assert [r["fbeta"] for r in rows] == pytest.approx(want["fbeta"].tolist(), abs=1e-6)
        assert sig.split("|v:")[0] in err, err
    other = alignscore.score(CANDS, REFS, **{**opts, "subword_weight": 1.0})
    assert not torch.allclose(other["fbeta"], want["fbeta"], atol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn of
        alignscore.score(CANDS, REFS, **opts)


def test_what_a_fit_computes_is_what_the_engine_multiplies(tiny_bert_dir) -> None:
    """The masses the engine gives a weighting with class weights are its masses without them
    times token_class_multipliers(token_class_ids(table), class_weights()): the fit's path."""
    from alignscore.engine import Pairs, aligner_inputs, encode

    weighting = IdfS(punct_weight=0.5, stopword_weight=0.25, subword_weight=3.0, class_stopwords=tuple(STOP))
    scorer = alignscore.build(run_spec({"model": tiny_bert_dir, "layer": 2}))
    encoder = scorer.scoring_encoder()
    plain = replace(scorer.composition.resolve(encoder), weighting=IdfS())
    classed = replace(plain, weighting=weighting)
    encoded = encode(encoder, Pairs.from_pairs(CANDS, REFS), [plain.aggregator], scorer.runtime)
    without, with_classes = aligner_inputs(encoded, [plain, classed], encoder)
    m = token_class_multipliers(weighting.token_class_ids(encoded.table), torch.tensor(weighting.class_weights()))
    assert torch.equal(with_classes.ref_mass, without.ref_mass * m)
    assert torch.equal(with_classes.cand_mass, without.cand_mass * m)
    assert (m != 1).any() and len(set(m.tolist())) >= 3
