"""A training-loop metric: any composition as a ``torchmetrics.Metric`` (``pip install
'alignscore[torchmetrics]'``).

>>> from alignscore import bertscore
>>> metric = AlignScore(bertscore("all-MiniLM-L6-v2"))
>>> metric.update(["a cat sat"], ["the cat sat down"])
>>> [round(f1, 2) for f1 in metric.compute()["f1"].tolist()]
[0.83]

:meth:`AlignScore.compute` returns what ``torchmetrics.text.BERTScore`` returns: a dict of
per-candidate score tensors, one per output of the composition (``precision``, ``recall``,
``f1`` for greedy matching; ``score`` for optimal transport), in update order (over processes:
rank 0's candidates, then rank 1's, ...). The scores are those of one :meth:`Scorer.score
<alignscore.scorer.Scorer.score>` of every pair given to :meth:`~AlignScore.update`:

- weightings that do not depend on the texts being scored (none, idf-L without SEP) score each
  ``update`` at once, through the engine; the per-candidate scores are the state;
- weightings that do (idf-S, SEP: the idf of all references or candidates) keep the texts (as
  UTF-8 bytes) as the state and score every pair at :meth:`~AlignScore.compute`, so the idf is
  that of every reference given, on every process. When ``compute`` has gathered the states of
  every process of the default group, those processes share that scoring (each encodes and
  aligns its part, :mod:`alignscore.distributed`), so ``compute`` must then be called on every
  rank, as torchmetrics requires anyway.

States are lists reduced by concatenation (``dist_reduce_fx="cat"``), which torchmetrics syncs.
The scorer's encoder keeps its own device; ``metric.to(device)`` moves the states only.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from ..distributed import Shard
from ..errors import ConfigError, InputError, describe
from ..scorer import Scorer
from ..scores import check_references

__all__ = ["AlignScore"]

# the states that hold texts when scoring waits for compute(), and their dtypes
_TEXT_STATES = {"text_bytes": torch.uint8, "text_lengths": torch.long, "ref_counts": torch.long}


class AlignScore(Metric):
    """``scorer``'s scores as a torchmetrics metric: :meth:`update` with predictions
    (candidates) and targets (one reference, or a list of references, per prediction);
    :meth:`compute` returns ``{output: Tensor[N]}`` over every prediction given since the last
    :meth:`reset`. ``kwargs`` go to ``torchmetrics.Metric`` (``sync_on_compute``, ...)."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(self, scorer: Scorer, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(scorer, Scorer):
            raise ConfigError(f"AlignScore takes a Scorer (e.g. bertscore(...)), not {describe(scorer)}")
        self.scorer = scorer
        self.outputs = scorer.resolved().metrics  # a composition that cannot be built fails here
        self.at_compute = scorer.weighting.depends_on_texts()
        self._dtypes = (dict(_TEXT_STATES) if self.at_compute
                        else {_score_state(name): torch.float32 for name in self.outputs})
        for name in self._dtypes:
            self.add_state(name, default=[], dist_reduce_fx="cat")

    def update(self, preds: str | Sequence[str], target: str | Sequence[str] | Sequence[Sequence[str]]) -> None:
        """Add candidates ``preds`` and their references ``target`` (a text or a list of texts
        each; a single string is one candidate)."""
        cands, groups = check_references([preds] if isinstance(preds, str) else preds,
                                         [target] if isinstance(target, str) else target)
        if self.at_compute:
            texts = [t.encode("utf-8") for c, g in zip(cands, groups) for t in (c, *g)]
            self.text_bytes.append(torch.from_numpy(np.frombuffer(b"".join(texts), dtype=np.uint8).copy())
                                   .to(self.device))
            self.text_lengths.append(torch.tensor([len(t) for t in texts], dtype=torch.long, device=self.device))
            self.ref_counts.append(torch.tensor([len(g) for g in groups], dtype=torch.long, device=self.device))
            return
        scores = self.scorer.score(cands, groups)
        for name in self.outputs:
            getattr(self, _score_state(name)).append(scores[name].to(self.device, torch.float32))

    def compute(self) -> dict[str, torch.Tensor]:
        """``{output: Tensor[N]}``, the scores of every candidate given (see the module)."""
        if self.at_compute:
            cands, groups = self._texts()
            shard = Shard.current() if self._is_synced and self.process_group is None else None
            scores = replace(self.scorer, runtime=replace(self.scorer.runtime, shard=shard)).score(cands, groups)
            return {name: scores[name].to(self.device) for name in self.outputs}
        states = [getattr(self, _score_state(name)) for name in self.outputs]
        if not len(states[0]) or not dim_zero_cat(states[0]).numel():
            raise InputError(_NOTHING)
        return {name: dim_zero_cat(state) for name, state in zip(self.outputs, states)}

    def _wrap_compute(self, compute: Callable[..., Any]) -> Callable[..., Any]:
        """torchmetrics' wrapper of :meth:`compute` (syncing, caching) squeezes a one-element
        tensor to a 0-d one; scores per candidate stay ``[N]``, one candidate included."""
        wrapped = super()._wrap_compute(compute)

        @functools.wraps(compute)
        def per_candidate(*args: Any, **kwargs: Any) -> dict[str, torch.Tensor]:
            return {name: value.reshape(-1) for name, value in wrapped(*args, **kwargs).items()}

        return per_candidate

    def sync(self, *args: Any, **kwargs: Any) -> None:
        """torchmetrics' sync, after giving each empty list state an empty tensor of its own
        dtype (a process that saw no data would otherwise send torchmetrics' float default)."""
        for name, dtype in self._dtypes.items():
            state = getattr(self, name)
            if isinstance(state, list) and not state:
                state.append(torch.empty(0, dtype=dtype, device=self.device))
        super().sync(*args, **kwargs)

    def _texts(self) -> tuple[list[str], list[list[str]]]:
        """The candidates and their references kept by :meth:`update` (each candidate's text,
        then its references', as UTF-8 bytes)."""
        counts = dim_zero_cat(self.ref_counts).long().tolist() if len(self.ref_counts) else []
        if not counts:
            raise InputError(_NOTHING)
        data = dim_zero_cat(self.text_bytes).to(torch.uint8).cpu().numpy().tobytes()
        ends = np.cumsum(dim_zero_cat(self.text_lengths).long().cpu().numpy()).tolist()
        texts = [data[a:b].decode("utf-8") for a, b in zip([0] + ends[:-1], ends)]
        cands, groups, at = [], [], 0
        for n in counts:
            cands.append(texts[at])
            groups.append(texts[at + 1:at + 1 + n])
            at += 1 + n
        return cands, groups


_NOTHING = ("AlignScore.compute(): no predictions were given to update() (since the last reset()): there is "
            "nothing to score")


def _score_state(output: str) -> str:
    return f"scores_{output}"
