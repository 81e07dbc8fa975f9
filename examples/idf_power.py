"""A weighting written outside alignscore (docs/adding-a-part.md): the references' idf raised to
a power, registered as ``idf-power`` with one setting, ``idf_power``.

Importing the module registers the part. Run as a script, it is the ``alignscore`` command with
the part registered first, so its name and flag are options like the built-in ones:

    python examples/idf_power.py score -c examples/cands.txt -r examples/refs.txt \\
        --model all-MiniLM-L6-v2 --weighting idf-power --idf-power 0.5

(an installed package names the module in the ``alignscore.parts`` entry-point group instead).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from alignscore.settings import check_settings, setting
from alignscore.tokens import TokenTable
from alignscore.weighting import WEIGHTINGS, Weighting, WeightState

if TYPE_CHECKING:
    from alignscore.encoders.base import Encoder


@WEIGHTINGS.register("idf-power")
@dataclass(frozen=True)
class IdfPower(Weighting):
    """The idf of the references being scored, raised to the power ``p``::

        w(t) = idf(t) ** p,    idf(t) = log((M + 1) / (df(t) + 1))

    over the ``M`` references (each occurrence counted, as BERTScore's idf). ``p = 0`` gives
    every token the same mass (``--weighting none``), ``p = 1`` BERTScore's idf (``idf-S``),
    and values between soften idf's preference for rare tokens. Both sides get the references'
    weights.
    """

    idf_power: float = setting(0.5, ge=0, le=4, help="idf-power: the exponent p of idf(t) ** p.")

    def __post_init__(self) -> None:
        check_settings(self)  # type and range, wherever the part is made

    def update(self, state: WeightState, table: TokenTable, ref_counts: torch.Tensor,
               cand_counts: torch.Tensor) -> None:
        state.ref.update(table, ref_counts)  # document frequencies of the references only

    def compute(self, state: WeightState, encoder: Encoder) -> tuple[torch.Tensor, torch.Tensor]:
        weights = state.ref.idf() ** self.idf_power
        return weights, weights

    def signature(self) -> str:
        return f"idf-power(p={self.idf_power:g})"


if __name__ == "__main__":
    from alignscore.cli import main

    main()
