"""Declared settings (:mod:`alignscore.settings`): a text that is none of a setting's choices is
refused with every kind of value the setting takes."""

from __future__ import annotations

import pytest

from alignscore.config import run_spec
from alignscore.errors import ConfigError


def test_a_wrong_text_says_numbers_are_taken_too() -> None:
    with pytest.raises(ConfigError, match=r"n_gram=: expected an integer >= 1 or one of sentence, not 'two'"):
        run_spec({"aligner": "wmd", "n_gram": "two"})
    with pytest.raises(ConfigError, match=r"long_texts=: one of truncate, window, not 'cut'"):  # text only
        run_spec({"long_texts": "cut"})
