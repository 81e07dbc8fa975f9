"""Token filters: [RM] for WordPiece and byte-level BPE, moverscore_v2's string test, stop words;
and that filters reach the greedy aligner too."""

from __future__ import annotations

import re
import warnings

import pytest
import torch

from alignscore.aggregators.single import SingleLayer
from alignscore.aligners import Greedy
from alignscore.encoders.huggingface import HFEncoder
from alignscore.errors import ConfigError, InputError
from alignscore.filters import FILTERS, MoverScoreV2Strings, RemoveSubwordsPunct, StopWords, token_roles
from alignscore.filters.lexical import is_punctuation
from alignscore.scorer import Scorer
from alignscore.signature import content_digest
from alignscore.tokens import TokenTable
from helpers import compose

# Long words that the tiny vocabularies split into several pieces, ASCII and non-ASCII punctuation
# (byte-level BPE splits "—" and "“" into byte pieces), digits split by a hyphen.
TEXT = "Unbelievable reforms, the theory — said “people”; 2-1 result!"
WORDS = re.findall(r"\w+", TEXT)  # the words that are not punctuation


def table_for(model_dir: str, texts: list[str]) -> TokenTable:
    return TokenTable.from_tokenized(HFEncoder(model_dir).tokenize(texts))


@pytest.fixture(scope="module", params=["wordpiece", "bpe"])
def tok_table(request, tiny_bert_dir, tiny_roberta_dir) -> TokenTable:
    return table_for(tiny_bert_dir if request.param == "wordpiece" else tiny_roberta_dir, [TEXT, ""])


def test_rm_keeps_the_first_piece_of_every_word_and_no_punctuation(tok_table: TokenTable) -> None:
    keep = RemoveSubwordsPunct().keep(tok_table)
    kept = [s for s, k in zip(tok_table.surface, keep.tolist()) if k]
    assert len(kept) == len(WORDS)  # one token per word, none for , — “ ” ; - !
    for word, piece in zip(WORDS, kept):
        assert word.lower().startswith(piece.strip().lower()) and piece.strip()
    assert not keep[tok_table.special].any()
    # the vocabularies do split some of these words, so subwords were really dropped
    ordinary = (~tok_table.special).sum().item()
    assert ordinary > len(WORDS) + TEXT.count(",") + 4


def test_rm_agrees_with_the_wordpiece_string_test_on_ascii_text(tiny_bert_dir: str) -> None:
    """On ASCII text and WordPiece, [RM] and moverscore's '##' / string.punctuation test agree."""
    table = table_for(tiny_bert_dir, ["Unbelievable reforms, said people; 2-1 result!", "it's (a) test..."])
    ordinary = ~table.special
    assert torch.equal(RemoveSubwordsPunct().keep(table)[ordinary], MoverScoreV2Strings().keep(table)[ordinary])


def test_ms2_punct_is_moverscores_string_test(tiny_bert_dir: str) -> None:
    table = table_for(tiny_bert_dir, [TEXT])
    keep = MoverScoreV2Strings().keep(table)
    for tok, k in zip(table.tokens, keep.tolist()):
        dropped = tok in set(",.;:!?\"'()-") or tok.startswith("##")
        if tok in ("—", "“", "”"):  # not in string.punctuation: moverscore_v2 keeps them
            assert k
        elif dropped:
            assert not k, tok


def dropped_runs(table: TokenTable, keep: torch.Tensor) -> list[str]:
    """The surface text of each run of consecutive dropped ordinary tokens."""
    runs, current = [], ""
    for s, k, special in zip(table.surface, keep.tolist(), table.special.tolist()):
        if not k and not special:
            current += s
        elif current:
            runs.append(current.strip())
            current = ""
    return runs + ([current.strip()] if current else [])


def test_stop_words_drop_whole_words_in_any_case(tok_table: TokenTable) -> None:
    keep = StopWords(["the", "People", "SAID"]).keep(tok_table)
    # every piece of each listed word goes ("people" is several pieces in both vocabularies);
    # "theory" stays although it starts with "the"
    assert [r.lower() for r in dropped_runs(tok_table, keep)] == ["the", "said", "people"]


def test_stop_words_per_token_are_exact_token_strings(tiny_bert_dir: str, tiny_roberta_dir: str) -> None:
    f = StopWords(["the", "said"], stopwords_unit="token")
    wp = table_for(tiny_bert_dir, [TEXT])
    keep = f.keep(wp)
    assert [t for t, k in zip(wp.tokens, keep.tolist()) if not k] == [t for t in wp.tokens if t in ("the", "said")]
    # moverscore's per-token test also hits a piece of a longer word when the vocabulary splits
    # it that way (this one splits "theory" as "the" "##ory"); the per-word test never does
    if "the" in wp.tokens[wp.tokens.index("the") + 1:]:
        assert dropped_runs(wp, keep)[0] == "thethe"
        assert dropped_runs(wp, StopWords(["the", "said"]).keep(wp)) == ["the", "said"]
    bpe = table_for(tiny_roberta_dir, [TEXT])
    assert dropped_runs(bpe, f.keep(bpe)) == []  # byte-level BPE spells them "Ġthe", "Ġsaid"


def test_filter_registry_and_errors() -> None:
    assert {"rm", "ms2-punct", "stopwords"} <= set(FILTERS.names())
    f = FILTERS.build("stopwords", stopwords=["a", " ", "the"])
    assert f.signature() == f"stop(list#{content_digest(['a', 'the'])},n=2)"  # the words kept, sorted
    with pytest.raises(ConfigError):
        StopWords(["a"], stopwords_unit="sentence")
    with pytest.raises(InputError, match="cannot read"):
        StopWords("the")  # a file name
    assert is_punctuation("“") and is_punctuation(" —") and is_punctuation("...") and is_punctuation("$")
    assert not is_punctuation("") and not is_punctuation("'s") and not is_punctuation("2")


def test_filters_apply_to_greedy(tiny_bert_dir: str) -> None:
    """Filtered tokens carry no mass and are no match targets; a wholly filtered text is empty."""
    table = table_for(tiny_bert_dir, ["the cat sat, on the mat"])
    carries, matchable = token_roles(table, (RemoveSubwordsPunct(), StopWords(["the", "on"])), "match-only")
    kept = [t for t, c in zip(table.tokens, carries.tolist()) if c]
    assert "," not in kept and "the" not in kept and "on" not in kept and "mat" in kept
    assert not matchable[[t in (",", "the", "on") for t in table.tokens]].any()

    scorer = compose(encoder=HFEncoder(tiny_bert_dir), aggregator=SingleLayer(2), aligner=Greedy(),
                    filters=(StopWords(["the", "cat", "sat"]),))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = scorer.score(["the cat sat", "a cat sat"], ["a dog ran", "a dog ran"])
    assert scores.f1[0] == 0 and scores.empty.tolist() == [True, False] and scores.f1[1] != 0
    assert any("empty" in str(w.message) for w in caught)
    assert f"+stop(list#{content_digest(['cat', 'sat', 'the'])},n=3)" in str(scores.signature)
