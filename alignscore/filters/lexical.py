"""Token filters that look at what a token is: [RM] (punctuation and non-first subwords), stop
words, and moverscore_v2's own string test.

A filter returns, for each packed token, whether it stays. Filtered tokens get mass 0 and are
never match targets (see :func:`~alignscore.filters.base.token_roles`); special tokens follow the
special-token policy whatever a filter says.
"""

from __future__ import annotations

import string
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import torch

from ..settings import SettingError, check_settings, setting
from ..signature import content_digest
from ..textio import read_lines
from ..tokens import TokenTable
from .base import TokenFilter

# Prefixes that tokenizers put on token strings to mark a word boundary or a continuation:
# WordPiece "##", byte-level BPE "Ġ" (a space), SentencePiece "▁" (a space).
_MARKERS = ("##", "Ġ", "▁")


@lru_cache(maxsize=65536)
def is_punctuation(text: str) -> bool:
    """True when ``text`` (whitespace stripped) is non-empty and every character is punctuation
    or a symbol (Unicode categories P* and S*: ``, . ! ? " ' - – — “ ” ( ) $ % + ...``). This
    covers every character of ``string.punctuation``, and non-ASCII punctuation too."""
    text = text.strip()
    return bool(text) and all(unicodedata.category(c)[0] in "PS" for c in text)


def _strip_marker(token: str) -> str:
    for m in _MARKERS:
        if token.startswith(m):
            return token[len(m):]
    return token


def surfaces(table: TokenTable) -> list[str]:
    """Each token's surface text: the encoder's character-offset surface when it gave one,
    otherwise the token string without its subword / word-boundary marker."""
    if len(table.surface) == len(table.tokens):
        return table.surface
    return [_strip_marker(t) for t in table.tokens]


def word_surfaces(table: TokenTable) -> tuple[torch.Tensor, list[str]]:
    """The words of the packed texts: ``wid [N]``, the index of the word each token belongs to
    (counting word starts over the packed table; ``-1`` before the first word; special tokens
    carry the previous word's index and are ignored), and each word's surface text (its
    tokens' surfaces joined)."""
    wid = torch.cumsum(table.word_start.long(), 0) - 1
    n_words = int(wid[-1]) + 1 if len(wid) else 0
    text = [""] * n_words
    for w, s, special in zip(wid.tolist(), surfaces(table), table.special.tolist()):
        if w >= 0 and not special:
            text[w] += s
    return wid, text


def _per_word(flags: list[bool], wid: torch.Tensor) -> torch.Tensor:
    """Gather per-word flags to tokens (index -1, before the first word, reads False)."""
    return torch.tensor(flags + [False], dtype=torch.bool)[wid]


def word_pieces(table: TokenTable) -> tuple[torch.Tensor, torch.Tensor]:
    """What [RM] reads of each token: ``(first, punct)``, both ``[N]`` bool.

    ``first``: the token is its word's first token that covers text (the first subword; a bare
    "Ġ" / "▁" piece that covers only the space before a word is passed over); never a special
    token. ``punct``: the token belongs to a word whose whole surface text is punctuation
    (:func:`is_punctuation`), whatever the tokenizer split it into (special tokens read their
    previous word's flag: mask them).

    Examples
    --------
    >>> from alignscore.testing import WordEncoder
    >>> table = TokenTable.from_tokenized(WordEncoder().tokenize(["Alignment, done."]))
    >>> first, punct = word_pieces(table)   # [CLS] alig ##nme ##nt , done . [SEP]
    >>> first.int().tolist(), punct.int().tolist()
    ([0, 1, 0, 0, 1, 1, 1, 0], [0, 0, 0, 0, 1, 0, 1, 1])
    """
    wid, text = word_surfaces(table)
    punct = _per_word([is_punctuation(t) for t in text], wid)
    covers = torch.tensor([bool(s.strip()) for s in surfaces(table)], dtype=torch.bool)
    covers = covers.reshape(wid.shape) & ~table.special & (wid >= 0)
    # a word's first text-covering token: its word differs from the previous such token's
    idx = torch.nonzero(covers).flatten()
    w = wid[idx]
    first_idx = idx[torch.cat([torch.ones(min(len(w), 1), dtype=torch.bool), w[1:] != w[:-1]])]
    first = torch.zeros_like(covers)
    first[first_idx] = True
    return first, punct


@dataclass(frozen=True)
class RemoveSubwordsPunct(TokenFilter):
    """[RM] (MoverScore): keep one token per word, none for punctuation.

    Words come from the fast tokenizer's word ids (:attr:`TokenTable.word_start`), so it is
    right for WordPiece ("##" continuations), byte-level BPE (pieces without "Ġ") and
    SentencePiece alike. A word is punctuation when its whole surface text is
    (:func:`is_punctuation`: "," whether the token is ",", "Ġ," or "▁,"; "—" even when
    byte-level BPE splits it into "Ġ" + three byte pieces). Of every other word, its first token
    that covers text stays (the first subword; a bare "Ġ" / "▁" piece that covers only the space
    before a word is passed over), and all its other tokens go.

    Parameters
    ----------
    None; the filter has no settings.

    Returns
    -------
    RemoveSubwordsPunct
        A filter without settings: ``keep(table)`` marks the first token of each word that is
        not punctuation.

    Examples
    --------
    >>> from alignscore.testing import WordEncoder
    >>> from alignscore.tokens import TokenTable
    >>> tokenized = WordEncoder().tokenize(["Alignment, done."])
    >>> tokenized.tokens[0]
    ['[CLS]', 'alig', '##nme', '##nt', ',', 'done', '.', '[SEP]']
    >>> RemoveSubwordsPunct().keep(TokenTable.from_tokenized(tokenized)).tolist()
    [False, True, False, False, False, True, False, False]
    """

    def keep(self, table: TokenTable) -> torch.Tensor:
        first, punct = word_pieces(table)
        return first & ~punct

    def signature(self) -> str:
        return "rm"


@dataclass(frozen=True)
class MoverScoreV2Strings(TokenFilter):
    """moverscore_v2's exact test on the token string ``w``: drop it when
    ``w in string.punctuation`` (one ASCII punctuation character) or ``'##' in w`` (a WordPiece
    continuation). Only meaningful for WordPiece vocabularies; use ``rm`` for any tokenizer.
    Stop words are a separate filter (``StopWords(..., unit="token")``).

    Parameters
    ----------
    None; the filter has no settings.

    Examples
    --------
    A filter without settings; on :func:`RemoveSubwordsPunct`'s example it keeps the special
    tokens (their policy decides) and drops the continuations and punctuation:

    >>> from alignscore.testing import WordEncoder
    >>> from alignscore.tokens import TokenTable
    >>> table = TokenTable.from_tokenized(WordEncoder().tokenize(["Alignment, done."]))
    >>> MoverScoreV2Strings().keep(table).tolist()   # [CLS] alig ##nme ##nt , done . [SEP]
    [True, True, False, False, False, True, False, True]
    """

    def keep(self, table: TokenTable) -> torch.Tensor:
        punct = set(string.punctuation)
        drop = [w in punct or "##" in w for w in table.tokens]
        return ~torch.tensor(drop, dtype=torch.bool).reshape(table.ids.shape)

    def signature(self) -> str:
        return "ms2-punct"


@dataclass(frozen=True)
class StopWords(TokenFilter):
    """Drop stop words.

    Parameters
    ----------
    stopwords : str or tuple of str
        A file of stop words, one per line, or the words themselves (blank entries ignored);
        the file is read here. The signature names the list by its file's name (or ``list``)
        and the digest of the words, sorted (:func:`~alignscore.signature.content_digest`),
        ``stop(stop.txt#<12 hex>,n=3)``: the same words in any order or file give the same one.
    stopwords_unit : str
        ``"word"`` (default): every token of a word goes when the whole word's surface text,
        case-folded, is in the list (so "the" in "theory" is never touched, whatever the
        tokenizer); ``"token"``: a token goes when its token string is exactly in the list,
        moverscore's ``w in stop_words`` test.

    Returns
    -------
    StopWords
        ``keep(table)``: one bool per token of a :class:`~alignscore.tokens.TokenTable`.

    Examples
    --------
    >>> from alignscore.testing import WordEncoder
    >>> from alignscore.tokens import TokenTable
    >>> table = TokenTable.from_tokenized(WordEncoder().tokenize(["The theory"]))
    >>> StopWords(stopwords=("the",)).keep(table).tolist()   # [CLS] the theo ##ry [SEP]
    [True, False, True, True, True]
    """

    stopwords: str | tuple[str, ...] | None = setting(None, file=True, aliases=("file", "words"), metavar="FILE", help=(
        "Stop words, one per line in FILE (or a list, in files and Python): they take no part."))
    stopwords_unit: str = setting("word", choices=("word", "token"), aliases=("unit",), help=(
        "Stop words are whole words (case-folded, the default) or exact token strings (moverscore's test)."))
    _words: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)
    _digest: str = field(default="", init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_settings(self)
        words = read_lines(self.stopwords) if isinstance(self.stopwords, str) else self.stopwords or ()
        object.__setattr__(self, "_words", frozenset(w.strip() for w in words if w.strip()))
        if not self._words:
            raise SettingError("stopwords", f"no stop words in {self.stopwords!r}" if isinstance(self.stopwords, str)
                               else "the stopwords filter needs a file of stop words or a list of them")
        object.__setattr__(self, "_digest", content_digest(sorted(self._words)))

    @property
    def words(self) -> frozenset[str]:
        return self._words

    def keep(self, table: TokenTable) -> torch.Tensor:
        if self.stopwords_unit == "token":
            drop = torch.tensor([w in self._words for w in table.tokens], dtype=torch.bool)
            return ~drop.reshape(table.ids.shape)
        folded = {w.casefold() for w in self._words}
        wid, text = word_surfaces(table)
        return ~_per_word([t.strip().casefold() in folded for t in text], wid)

    def signature(self) -> str:
        tag = Path(self.stopwords).name if isinstance(self.stopwords, str) else "list"
        unit = "" if self.stopwords_unit == "word" else ",per-token"
        return f"stop({tag}#{self._digest},n={len(self._words)}{unit})"
