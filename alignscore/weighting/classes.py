"""Token-class weights: a weighting's masses multiplied per token by the weight of its class.

Four classes, read from the token table alone (never from the other texts):

- ``special``: the tokens the tokenizer added ([CLS]/[SEP], <s>/</s>, ...);
- ``punct``: the tokens of a word whose whole surface text is punctuation (the [RM] filter's
  test, :func:`~alignscore.filters.lexical.word_pieces`);
- ``stopword``: the tokens of a stop word (the ``stopwords`` filter's test: the whole word,
  case-folded, is in the list);
- ``subword``: every ordinary token after its word's first (a WordPiece "##" piece, a
  SentencePiece or byte-level BPE piece that does not start a word: [RM]'s word starts).

A token may be in several classes (the continuation of a stop word, of a punctuation word): its
multiplier is the product of their weights, so a weight 0 takes out every token the matching
filter takes out. The multipliers scale the masses only: a token of weight 0 stays a match
target, as ``special_tokens = "match-only"`` keeps special tokens (with optimal transport, where
a token without mass takes no part, weight 0 is the filter; with greedy, the filter also takes
the tokens out of the match targets).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import torch

from ..filters.lexical import StopWords, word_pieces
from ..settings import RequirementError, SettingError, check_settings, setting
from ..tokens import TokenTable

#: the token classes, in the order of their bits (:func:`token_classes`) and of the weights
TOKEN_CLASSES = ("special", "punct", "stopword", "subword")
#: the stop words of the ``stopword`` class when no list is given: the packaged English list
ENGLISH_STOPWORDS = str(Path(__file__).resolve().parents[1] / "tune" / "spaces" / "stopwords-en.txt")


def token_classes(table: TokenTable, stopwords: StopWords | None = None) -> torch.Tensor:
    """Each token's classes as bit flags: bit ``c`` is set where the token is of class
    ``TOKEN_CLASSES[c]`` (``special`` 1, ``punct`` 2, ``stopword`` 4, ``subword`` 8).

    Parameters
    ----------
    table : TokenTable
        The packed tokens.
    stopwords : StopWords, optional
        The stop words (their filter's word test); without them no token is a stop word.

    Returns
    -------
    torch.Tensor
        ``[N]`` int64.

    Examples
    --------
    >>> from alignscore.filters import StopWords
    >>> from alignscore.testing import WordEncoder
    >>> table = TokenTable.from_tokenized(WordEncoder().tokenize(["The alignment, done."]))
    >>> table.tokens
    ['[CLS]', 'the', 'alig', '##nme', '##nt', ',', 'done', '.', '[SEP]']
    >>> token_classes(table, StopWords(stopwords=("the",))).tolist()
    [1, 4, 0, 8, 8, 2, 0, 2, 1]
    """
    first, punct = word_pieces(table)
    ordinary = ~table.special
    flags = [table.special, punct & ordinary, torch.zeros_like(ordinary), ordinary & ~first]
    if stopwords is not None:
        flags[2] = ~stopwords.keep(table) & ordinary
    out = torch.zeros(table.ids.shape, dtype=torch.long)
    for bit, member in enumerate(flags):
        out |= member.long() << bit
    return out


def token_class_multipliers(classes: torch.Tensor, weights: torch.Tensor | Sequence[float]) -> torch.Tensor:
    """Each token's mass multiplier from its classes: the product of the weights of the classes
    it is in (1 for a token in none, and for padding marked 0)::

        m_t = prod_c weights[c] ** bit_c(classes[t])

    Differentiable in ``weights`` (a weight 0 included: the product is taken factor by factor,
    never through a logarithm or a division).

    Parameters
    ----------
    classes : torch.Tensor
        Bit flags of :func:`token_classes`, any shape (``[B, T]`` for a padded batch).
    weights : torch.Tensor or sequence of float
        ``[C]``: one weight per class, in the order of :data:`TOKEN_CLASSES`.

    Returns
    -------
    torch.Tensor
        The multipliers, ``classes``'s shape, ``weights``'s dtype (float32 for a sequence).

    Examples
    --------
    A padded batch of two texts: ``[CLS] the cat [SEP]`` and ``[CLS] ##s [SEP]`` + padding;
    stop words count half, continuations a quarter, special tokens 0:

    >>> classes = torch.tensor([[1, 4, 0, 1], [1, 8, 1, 0]])
    >>> weights = torch.tensor([0.0, 1.0, 0.5, 0.25], requires_grad=True)
    >>> m = token_class_multipliers(classes, weights)
    >>> m.tolist()
    [[0.0, 0.5, 1.0, 0.0], [0.0, 0.25, 0.0, 1.0]]
    >>> m.sum().backward()
    >>> weights.grad.tolist()   # d sum / d w_c: how many tokens of class c
    [4.0, 0.0, 1.0, 1.0]
    """
    w = weights if isinstance(weights, torch.Tensor) else torch.tensor(list(weights), dtype=torch.float32)
    w = w.to(classes.device)
    one = torch.ones((), dtype=w.dtype, device=w.device)
    out = torch.ones(classes.shape, dtype=w.dtype, device=w.device)
    for c in range(len(w)):
        out = out * torch.where(((classes >> c) & 1).bool(), w[c], one)
    return out


def _class_weight(tokens: str, zero: str) -> Any:
    """The declaration of one class's weight: a number in [0, 10], 1 by default."""
    return setting(1.0, ge=0, le=10, help=f"Token-class weight of {tokens}: their mass is multiplied by it ({zero}).")


@dataclass(frozen=True, kw_only=True)
class TokenClassWeights:
    """The token-class weights every built-in weighting takes (see the module's docstring):
    a token's mass is the weighting's, times the product of its classes' weights. All 1 (the
    default): the weighting's masses exactly, and its signature unchanged.

    Parameters
    ----------
    special_weight, punct_weight, stopword_weight, subword_weight : float
        Each class's weight, in ``[0, 10]``; 1 by default.
    class_stopwords : str or tuple of str, optional
        The stop words of ``stopword_weight``: a file, one per line, or the words; default the
        packaged English list.

    Examples
    --------
    >>> from alignscore.testing import WordEncoder
    >>> from alignscore.weighting import Uniform
    >>> table = TokenTable.from_tokenized(WordEncoder().tokenize(["the cat."]))   # [CLS] the cat . [SEP]
    >>> half = Uniform(punct_weight=0.5)
    >>> half.token_multipliers(table).tolist(), half.signature(), Uniform().signature()
    ([1.0, 1.0, 1.0, 0.5, 1.0], 'none+classes(punct=0.5)', 'none')
    """

    special_weight: float = _class_weight("special tokens ([CLS]/[SEP], <s>/</s>; they carry mass under "
                                          "special_tokens = keep only)", "0: match-only")
    punct_weight: float = _class_weight("punctuation (a word that is all punctuation)",
                                        "0 with subword_weight 0: the rm filter's masses")
    stopword_weight: float = _class_weight("stop words (the words of class_stopwords)",
                                           "0: the stopwords filter's masses")
    subword_weight: float = _class_weight("subword continuations (a word's tokens after its first)",
                                          "0 with punct_weight 0: the rm filter's masses")
    class_stopwords: str | tuple[str, ...] | None = setting(None, file=True, metavar="FILE", help=(
        "The stop words of stopword_weight, one per line in FILE (or a list): default, the packaged English list "
        "(the one the default search space filters)."))
    _stop: StopWords | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_settings(self)
        if self.stopword_weight != 1 or self.class_stopwords is not None:  # a list given is read (checked) here
            object.__setattr__(self, "_stop", self._read_stopwords())

    def _read_stopwords(self) -> StopWords:
        try:
            return StopWords(stopwords=self.class_stopwords if self.class_stopwords is not None else ENGLISH_STOPWORDS)
        except SettingError as exc:
            raise SettingError("class_stopwords", exc.reason) from None

    def token_class_ids(self, table: TokenTable) -> torch.Tensor:
        """``[N]`` int64: the classes of ``table``'s tokens as bit flags (:func:`token_classes`
        with this weighting's stop words, whatever the weights): what a fit multiplies through
        :func:`token_class_multipliers` to learn the weights.

        Examples
        --------
        >>> from alignscore.testing import WordEncoder
        >>> from alignscore.weighting import Uniform
        >>> table = TokenTable.from_tokenized(WordEncoder().tokenize(["the cat."]))
        >>> Uniform(class_stopwords=("the",)).token_class_ids(table).tolist()   # [CLS] the cat . [SEP]
        [1, 4, 0, 2, 1]
        """
        return token_classes(table, self._stop if self._stop is not None else self._read_stopwords())

    def check_special_policy(self, policy: str, option: str) -> None:
        """Raise where ``special_weight`` is given but special tokens carry no mass: under any
        policy but ``keep`` (``option``: the policy's setting, to name it)."""
        if self.special_weight != 1 and policy != "keep":
            raise RequirementError("special_weight", option, ("keep",), policy)

    def class_weights(self) -> tuple[float, ...]:
        """The weights in the order of :data:`TOKEN_CLASSES`."""
        return self.special_weight, self.punct_weight, self.stopword_weight, self.subword_weight

    def token_multipliers(self, table: TokenTable) -> torch.Tensor | None:
        """``[N]`` float32: each token's multiplier (:func:`token_class_multipliers`), or
        ``None`` where every weight is 1 (the masses are the weighting's, untouched)."""
        weights = self.class_weights()
        if all(w == 1 for w in weights):
            return None
        return token_class_multipliers(token_classes(table, self._stop), weights)

    def _class_text(self) -> str:
        """``""`` with every weight 1; otherwise ``+classes(...)`` naming the weights that are not
        1 (the stop-word list by its signature)."""
        parts = []
        for name, w in zip(TOKEN_CLASSES, self.class_weights()):
            if w != 1:
                parts.append(f"{name}={w!r}" + (f"@{self._stop.signature()}" if name == "stopword" and self._stop
                                                  else ""))
        return f"+classes({','.join(parts)})" if parts else ""


__all__ = ["ENGLISH_STOPWORDS", "TOKEN_CLASSES", "TokenClassWeights", "token_class_multipliers", "token_classes"]
