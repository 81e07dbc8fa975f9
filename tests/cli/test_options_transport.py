"""The command line with optimal-transport aligners, n-grams, token filters and MoverScore presets."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from alignscore.cli import main
from alignscore import moverscore_v2
from alignscore.signature import content_digest

REFS = ["the cat sat on the mat.", "people like foreign cars", "he said: it is unbelievable!"]
CANDS = ["a cat was sitting on the mat", "consumers prefer imported cars", "he said it was incredible"]


def run(*args: str):
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def io(files):
    return files("refs.txt", REFS), files("cands.txt", CANDS)


def signature(err: str) -> str:
    return next(line for line in err.splitlines() if line.startswith("signature: "))


def jsonl(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def scored(io, *args: str) -> tuple[str, str]:
    """``score`` of the test's pairs with ``args``, quietly: its stdout and its signature line."""
    refs, cands = io
    code, out, err = run("score", "-r", refs, "-c", cands, *args, "-q")
    assert code == 0, err
    return out, signature(err)


def test_wmd_writes_the_key_score(io, tiny_bert_dir) -> None:
    out, sig = scored(io, "--model", tiny_bert_dir, "--layer", "3", "--aligner", "wmd", "--format", "jsonl")
    rows = jsonl(out)
    assert [list(r) for r in rows] == [["score"]] * 3
    assert all(math.isfinite(r["score"]) and r["score"] <= 1 for r in rows)
    assert "align:wmd(euclidean,1-d,n=1)" in sig


def test_sinkhorn_sentence_level_and_filters(io, files, tiny_bert_dir) -> None:
    stop = files("stop.txt", ["the", "on", "a"])
    out, sig = scored(io, "--model", tiny_bert_dir, "--layer", "3", "--aligner", "sinkhorn", "--n-gram", "sentence",
                      "--filters", "rm", "--stopwords", stop, "--format", "jsonl")
    assert "align:sinkhorn(euclidean,1-d,n=sentence,reg=0.02" in sig
    assert f"tokens:special=match-only+rm+stop(stop.txt#{content_digest(['a', 'on', 'the'])},n=3)" in sig
    assert len(jsonl(out)) == 3


def test_filters_reach_greedy(io, files, tiny_bert_dir) -> None:
    refs, cands = io
    base = run("score", "-r", refs, "-c", cands, "--model", tiny_bert_dir, "--layer", "3", "--format", "jsonl", "-q")
    filtered = run("score", "-r", refs, "-c", cands, "--model", tiny_bert_dir, "--layer", "3", "--format", "jsonl",
                   "-q", "--filters", "rm")
    assert base[0] == filtered[0] == 0
    assert "+rm|" in signature(filtered[2])
    assert jsonl(base[1]) != jsonl(filtered[1])  # dropping punctuation and subwords changes F1


def test_preset_moverscore_v2_matches_the_python_api(io, tiny_bert_dir) -> None:
    out, sig = scored(io, "--preset", "moverscore-v2", "--model", tiny_bert_dir, "--format", "jsonl")
    assert "tokens:special=keep+ms2-punct" in sig and "w:idf-S+sep" in sig and "wmd(euclidean,1-d,n=1)" in sig
    api = moverscore_v2(model=tiny_bert_dir).score(CANDS, REFS)
    assert [r["score"] for r in jsonl(out)] == pytest.approx(api.score.tolist(), abs=1e-12)


def test_preset_moverscore_v1_with_overrides(io, tiny_bert_dir) -> None:
    _, sig = scored(io, "--preset", "moverscore-v1", "--model", tiny_bert_dir, "--n-gram", "2")
    assert "layers:pmeans(" in sig and "+rm|" in sig and "wmd(sqeuclidean,1-d,n=2)" in sig
    # switching to Sinkhorn keeps the preset's cost, score form and n-gram size
    _, sig = scored(io, "--preset", "moverscore-v1", "--model", tiny_bert_dir, "--n-gram", "2", "--aligner", "sinkhorn")
    assert "sinkhorn(sqeuclidean,1-d,n=2," in sig


@pytest.mark.parametrize("args,needle", [
    (["--n-gram", "2"], "--n-gram: applies to aligner sinkhorn or wmd, not to aligner greedy (the default)"),
    (["--aligner", "wmd", "--n-gram", "0"], "--n-gram: expected an integer >= 1 or one of sentence, not 0"),
    (["--aligner", "wmd", "--n-gram", "two"], "--n-gram: expected an integer >= 1 or one of sentence, not 'two'"),
])
def test_bad_n_gram_is_one_line(io, tiny_bert_dir, args, needle) -> None:
    refs, cands = io
    code, out, err = run("score", "-r", refs, "-c", cands, "--model", tiny_bert_dir, "--layer", "3", "-q", *args)
    assert code == 1
    errors = [line for line in err.splitlines() if line.startswith("alignscore: error:")]
    assert len(errors) == 1 and needle in errors[0] and "Traceback" not in err


def test_stopwords_is_an_option_not_a_filter_name(io, tiny_bert_dir) -> None:
    refs, cands = io
    code, out, err = run("score", "-r", refs, "-c", cands, "--model", tiny_bert_dir, "--filters", "stopwords")
    assert code == 1 and "--filters (--stopwords): the stopwords filter needs a file" in err
