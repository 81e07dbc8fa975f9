"""What a caller gets back from scoring (``alignscore.scores``): unpacked into the wrong number of
names, the scores say what they hold; an idf over one reference text, which would weigh every
token 0 and score everything 0, is refused by the ``score`` command naming the option as given."""

from __future__ import annotations

import pytest

import alignscore
from alignscore.aligners.greedy import Greedy
from alignscore.aligners.optimal import WMD
from alignscore.composition import Composition
from alignscore.errors import ConfigError
from alignscore.scorer import Scorer
from alignscore.scores import check_idf
from alignscore.testing import WordEncoder
from alignscore.weighting.schemes import IdfS
from cli_checks import assert_one_error, invoke

CANDS, REFS = ["the cat sat", "a dog ran"], ["the cat sat down", "the dog ran off"]


@pytest.mark.parametrize("aligner, held", [(WMD(), "hold score "),
                                           (Greedy(beta=2.0), "hold precision, recall, f1, fbeta")])
def test_unpacking_into_another_number_of_names_says_what_the_scores_hold(aligner, held) -> None:
    scores = Scorer(WordEncoder(), Composition(aligner=aligner)).score(CANDS, REFS)
    with pytest.raises(ValueError, match=f"3 names for {len(scores.metrics)} metrics?: these scores {held}"):
        P, R, F = scores  # noqa: N806 - bert_score's names
    assert len(list(scores)) == len(scores.metrics)  # iterating is untouched
    first, *rest = scores
    assert len(rest) == len(scores.metrics) - 1


def test_p_r_f_unpack_as_bert_score_returns_them() -> None:
    scores = Scorer(WordEncoder()).score(CANDS, REFS)
    P, R, F = scores  # noqa: N806
    assert F.tolist() == scores.f1.tolist() and P.tolist() == scores.precision.tolist()


def test_a_one_metric_run_of_the_front_door_says_what_it_holds(tiny_bert_dir) -> None:
    with pytest.raises(ValueError, match="these scores hold score"):
        P, R, F = alignscore.score(CANDS, REFS, model=tiny_bert_dir, layer=2, aligner="wmd")  # noqa: N806


def test_idf_over_one_reference_text_is_found() -> None:
    idf = Composition(weighting=IdfS())
    with pytest.raises(ConfigError, match="idf-S over one reference text .* every score would be 0"):
        check_idf(idf, [["the cat"], ["the cat"]])
    check_idf(idf, [["the cat"], ["the dog"]])  # two texts: idf is not 0 everywhere
    check_idf(Composition(), [["the cat"]])  # no idf: nothing to refuse
    assert Scorer(WordEncoder(), idf).score(["a cat"], ["the dog"]).f1.tolist() == [0.0]  # the library warns


@pytest.mark.parametrize("flags, named", [(["--idf"], "--idf"), (["--weighting", "idf-S"], "--weighting")])
def test_the_command_names_the_option_and_writes_nothing(tmp_path, flags, named) -> None:
    refs, cands, out = tmp_path / "refs.txt", tmp_path / "cands.txt", tmp_path / "out.tsv"
    refs.write_text("the cat sat on the mat\n", encoding="utf-8")
    cands.write_text("a cat sat\n", encoding="utf-8")
    code, _, err = invoke("score", "-r", refs, "-c", cands, "--model", "no-such-org/no-such-model", *flags,
                          "-o", out, "-q")
    assert_one_error(code, err, f"{named}: idf-S over one reference text")
    assert not out.exists()


def test_why_every_token_weighs_nothing_names_the_options_as_python_does(tiny_bert_dir: str) -> None:
    scorer = alignscore.build(alignscore.run_spec({"model": tiny_bert_dir, "preset": "moverscore-v2"}))
    with pytest.warns(UserWarning, match=r"idf-L with a larger corpus \(weighting= idf-L idf_corpus= FILE\)"):
        scorer.score(["consumers prefer imported cars"], ["people like foreign cars"])
