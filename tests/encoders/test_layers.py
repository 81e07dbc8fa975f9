"""Each part on its own: encoder layers, aggregators, weighting, greedy maths, files, baselines."""

from __future__ import annotations

import math

import pytest
import torch

import alignscore
from alignscore.aggregators import PowerMeans, SingleLayer, power_mean
from alignscore.aligners import greedy_match
from alignscore.encoders.layers import canonical_name, default_layer
from alignscore.errors import ConfigError, InputError
from alignscore.scores import reduce_groups
from alignscore.rescale import Baseline, rescale
from alignscore.textio import read_lines
from alignscore.tokens import TokenTable
from alignscore.weighting import document_frequency, idf_from_df


# -- encoder ------------------------------------------------------------------------------------
def test_layer_k_is_hidden_state_k_and_upper_blocks_are_skipped(tiny_bert_dir):
    from transformers import AutoModel


    enc = alignscore.HFEncoder(tiny_bert_dir, device_name="cpu")
    tok = enc.tokenize(["a short one", "and a somewhat longer sentence here"])
    table = TokenTable.from_tokenized(tok)
    from alignscore.tokens import pad_gather

    index, valid = pad_gather(table.offsets, torch.arange(2))
    ids = torch.where(valid, table.ids[index], torch.zeros((), dtype=torch.long))
    full = AutoModel.from_pretrained(tiny_bert_dir).eval()
    with torch.no_grad():
        hidden = full(input_ids=ids, attention_mask=valid.long(), output_hidden_states=True).hidden_states
    calls = []
    hooks = [blk.register_forward_hook(lambda *a, i=i: calls.append(i))
             for i, blk in enumerate(enc.load_model().encoder.layer)]
    states = enc.forward(ids, valid.long(), [0, 2])
    for h in hooks:
        h.remove()
    assert calls == [0, 1]  # blocks 3 and 4 never ran
    for out, k in zip(states, (0, 2)):
        assert torch.allclose(out[valid], hidden[k][valid], atol=1e-6)
    assert len(enc.load_model().encoder.layer) == 4  # the model is left whole


def test_one_encoder_serves_a_higher_layer_after_a_lower_one(tiny_bert_dir):
    """The first call runs blocks 1-2 only; a later call for layer 4 must still see all blocks
    (transformers 5 hooks the hidden-state capture on the first forward)."""
    enc = alignscore.HFEncoder(tiny_bert_dir, device_name="cpu")
    fresh = alignscore.HFEncoder(tiny_bert_dir, device_name="cpu")
    ids = torch.tensor([[2, 40, 41, 42, 3]])
    mask = torch.ones_like(ids)
    enc.forward(ids, mask, [2])
    after_low = enc.forward(ids, mask, [1, 4])
    assert torch.equal(after_low, fresh.forward(ids, mask, [1, 4]))


def test_truncation_keeps_the_closing_special_token(tiny_bert_dir):
    enc = alignscore.HFEncoder(tiny_bert_dir, max_length=10)
    with pytest.warns(UserWarning, match="1 text"):
        tok = enc.tokenize(["one two three four five six seven eight nine ten eleven", "short"])
    assert len(tok.ids[0]) == 10 and tok.tokens[0][-1] == "[SEP]" and tok.special[0][-1]
    assert tok.truncated == [0]


def test_word_starts_for_wordpiece_and_bpe(tiny_bert_dir, tiny_roberta_dir):
    for path in (tiny_bert_dir, tiny_roberta_dir):
        tok = alignscore.HFEncoder(path).tokenize(["unbelievable things happen"])
        assert sum(tok.word_start[0]) == 3  # one start per word, whatever the subword scheme
        assert not tok.word_start[0][0] and tok.special[0][0]


def test_default_layers():
    assert default_layer("roberta-large") == 17 and default_layer("FacebookAI/roberta-large") == 17
    assert default_layer("bert-base-uncased") == 9 and default_layer("distilbert-base-uncased") == 5
    assert canonical_name("all-MiniLM-L6-v2") == "sentence-transformers/all-MiniLM-L6-v2"
    assert default_layer("some/unknown-model") is None


def test_layer_errors(tiny_bert_dir):
    with pytest.raises(ConfigError, match="layer 5 does not exist"):
        SingleLayer(5).resolve(4)
    assert SingleLayer(-1).resolve(4).layers_read() == (4,)
    assert PowerMeans().resolve(12).layers_read() == (8, 9, 10, 11, 12)
    with pytest.raises(ConfigError, match="resolve"):
        PowerMeans().layers_read()  # "the last five" needs a model
    with pytest.raises(ConfigError, match="no default layer"):
        alignscore.bertscore(tiny_bert_dir).layers()


# -- aggregators --------------------------------------------------------------------------------
def test_power_means():
    x = torch.tensor([[1.0, -2.0], [3.0, 4.0], [-5.0, 0.5]])
    assert torch.equal(power_mean(x, math.inf), torch.tensor([3.0, 4.0]))
    assert torch.equal(power_mean(x, -math.inf), torch.tensor([-5.0, -2.0]))
    assert torch.allclose(power_mean(x, 1), x.mean(0))
    # p = 3 on signed values: the real cube root of the mean of cubes
    m = (x ** 3).mean(0)
    assert torch.allclose(power_mean(x, 3), m.sign() * m.abs() ** (1 / 3))
    with pytest.raises(ConfigError):
        power_mean(x, 0)


def test_pmeans_concatenates_min_mean_max_of_normalised_layers():
    states = torch.randn(5, 2, 3, 4)
    out = PowerMeans()(states)
    unit = states / states.norm(dim=-1, keepdim=True)
    assert out.shape == (2, 3, 12)
    assert torch.allclose(out[..., :4], unit.min(0).values)
    assert torch.allclose(out[..., 4:8], unit.mean(0))
    assert torch.allclose(out[..., 8:], unit.max(0).values)


# -- weighting -----------------------------------------------------------------------------------
def test_idf_matches_the_formula():
    from alignscore.encoders.base import Tokenized

    sents = [[1, 5, 5, 2], [1, 6, 2], [1, 5, 7, 2]]
    tok = Tokenized(sents, [[False] * len(s) for s in sents], [[False] * len(s) for s in sents],
                    [["x"] * len(s) for s in sents])
    table = TokenTable.from_tokenized(tok)
    counts = torch.tensor([1.0, 2.0, 1.0], dtype=torch.float64)  # sentence 1 occurs twice
    idf = idf_from_df(document_frequency(table, counts, 10), 4)
    expect = {1: math.log(5 / 5), 5: math.log(5 / 3), 6: math.log(5 / 3), 7: math.log(5 / 2), 9: math.log(5)}
    for token, value in expect.items():
        assert idf[token].item() == pytest.approx(value, rel=1e-6)


def test_empty_idf_corpus_is_an_error():
    with pytest.raises(ConfigError, match="empty"):
        alignscore.IdfL(idf_corpus=["", "  "])
    with pytest.raises(ConfigError, match="needs a corpus"):
        alignscore.IdfL(idf_corpus=None)


# -- greedy ------------------------------------------------------------------------------------------
def test_greedy_equals_a_plain_loop():
    g = torch.Generator().manual_seed(1)
    ref = torch.nn.functional.normalize(torch.randn(3, 6, 8, generator=g), dim=-1)
    cand = torch.nn.functional.normalize(torch.randn(3, 5, 8, generator=g), dim=-1)
    ref_mass = torch.rand(3, 6, generator=g) * (torch.rand(3, 6, generator=g) > 0.3)
    cand_mass = torch.rand(3, 5, generator=g) * (torch.rand(3, 5, generator=g) > 0.3)
    ref_mass[:, 0] = cand_mass[:, 0] = 1.0
    ref_match = torch.ones(3, 6, dtype=torch.bool)
    cand_match = torch.ones(3, 5, dtype=torch.bool)
    p, r, f, _ = greedy_match(ref, cand, ref_mass, cand_mass, ref_match, cand_match)
    for b in range(3):
        sim = [[float(ref[b, i] @ cand[b, j]) for j in range(5)] for i in range(6)]
        rr = sum(ref_mass[b, i] * max(sim[i]) for i in range(6)) / ref_mass[b].sum()
        pp = sum(cand_mass[b, j] * max(sim[i][j] for i in range(6)) for j in range(5)) / cand_mass[b].sum()
        assert p[b].item() == pytest.approx(float(pp), abs=1e-6)
        assert r[b].item() == pytest.approx(float(rr), abs=1e-6)
        assert f[b].item() == pytest.approx(float(2 * pp * rr / (pp + rr)), abs=1e-6)


def test_reduce_groups_max_mean_and_best():
    values = {"f1": torch.tensor([0.1, 0.9, 0.5, 0.3]), "precision": torch.tensor([0.8, 0.2, 0.4, 0.6])}
    offsets = torch.tensor([0, 2, 4])
    out, best = reduce_groups(values, offsets, "f1", "max")
    assert out["f1"].tolist() == pytest.approx([0.9, 0.5]) and out["precision"].tolist() == pytest.approx([0.8, 0.6])
    assert best.tolist() == [1, 0]
    out, _ = reduce_groups(values, offsets, "f1", "mean")
    assert out["f1"].tolist() == pytest.approx([0.5, 0.4])


# -- files and baselines ----------------------------------------------------------------------------
def test_read_lines(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes("\ufeffone\r\ntwo\u2028still two\n\nfour\n".encode())
    assert read_lines(p) == ["one", "two\u2028still two", "", "four"]
    p.write_bytes(b"ok\n\xc3\x28\n")
    with pytest.raises(InputError, match=r"a.txt:2: not valid UTF-8"):
        read_lines(p)
    with pytest.raises(InputError, match="cannot read"):
        read_lines(tmp_path / "missing.txt")


def test_baseline_file_roundtrip_and_rescale(tmp_path):
    b = Baseline({0: {"precision": 0.3, "recall": 0.31, "f1": 0.305}, 1: {"precision": 0.8, "recall": 0.7, "f1": 0.75}})
    path = tmp_path / "b.tsv"
    b.write(path)
    assert path.read_text().splitlines()[0] == "LAYER,P,R,F"
    again = Baseline.read(path)
    assert again.rows == b.rows
    out = rescale({"f1": torch.tensor([0.75, 1.0])}, again.values(1))
    assert out["f1"].tolist() == pytest.approx([0.0, 1.0])
    with pytest.raises(ConfigError, match="no row for layer 7"):
        again.values(7)
    (tmp_path / "bad.tsv").write_text("LAYER,P,R,F\n0,0.1,x,0.2\n")
    with pytest.raises(InputError, match="bad.tsv:2"):
        Baseline.read(tmp_path / "bad.tsv")


def test_registry_names_unknown_parts():
    with pytest.raises(ConfigError, match="unknown aligner 'nope'"):
        alignscore.ALIGNERS.build("nope")
    assert "greedy" in alignscore.ALIGNERS and "idf-S" in alignscore.WEIGHTINGS


@pytest.mark.slow  # a fresh interpreter: CI's tier
def test_no_model_loaded_at_import():
    import subprocess
    import sys

    code = "import alignscore, sys; print('transformers.models.bert.modeling_bert' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
