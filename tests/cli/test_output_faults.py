"""Outputs, resumes and caches that cannot betray the user: one test per class of fault, through
the command line (and the API where it applies)."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

import alignscore
from alignscore import ConfigError, HFEncoder
from cli_checks import assert_one_error, fingerprint, invoke
from helpers import needs

CANDS = ["the cat sat on the mat", "a dog ran in the park", "hello there, world"]
REFS = ["a cat sat on a mat", "the dog was running in a park", "hello world"]


@pytest.fixture
def run(files, tiny_bert_dir):
    """``run(*args) -> (code, stdout, stderr)`` of ``score -c CANDS -r REFS`` with the tiny model."""
    c, r = files("c.txt", CANDS), files("r.txt", REFS)

    def go(*args, cands=c, refs=r):
        return invoke("score", "-c", cands, "-r", refs, "--model", tiny_bert_dir, "--layer", "2", "-q", *args)

    return go


# -- outputs that are not regular files ---------------------------------------------------------------
def test_a_named_pipe_is_written_into_not_replaced(run, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    code, _, err = run("-o", fifo)
    reader.join(timeout=60)
    assert code == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still a pipe
    assert got and got[0].startswith(b"# model:") and len(got[0].splitlines()) == 6
    code, _, err = run("-o", fifo, "--stream")
    assert_one_error(code, err, "pipe or a device", "--stream")


def test_a_character_device_is_written_into_not_replaced(run, tmp_path):
    null = tmp_path / "null"
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # the kernel's null device, under tmp
    except PermissionError:
        pytest.skip("making a device node needs privileges this run does not have")
    code, out, err = run("-o", null)
    assert code == 0 and out == "", err
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_dash_is_standard_output(run):
    code, out, err = run("-o", "-")
    assert code == 0, err
    assert out.startswith("# model:") and len(out.splitlines()) == 6


def test_a_replaced_output_keeps_its_mode_and_its_hard_links(run, tmp_path):
    out = tmp_path / "out.tsv"
    out.write_text("old\n")
    os.chmod(out, 0o640)
    link = tmp_path / "link.tsv"
    os.link(out, link)
    code, _, err = run("-o", out)
    assert code == 0, err
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o640
    assert os.path.samefile(out, link) and link.read_text().startswith("# model:")


# -- files named inside a composition file are inputs too -----------------------------------------
@pytest.mark.parametrize("command", ["score", "mbr", "show"])
@pytest.mark.parametrize("key", ["corpus", "stopwords"])
def test_files_named_in_a_config_file_are_protected_from_the_output(files, tiny_bert_dir, tmp_path, command, key):
    corpus = files("corpus.txt", REFS)
    stop = files("stop.txt", ["the", "a"])
    config = tmp_path / "c.toml"
    config.write_text(f'model = "{tiny_bert_dir}"\nlayer = 2\n' + (
        'weighting = { name = "idf-L", corpus = "corpus.txt" }\n' if key == "corpus" else
        'filters = [{ name = "stopwords", file = "stop.txt" }]\n'), encoding="utf-8")
    target = corpus if key == "corpus" else stop
    before = fingerprint(corpus, stop)
    c = files("c.txt", CANDS)
    args = {"score": ["score", "-c", c, "-r", files("r.txt", REFS)], "mbr": ["mbr", "-c", c],
            "show": ["show", "-c", "a cat", "-r", "a dog"]}[command]
    code, out, err = invoke(*args, "--config", config, "-o", target, "-q" if command != "show" else "--format",
                            *([] if command != "show" else ["text"]))
    assert_one_error(code, err, "is also an input", Path(target).name)
    assert fingerprint(corpus, stop) == before


# -- a resume must come from the same inputs ----------------------------------------------------------
@pytest.mark.parametrize("edit", ["refs", "cands", "corpus", "model"])
def test_resume_refuses_inputs_edited_in_place(files, tiny_bert_dir, tmp_path, edit):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(tiny_bert_dir, model)
    c, r = files("c.txt", CANDS * 10), files("r.txt", REFS * 10)
    corpus = files("corpus.txt", REFS)
    out = tmp_path / "out.tsv"
    args = ["score", "-c", c, "-r", r, "--model", model, "--layer", "2", "-q", "--weighting", "idf-L",
            "--idf-corpus", corpus, "-o", out, "--chunk-size", "7"]
    code, _, err = invoke(*args, "--stream")
    assert code == 0, err
    out.write_bytes(b"".join(out.read_bytes().splitlines(keepends=True)[:13]))  # killed after 10 rows
    cut = out.read_bytes()
    target = {"refs": r, "cands": c, "corpus": corpus, "model": model / "config.json"}[edit]
    with open(target, "a", encoding="utf-8") as fh:
        fh.write("\n" if edit == "model" else "")
    if edit != "model":
        Path(target).write_text(Path(target).read_text(encoding="utf-8").replace("cat", "cow"), encoding="utf-8")
    code, _, err = invoke(*args, "--resume")
    if edit == "corpus":  # the signature names the corpus by its content: the composition differs
        assert_one_error(code, err, "another composition", "w idf-L(corpus.txt#")
    elif edit == "model":  # and a local model folder by its files' digest
        assert_one_error(code, err, "another composition", f"model {model}#")
    else:
        assert_one_error(code, err, "was made from other inputs", Path(target).name, "changed")
    assert out.read_bytes() == cut


def test_resume_of_an_output_that_was_not_streamed_says_so(run, tmp_path, files):
    out = tmp_path / "o.tsv"
    code, _, err = run("-o", out, "--confidence")
    assert code == 0, err
    code, _, err = run("-o", out, "--resume")
    assert_one_error(code, err, "not streamed", "nothing to resume")
    assert "reference files" not in err


# -- settings that would overflow or run for hours -----------------------------------------------------
def test_a_beta_that_would_overflow_is_refused(run):
    code, out, err = run("--beta", "1e20")
    assert_one_error(code, err, "--beta", "<= 1000000, not 1e+20")
    assert out == ""
    with pytest.raises(ConfigError, match="beta: expected a number >= 1e-06 and <= 1000000"):
        alignscore.Greedy(beta=1e20)
    assert float(alignscore.Greedy(beta=1e6)(_batch())["fbeta"].max()) <= 1.0


def _batch():
    import torch

    from alignscore.aligners import PairBatch

    gen = torch.Generator().manual_seed(0)
    ref = torch.nn.functional.normalize(torch.randn(2, 4, 8, generator=gen), dim=-1)
    cand = torch.nn.functional.normalize(torch.randn(2, 3, 8, generator=gen), dim=-1)
    return PairBatch(ref, cand, torch.ones(2, 4), torch.ones(2, 3), torch.ones(2, 4, dtype=torch.bool),
                     torch.ones(2, 3, dtype=torch.bool))


def test_a_window_stride_that_would_run_for_hours_is_refused(files, tiny_bert_dir):
    long = " ".join(["word"] * 300)
    c, r = files("c.txt", [long]), files("r.txt", [long])
    code, out, err = invoke("score", "-c", c, "-r", r, "--model", tiny_bert_dir, "--layer", "2", "-q",
                            "--long-texts", "window", "--window-stride", "1")
    assert_one_error(code, err, "--window-stride: 1 would encode", "times")
    assert out == ""


def test_every_path_to_the_tokenizer_gives_the_same_ids(tiny_bert_dir, tmp_path):
    """The window stride asked for first (it encodes a probe) and a padded call of transformers'
    own tokenizer change nothing; a cached windowed run scores as an uncached one."""
    long = " ".join(f"token{i}" for i in range(120))
    fresh = HFEncoder(tiny_bert_dir, long_texts="window").tokenize([long, "short"])
    first = HFEncoder(tiny_bert_dir, long_texts="window")
    first.window_stride()
    first.load_tokenizer()(["a", "a longer text"], padding=True)
    assert first.tokenize([long, "short"]).ids == fresh.ids
    plain = alignscore.score([long], [long + " more"], model=tiny_bert_dir, layer=2, long_texts="window")
    cached = alignscore.build(alignscore.run_spec({"model": tiny_bert_dir, "layer": 2, "long_texts": "window",
                                                   "cache": str(tmp_path / "cache")}))
    cached.encoder.window_stride()
    for _ in range(2):  # a miss, then a hit
        assert cached.score([long], [long + " more"]).f1.tolist() == plain.f1.tolist()


# -- bad input that was an internal error --------------------------------------------------------------
def test_toml_that_is_not_utf8_is_one_error(run, tmp_path, tiny_bert_dir):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'model = "caf\xe9"\n')
    code, _, err = run("--config", bad)
    assert_one_error(code, err, "bad.toml", "not valid UTF-8")
    code, _, err = invoke("ablate", bad, "--data", tmp_path, "-q")
    assert_one_error(code, err, "bad.toml", "not valid UTF-8")
    code, _, err = invoke("tune", bad, "--data", tmp_path, "--model", tiny_bert_dir, "-o", tmp_path / "t", "-q")
    assert_one_error(code, err, "bad.toml", "not valid UTF-8")


@pytest.mark.parametrize("args, needles", [
    (["--device", "meta"], ["--device: one of cpu, cuda", "meta"]),
    (["--cache", "/sys/kernel"], None),
    (["--confidence", "--bootstrap", "1"], ["--bootstrap", "x>=40"]),
])
def test_bad_settings_are_one_clear_line(run, args, needles):
    code, out, err = run(*args)
    if needles is None:  # a cache that cannot be used: one warning, and nothing to remove
        assert code == 0, err
        assert "cannot be used" in err and "remove it" not in err
        return
    assert_one_error(code, err, *needles)
    assert out == ""


@pytest.mark.parametrize("table, needle", [
    ('model = ""\n', "c.toml:1: model: a hub id or a local directory, not an empty name"),
    ('filters = ["stopwords"]\n', "c.toml:1: filters (--stopwords): the stopwords filter needs a file"),
])
def test_config_values_that_mean_nothing_are_refused(files, tmp_path, table, needle):
    config = tmp_path / "c.toml"
    config.write_text(table, encoding="utf-8")
    c, r = files("c.txt", CANDS), files("r.txt", REFS)
    code, _, err = invoke("score", "-c", c, "-r", r, "-q", "--config", config)
    assert_one_error(code, err, needle)


def test_grid_errors_name_the_grid_file(tmp_path):
    grid = tmp_path / "g.toml"
    grid.write_text('[models.base]\nmodel = "m"\n[[columns]]\nname = "x"\naligner = "greedy"\n', encoding="utf-8")
    code, _, err = invoke("ablate", grid, "--data", tmp_path, "-q")
    assert_one_error(code, err, "g.toml", "rows")


def test_mbr_tsv_escapes_tabs_and_newlines(files, tiny_bert_dir):
    samples = files("s.txt", ["a\tb c", "a\tb d", "a\tb e"])  # whichever is selected holds a tab
    code, out, err = invoke("mbr", "-c", samples, "--model", tiny_bert_dir, "--layer", "2", "-q")
    assert code == 0, err
    rows = out.splitlines()[2:]
    assert len(rows) == 1 and len(rows[0].split("\t")) == 4


def test_tune_outputs_are_written_as_one_set(tmp_path):
    from alignscore.textio import write_output_set  # tune's and fit's writer

    old = {name: tmp_path / name for name in ("a.txt", "b.txt")}
    for path in old.values():
        path.write_text("old")

    def boom(tmp: Path) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_output_set(tmp_path, {"a.txt": lambda p: p.write_text("new"), "b.txt": boom})
    assert [p.read_text() for p in old.values()] == ["old", "old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


def test_torchmetrics_compute_is_one_dimensional_for_one_candidate(tiny_bert_dir):
    needs("torchmetrics")
    from alignscore.integrations.torchmetrics import AlignScore

    metric = AlignScore(alignscore.bertscore(tiny_bert_dir, layer=2))
    metric.update(["a cat"], ["a dog"])
    assert all(v.shape == (1,) for v in metric.compute().values())


def test_jsonl_rows_are_valid_json_whatever_the_settings(run):
    code, out, err = run("--format", "jsonl", "--beta", "1e6")
    assert code == 0, err
    assert all(json.loads(line)["fbeta"] <= 1 for line in out.splitlines())
