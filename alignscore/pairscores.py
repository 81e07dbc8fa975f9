"""One composition's scores per pair (:class:`PairScores`), and why a side of a pair carries no
mass (:data:`EMPTY_REASONS`, :func:`empty_reasons`): a pair with an empty side scores 0, and the
reason is what a warning or a table says."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from .encoding import Encoded
from .tokens import TokenTable

__all__ = ["EMPTY_REASONS", "PairScores", "empty_reasons", "text_reasons"]

# Why a side of a pair carries no mass (:func:`empty_reasons`); 0: it does.
EMPTY_REASONS = {1: "empty text", 2: "every token taken out by the token roles", 3: "every token weighs 0"}



class Masses(Protocol):
    """What the reasons read of one composition's :class:`~alignscore.engine.AlignerInputs`."""

    ref_mass: torch.Tensor
    cand_mass: torch.Tensor
    carries: torch.Tensor


@dataclass
class PairScores:
    """One composition's scores per pair, and why a side carries no mass.

    Parameters
    ----------
    metrics : dict of str to torch.Tensor
        ``{output: [P]}``, in the aligner's order.
    reasons : torch.Tensor
        ``[P, 2]``: why the reference / candidate side carries no mass (:data:`EMPTY_REASONS`; 0: it does).

    Examples
    --------
    >>> scores = PairScores({"f1": torch.tensor([0.9, 0.0])}, torch.tensor([[0, 0], [1, 0]]))
    >>> scores.empty.tolist()   # the second pair's reference is an empty text
    [False, True]
    """

    metrics: dict[str, torch.Tensor]
    reasons: torch.Tensor

    @property
    def empty(self) -> torch.Tensor:
        """``[P]`` (or the shape of the metrics) bool: pairs where either side carries no mass
        (they score 0)."""
        return (self.reasons > 0).any(-1)


def empty_reasons(encoded: Encoded, inputs: Masses) -> torch.Tensor:
    """Why the reference / candidate side of each pair carries no mass.

    Parameters
    ----------
    encoded : Encoded
        The pairs and their texts' tokens.
    inputs : AlignerInputs or Masses
        One composition's masses over ``encoded.table``.

    Returns
    -------
    torch.Tensor
        ``[P, 2]`` int8 (:data:`EMPTY_REASONS`: 1 an empty text, 2 the token roles took every
        token out, 3 every token weighs 0), 0 where it does.

    Examples
    --------
    >>> from alignscore import Composition
    >>> from alignscore.engine import Pairs, aligner_inputs, encode
    >>> from alignscore.testing import WordEncoder
    >>> encoder = WordEncoder(); greedy = Composition().resolve(encoder)
    >>> encoded = encode(encoder, Pairs.from_pairs(["the cat sat", ""], ["a cat", "a dog"]), [greedy.aggregator])
    >>> empty_reasons(encoded, aligner_inputs(encoded, [greedy], encoder)[0]).tolist()
    [[0, 0], [1, 0]]
    """
    reasons, p = text_reasons(encoded.table, inputs), encoded.pairs
    return torch.stack([reasons[p.ref, 0], reasons[p.cand, 1]], 1)


def text_reasons(table: TokenTable, inputs: Masses) -> torch.Tensor:
    """Why each unique text carries no mass as a reference / as a candidate.

    Parameters
    ----------
    table : TokenTable
        The unique texts' tokens.
    inputs : AlignerInputs or Masses
        One composition's masses over ``table``.

    Returns
    -------
    torch.Tensor
        ``[U, 2]`` int8 (:data:`EMPTY_REASONS`), 0 where it does.

    Examples
    --------
    A reference-side roles filter that takes every token of "the" out:

    >>> from alignscore import Composition, StopWords, TokenRoles
    >>> from alignscore.engine import Pairs, aligner_inputs, encode
    >>> from alignscore.testing import WordEncoder
    >>> encoder = WordEncoder()
    >>> comp = Composition(roles=TokenRoles(filters=(StopWords(stopwords=("the",)),))).resolve(encoder)
    >>> encoded = encode(encoder, Pairs.from_pairs(["the", ""], ["a cat", "the cat"]), [comp.aggregator])
    >>> encoded.pairs.texts, text_reasons(encoded.table, aligner_inputs(encoded, [comp], encoder)[0]).tolist()
    (['the', '', 'a cat', 'the cat'], [[2, 2], [1, 1], [0, 0], [0, 0]])
    """
    text = table.text_index()

    def per_text(x: torch.Tensor) -> torch.Tensor:
        return torch.zeros(len(table), dtype=torch.float64).index_add_(0, text, x.detach().double().cpu())

    words, carrying = per_text(~table.special), per_text(inputs.carries)

    def reason(mass: torch.Tensor) -> torch.Tensor:
        return (per_text(mass) <= 0) * torch.where(words == 0, 1, torch.where(carrying == 0, 2, 3))

    return torch.stack([reason(inputs.ref_mass), reason(inputs.cand_mass)], 1).to(torch.int8)
