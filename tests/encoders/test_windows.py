"""Long texts: ``long_texts="window"`` encodes texts over the model's limit whole, in windows,
each token's state from the window where it is most central; texts within the limit score
exactly as in truncate mode. The tiny BERT's limit is 64 tokens."""

from __future__ import annotations

import warnings

import pytest
import torch

from alignscore import HFEncoder, Scorer, SingleLayer
from alignscore.cache import EmbeddingCache
from alignscore.encoders.cached import CachedEncoder
from alignscore.encoders.windows import most_central, window_starts
from alignscore.errors import ConfigError
from alignscore.runtime import plan_batches

from cli_checks import assert_one_error, invoke
from helpers import compose, wmt16

REFS = wmt16("de-en")["reference"]


def _long_text(enc: HFEncoder, tokens: int) -> str:
    """WMT16 references joined until the text has at least ``tokens`` tokens."""
    tok = enc.load_tokenizer()
    parts: list[str] = []
    count, i = 0, 0
    while count < tokens:
        parts.append(REFS[i])
        count += len(tok(REFS[i], add_special_tokens=False)["input_ids"])
        i += 1
    return " ".join(parts)


def test_window_starts_and_most_central():
    assert window_starts(5, 8, 4) == [0]
    assert window_starts(20, 8, 4) == [0, 4, 8, 12]
    assert window_starts(21, 8, 4) == [0, 4, 8, 12, 13]  # the last window ends at the text's end
    choice = most_central(20, [0, 4, 8, 12], 8).tolist()
    # token 5: margin min(5, 2) = 2 in window 0, min(1, 6) = 1 in window 1; token 6: 1 and 2
    assert choice[:8] == [0, 0, 0, 0, 0, 0, 1, 1] and choice[-4:] == [3, 3, 3, 3]
    for t, w in enumerate(choice):  # the chosen window holds the token, and no window holds it more centrally
        s = [0, 4, 8, 12][w]
        assert s <= t < s + 8
        best = max(min(t - s2, s2 + 7 - t) for s2 in (0, 4, 8, 12) if s2 <= t < s2 + 8)
        assert min(t - s, s + 7 - t) == best


def test_texts_within_the_limit_score_identically(tiny_bert_dir):
    cands, refs = wmt16("de-en")["mt-system"][:30], REFS[:30]
    short = [(c, r) for c, r in zip(cands, refs)
             if max(len(t.split()) for t in (c, r)) < 25]  # well within 64 tokens
    cands, refs = [c for c, _ in short], [r for _, r in short]
    truncate = compose(HFEncoder(tiny_bert_dir), SingleLayer(3)).score(cands, refs)
    window = compose(HFEncoder(tiny_bert_dir, long_texts="window"), SingleLayer(3)).score(cands, refs)
    for name in truncate.metrics:
        assert torch.equal(truncate[name], window[name]), name  # bit for bit: the very same forward pass
    assert str(window.signature).startswith(f"model:{tiny_bert_dir}#") and "+window|" in str(window.signature)
    assert "+window" not in str(truncate.signature)


def test_a_2000_token_text_scores_without_truncation(tiny_bert_dir):
    enc = HFEncoder(tiny_bert_dir, long_texts="window")
    doc = _long_text(enc, 2000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no truncation warning
        tok = enc.tokenize([doc])
    full = len(enc.load_tokenizer()(doc)["input_ids"])
    assert tok.truncated == [] and len(tok.ids[0]) == full > 2000
    rows, width = enc.forward_shape(full)
    assert width == 64 and rows == len(window_starts(full - 2, 62, 31)) > 60
    scorer = compose(enc, SingleLayer(3))
    tail = " ".join(doc.split()[-40:])
    got = scorer.score([doc, tail], [doc, doc])
    assert abs(float(got.f1[0]) - 1) < 1e-5  # every token matches itself
    # the tail of the document is encoded: its words find themselves (precision near 1); truncated,
    # the reference stops at token 63 and they do not
    with pytest.warns(UserWarning, match="truncated"):
        cut = compose(HFEncoder(tiny_bert_dir), SingleLayer(3)).score([tail], [doc])
    assert float(got.precision[1]) > float(cut.precision[0]) + 0.05


def test_stitched_states_are_those_of_the_most_central_window(tiny_bert_dir):
    enc = HFEncoder(tiny_bert_dir, long_texts="window", stride=20)
    doc = _long_text(enc, 150)
    ids = torch.tensor(enc.tokenize([doc]).ids[0])
    short = torch.tensor(enc.tokenize(["people like foreign cars"]).ids[0])
    batch = torch.zeros(2, len(ids), dtype=torch.long)
    batch[0], batch[1, :len(short)] = ids, short
    mask = (torch.arange(len(ids)) < torch.tensor([[len(ids)], [len(short)]])).long()
    got = enc.forward(batch, mask, [1, 3])
    assert got.shape == (2, 2, len(ids), 32)

    # by hand: each window [CLS] + 62 tokens + [SEP] encoded alone; each token from the window
    # where its distance to the nearer edge of the window's content is largest (the earlier on ties)
    content = ids[1:-1]
    n, width = len(content), 62
    starts = list(range(0, n - width + 1, 20))
    if starts[-1] + width < n:
        starts.append(n - width)
    windows = [enc.forward(torch.cat([ids[:1], content[s:s + width], ids[-1:]]).unsqueeze(0),
                           torch.ones(1, 64, dtype=torch.long), [1, 3])[:, 0] for s in starts]
    want = torch.zeros(2, len(ids), 32)
    want[:, 0], want[:, -1] = windows[0][:, 0], windows[-1][:, -1]
    for t in range(n):
        margins = [min(t - s, s + width - 1 - t) if s <= t < s + width else -1 for s in starts]
        w = margins.index(max(margins))
        want[:, 1 + t] = windows[w][:, 1 + t - starts[w]]
    assert (got[:, 0] - want).abs().max() < 1e-5
    alone = enc.forward(short.unsqueeze(0), torch.ones(1, len(short), dtype=torch.long), [1, 3])[:, 0]
    assert (got[:, 1, :len(short)] - alone).abs().max() < 1e-5


def test_token_budget_counts_windows():
    def shape(length: int) -> tuple[int, int]:  # texts over 64 tokens: one window per 31 tokens
        return (len(window_starts(length - 2, 62, 31)), 64) if length > 64 else (1, length)

    lengths = torch.tensor([200, 64, 64, 64, 10])
    assert shape(200) == (6, 64)
    assert plan_batches(lengths, 8, token_budget=64 * 7, shape=shape) == [(0, 2), (2, 5)]
    assert plan_batches(lengths, 7, shape=shape) == [(0, 2), (2, 5)]  # batch_size counts windows too
    assert plan_batches(lengths, 3) == [(0, 3), (3, 5)]  # without a shape: one row per text


def test_cache_keeps_window_states_apart(tiny_bert_dir, tmp_path):
    cache = EmbeddingCache(tmp_path / "cache")
    truncate, window = HFEncoder(tiny_bert_dir), HFEncoder(tiny_bert_dir, long_texts="window")
    assert truncate.fingerprint() != window.fingerprint()
    assert window.fingerprint() != HFEncoder(tiny_bert_dir, long_texts="window", stride=10).fingerprint()
    doc = _long_text(window, 300)
    texts = [doc, "people like foreign cars"]
    plain = compose(window, SingleLayer(3)).score(texts, texts[::-1])
    with pytest.warns(UserWarning, match="truncated"):
        compose(truncate, SingleLayer(3), cache=cache).score(texts, texts[::-1])  # fills the cache, truncated
    for _ in range(2):  # a miss, then a hit
        cached = compose(HFEncoder(tiny_bert_dir, long_texts="window"), SingleLayer(3), cache=cache).score(
            texts, texts[::-1])
        assert torch.equal(cached.f1, plain.f1)  # the plain run's batches, then copies of their states
    assert CachedEncoder(window, cache).forward_shape(400) == window.forward_shape(400)


def test_bad_settings_are_one_error(tiny_bert_dir, tmp_path):
    with pytest.raises(ConfigError, match="long_texts"):
        HFEncoder(tiny_bert_dir, long_texts="split")
    with pytest.raises(ConfigError, match="only"):
        HFEncoder(tiny_bert_dir, stride=10)
    with pytest.raises(ConfigError, match="longer than a window"):
        HFEncoder(tiny_bert_dir, long_texts="window", stride=63).window_stride()
    path = tmp_path / "t.txt"
    path.write_text("a b\n", encoding="utf-8")
    code, _, err = invoke("score", "-c", path, "-r", path, "--model", tiny_bert_dir, "--window-stride", 5)
    assert_one_error(code, err, "--long-texts window")


def test_cli_long_texts_window(tiny_bert_dir, tmp_path):
    doc = _long_text(HFEncoder(tiny_bert_dir), 300)
    path = tmp_path / "docs.txt"
    path.write_text(doc + "\npeople like foreign cars\n", encoding="utf-8")
    code, out, err = invoke("score", "-c", path, "-r", path, "--model", tiny_bert_dir, "--layer", 3,
                            "--long-texts", "window", "-q")
    assert code == 0, err
    assert "truncated" not in err and "+window|" in err
    code, _, err = invoke("score", "-c", path, "-r", path, "--model", tiny_bert_dir, "--layer", 3, "-q")
    assert code == 0 and "1 text(s) longer than 64 tokens were truncated" in err and "--long-texts window" in err
