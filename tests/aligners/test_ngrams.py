"""``ngram_mean``: an n-gram window's vector as the mean of its tokens' unit vectors (default) or
of their vectors before unit scaling (XMoverScore's), from the norms the engine keeps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import alignscore
from alignscore.aligners import WMD
from alignscore.aligners.transport import pairwise_cost
from alignscore.errors import ConfigError
from fakes import make_batch, unit_rows


def _raw_batch(seed: int = 5):
    gen = torch.Generator().manual_seed(seed)
    raw_refs = [torch.randn(n, 6, generator=gen) * (1 + 3 * torch.rand(n, 1, generator=gen)) for n in (5, 7, 2)]
    raw_cands = [torch.randn(m, 6, generator=gen) * (1 + 3 * torch.rand(m, 1, generator=gen)) for m in (6, 3, 4)]
    batch = make_batch([unit_rows(r) for r in raw_refs], [unit_rows(c) for c in raw_cands],
                       [torch.ones(len(r)) for r in raw_refs], [torch.ones(len(c)) for c in raw_cands])
    batch.ref_norm = _pad([r.norm(dim=-1) for r in raw_refs], batch.ref.shape[1])
    batch.cand_norm = _pad([c.norm(dim=-1) for c in raw_cands], batch.cand.shape[1])
    return batch, raw_refs, raw_cands


def _pad(rows: list[torch.Tensor], width: int) -> torch.Tensor:
    return torch.stack([torch.cat([r, torch.zeros(width - len(r))]) for r in rows])


def _by_hand(x: torch.Tensor, y: torch.Tensor, n: int) -> float:
    """1 - WMD between the unit means of n consecutive raw vectors, uniform masses (ot.emd2); the
    batch holds float32 unit vectors, so the aligner agrees to float32 rounding."""
    import ot

    def grams(v: torch.Tensor) -> torch.Tensor:
        g = torch.stack([v[i:i + n].mean(0) for i in range(max(len(v) - n + 1, 1))]).double()
        return g / g.norm(dim=-1, keepdim=True)

    p, q = grams(x), grams(y)
    c = pairwise_cost(p[None], q[None], "euclidean")[0].numpy()
    return 1.0 - float(ot.emd2(np.full(len(p), 1 / len(p)), np.full(len(q), 1 / len(q)), c))


def test_means_of_states_are_the_means_of_the_unscaled_vectors() -> None:
    batch, raw_refs, raw_cands = _raw_batch()
    aligner = WMD(n_gram=2, ngram_mean="states")
    got = aligner(batch)["score"]
    want = [_by_hand(r, c, 2) for r, c in zip(raw_refs, raw_cands)]
    assert got.tolist() == pytest.approx(want, abs=1e-6)
    # the alignment (torch pooling) agrees with the scores (NumPy windows)
    assert aligner.alignment(batch).scores["score"].tolist() == pytest.approx(want, abs=1e-6)
    # and it is not the mean of unit vectors: the norms differ
    assert (WMD(n_gram=2)(batch)["score"] - got).abs().max() > 1e-4


def test_the_setting_is_read_only_where_it_matters_and_signed() -> None:
    assert not WMD().reads_norms() and not WMD(ngram_mean="states").reads_norms()  # tokens: no windows
    assert WMD(n_gram=2, ngram_mean="states").reads_norms()
    assert WMD(n_gram=2, ngram_mean="states").signature() == "wmd(euclidean,1-d,n=2,mean=states)"
    assert WMD(n_gram=2).signature() == "wmd(euclidean,1-d,n=2)"
    batch, _, _ = _raw_batch()
    batch.ref_norm = None
    with pytest.raises(ValueError, match="norms"):
        WMD(n_gram=2, ngram_mean="states")(batch)
    with pytest.raises(ConfigError, match="ngram_mean"):
        alignscore.run_spec({"aligner": "wmd", "ngram_mean": "raw"})


def test_the_engine_keeps_the_norms_for_it(tiny_bert_dir: str) -> None:
    cands, refs = ["the cat sat on the mat", "a dog"], ["a cat is on the mat", "the dog barks"]
    unit = alignscore.score(cands, refs, model=tiny_bert_dir, layer=2, aligner="wmd", n_gram=2)
    states = alignscore.score(cands, refs, model=tiny_bert_dir, layer=2, aligner="wmd", n_gram=2, ngram_mean="states")
    assert "mean=states" in states.signature["align"] and "mean=" not in unit.signature["align"]
    assert np.isfinite(states.score.tolist()).all() and states.score.tolist() != unit.score.tolist()


def test_streamed_and_whole_runs_agree(tiny_bert_dir: str, tmp_path) -> None:
    from cli_checks import invoke

    c, r = tmp_path / "c.txt", tmp_path / "r.txt"
    c.write_text("\n".join(f"the cat {i} sat on a mat" for i in range(9)) + "\n", encoding="utf-8")
    r.write_text("\n".join(f"a cat {i} is on the mat" for i in range(9)) + "\n", encoding="utf-8")
    common = ["score", "-c", c, "-r", r, "--model", tiny_bert_dir, "--layer", "2", "--aligner", "wmd",
              "--n-gram", "2", "--ngram-mean", "states", "-q"]
    for out, extra in (("whole.tsv", []), ("stream.tsv", ["--stream", "--chunk-size", "4"])):
        code, _, err = invoke(*common, "-o", tmp_path / out, *extra)
        assert code == 0, err
    whole, stream = ((tmp_path / name).read_text().splitlines() for name in ("whole.tsv", "stream.tsv"))
    assert whole[0] == stream[0] and "mean=states" in whole[0]
    w, s = (np.array([float(line) for line in rows[3:]]) for rows in (whole, stream))
    assert len(w) == 9 and np.abs(w - s).max() < 1e-6
