"""Static encoders: word2vec text files and model2vec model directories, made here (no download), and a
static role in a grid."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import alignscore
from alignscore.ablation.grid import load_grid
from alignscore.cli.options import FLAGS
from alignscore.config.compile import merge, sources_of
from alignscore.aligners import ALIGNERS
from alignscore.encoders.static import StaticEncoder, read_vectors, split_words, static_format
from alignscore.errors import ConfigError, InputError
from alignscore.filters import FILTERS
from alignscore.weighting import WEIGHTINGS
from cli_checks import assert_one_error, invoke

REPO = Path(__file__).resolve().parents[2]

WORDS = {
    "the": [0.1, 0.2, 0.0, 0.1],
    "cat": [0.9, 0.1, 0.3, 0.0],
    "dog": [0.8, 0.2, 0.4, 0.1],
    "sat": [0.1, 0.9, 0.2, 0.3],
    "sits": [0.2, 0.8, 0.3, 0.3],
    "on": [0.0, 0.1, 0.9, 0.1],
    "mat": [0.5, 0.1, 0.2, 0.9],
    "rug": [0.4, 0.2, 0.3, 0.8],
    ".": [0.0, 0.0, 0.1, 0.3],
    "The": [0.3, 0.3, 0.3, 0.3],
}


def vec_text(words: dict[str, list[float]], header: bool = True) -> str:
    head = f"{len(words)} {len(next(iter(words.values())))}\n" if header else ""
    return head + "".join(f"{w} {' '.join(map(str, v))}\n" for w, v in words.items())


@pytest.fixture
def vec_file(tmp_path: Path) -> str:
    path = tmp_path / "small.vec"
    path.write_text(vec_text(WORDS), encoding="utf-8")
    return str(path)


@pytest.fixture
def m2v_dir(tmp_path: Path) -> str:
    """A tiny model2vec model: a WordPiece tokenizer with a fixed vocabulary and a random table."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    vocab = ["[PAD]", "[UNK]", "the", "cat", "sat", "on", "mat", "dog", "##s", ".", "run"]
    tok = Tokenizer(models.WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    out = tmp_path / "m2v"
    out.mkdir()
    tok.save(str(out / "tokenizer.json"))
    table = np.random.default_rng(0).normal(size=(len(vocab), 6)).astype(np.float32)
    save_file({"embeddings": table}, str(out / "model.safetensors"))
    (out / "config.json").write_text(json.dumps({"model_type": "model2vec", "hidden_dim": 6}), encoding="utf-8")
    return str(out)


def greedy_f1(cand: list[list[float]], ref: list[list[float]]) -> float:
    """BERTScore F1 by hand: cosine matrix, max per row and per column, uniform weights."""
    c = np.array(cand, dtype=np.float64)
    r = np.array(ref, dtype=np.float64)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    r /= np.linalg.norm(r, axis=1, keepdims=True)
    sim = c @ r.T
    p, rec = sim.max(1).mean(), sim.max(0).mean()
    return 2 * p * rec / (p + rec)


# -- word2vec text files -------------------------------------------------------------------------------
def test_header_is_optional(tmp_path: Path, vec_file: str) -> None:
    bare = tmp_path / "bare.txt"
    bare.write_text(vec_text(WORDS, header=False), encoding="utf-8")
    (w1, t1), (w2, t2) = read_vectors(vec_file), read_vectors(bare)
    assert w1 == w2 == list(WORDS)
    assert np.array_equal(t1, t2) and t1.dtype == np.float32
    assert t1[1].tolist() == pytest.approx(WORDS["cat"])


def test_word_split() -> None:
    assert [w for w, _, _ in split_words("The cat's mat, (on) 3.5")] == \
        ["The", "cat", "'", "s", "mat", ",", "(", "on", ")", "3", ".", "5"]
    assert [w for w, _, _ in split_words("The CAT", lowercase=True)] == ["the", "cat"]
    assert split_words("  ") == []


@pytest.mark.parametrize("text, line, what", [
    ("2 2\ncat 1 0\ndog 0 1 2\n", 3, "ragged row"),
    ("cat 1 0\ndog 0\n", 2, "ragged row"),
    ("2 2\ncat 1 zero\ndog 0 1\n", 2, "'zero' is not a number"),
    ("2 2\ncat 1 nan\ndog 0 1\n", 2, "not a finite number"),
    ("2 2\ncat 1 0\ndog -inf 1\n", 3, "not a finite number"),
    ("2 2\ncat 1 1e39\ndog 0 1\n", 2, "too large for float32"),
    ("2 2\ncat 1 0\ncat 0 1\n", 3, "given twice (first on line 2)"),
    ("3 2\ncat 1 0\ndog 0 1\n", 1, "the header says 3 words, the file has 2"),
    ("2 2\ncat 1 0\n\ndog 0 1\n", 3, "an empty line"),
    ("cat\n", 1, "a word without a vector"),
])
def test_bad_vectors_files(tmp_path: Path, text: str, line: int, what: str) -> None:
    path = tmp_path / "bad.vec"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_vectors(path)
    assert str(err.value).startswith(f"{path}:{line}: ") and what in str(err.value)


def test_empty_and_non_utf8_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.vec"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="no vectors"):
        read_vectors(empty)
    latin = tmp_path / "latin.vec"
    latin.write_bytes("caf\xe9 1 0\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"latin.vec:1: not valid UTF-8"):  # the file and line (textio.iter_lines)
        read_vectors(latin)


def test_bad_vectors_file_on_the_command_line(tmp_path: Path, files) -> None:
    bad = tmp_path / "bad.vec"
    bad.write_text("2 2\ncat 1 0\ncat 0 1\n", encoding="utf-8")
    cands, refs = files("c.txt", ["the cat"]), files("r.txt", ["the dog"])
    code, out, err = invoke("score", "--model", bad, "-c", cands, "-r", refs, "-q")
    assert_one_error(code, err, f"alignscore: error: {bad}:3: the word 'cat' is given twice (first on line 2)")
    assert out == ""


def test_static_scores_equal_a_hand_computation(vec_file: str) -> None:
    cands = ["the cat sat on the mat.", "a dog sits", "The cat"]
    refs = ["the dog sits on the rug.", "the dog sat.", "the cat"]
    scores = alignscore.score(cands, refs, model=vec_file)
    kept = [["the", "cat", "sat", "on", "the", "mat", "."], ["dog", "sits"], ["The", "cat"]]
    ref_kept = [["the", "dog", "sits", "on", "the", "rug", "."], ["the", "dog", "sat", "."], ["the", "cat"]]
    for i, (c, r) in enumerate(zip(kept, ref_kept)):
        expected = greedy_f1([WORDS[w] for w in c], [WORDS[w] for w in r])
        assert float(scores.f1[i]) == pytest.approx(expected, abs=1e-6)
    lowered = alignscore.score(cands[2:], refs[2:], model=vec_file, lowercase=True)
    assert float(lowered.f1[0]) == pytest.approx(1.0, abs=1e-6)  # "the cat" against itself
    assert float(scores.f1[2]) < 0.99  # without lowercasing "The" has a vector of its own


def test_static_wmd_equals_a_hand_computation(vec_file: str) -> None:
    """Three tokens a side with uniform masses: exact transport is the best one-to-one assignment."""
    import itertools

    pairs = [("cat sat mat", "dog sits rug"), ("the cat sat", "sat the dog"), ("on mat .", "cat sits on")]
    scores = alignscore.score([c for c, _ in pairs], [r for _, r in pairs], model=vec_file, aligner="wmd")
    for i, (c, r) in enumerate(pairs):
        u = np.array([WORDS[w] for w in c.split()], dtype=np.float64)
        v = np.array([WORDS[w] for w in r.split()], dtype=np.float64)
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        d = min(np.mean([np.linalg.norm(u[k] - v[p[k]]) for k in range(3)]) for p in itertools.permutations(range(3)))
        assert float(scores.metrics["score"][i]) == pytest.approx(1 - d, abs=1e-6)


def test_unknown_words_dropped_and_all_unknown_texts_warned_once(vec_file: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = alignscore.score(["zebra xylophone", "qwerty", "the cat zebra"], ["the cat", "the cat", "the cat"],
                                  model=vec_file)
    messages = [str(w.message) for w in caught]
    assert messages == ["2 pair(s) have a text with no token in the static table (every word unknown, or an "
                        "empty text); they score 0"]
    assert scores.f1[:2].tolist() == [0.0, 0.0]
    assert float(scores.f1[2]) == pytest.approx(1.0, abs=1e-6)  # zebra is dropped


def test_signature_names_the_table_by_digest(tmp_path: Path, vec_file: str) -> None:
    sig = alignscore.score(["the cat"], ["the dog"], model=vec_file).signature
    enc = StaticEncoder(vec_file)
    assert f"model:static:small.vec#{enc.digest()[:12]}|" in str(sig)
    other = tmp_path / "other" / "small.vec"
    other.parent.mkdir()
    other.write_text(vec_text({**WORDS, "cat": [0.9, 0.1, 0.3, 0.1]}), encoding="utf-8")
    assert StaticEncoder(str(other)).digest() != enc.digest()
    assert "+lowercase" in str(alignscore.score(["the cat"], ["the dog"], model=vec_file, lowercase=True).signature)


@pytest.mark.parametrize("options, message", [
    ({"layer": 0}, "layer=: .* layer and aggregator settings do not apply"),
    ({"aggregator": "pmeans"}, "aggregator=: .* layer and aggregator settings do not apply"),
    ({"aggregator": "routing"}, "aggregator=: .* layer and aggregator settings do not apply"),
    ({"dtype": "int8"}, "is a static table"),
    ({"long_texts": "window"}, "is a static table"),
])
def test_layer_and_model_options_refused(vec_file: str, options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        alignscore.score(["the cat"], ["the dog"], model=vec_file, **options)


def test_lowercase_refused_where_it_does_not_apply(m2v_dir: str, tiny_bert_dir: str) -> None:
    for model in (m2v_dir, tiny_bert_dir):
        with pytest.raises(ConfigError, match="lowercase=: applies to static word vectors only"):
            alignscore.score(["the cat"], ["the dog"], model=model, lowercase=True)


def test_layer_refused_on_the_command_line(vec_file: str, files) -> None:
    cands, refs = files("c.txt", ["the cat"]), files("r.txt", ["the dog"])
    code, out, err = invoke("score", "--model", vec_file, "--layer", "2", "-c", cands, "-r", refs, "-q")
    assert_one_error(code, err, "no layers", "given: layer 2")
    assert out == ""


# BaryScore's barycentres take seconds even on two pairs: CI's tier
@pytest.mark.parametrize("aligner", [pytest.param(a, marks=pytest.mark.slow) if a == "baryscore" else a
                                     for a in ALIGNERS.names()])
@pytest.mark.parametrize("weighting", WEIGHTINGS.names())
def test_every_aligner_and_weighting_runs_on_static(tmp_path: Path, vec_file: str, aligner: str,
                                                     weighting: str) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat\nthe dog\non the mat\n", encoding="utf-8")
    extra = {"idf_corpus": str(corpus)} if weighting == "idf-L" else {}
    cands, refs = ["the cat sat on the mat.", "dog sits"], ["the dog sits on the rug.", "the cat sat"]
    scores = alignscore.score(cands, refs, model=vec_file, aligner=aligner, weighting=weighting, **extra)
    values = scores.metrics[next(iter(scores.metrics))]
    assert torch.isfinite(values).all() and len(values) == 2


@pytest.mark.parametrize("n_gram", [1, 2, "sentence"])
def test_wmd_n_grams_and_smd_on_static(vec_file: str, n_gram: object) -> None:
    same = alignscore.score(["the cat sat on the mat."], ["the cat sat on the mat."], model=vec_file,
                            aligner="wmd", n_gram=n_gram)
    other = alignscore.score(["the cat sat on the mat."], ["the dog sits on the rug."], model=vec_file,
                             aligner="wmd", n_gram=n_gram)
    assert float(same.metrics["score"][0]) == pytest.approx(1.0, abs=1e-5)
    assert float(other.metrics["score"][0]) < float(same.metrics["score"][0])


@pytest.mark.parametrize("name", FILTERS.names())
def test_every_filter_runs_on_static(tmp_path: Path, vec_file: str, name: str) -> None:
    stop = tmp_path / "stop.txt"
    stop.write_text("the\non\n", encoding="utf-8")
    options = {"stopwords": str(stop)} if name == "stopwords" else {"filters": [name]}
    scores = alignscore.score(["the cat sat on the mat."], ["the dog sits."], model=vec_file, **options)
    kept = (["cat", "sat", "mat", "."], ["dog", "sits", "."]) if name == "stopwords" else \
        (["the", "cat", "sat", "on", "the", "mat"], ["the", "dog", "sits"])
    assert float(scores.f1[0]) == pytest.approx(greedy_f1([WORDS[w] for w in kept[0]],
                                                          [WORDS[w] for w in kept[1]]), abs=1e-6)


# -- model2vec model directories -----------------------------------------------------------------------
def test_model2vec_directory(m2v_dir: str) -> None:
    assert static_format(m2v_dir) == "model2vec"
    enc = StaticEncoder(m2v_dir)
    tok = enc.tokenize(["The cats sat on a mat."])
    assert tok.tokens == [["the", "cat", "##s", "sat", "on", "mat", "."]]  # "a" is unknown: dropped
    assert tok.word_start == [[True, True, False, True, True, True, True]]
    assert tok.surface == [["The", "cat", "s", "sat", "on", "mat", "."]]
    assert not any(tok.special[0])
    from safetensors.numpy import load_file

    table = load_file(str(Path(m2v_dir) / "model.safetensors"))["embeddings"]
    ids = {"the": 2, "cat": 3, "sat": 4, "on": 5, "mat": 6, "dog": 7, "##s": 8, ".": 9}
    cand, ref = ["the", "cat", "##s", "sat"], ["the", "dog", "sat", "."]
    scores = alignscore.score(["The cats sat"], ["the dog sat."], model=m2v_dir)
    assert float(scores.f1[0]) == pytest.approx(greedy_f1([table[ids[t]] for t in cand],
                                                          [table[ids[t]] for t in ref]), abs=1e-6)
    rm = alignscore.score(["The cats sat"], ["the dog sat."], model=m2v_dir, filters=["rm"])
    assert float(rm.f1[0]) == pytest.approx(greedy_f1([table[ids[t]] for t in ["the", "cat", "sat"]],
                                                      [table[ids[t]] for t in ["the", "dog", "sat"]]), abs=1e-6)


def test_model2vec_weights_and_mapping(tmp_path: Path, m2v_dir: str) -> None:
    from safetensors.numpy import load_file, save_file

    table = load_file(str(Path(m2v_dir) / "model.safetensors"))["embeddings"]
    mapping = np.arange(len(table))[::-1].copy()
    weights = np.linspace(0.5, 2.0, len(table)).astype(np.float32)
    save_file({"embeddings": table, "mapping": mapping, "weights": weights}, str(Path(m2v_dir) / "model.safetensors"))
    enc = StaticEncoder(m2v_dir)
    assert np.allclose(enc.table.numpy(), table[mapping] * weights[:, None])


def test_model2vec_missing_file(tmp_path: Path, m2v_dir: str) -> None:
    (Path(m2v_dir) / "model.safetensors").unlink()
    with pytest.raises(alignscore.errors.ModelLoadError, match="not a model2vec model"):
        alignscore.score(["the cat"], ["the dog"], model=m2v_dir)


def test_missing_vectors_file(tmp_path: Path, files) -> None:
    cands, refs = files("c.txt", ["the cat"]), files("r.txt", ["the dog"])
    code, out, err = invoke("score", "--model", tmp_path / "missing.vec", "-c", cands, "-r", refs, "-q")
    assert_one_error(code, err, f"--model: no such word-vector file: {tmp_path / 'missing.vec'}")
    assert out == ""


def test_not_static(tiny_bert_dir: str, tmp_path: Path) -> None:
    assert static_format(tiny_bert_dir) is None
    assert static_format(str(tmp_path / "missing.vec")) is None
    with pytest.raises(ConfigError, match="neither a word2vec text file nor a model2vec"):
        StaticEncoder(tiny_bert_dir)


# -- the grid's static role -----------------------------------------------------------------------------
def test_table1_grid_roles(vec_file: str) -> None:
    grid = load_grid(REPO / "ablations" / "table1.toml")
    assert set(grid.roles) == {"contextual", "static"}
    flags = sources_of({"model": "other-model", "layer": 3}, FLAGS)
    models = {"static": vec_file}
    static = grid.sources(grid.rows[0], grid.columns[0], flags, models)
    assert merge(static).given("model").value == vec_file and merge(static).given("layer") is None
    contextual = grid.sources(grid.rows[1], grid.columns[0], flags, models)
    assert merge(contextual).given("model").value == "other-model"
    assert merge(contextual).given("layer").value == -1  # the row names its own layer: the flag is below it
    assert grid.model("contextual", flags, models) == "other-model" and grid.model("static", flags, models) == vec_file
    assert [c.name for c in grid.columns] == ["WMD-1", "SMD"]


def _grid(tmp_path: Path, vec: Path, contextual: str, static_rows: str) -> Path:
    grid = tmp_path / "grid.toml"
    grid.write_text(f'''title = "static role"
[models.contextual]
model = "{contextual}"
[models.static]
model = "{vec}"
[[columns]]
name = "WMD-1"
aligner = "wmd"
n_gram = 1
[[columns]]
name = "SMD"
aligner = "wmd"
n_gram = "sentence"
[[rows]]
name = "contextual"
model = "contextual"
layer = -1
{static_rows}''', encoding="utf-8")
    return grid


@pytest.mark.slow
def test_ablate_with_a_static_role(tmp_path: Path, tiny_bert_dir: str) -> None:
    from helpers import write_daseg

    data = write_daseg(tmp_path, ("de-en",), 24)
    words = sorted({w for kind in ("reference", "mt-system")
                    for line in (data / f"DAseg.newstest2016.{kind}.de-en").read_text(encoding="utf-8").splitlines()
                    for w, _, _ in split_words(line, lowercase=True)})
    rng = np.random.default_rng(1)
    vec = tmp_path / "words.vec"
    vec.write_text(vec_text({w: rng.normal(size=6).round(4).tolist() for w in words}), encoding="utf-8")
    grid = _grid(tmp_path, vec, tiny_bert_dir, '[[rows]]\nname = "static"\nmodel = "static"\n')
    out = tmp_path / "out"
    code, _, err = invoke("ablate", grid, "--data", data, "-o", out, "--bootstrap", "0", "-q")
    assert code == 0, err
    rows = (out / "results.csv").read_text(encoding="utf-8").splitlines()
    static = [r for r in rows if r.startswith("static,")]
    assert len(static) == 2 and all(r.endswith(",ok") for r in static), rows
    assert f"static:words.vec#{StaticEncoder(str(vec)).digest()[:12]}" in (out / "signatures.tsv").read_text()
    # power means on the static role: one error before anything runs
    bad = _grid(tmp_path, vec, tiny_bert_dir, '[[rows]]\nname = "static"\nmodel = "static"\naggregator = "pmeans"\n')
    code, _, err = invoke("ablate", bad, "--data", data, "-o", tmp_path / "bad", "--bootstrap", "0", "-q")
    assert_one_error(code, err, "static table", "no layers")
    assert not (tmp_path / "bad" / "table.md").exists()
