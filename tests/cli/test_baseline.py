"""``alignscore baseline``: the corpus before the model, and ``--bert-score LANG`` without
``--model`` takes the model bert_score picks for LANG."""

from __future__ import annotations

import pytest

from cli_checks import assert_one_error, invoke
from helpers import needs


def test_a_missing_corpus_before_the_model(tmp_path) -> None:
    code, _, err = invoke("baseline", "--model", "/nonexistent/model", "--corpus", tmp_path / "MISSING",
                          "-o", tmp_path / "b.csv")
    line = assert_one_error(code, err, "MISSING", "cannot read file")
    assert "no such model" not in line and not (tmp_path / "b.csv").exists()


@pytest.mark.reference
def test_bert_score_lang_alone_picks_its_model() -> None:
    needs("bert_score")
    code, out, err = invoke("baseline", "--bert-score", "en")
    assert code == 0, err
    by_model = invoke("baseline", "--model", "roberta-large", "--bert-score", "en")[1]
    assert out == by_model and out.strip().endswith("en/roberta-large.tsv")
