"""Cross-lingual remapping (alignscore.remap, `alignscore remap`): CLP and UMD recover what they
should on synthetic vectors, word pairs come from the encoder itself, the file keeps a checksum
and is refused for another model, layer or width; the command's bad inputs are one line each."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from alignscore.errors import ConfigError, InputError
from alignscore.fit.remap import (learn, learn_clp, learn_umd, learn_weights, mean_cosine, mutual_best, paired_words,
                                  word_vectors)
from alignscore.remap import Remapping, apply_umd, load_remapping, model_digest, save_remapping
from cli_checks import assert_one_error, fingerprint, invoke, spawn

DIGEST = "a" * 64


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_unconstrained_clp_recovers_a_known_linear_map():
    x = torch.randn(200, 8, generator=_gen(), dtype=torch.float64)
    w = torch.randn(8, 8, generator=_gen(1), dtype=torch.float64)
    assert torch.allclose(learn_clp(x, x @ w), w, atol=1e-9)
    # with noise: the least-squares solution, as the normal equations give it (the reference's formula)
    z = x @ w + 0.1 * torch.randn(200, 8, generator=_gen(2), dtype=torch.float64)
    assert torch.allclose(learn_clp(x, z), torch.linalg.inv(x.T @ x) @ x.T @ z, atol=1e-9)


def test_orthogonal_clp_is_orthogonal_and_recovers_a_rotation():
    x = torch.randn(300, 6, generator=_gen(), dtype=torch.float64)
    q, _ = torch.linalg.qr(torch.randn(6, 6, generator=_gen(3), dtype=torch.float64))
    z = x @ q + 0.01 * torch.randn(300, 6, generator=_gen(4), dtype=torch.float64)
    w = learn_clp(x, z, orthogonal=True)
    assert torch.allclose(w.T @ w, torch.eye(6, dtype=torch.float64), atol=1e-10)
    assert torch.allclose(w, q, atol=1e-2)
    # it is the best orthogonal map: no random rotation fits better
    best = torch.linalg.norm(x @ w - z)
    for seed in range(5):
        other, _ = torch.linalg.qr(torch.randn(6, 6, generator=_gen(10 + seed), dtype=torch.float64))
        assert torch.linalg.norm(x @ other - z) >= best


def test_umd_removes_exactly_the_first_singular_direction():
    gen = _gen(5)
    direction = torch.nn.functional.normalize(torch.randn(10, generator=gen, dtype=torch.float64), dim=0)
    z = torch.randn(100, 10, generator=gen, dtype=torch.float64)
    x = z + 3.0 * torch.randn(100, 1, generator=gen, dtype=torch.float64) * direction \
        + 0.05 * torch.randn(100, 10, generator=gen, dtype=torch.float64)
    b = learn_umd(x, z)
    _, _, vt = np.linalg.svd((x - z).numpy())
    assert abs(float(b.norm()) - 1) < 1e-12
    assert abs(abs(float(b @ torch.from_numpy(vt[0]))) - 1) < 1e-12  # numpy's first right singular vector
    assert abs(abs(float(b @ direction)) - 1) < 1e-2
    v = torch.randn(4, 7, 10, generator=gen, dtype=torch.float64)  # a padded batch [B, T, D]
    out = apply_umd(v, b)
    assert torch.allclose(out @ b, torch.zeros(4, 7, dtype=torch.float64), atol=1e-12)
    removed = v - out
    assert torch.allclose(removed, (v @ b).unsqueeze(-1) * b, atol=1e-12)  # only along b
    # the sign is fixed: the same for the negated difference
    assert torch.allclose(learn_umd(x, z), learn_umd(-x, -z), atol=1e-12)


def test_word_vectors_average_the_subwords_and_skip_special_tokens():
    states = torch.arange(12, dtype=torch.float32).reshape(6, 2)
    got = word_vectors(states, torch.tensor([-1, 0, 0, 0, 1, -1]))
    assert got.dtype == torch.float64
    assert got.tolist() == [[4.0, 5.0], [8.0, 9.0]]


def test_mutual_best_pairs_are_each_others_best():
    gen = _gen(6)
    x, z = torch.randn(9, 5, generator=gen), torch.randn(7, 5, generator=gen)
    i, j = mutual_best(x, z)
    sim = torch.nn.functional.normalize(x, dim=1) @ torch.nn.functional.normalize(z, dim=1).T
    assert len(i) >= 1
    for a, b in zip(i.tolist(), j.tolist()):
        assert sim[a].argmax() == b and sim[:, b].argmax() == a
    lone = [a for a in range(9) if a not in i.tolist()]
    assert all(sim[:, sim[a].argmax()].argmax() != a for a in lone)  # none left out
    assert [t.tolist() for t in mutual_best(x[:0], z)] == [[], []]


def _remapping(method: str = "clp-orthogonal", layer: int = 8, width: int = 4) -> Remapping:
    weights = torch.eye(width, dtype=torch.float64) if method != "umd" else torch.eye(width, dtype=torch.float64)[0]
    return Remapping(method, weights, "enc", DIGEST, layer, "de", 123)


def test_a_remapping_file_round_trips_with_its_checksum(tmp_path):
    q, _ = torch.linalg.qr(torch.randn(4, 4, generator=_gen(7), dtype=torch.float64))
    r = Remapping("clp-orthogonal", q, "enc", DIGEST, 8, "de", 123)
    save_remapping(r, tmp_path / "de.remap")
    back = load_remapping(tmp_path / "de.remap")
    assert torch.equal(back.weights, r.weights)
    assert (back.method, back.model, back.model_digest, back.layer, back.lang, back.pairs, back.width) == \
        ("clp-orthogonal", "enc", DIGEST, 8, "de", 123, 4)
    assert back.checksum() == r.checksum() and back.digest() == r.digest()
    assert r.digest().startswith("clp-orthogonal(de,layer 8)#")
    assert Remapping("clp-orthogonal", q, "enc", DIGEST, 9, "de", 123).checksum() != r.checksum()
    v = torch.randn(2, 3, 4, generator=_gen(8))
    assert torch.allclose(back.apply(v), v @ q.float(), atol=1e-6)


@pytest.mark.parametrize("where", ["weights", "header"])
def test_a_tampered_file_is_refused(tmp_path, where):
    path = tmp_path / "de.remap"
    save_remapping(_remapping(), path)
    data = bytearray(path.read_bytes())
    if where == "weights":
        data[-3] ^= 0x40  # a byte of the last float64
    else:
        at = data.index(b'"layer":"8"')
        data[at:at + 11] = b'"layer":"9"'
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="checksum does not match"):
        load_remapping(path)


def test_a_file_that_is_not_a_remapping_is_refused(tmp_path):
    (tmp_path / "x.remap").write_text("hello\n")
    with pytest.raises(InputError, match="not a remapping file"):
        load_remapping(tmp_path / "x.remap")
    with pytest.raises(InputError, match="no such remapping file"):
        load_remapping(tmp_path / "missing.remap")


def test_another_model_layer_or_width_is_refused():
    r = _remapping(layer=8)
    r.check(DIGEST, 8, 4, "enc")
    with pytest.raises(ConfigError, match="remapping learned for model enc layer 8, not enc layer 9"):
        r.check(DIGEST, 9, 4, "enc")
    with pytest.raises(ConfigError, match="remapping learned for model enc layer 8, not other layer 8"):
        r.check("b" * 64, 8, 4, "other")
    with pytest.raises(ConfigError, match=r"not enc \(other files: bbbbbbbbbbbb"):
        r.check("b" * 64, 8, 4, "enc")
    with pytest.raises(ConfigError, match="4-dimensional vectors, not 8-dimensional"):
        r.check(DIGEST, 8, 8, "enc")
    with pytest.raises(ConfigError, match="not 8-dimensional"):
        r.apply(torch.zeros(2, 8))


def test_bad_remappings_are_refused_where_built():
    with pytest.raises(ConfigError, match=r"^method: one of clp, clp-orthogonal, umd, not 'pca'$"):
        Remapping("pca", torch.eye(3), "m", DIGEST, 8)
    with pytest.raises(ConfigError, match=r"^layer: expected an integer >= 0, not -1$"):  # the declared range
        Remapping("umd", torch.ones(3) / 3**0.5, "m", DIGEST, -1)
    with pytest.raises(ConfigError, match="shape"):
        Remapping("umd", torch.eye(3), "m", DIGEST, 8)
    with pytest.raises(ConfigError, match="finite"):
        Remapping("clp", torch.full((2, 2), float("nan")), "m", DIGEST, 8)
    for method in ("clp", "clp-orthogonal", "umd"):  # as many pairs as the width, whichever the method
        with pytest.raises(ConfigError, match=rf"^5 word pairs found .*; {method} needs at least 8 \(the vectors' "):
            learn_weights(method, torch.zeros(5, 8), torch.zeros(5, 8))
    assert learn_weights("umd", torch.eye(8, dtype=torch.float64), torch.zeros(8, 8, dtype=torch.float64)).shape == (8,)


def test_word_pairs_come_from_the_encoder(tiny_bert_dir):
    from alignscore.encoders import HFEncoder

    encoder = HFEncoder(tiny_bert_dir, device_name="cpu")
    texts = ["the people like foreign cars", "hello world", ""]
    x, z = paired_words(encoder, texts, texts, layer=2)
    # a sentence against itself: every word is its own best match (the empty line has none)
    assert len(x) == 7 and torch.allclose(x, z)
    others = ["people like cars", "a test of the world today", "unbelievable"] * 8
    sources, targets = texts[:2] * 8 + others, others + texts[:2] * 8  # enough pairs for 32 dimensions
    remapping, stats = learn(encoder, sources, targets, layer=2, method="clp-orthogonal", lang="xx")
    assert remapping.model_digest == model_digest(encoder) and remapping.layer == 2 and remapping.width == 32
    assert stats["pairs"] == remapping.pairs >= 32
    x, z = paired_words(encoder, sources, targets, layer=2)
    assert stats["cosine_before"] == pytest.approx(mean_cosine(x, z))
    # the orthogonal map maximises the summed dot products of the pairs (the identity is one candidate)
    assert float((remapping.apply(x) * z).sum()) >= float((x * z).sum()) - 1e-9
    assert stats["cosine_after"] == pytest.approx(mean_cosine(remapping.apply(x), z))


# -- the command -----------------------------------------------------------------------------------
WORDS = ["the people like foreign cars", "hello world", "it is a test", "unbelievable cars", "a dog ran in the park",
         "birds sing at dawn", "the cat sat on the mat"]
SRC = WORDS * 3  # enough word pairs for the tiny model's 32 dimensions
TGT = [" ".join(reversed(s.split())) for s in SRC]


def test_the_command_writes_a_remapping(tiny_bert_dir, files, tmp_path):
    src, tgt = files("src.txt", SRC), files("tgt.txt", TGT)
    out = tmp_path / "xx.remap"
    code, _, err = invoke("remap", "--src", src, "--tgt", tgt, "--model", tiny_bert_dir, "--layer", 3,
                          "--method", "umd", "--lang", "xx", "-o", out, "--device", "cpu", "-q")
    assert code == 0, err
    r = load_remapping(out)
    assert (r.method, r.layer, r.lang, r.width, r.model) == ("umd", 3, "xx", 32, tiny_bert_dir)
    assert f"from {r.pairs} word pairs of {len(SRC)} sentence pairs (1 pair of files)" in err
    assert "encoding" not in err  # -q: no progress bar


def test_several_files_or_folders_per_side_learn_from_all_of_them(tiny_bert_dir, files, tmp_path):
    from alignscore.fit.remap import parallel_files

    one = tmp_path / "one.remap"
    code, _, err = invoke("remap", "--src", files("src.txt", SRC), "--tgt", files("tgt.txt", TGT), "--model",
                          tiny_bert_dir, "--layer", 3, "-o", one, "--device", "cpu", "-q")
    assert code == 0, err
    (tmp_path / "de").mkdir()
    (tmp_path / "en").mkdir()
    for k, part in enumerate((slice(0, 9), slice(9, None))):  # the same lines in two files
        (tmp_path / "de" / f"part{k}.txt").write_text("\n".join(SRC[part]) + "\n", encoding="utf-8")
        (tmp_path / "en" / f"part{k}.txt").write_text("\n".join(TGT[part]) + "\n", encoding="utf-8")
    two = tmp_path / "two.remap"
    code, _, err = invoke("remap", "--src", tmp_path / "de", "--tgt", tmp_path / "en", "--model", tiny_bert_dir,
                          "--layer", 3, "-o", two, "--device", "cpu", "-q")
    assert code == 0, err
    assert f"of {len(SRC)} sentence pairs (2 pairs of files)" in err
    assert torch.allclose(load_remapping(one).weights, load_remapping(two).weights)
    three = tmp_path / "three.remap"  # files given one by one: the same
    code, _, err = invoke("remap", "--src", tmp_path / "de" / "part0.txt", "--src", tmp_path / "de" / "part1.txt",
                          "--tgt", tmp_path / "en" / "part0.txt", "--tgt", tmp_path / "en" / "part1.txt", "--model",
                          tiny_bert_dir, "--layer", 3, "-o", three, "--device", "cpu", "-q")
    assert code == 0 and load_remapping(three) == load_remapping(two), err
    assert parallel_files([str(tmp_path / "de")], [str(tmp_path / "en")]) == [
        (str(tmp_path / "de" / f"part{k}.txt"), str(tmp_path / "en" / f"part{k}.txt")) for k in (0, 1)]


@pytest.mark.parametrize("case", ["line counts", "output is an input", "layer", "stdout", "no model", "empty lang",
                                  "no folder", "nothing to learn", "same file", "file counts", "too few pairs"])
def test_bad_command_lines_are_one_line_and_write_nothing(tiny_bert_dir, files, tmp_path, case):
    src, tgt = files("src.txt", SRC), files("tgt.txt", TGT)
    out = str(tmp_path / "xx.remap")
    args = {"--src": src, "--tgt": tgt, "--model": tiny_bert_dir, "--layer": "2", "-o": out}
    needle = {"line counts": "has 3 lines but", "output is an input": "is also an input",
              "layer": "--layer: 9 does not exist: model", "stdout": "binary file", "no model": "Missing option '--model'",
              "empty lang": "--lang", "no folder": "does not exist", "nothing to learn": "nothing to learn",
              "same file": "src.txt: given as both the source and the target side",
              "file counts": "2 source files but 1 target files",
              "too few pairs": "word pairs found in the parallel sentences; clp-orthogonal needs at least 32 "
                               "(the vectors' width)"}[case]
    if case == "line counts":
        args["--tgt"] = files("short.txt", TGT[:3])
    elif case == "output is an input":
        args["-o"] = out = tgt
    elif case == "layer":
        args["--layer"] = "9"
    elif case == "stdout":
        args["-o"] = "-"
    elif case == "no model":
        del args["--model"]
    elif case == "no folder":
        args["-o"] = out = str(tmp_path / "no-such-dir" / "xx.remap")
    elif case == "nothing to learn":
        args["--src"] = src = files("blank.txt", [""] * len(TGT))
    elif case == "same file":
        args["--tgt"] = src
    elif case == "file counts":
        (tmp_path / "two").mkdir()
        for name in ("a.txt", "b.txt"):
            (tmp_path / "two" / name).write_text("\n".join(SRC) + "\n", encoding="utf-8")
        args["--src"] = str(tmp_path / "two")
    elif case == "too few pairs":
        args["--src"], args["--tgt"] = src, tgt = files("few.txt", SRC[:2]), files("few-t.txt", TGT[:2])
    else:
        args["--lang"] = " "
    before = fingerprint(src, tgt, out)
    code, stdout, err = invoke("remap", *[x for kv in args.items() for x in kv], "-q")
    assert_one_error(code, err, needle)
    assert fingerprint(src, tgt, out) == before and stdout == ""


@pytest.mark.slow
def test_the_command_in_a_process(tiny_bert_dir, files, tmp_path):
    src, tgt = files("src.txt", SRC), files("tgt.txt", TGT)
    out = tmp_path / "xx.remap"
    proc = spawn("remap", "--src", src, "--tgt", tgt, "--model", tiny_bert_dir, "--layer", 2, "-o", out,
                 "--device", "cpu", stderr=-1, stdout=-1, text=True)
    stdout, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert err.strip().splitlines()[-1].startswith(f"wrote {out}: clp-orthogonal remapping of layer 2")
    r = load_remapping(out)
    assert r.method == "clp-orthogonal" and Path(out).stat().st_size > 32 * 32 * 8
