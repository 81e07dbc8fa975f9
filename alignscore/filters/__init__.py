"""Token filters: which tokens take part (special-token policy, punctuation, subwords, stop words)."""

from ..registry import Registry
from .base import SPECIAL_POLICIES, TokenFilter, check_special_policy, token_roles

FILTERS: Registry[TokenFilter] = Registry("token filter")

__all__ = ["FILTERS", "SPECIAL_POLICIES", "TokenFilter", "check_special_policy", "token_roles"]
