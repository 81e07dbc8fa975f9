"""The token-filter stage: which tokens take part in the alignment.

Two decisions are made per token. Special tokens ([CLS]/[SEP], <s>/</s>, ...) follow a policy:

- ``match-only`` (bert_score): mass 0, but they stay match targets (a candidate token may match
  [SEP]). The BERTScore default.
- ``drop``: mass 0 and never a match target; the text is its words alone.
- ``keep`` (moverscore_v2): they take part like any token, with the weighting's mass (1 under
  uniform weights; under idf they occur in every sentence, so idf = 0).

Every other token takes part unless a :class:`TokenFilter` removes it (mass 0, no match target).
The policy and the filters together are one part, :class:`TokenRoles`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Iterable

import torch

from ..errors import ConfigError, describe
from ..tokens import TokenTable

SPECIAL_POLICIES = ("match-only", "drop", "keep")


def check_special_policy(policy: str) -> str:
    """``policy``, after checking it is a special-token policy.

    Parameters
    ----------
    policy : str
        ``match-only``, ``drop`` or ``keep`` (:class:`TokenRoles`).

    Returns
    -------
    str
        ``policy`` itself.

    Raises
    ------
    ConfigError
        For any other value.

    Examples
    --------
    >>> check_special_policy("skip")
    Traceback (most recent call last):
    alignscore.errors.ConfigError: unknown special-token policy 'skip'; choose one of: match-only, drop, keep
    """
    if policy not in SPECIAL_POLICIES:
        raise ConfigError(f"unknown special-token policy {policy!r}; choose one of: {', '.join(SPECIAL_POLICIES)}")
    return policy


class TokenFilter(ABC):
    """Removes ordinary (non-special) tokens from the alignment.

    Parameters
    ----------
    None here: each filter is a frozen dataclass whose fields are its settings.

    Examples
    --------
    >>> from alignscore.filters import StopWords
    >>> from alignscore.testing import WordEncoder
    >>> table = TokenTable.from_tokenized(WordEncoder().tokenize(["the cat"]))   # [CLS] the cat [SEP]
    >>> StopWords(stopwords=("the",)).keep(table).tolist()
    [True, False, True, True]
    """

    @abstractmethod
    def keep(self, table: TokenTable) -> torch.Tensor:
        """``[N]`` bool over the packed tokens: True where the token stays."""

    @abstractmethod
    def signature(self) -> str:
        """What pins this filter's numbers."""


def token_roles(table: TokenTable, filters: tuple[TokenFilter, ...], special_policy: str
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """Which tokens of ``table`` carry mass and which may be matched.

    Parameters
    ----------
    table : TokenTable
        The packed tokens.
    filters : tuple of TokenFilter
        A token goes when any filter drops it (special tokens are never filtered).
    special_policy : str
        ``match-only``, ``drop`` or ``keep`` (:class:`TokenRoles`).

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        ``(carries_mass, matchable)``, both ``[N]`` bool.

    Examples
    --------
    >>> from alignscore.testing import WordEncoder
    >>> table = TokenTable.from_tokenized(WordEncoder().tokenize(["the cat"]))   # [CLS] the cat [SEP]
    >>> [t.tolist() for t in token_roles(table, (), "drop")]
    [[False, True, True, False], [False, True, True, False]]
    """
    kept = torch.ones_like(table.special)
    for f in filters:
        kept &= f.keep(table)
    ordinary = ~table.special & kept
    if special_policy == "keep":
        return ordinary | table.special, ordinary | table.special
    if special_policy == "match-only":
        return ordinary, ordinary | table.special
    return ordinary, ordinary


@dataclass(frozen=True)
class TokenRoles:
    """Which tokens take part: the special-token policy and the filters on ordinary tokens.

    Parameters
    ----------
    special : str
        ``match-only`` (special tokens carry no mass but may be matched: bert_score), ``drop``
        or ``keep``.
    filters : tuple of TokenFilter
        Filters on the ordinary tokens; a token goes when any filter drops it.

    Returns
    -------
    TokenRoles
        Called on a :class:`~alignscore.tokens.TokenTable`: ``(carries_mass, matchable)``, one
        bool per token each (see :func:`token_roles`).

    Examples
    --------
    >>> from alignscore.filters import StopWords
    >>> from alignscore.testing import WordEncoder
    >>> from alignscore.tokens import TokenTable
    >>> table = TokenTable.from_tokenized(WordEncoder().tokenize(["the cat"]))   # [CLS] the cat [SEP]
    >>> carries, matchable = TokenRoles(filters=(StopWords(stopwords=("the",)),))(table)
    >>> carries.tolist(), matchable.tolist()
    ([False, False, True, False], [True, False, True, True])
    """

    special: str = "match-only"
    filters: tuple[TokenFilter, ...] = ()

    def __post_init__(self) -> None:
        check_special_policy(self.special)
        filters = (self.filters,) if isinstance(self.filters, TokenFilter) else self.filters
        if not isinstance(filters, Iterable) or not all(isinstance(f, TokenFilter) for f in filters):
            raise ConfigError(f"filters must be a list of TokenFilter, not {describe(self.filters)}")
        object.__setattr__(self, "filters", tuple(filters))

    def __call__(self, table: TokenTable) -> tuple[torch.Tensor, torch.Tensor]:
        return token_roles(table, self.filters, self.special)

    def signature(self) -> str:
        return "special=" + self.special + "".join("+" + f.signature() for f in self.filters)
