"""``alignscore score``: the texts and human scores are read before the model is looked up."""

from __future__ import annotations

import pytest

from cli_checks import assert_one_error, invoke

MISSING = "/nonexistent/model"


@pytest.mark.parametrize("stream", [False, True])
def test_a_missing_reference_file_before_the_model(files, tmp_path, stream: bool) -> None:
    c = files("c.txt", ["a cat sat"])
    extra = ["--stream", "-o", tmp_path / "out.tsv"] if stream else []
    code, _, err = invoke("score", "-c", c, "-r", tmp_path / "MISSING", "--model", MISSING, *extra)
    line = assert_one_error(code, err, "MISSING", "cannot read file")
    assert MISSING not in line


@pytest.mark.parametrize("human, needle", [(["good", "bad", "1", "2"], "not a number"),
                                           (["1"] * 4, "a correlation with constant scores is undefined")])
def test_bad_human_scores_before_the_model(files, human: list[str], needle: str) -> None:
    texts = ["a cat", "a dog", "a cow", "a hen"]
    c, r, h = files("c.txt", texts), files("r.txt", texts[::-1]), files("h.txt", human)
    code, _, err = invoke("score", "-c", c, "-r", r, "--human", h, "--model", MISSING)
    line = assert_one_error(code, err, "h.txt", needle)
    assert MISSING not in line
