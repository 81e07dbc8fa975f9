"""Token filters: which tokens take part (special-token policy, punctuation, subwords, stop words)."""

from ..registry import Registry
from .base import SPECIAL_POLICIES, TokenFilter, TokenRoles, check_special_policy, token_roles
from .lexical import MoverScoreV2Strings, RemoveSubwordsPunct, StopWords, is_punctuation

FILTERS: Registry[TokenFilter] = Registry("token filter")
FILTERS.register("rm")(RemoveSubwordsPunct)
FILTERS.register("ms2-punct")(MoverScoreV2Strings)
FILTERS.register("stopwords")(StopWords)

__all__ = ["FILTERS", "SPECIAL_POLICIES", "MoverScoreV2Strings", "RemoveSubwordsPunct", "StopWords",
           "TokenFilter", "TokenRoles", "check_special_policy", "is_punctuation", "token_roles"]
