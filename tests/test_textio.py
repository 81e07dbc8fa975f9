"""Files in and out by one set of rules (alignscore.textio), and the edges that were silent or
crashed: correlations over scores constant up to rounding, static tables with faults, the
transformers loading bar of the Python API, errors that are always one line.

No test here depends on this CPU's rounding: scores of identical texts are flat whether they
come out exactly equal or a few units of float32 rounding apart (both are refused)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import alignscore
from alignscore.errors import InputError
from alignscore.evaluation.stats import (ROUNDING_UNITS, correlation, flat, flat_rows, flat_text, pearson_rows,
                                         rounding_unit)
from cli_checks import assert_one_error, fingerprint, invoke
from helpers import write_daseg

GOOD = ["the cat sat on the mat", "a dog ran in the park", "hello world", "people like foreign cars",
        "it rained all day", "he said it was fine"]
BAD = ["a cat sat on a mat", "the dog runs", "hello there", "consumers prefer imported cars", "rain all day",
       "he says fine"]
ONE_UP = float(np.nextafter(np.float32(1.0), np.float32(2.0)))  # float32's next number after 1.0


@pytest.fixture()
def texts(tmp_path: Path) -> dict[str, Path]:
    paths = {}
    for name, lines in (("c", BAD), ("r", GOOD)):
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    paths["h"] = tmp_path / "human.txt"
    paths["h"].write_text("\n".join(str(v) for v in (0.1, -0.4, 0.9, 0.3, 0.0, 0.5)) + "\n", encoding="utf-8")
    paths["set"] = tmp_path / "set.jsonl"
    paths["set"].write_text("".join(json.dumps({"ref": r, "good": r, "bad": b, "category": "c"}) + "\n"
                                    for r, b in zip(GOOD, BAD)), encoding="utf-8")
    return paths


@pytest.fixture()
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails the test if a model's weights load (every check must come first)."""
    from alignscore.encoders.huggingface import HFEncoder

    def refuse(self):  # noqa: ANN001
        raise AssertionError("a model loaded before the checks were done")

    monkeypatch.setattr(HFEncoder, "load_model", refuse)


# -- 1. correlations over scores constant up to the dtype's rounding --------------------------------------
def test_scores_one_float32_step_apart_are_flat_and_have_no_correlation() -> None:
    scores = np.array([1.0] * 9 + [ONE_UP])  # as tensor.double().numpy() gives float32 scores
    human = np.linspace(0, 1, 10)
    assert rounding_unit(scores) == np.finfo(np.float32).eps
    assert flat(scores) and flat_text(scores) == "equal up to float32 rounding, spanning 1.2e-07"
    assert all(np.isnan(v) for v in correlation(scores, human))
    assert np.isnan(pearson_rows(scores, human))
    spread = np.array([0.5, 0.5, 0.5 + 1e-4] * 3)  # a real difference between scores is not rounding
    assert not flat(spread) and np.isfinite(correlation(spread, np.arange(9.0))[0])
    # the bound: ROUNDING_UNITS units of the dtype, times the larger of 1 and the largest score
    eps = np.finfo(np.float64).eps
    assert flat(np.array([2.0, 2.0 + 2 * ROUNDING_UNITS * eps]), eps)
    assert not flat(np.array([2.0, 2.0 + 3 * ROUNDING_UNITS * eps]), eps)
    rows = np.stack([scores, human])
    assert flat_rows(rows).tolist() == [True, False]


def test_score_human_refuses_scores_of_identical_pairs(texts: dict[str, Path], tiny_bert_dir: str,
                                                       tmp_path: Path) -> None:
    out = tmp_path / "out.tsv"
    code, stdout, err = invoke("score", "-r", texts["r"], "-c", texts["r"], "--human", texts["h"], "--model",
                               tiny_bert_dir, "--layer", 2, "-q", "-o", out)
    assert_one_error(code, err, "every f1 score is the same", "undefined")
    assert "pearson r" not in err and not out.exists() and stdout == ""


def test_diff_spearman_of_identical_pairs_is_undefined(texts: dict[str, Path], tiny_bert_dir: str) -> None:
    code, out, err = invoke("diff", "-r", texts["r"], "-c", texts["r"], "--model", tiny_bert_dir, "--a", "--layer 2",
                            "--b", "--layer 3", "--top", 0, "-q")
    assert code == 0, err
    assert "Spearman rho(A f1, B f1) = undefined (A" in out and "nan" not in out.lower()


def test_compare_refuses_identical_pairs_and_prints_nothing(texts: dict[str, Path], tiny_bert_dir: str) -> None:
    code, out, err = invoke("compare", "-r", texts["r"], "-c", texts["r"], "--human", texts["h"], "--model",
                            tiny_bert_dir, "--a", "--layer 2", "--b", "--layer 3", "-q")
    assert_one_error(code, err, "composition A is the same", "undefined")
    assert out == ""  # the table comes whole or not at all


def test_ablate_tables_identical_pairs_as_undefined(tmp_path: Path, tiny_bert_dir: str) -> None:
    (tmp_path / "data").mkdir()
    data = write_daseg(tmp_path / "data", ("de-en",), 6)
    ref = data / "DAseg.newstest2016.reference.de-en"
    (data / "DAseg.newstest2016.mt-system.de-en").write_bytes(ref.read_bytes())  # every pair: a text and itself
    grid = tmp_path / "g.toml"
    grid.write_text(f'title = "t"\n[models.base]\nmodel = "{tiny_bert_dir}"\nlayer = 2\n[[columns]]\nname = "F"\n'
                    'aligner = "greedy"\n[[rows]]\nname = "Vanilla"\n', encoding="utf-8")
    out = tmp_path / "out"
    code, _, err = invoke("ablate", grid, "--data", data, "-o", out, "--bootstrap", 20, "-q")
    assert code == 0, err
    table = (out / "table.md").read_text(encoding="utf-8")
    assert "| Vanilla | F | undefined [1] |" in table and "the cell's scores are " in table
    assert "nan" not in table.lower()


# -- 2. (challenge items: tests/evaluation/test_challenge.py) ----------------------------------------------------------
# -- 3, 4. static tables checked whole before use ----------------------------------------------------------
def test_word2vec_zero_vector_is_refused_with_its_line(tmp_path: Path, texts: dict[str, Path]) -> None:
    vec = tmp_path / "t.vec"
    vec.write_text("3 2\ncat 1 0\nzero 0 0\ndog 0 1\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"t\.vec:3: 'zero': a zero vector"):
        alignscore.score(["zero"], ["zero"], model=str(vec))
    tiny = tmp_path / "tiny.vec"
    tiny.write_text("cat 1 0\nsmall 1e-20 0\n", encoding="utf-8")  # no direction in float32 either
    out = tmp_path / "out.tsv"
    code, _, err = invoke("score", "--model", tiny, "-c", texts["c"], "-r", texts["r"], "-q", "-o", out)
    assert_one_error(code, err, f"{tiny}:2: 'small': a zero vector")
    assert not out.exists()


def _model2vec(folder: Path, **tables: np.ndarray) -> Path:
    """A tiny model2vec folder: a WordPiece tokenizer of five words and the given tensors."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = ["[UNK]", "the", "cat", "sat", "dog"]
    tok = Tokenizer(models.WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    folder.mkdir()
    tok.save(str(folder / "tokenizer.json"))
    save_file(tables, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({"model_type": "model2vec"}), encoding="utf-8")
    return folder


@pytest.mark.parametrize("tables, needle", [
    ({"mapping": np.array([0, 1, 2, 3, 7])}, "'mapping' sends token 4 to row 7, but 'embeddings' has rows 0..4"),
    ({"mapping": np.array([0, 1, -1, 3, 4])}, "'mapping' sends token 2 to row -1"),
    ({"mapping": np.array([0.0, 1, 2, 3, 4])}, "'mapping' must be one integer row index per token"),
    ({"weights": np.ones(3, dtype=np.float32)}, "'weights' must be one number per token (5)"),
    ({"weights": np.array([1, 1, np.inf, 1, 1], dtype=np.float32)}, "the weight of token 2 is not finite"),
    ({"weights": np.array([1, 1, 0, 1, 1], dtype=np.float32)}, "the vector of token 2 ('cat') is zero"),
])
def test_model2vec_table_faults_are_one_error_naming_the_file(tmp_path: Path, texts: dict[str, Path],
                                                             tables: dict, needle: str) -> None:
    table = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    model = _model2vec(tmp_path / "m2v", embeddings=table, **tables)
    out = tmp_path / "out.tsv"
    code, _, err = invoke("score", "--model", model, "-c", texts["c"], "-r", texts["r"], "-q", "-o", out)
    assert_one_error(code, err, f"{model / 'model.safetensors'}: ", needle)
    assert not out.exists()


def test_model2vec_zero_vector_of_the_unknown_token_is_fine(tmp_path: Path) -> None:
    table = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    table[0] = 0  # [UNK]: dropped from every text, never scored
    model = _model2vec(tmp_path / "m2v", embeddings=table)
    assert float(alignscore.score(["the cat sat"], ["the cat sat"], model=str(model)).f1[0]) == pytest.approx(1.0)


# -- 5, 6, 7. outputs: one set of rules in every command ---------------------------------------------------
def _commands(texts: dict[str, Path], model: str, data: Path, grid: Path) -> dict[str, list[object]]:
    """Each command that writes, with its arguments but the output."""
    pair = ["-c", texts["c"], "-r", texts["r"]]
    return {
        "score": ["score", *pair, "--model", model, "--layer", 2, "-q"],
        "challenge": ["challenge", texts["set"], "--model", model, "--layer", 2, "-q"],
        "perturb": ["perturb", *pair, "--seed", 1],
        "mbr": ["mbr", "-c", texts["r"], "--model", model, "--layer", 2, "-q"],
        "baseline": ["baseline", "--model", model, "--corpus", texts["r"], "--pairs", 4, "-q"],
        "config": ["config", "--model", model, "--layer", 2],
        "show": ["show", "-r", "the cat", "-c", "a cat", "--model", model, "--layer", 2, "--format", "html"],
        "diff": ["diff", *pair, "--model", model, "--a", "--layer 1", "--b", "--layer 2", "-q"],
        "tune": ["tune", "--data", data, "--model", model, "-q"],
        "ablate": ["ablate", grid, "--data", data, "-q"],
        "distill": ["distill", "--model", model, "--dims", 4, "-q"],
    }


FOLDER_COMMANDS = ("diff", "tune", "ablate", "distill")


@pytest.fixture()
def commands(texts: dict[str, Path], tiny_bert_dir: str, tmp_path: Path) -> dict[str, list[object]]:
    (tmp_path / "data").mkdir()
    data = write_daseg(tmp_path / "data", ("de-en",), 5)
    grid = tmp_path / "g.toml"
    grid.write_text(f'title = "t"\n[models.base]\nmodel = "{tiny_bert_dir}"\nlayer = 2\n[[columns]]\nname = "F"\n'
                    'aligner = "greedy"\n[[rows]]\nname = "Vanilla"\n', encoding="utf-8")
    return _commands(texts, tiny_bert_dir, data, grid)


@pytest.mark.usefixtures("no_model")
@pytest.mark.parametrize("command", ["score", "challenge", "perturb", "mbr", "baseline", "config", "show", "diff",
                                     "tune", "ablate", "distill"])
def test_a_missing_folder_is_an_error_naming_it_and_nothing_is_created(commands: dict, command: str,
                                                                      tmp_path: Path) -> None:
    target = tmp_path / "no-such-dir" / ("out" if command in FOLDER_COMMANDS else "out.txt")
    before = fingerprint(tmp_path)
    code, stdout, err = invoke(*commands[command], "-o", target)
    assert_one_error(code, err, str(target), f"the folder {tmp_path / 'no-such-dir'} does not exist")
    assert not (tmp_path / "no-such-dir").exists() and stdout == ""
    assert fingerprint(tmp_path) == before


@pytest.mark.parametrize("command", ["score", "challenge", "perturb", "mbr", "baseline", "config", "show"])
def test_dash_is_standard_output(commands: dict, command: str, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, dash, err = invoke(*commands[command], "-o", "-")
    assert code == 0, err
    assert not (tmp_path / "-").exists() and dash.strip()
    code, plain, err = invoke(*commands[command], "-o", tmp_path / "out.txt")
    assert code == 0, err
    first = lambda text: text.splitlines()[0]  # noqa: E731  (the same output: its first line, dates aside)
    assert first(dash) == first((tmp_path / "out.txt").read_text(encoding="utf-8"))


@pytest.mark.usefixtures("no_model")
@pytest.mark.parametrize("command", FOLDER_COMMANDS)
def test_dash_is_refused_where_a_command_writes_a_folder(commands: dict, command: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = invoke(*commands[command], "-o", "-")
    assert_one_error(code, err, "-o -: this command writes a folder of files")
    assert not (tmp_path / "-").exists()


@pytest.mark.usefixtures("no_model")
def test_distill_names_a_file_as_a_file(texts: dict[str, Path], tiny_bert_dir: str) -> None:
    before = fingerprint(texts["c"])
    code, _, err = invoke("distill", "--model", tiny_bert_dir, "-o", texts["c"], "-q")
    assert_one_error(code, err, f"{texts['c']}: is a file, not a folder")
    assert "empty folder" not in err and fingerprint(texts["c"]) == before


def test_an_output_folder_is_made_only_after_every_check(texts: dict[str, Path], tiny_bert_dir: str,
                                                         tmp_path: Path) -> None:
    out = tmp_path / "new"
    code, _, err = invoke("diff", "-c", texts["c"], "-r", texts["r"], "--model", tiny_bert_dir, "--a", "--layer 1",
                          "--b", "--layer 9", "-q", "-o", out)  # layer 9: the model has 4, found when built
    assert_one_error(code, err, "layer 9")
    assert not out.exists()
    code, _, err = invoke("diff", "-c", texts["c"], "-r", texts["r"], "--model", tiny_bert_dir, "--a", "--layer 1",
                          "--b", "--layer 2", "-q", "-o", out, "--top", 1)
    assert code == 0, err
    assert (out / "diff.tsv").is_file()


# -- 8. the Python API prints no transformers loading bar ---------------------------------------------------
def test_the_api_prints_no_loading_bar(tiny_bert_dir: str, capfd: pytest.CaptureFixture,
                                       monkeypatch: pytest.MonkeyPatch, real_model_loads: None) -> None:
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    if not hasattr(hf_logging, "set_tqdm_hook"):
        pytest.skip("this transformers has no loading bar to hide")
    monkeypatch.setattr(hf_logging, "_tqdm_active", True)  # bars on, as in a fresh Python (a CLI run turns them off)
    AutoModel.from_pretrained(tiny_bert_dir)
    assert "Loading weights" in capfd.readouterr().err  # the control: transformers shows it here
    alignscore.score(["the cat sat"], ["a cat sat"], model=tiny_bert_dir, layer=2)
    assert capfd.readouterr().err == ""
    assert hf_logging._tqdm_hook is None  # the hook before the load is back


# -- errors are one line ------------------------------------------------------------------------------------
def test_an_error_about_a_name_with_a_line_break_is_one_line(tmp_path: Path, texts: dict[str, Path],
                                                             tiny_bert_dir: str) -> None:
    odd = tmp_path / "two\nlines.txt"
    code, _, err = invoke("score", "-c", odd, "-r", texts["r"], "--model", tiny_bert_dir, "--layer", 2, "-q")
    line = assert_one_error(code, err, "two lines.txt")
    assert len(err.strip().splitlines()) == 1 and line.startswith("alignscore: error: ")
