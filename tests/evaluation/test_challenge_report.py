"""``alignscore challenge`` as one library call: its own options (:class:`ChallengeOptions`) named in
errors as the caller gave them (flags on the command line, tests/evaluation/test_challenge.py; keywords
from Python, here), every one checked before a model is looked up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from alignscore.config import run_spec
from alignscore.errors import ConfigError, InputError
from alignscore.evaluation.challenge_report import ChallengeOptions, challenge_file

ITEM = {"ref": "the cat sat", "good": "a cat sat", "bad": "a cat ran", "category": "verb"}


@pytest.fixture
def items(tmp_path: Path) -> Path:
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps({**ITEM, "lp": "de-en"}) + "\n" + json.dumps({**ITEM, "bad": "a dog sat"}) + "\n",
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("opts, error, needle", [
    (ChallengeOptions(by="lp"), InputError, "by= lp: 1 item(s) have no 'lp' (the first on line 2)"),
    (ChallengeOptions(by="category"), InputError, "by= category: 'category' is a field of every item"),
    (ChallengeOptions(against_sources=True), InputError, "against_sources=: the item has no 'source' text"),
])
def test_its_errors_name_the_options_as_python_keywords(items: Path, tmp_path: Path, opts: ChallengeOptions,
                                                        error: type[Exception], needle: str) -> None:
    out = tmp_path / "out.tsv"
    with pytest.raises(error) as caught:
        challenge_file([run_spec({"model": "no-such-org/no-such-model"})], str(items), opts, str(out))
    assert needle in str(caught.value) and not out.exists()  # before the (absent) model is looked up


def test_its_options_are_checked_where_they_are_given() -> None:
    with pytest.raises(ConfigError, match="^format=: one of tsv, jsonl, not 'csv'"):
        ChallengeOptions.given({"format": "csv"})
    with pytest.raises(ConfigError, match="^--bootstrap: expected an integer >= 40, not 10"):
        ChallengeOptions.given({"bootstrap": "10"}, {"bootstrap": "--bootstrap"}, text=True)
