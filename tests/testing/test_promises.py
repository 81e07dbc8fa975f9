"""The part kit (:mod:`alignscore.testing`): every registered part keeps its stage's promises, and
each check fails, naming its promise, on a part that breaks it."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from alignscore.aggregators import AGGREGATORS, SingleLayer
from alignscore.aligners import ALIGNERS, WMD, Greedy, PairBatch, Sinkhorn, greedy_match
from alignscore.filters import FILTERS, TokenFilter
from alignscore.testing import WordEncoder, check_aggregator, check_aligner, check_filter, check_weighting, tolerance
from alignscore.tokens import TokenTable
from alignscore._ops import unit
from alignscore.weighting import WEIGHTINGS, Norm, Uniform, WeightState

# Settings a registered part needs to be built at all (a part registered later that needs some
# fails below, naming itself: add it here), or that keep the check fast.
BUILD = {
    "baryscore": {"reg": 0.0},  # the exact distance: entropic at reg 0.01 takes seconds
    "idf-L": {"idf_corpus": ["the cat sat on the mat", "a remarkable alignment", "scores never depend on it"]},
    "stopwords": {"stopwords": ["the", "on", "a"]},
}
# What a check needs to know about a part (BaryScore reads a stack of its layers), and more
# aligners of a class to score together with the registered one.
CHECK = {"baryscore": {"layers": 2}}
OTHERS: dict[str, list[Any]] = {
    "greedy": [Greedy(beta=2.0)],
    "wmd": [WMD(n_gram=2, cost="sqeuclidean"), WMD(n_gram="sentence", score_form="1/(1+d)"), WMD(cost="cos")],
    "sinkhorn": [Sinkhorn(n_gram=3), Sinkhorn(cost="cos")],
}


def build(registry: Any, name: str) -> Any:
    return registry.build(name, **BUILD.get(name, {}))


@pytest.fixture(autouse=True)
def _quiet_solvers():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # solver notes (not converged) are not what is checked
        yield


# -- every registered part ------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALIGNERS.names())
def test_every_registered_aligner_keeps_the_aligner_promises(name: str) -> None:
    check_aligner(build(ALIGNERS, name), others=OTHERS.get(name, ()), **CHECK.get(name, {}))


@pytest.mark.parametrize("aligner", [Greedy(), Greedy(beta=3.0), WMD(), WMD(cost="sqeuclidean", n_gram=2),
                                     WMD(n_gram="sentence"), WMD(cost="cos"), WMD(cost="cos", n_gram=2)],
                         ids=lambda a: a.signature())
def test_aligners_keep_their_promises_in_float64_too(aligner) -> None:
    """In float64 the tolerance is 64 ulps: score_variants and score_together share matrices
    between variants, never more than rounding apart from each variant alone."""
    check_aligner(aligner, dtype=torch.float64, seed=3)


@pytest.mark.parametrize("aligner", [Greedy(beta=0.5), WMD(n_gram=3, score_form="1/(1+d)"),
                                     Sinkhorn(reg=0.1, tol=1e-5, sinkhorn_dtype="float32"),
                                     Sinkhorn(cost="sqeuclidean", n_gram="sentence"), Sinkhorn(cost="cos"),
                                     WMD(cost="cos", n_gram="sentence", score_form="1/(1+d)")],
                         ids=lambda a: a.signature())
def test_aligner_settings_keep_the_promises(aligner) -> None:
    check_aligner(aligner, seed=1)


@pytest.mark.slow
def test_baryscore_with_its_entropic_distance_keeps_the_promises() -> None:
    check_aligner(ALIGNERS.build("baryscore", reg=0.1), layers=3, dtype=torch.float64)


@pytest.mark.parametrize("name", AGGREGATORS.names())
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_every_registered_aggregator_keeps_the_aggregator_promises(name: str, dtype: torch.dtype) -> None:
    check_aggregator(build(AGGREGATORS, name), dtype=dtype)


@pytest.mark.parametrize("name", WEIGHTINGS.names())
@pytest.mark.parametrize("sep", [False, True])
def test_every_registered_weighting_keeps_the_weighting_promises(name: str, sep: bool) -> None:
    if sep and not hasattr(build(WEIGHTINGS, name), "sep"):
        pytest.skip(f"weighting {name} has no SEP")
    check_weighting(WEIGHTINGS.build(name, **BUILD.get(name, {}), **({"sep": True} if sep else {})))


@pytest.mark.parametrize("name", FILTERS.names())
def test_every_registered_filter_keeps_the_filter_promises(name: str) -> None:
    check_filter(build(FILTERS, name))


def test_stop_words_per_token_keep_the_filter_promises() -> None:
    check_filter(FILTERS.build("stopwords", stopwords=["the", "##nme", ","], stopwords_unit="token"))


def test_tolerance_is_tied_to_the_dtype() -> None:
    assert tolerance(torch.float32) == 64 * torch.finfo(torch.float32).eps
    assert tolerance(torch.float64) < 1e-13 < 1e-6 < tolerance(torch.float32) < 1e-5


# -- parts that break a promise -------------------------------------------------------------------
@dataclass(frozen=True)
class Centred(Greedy):
    """Scores minus the batch mean: each pair's score depends on the others."""

    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        return {k: v - v.mean() for k, v in super().__call__(batch).items()}


@dataclass(frozen=True)
class NaNOnOpposites(Greedy):
    """NaN where a pair's best similarity is negative."""

    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        out = super().__call__(batch)
        return {k: torch.where(out["recall"] < 0, float("nan"), v) for k, v in out.items()}


@dataclass(frozen=True)
class Unchecked(Greedy):
    """Greedy matching without check_finite: a NaN vector becomes a NaN score."""

    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        p, r, f, _ = greedy_match(batch.ref, batch.cand, batch.ref_mass, batch.cand_mass, batch.ref_match,
                                  batch.cand_match)
        return {"precision": p, "recall": r, "f1": f}


@dataclass(frozen=True)
class PaddedMean(Greedy):
    """Mean similarity over every position, padding included."""

    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        out = super().__call__(batch)
        sim = torch.bmm(batch.cand, batch.ref.transpose(1, 2)).mean((1, 2)) if batch.ref.shape[1] and \
            batch.cand.shape[1] else torch.zeros(len(batch.ref))
        empty = (batch.ref_mass.sum(-1) == 0) | (batch.cand_mass.sum(-1) == 0)
        return {k: torch.where(empty, 0.0, v + sim) for k, v in out.items()}


@dataclass(frozen=True)
class EmptyIsOne(Greedy):
    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        empty = (batch.ref_mass.sum(-1) == 0) | (batch.cand_mass.sum(-1) == 0)
        return {k: torch.where(empty, 1.0, v) for k, v in super().__call__(batch).items()}


@dataclass(frozen=True)
class MasslessIsOne(Greedy):
    """1 for a pair with a side without mass, where that side has tokens (zero-width sides score 0)."""

    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        massless = ((batch.ref_mass.sum(-1) == 0) & batch.ref_match.any(-1)) | (
            (batch.cand_mass.sum(-1) == 0) & batch.cand_match.any(-1))
        return {k: torch.where(massless, 1.0, v) for k, v in super().__call__(batch).items()}


@dataclass(frozen=True)
class FirstVariantOnly(Greedy):
    def score_variants(self, batches):
        return [self(batches[0]) for _ in batches]


@dataclass(frozen=True)
class DoubledRecallShares(Greedy):
    """An explanation whose F1 shares do not add up to F1."""

    def alignment(self, batch: PairBatch):
        out = super().alignment(batch)
        ref_share, cand_share = out.contributions["f1"]
        out.contributions["f1"] = (2 * ref_share, cand_share)
        return out


@dataclass(frozen=True)
class Unregistered(Greedy):
    pass


@dataclass(frozen=True)
class Addressed(Greedy):
    def signature(self) -> str:
        return f"addressed({object()!r})"


@dataclass(frozen=True)
class TwoMetrics(Greedy):
    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        out = super().__call__(batch)
        return {"f1": out["f1"], "precision": out["precision"]}


@pytest.mark.parametrize("part, promise", [
    (Centred(), "scores depend on batch neighbours: pair 0 precision changed by"),
    (NaNOnOpposites(), "finite scores: pair 1 precision is nan (opposite pair"),
    (Unchecked(), "non-finite vectors refused: nan in the ref vectors gave scores"),
    (PaddedMean(), "scores depend on batch size or padding: pair 0 precision changed by"),
    (EmptyIsOne(), "zero-width sides score 0: precision is 1 on a batch of one pair whose reference side has zero "
                   "width"),
    (MasslessIsOne(), "empty pairs score 0: pair 4 (ref massless) precision is 1"),
    (FirstVariantOnly(), "score_variants differs from calling the aligner: pair"),
    (DoubledRecallShares(), "alignment explains the scores: pair 0 f1 changed by"),
    (Unregistered(), "spec round trip: the aligner cannot be written to a run file"),
    (TwoMetrics(), "outputs: __call__ returned ['f1', 'precision']"),
], ids=lambda x: type(x).__name__ if not isinstance(x, str) else "")
def test_check_aligner_names_the_broken_promise(part, promise: str) -> None:
    with pytest.raises(AssertionError) as info:
        check_aligner(part)
    assert str(info.value).startswith(promise), str(info.value)


def test_a_signature_with_an_object_address_is_not_stable(monkeypatch) -> None:
    monkeypatch.setitem(ALIGNERS._entries, "addressed", Addressed)
    with pytest.raises(AssertionError, match=r"^stable signature: 'addressed\(<object object at 0x"):
        check_aligner(Addressed())


def test_a_registered_plugin_aligner_passes(monkeypatch) -> None:
    """What a plugin author does: register the part, then check it (a round trip included)."""
    monkeypatch.setitem(ALIGNERS._entries, "unregistered", Unregistered)
    check_aligner(Unregistered(beta=3.0))


def test_the_batch_neighbour_failure_is_caught_whatever_the_seed_and_dtype() -> None:
    for seed in range(3):
        for dtype in (torch.float32, torch.float64):
            with pytest.raises(AssertionError, match="^scores depend on batch neighbours"):
                check_aligner(Centred(), seed=seed, dtype=dtype)


@dataclass(frozen=True)
class TokenMixing(SingleLayer):
    """Each token minus the mean of its text: a token's vector depends on the others."""

    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        return states[0] - states[0].mean(1, keepdim=True)


@dataclass(frozen=True)
class Overflowing(SingleLayer):
    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        return states[0].exp() ** 100


def test_check_aggregator_names_the_broken_promise() -> None:
    with pytest.raises(AssertionError, match=r"^tokens aggregated on their own: a token's vector changed by .* alone"):
        check_aggregator(TokenMixing())
    with pytest.raises(AssertionError, match="^finite vectors: finite hidden states gave NaN or infinity"):
        check_aggregator(Overflowing())


@dataclass(frozen=True)
class Negative(Uniform):
    def compute(self, state, encoder):
        ones = -torch.ones(len(state.ref.df))
        return ones, ones


@dataclass(frozen=True)
class LastChunkOnly(Uniform):
    """Counts only the last chunk it saw (overwrites instead of adding)."""

    def update(self, state: WeightState, table: TokenTable, ref_counts, cand_counts) -> None:
        state.ref.df.zero_()
        state.ref.docs = 0.0
        state.ref.update(table, ref_counts)

    def depends_on_texts(self) -> bool:
        return True

    def compute(self, state, encoder):
        idf = state.ref.idf()
        return idf, idf


@dataclass(frozen=True)
class SaysUniformButCounts(LastChunkOnly):
    def update(self, state: WeightState, table: TokenTable, ref_counts, cand_counts) -> None:
        state.ref.update(table, ref_counts)

    def depends_on_texts(self) -> bool:
        return False


@dataclass(frozen=True)
class NormsAsNumber(Norm):
    def reads_norms(self) -> bool:
        return 1  # type: ignore[return-value]


def test_check_weighting_names_the_broken_promise() -> None:
    with pytest.raises(AssertionError, match=r"^finite, non-negative weights: the reference weights hold \[-1.0"):
        check_weighting(Negative())
    with pytest.raises(AssertionError, match="^one pass equals a chunked pass: a reference weight changed by"):
        check_weighting(LastChunkOnly())
    with pytest.raises(AssertionError, match="^depends_on_texts is False but the weights depend on the texts"):
        check_weighting(SaysUniformButCounts())
    with pytest.raises(AssertionError, match=r"^reads_norms: reads_norms\(\) returned 1, not True or False"):
        check_weighting(NormsAsNumber())


def test_check_weighting_catches_an_engine_that_keeps_the_wrong_norms(monkeypatch) -> None:
    """The kit computes each token's norm itself: an engine that kept another number (here
    twice the norm) fails the norm weighting, and no weighting that ignores norms."""
    import alignscore.encoding

    def doubled(vectors, out=None, norm_out=None):
        result = unit(vectors, out=out, norm_out=norm_out)
        if norm_out is not None:
            norm_out.mul_(2)
        return result

    monkeypatch.setattr(alignscore.encoding, "unit", doubled)
    check_weighting(Uniform())
    with pytest.raises(AssertionError, match=r"^engine's masses: a reference token's mass differs from "
                                             r"weight\[id\] \* role \* \|vector\| by .* \(reads_norms\(\) is True\)"):
        check_weighting(Norm())


@dataclass(frozen=True)
class Rare(TokenFilter):
    """Keeps tokens whose id occurs once in the whole table: depends on the other texts."""

    def keep(self, table: TokenTable) -> torch.Tensor:
        return torch.bincount(table.ids)[table.ids] == 1

    def signature(self) -> str:
        return "rare"


@dataclass(frozen=True)
class Shaped(TokenFilter):
    def keep(self, table: TokenTable) -> torch.Tensor:
        return torch.ones(len(table.ids))

    def signature(self) -> str:
        return "shaped"


def test_check_filter_names_the_broken_promise(monkeypatch) -> None:
    with pytest.raises(AssertionError, match=r"^tokens kept independently of the other texts: .* text 0"):
        check_filter(Rare())
    with pytest.raises(AssertionError, match=r"^outputs: keep returned torch.float32"):
        check_filter(Shaped())
    with pytest.raises(AssertionError, match=r"^spec round trip: the token filter cannot be written"):
        check_filter(type("Unlisted", (Rare,), {"keep": lambda self, table: torch.ones_like(table.special)})())


def test_word_encoder_tokenizes_words_pieces_and_punctuation() -> None:
    tok = WordEncoder().tokenize(["Alignment, done.", ""])
    assert tok.tokens == [["[CLS]", "alig", "##nme", "##nt", ",", "done", ".", "[SEP]"], ["[CLS]", "[SEP]"]]
    assert tok.word_start[0] == [False, True, False, False, True, True, True, False]
    assert tok.special[1] == [True, True] and tok.ids[0][0] == 1 and max(tok.ids[0]) < WordEncoder().vocab_size


def test_word_encoder_serves_a_scorer() -> None:
    from alignscore import Composition, Runtime, Scorer

    scores = Scorer(WordEncoder(), Composition(SingleLayer(2)), Runtime(), None).score(
        ["the cat sat", "hello"], ["the cat sat", "a dog barked"])
    assert scores.f1[0].item() == pytest.approx(1.0, abs=1e-6) and scores.f1[1].item() < 0.9


@dataclass(frozen=True)
class MaxWithoutGuard(Greedy):
    """Each token's best match by ``max`` over the other side: a zero-width side has no maximum
    (torch raises IndexError), as a plugin author's first greedy aligner would."""

    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        sim = torch.bmm(batch.cand, batch.ref.transpose(1, 2))
        sim.max(dim=2)
        sim.max(dim=1)
        return super().__call__(batch)


@dataclass(frozen=True)
class OneOnZeroWidth(Greedy):
    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        out = super().__call__(batch)
        if batch.ref.shape[1] == 0 or batch.cand.shape[1] == 0:
            return {k: torch.ones_like(v) for k, v in out.items()}
        return out


def test_a_zero_width_side_breaks_a_named_promise_not_an_index_error() -> None:
    """The kit's batches include a side of zero width (each pair alone, cut to its own length):
    an aligner that cannot take one fails the promise, with the part's exception chained."""
    with pytest.raises(AssertionError) as info:
        check_aligner(MaxWithoutGuard())
    message = str(info.value)
    assert message.startswith("zero-width sides score 0: __call__ on a batch of one pair whose reference side has "
                              "zero width (ref (1, 0, 6), cand (1, 3, 6)) raised IndexError: "), message
    assert isinstance(info.value.__cause__, IndexError)
    with pytest.raises(AssertionError, match=r"^zero-width sides score 0: precision is 1 on a batch of one pair whose "
                                             r"reference side has zero width \(ref \(1, 0, 6\), cand \(1, 3, 6\)\), not 0"):
        check_aligner(OneOnZeroWidth())


def test_every_call_into_a_part_names_its_promise() -> None:
    """Whatever a part raises from inside the kit is an AssertionError naming the promise."""

    @dataclass(frozen=True)
    class Broken(SingleLayer):
        def __call__(self, states: torch.Tensor) -> torch.Tensor:
            raise RuntimeError("shape mismatch\nsecond line")

    with pytest.raises(AssertionError, match=r"^outputs: __call__ on states \(1, 3, 5, 8\) raised RuntimeError: "
                                             r"shape mismatch second line$"):
        check_aggregator(Broken())

    @dataclass(frozen=True)
    class KeepsByIndex(TokenFilter):
        def keep(self, table: TokenTable) -> torch.Tensor:
            return table.special[torch.tensor([len(table.ids) * 2])].expand(len(table.ids))

        def signature(self) -> str:
            return "by-index"

    with pytest.raises(AssertionError, match=r"^outputs: keep\(\) over the texts raised IndexError"):
        check_filter(KeepsByIndex())


def test_a_promise_failure_carries_its_promise() -> None:
    with pytest.raises(AssertionError) as info:
        check_aligner(Centred())
    assert info.value.promise == "scores depend on batch neighbours"


def test_an_assert_inside_a_part_is_not_taken_for_the_kit_s_own() -> None:
    @dataclass(frozen=True)
    class Asserting(Greedy):
        def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
            assert batch.ref.shape[1] > 0, "no reference tokens"
            return super().__call__(batch)

    with pytest.raises(AssertionError, match=r"^zero-width sides score 0: __call__ on .* raised AssertionError: no "
                                             r"reference tokens"):
        check_aligner(Asserting())
