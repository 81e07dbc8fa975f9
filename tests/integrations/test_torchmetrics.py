"""The torchmetrics metric: several ``update`` calls (and two processes over gloo) give one
``Scorer.score`` of every pair, for any composition; ``reset``; nothing to compute is an error."""

from __future__ import annotations

import pytest
import torch

from helpers import compose, needs, wmt16  # noqa: E402
needs("torchmetrics")

from alignscore import WMD, HFEncoder, IdfS, InputError, Scorer, SingleLayer, IdfL  # noqa: E402
from alignscore.errors import ConfigError  # noqa: E402
from alignscore.integrations.torchmetrics import AlignScore  # noqa: E402


TOL = 1e-6

SCORERS = {
    "greedy": dict(),
    "greedy idf-S+sep": dict(weighting=IdfS(sep=True)),
    "wmd": dict(special_tokens="drop", aligner=WMD()),
    "wmd idf-S": dict(special_tokens="drop", weighting=IdfS(), aligner=WMD()),
}


@pytest.fixture(scope="module")
def encoder(tiny_bert_dir):
    return HFEncoder(tiny_bert_dir)


def _data(n=24):
    data = wmt16("de-en")
    cands, refs = data["mt-system"][:n], data["reference"][:n]
    # some candidates with two references (ragged targets)
    others = wmt16("cs-en")["reference"]
    targets = [[r, others[i]] if i % 3 == 0 else r for i, r in enumerate(refs)]
    return cands, targets


def _close(got: dict[str, torch.Tensor], want, names) -> None:
    assert sorted(got) == sorted(names)
    for name in names:
        assert got[name].shape == want[name].shape
        assert torch.allclose(got[name].double(), want[name].double(), atol=TOL, rtol=0), name


@pytest.mark.parametrize("name", list(SCORERS))
def test_several_updates_equal_one_score(encoder, name):
    scorer = compose(encoder, SingleLayer(3), batch_size=5, **SCORERS[name])
    cands, targets = _data()
    metric = AlignScore(scorer)
    for start in range(0, len(cands), 7):
        metric.update(cands[start:start + 7], targets[start:start + 7])
    want = scorer.score(cands, targets)
    _close(metric.compute(), want.metrics, scorer.resolved().metrics)
    if scorer.weighting.depends_on_texts():
        # the weights are those of every pair: scoring the first update alone differs
        alone = scorer.score(cands[:7], targets[:7])
        primary = scorer.resolved().metric
        assert (alone[primary] - want[primary][:7]).abs().max() > 1e-4


def test_what_is_scored_when(encoder):
    # texts kept for compute() only where the weights depend on them
    assert AlignScore(compose(encoder, SingleLayer(2), weighting=IdfS(sep=True))).at_compute
    assert AlignScore(compose(encoder, SingleLayer(2), weighting=IdfS())).at_compute
    corpus = wmt16("de-en")["reference"][:50]
    idf_corpus = AlignScore(compose(encoder, SingleLayer(2), weighting=IdfL(idf_corpus=corpus)))
    assert not idf_corpus.at_compute and not AlignScore(compose(encoder, SingleLayer(2))).at_compute
    cands, targets = _data(6)
    idf_corpus.update(cands, targets)
    assert len(idf_corpus.scores_f1) == 1 and idf_corpus.scores_f1[0].shape == (6,)
    _close(idf_corpus.compute(), idf_corpus.scorer.score(cands, targets).metrics, ("precision", "recall", "f1"))


@pytest.mark.parametrize("weighting", [None, IdfS()])
def test_reset_and_nothing_to_compute(encoder, weighting):
    extra = {"weighting": weighting} if weighting is not None else {}
    scorer = compose(encoder, SingleLayer(2), **extra)
    metric = AlignScore(scorer)
    with pytest.warns(UserWarning), pytest.raises(InputError, match="no predictions were given"):
        metric.compute()
    cands, targets = _data(8)
    metric.update(cands[:4], targets[:4])
    metric.reset()
    with pytest.warns(UserWarning), pytest.raises(InputError, match="nothing to score"):
        metric.compute()
    metric.update([], [])  # an empty batch adds nothing
    with pytest.raises(InputError, match="nothing to score"):
        metric.compute()
    metric.update(cands[4:], targets[4:])
    _close(metric.compute(), scorer.score(cands[4:], targets[4:]).metrics, ("precision", "recall", "f1"))


@pytest.mark.parametrize("weighting", [None, IdfS(sep=True)])
def test_forward_gives_the_batch_scores(encoder, weighting):
    extra = {"weighting": weighting} if weighting is not None else {}
    scorer = compose(encoder, SingleLayer(2), **extra)
    metric = AlignScore(scorer)
    cands, targets = _data(10)
    names = ("precision", "recall", "f1")
    _close(metric(cands[:4], targets[:4]), scorer.score(cands[:4], targets[:4]).metrics, names)
    _close(metric(cands[4:], targets[4:]), scorer.score(cands[4:], targets[4:]).metrics, names)
    _close(metric.compute(), scorer.score(cands, targets).metrics, names)  # and the whole, as ever


def test_single_strings_and_bad_input(encoder):
    scorer = compose(encoder, SingleLayer(2))
    metric = AlignScore(scorer)
    metric.update("a cat sat on the mat", "the cat sat on the mat")
    assert metric.compute()["f1"].numel() == 1  # torchmetrics squeezes a single score to 0-d
    with pytest.raises(InputError, match="2 candidates but 1 references"):
        metric.update(["a", "b"], ["c"])
    with pytest.raises(InputError, match="candidate 0 is int 3, not a text"):
        metric.update([3], ["c"])
    with pytest.raises(ConfigError, match="takes a Scorer"):
        AlignScore("bertscore")


def _worker(rank: int, world: int, init: str, model: str, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    encoder = HFEncoder(model)
    cands, targets = _data()
    half = slice(0, 13) if rank == 0 else slice(13, None)
    results = {}
    for name, parts in SCORERS.items():
        metric = AlignScore(compose(encoder, SingleLayer(3), batch_size=5, **parts))
        for start in range(half.start, half.stop or len(cands), 4):  # several updates per rank
            stop = min(start + 4, half.stop or len(cands))
            metric.update(cands[start:stop], targets[start:stop])
        results[name] = metric.compute()
    # a rank that saw nothing still syncs (its empty states have the right dtypes)
    metric = AlignScore(compose(encoder, SingleLayer(3), weighting=IdfS()))
    if rank == 0:
        metric.update(cands[:5], targets[:5])
    results["rank 1 empty"] = metric.compute()
    torch.save(results, f"{out}.{rank}")
    dist.barrier()
    dist.destroy_process_group()


@pytest.mark.slow
def test_two_processes_equal_one_score(tiny_bert_dir, encoder, tmp_path):
    import torch.multiprocessing as mp

    init = f"file://{tmp_path / 'store'}"
    mp.start_processes(_worker, args=(2, init, tiny_bert_dir, str(tmp_path / "out")), nprocs=2,
                       start_method="spawn")
    cands, targets = _data()
    for rank in (0, 1):
        got = torch.load(tmp_path / f"out.{rank}")
        for name, parts in SCORERS.items():
            scorer = compose(encoder, SingleLayer(3), batch_size=5, **parts)
            _close(got[name], scorer.score(cands, targets).metrics, scorer.resolved().metrics)
        scorer = compose(encoder, SingleLayer(3), weighting=IdfS())
        _close(got["rank 1 empty"], scorer.score(cands[:5], targets[:5]).metrics, ("precision", "recall", "f1"))
