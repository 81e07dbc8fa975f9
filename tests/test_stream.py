"""Streaming: chunked scoring gives the rows of a whole-file run, holds one chunk at a time, and
an interrupted run resumes to the same file."""

from __future__ import annotations

import hashlib
import json
import os

from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import alignscore
from alignscore.cli import main
from alignscore.stream import score_stream, sidecar_path
from alignscore.textio import iter_lines
from alignscore.textio import read_lines

TOL = 1e-6  # other chunks, other encoder batches: float summation order only


@pytest.fixture()
def files(wmt_data, tmp_path):
    cands = wmt_data["de-en"]["mt-system"][:90] + ["", "ok"]
    refs = wmt_data["de-en"]["reference"][:90] + ["something", ""]
    refs2 = wmt_data["ru-en"]["reference"][:92]
    paths = {}
    for name, lines in (("c", cands), ("r", refs), ("r2", refs2)):
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths


def _cli(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def _table(path):
    lines = path.read_text().splitlines()
    return lines[:3], torch.tensor([[float(x) for x in line.split("\t")] for line in lines[3:]])


@pytest.mark.parametrize("weighting", ["none", "idf-S", "idf-S+classes"])
def test_stream_gives_the_rows_of_a_whole_run(files, tiny_bert_dir, tmp_path, weighting):
    name, _, classes = weighting.partition("+")  # token-class weights: the streamed weighting keeps them
    common = ["-c", files["c"], "-r", files["r"], "-r", files["r2"], "--model", tiny_bert_dir, "--layer", "3",
              "--weighting", name, "-q"] + (["--sep"] if name == "idf-S" else []) + (
                  ["--punct-weight", "0", "--subword-weight", "0.5"] if classes else [])
    _cli("score", *common, "-o", tmp_path / "whole.tsv")
    _cli("score", *common, "-o", tmp_path / "stream.tsv", "--stream", "--chunk-size", 25)
    head_w, whole = _table(tmp_path / "whole.tsv")
    head_s, stream = _table(tmp_path / "stream.tsv")
    assert head_w[0] == head_s[0] and head_w[2] == head_s[2]  # signature and columns
    assert head_s[1].startswith("# mean ") and "pending" not in head_s[1]
    assert whole.shape == stream.shape == (92, 4)
    assert (whole - stream).abs().max() < TOL
    assert torch.equal(whole[:, 3], stream[:, 3])  # best reference


def test_each_chunk_holds_at_most_chunk_size_candidates(files, tiny_bert_dir, tmp_path, monkeypatch):
    seen = []
    original = alignscore.Scorer.score

    def spy(self, cands, refs):
        seen.append(len(cands))
        return original(self, cands, refs)

    monkeypatch.setattr(alignscore.Scorer, "score", spy)
    scorer = alignscore.bertscore(tiny_bert_dir, layer=3, idf=True)
    result = score_stream(scorer, files["c"], [files["r"]], tmp_path / "o.jsonl", fmt="jsonl", chunk_size=20)
    assert seen == [20, 20, 20, 20, 12] and result.total == result.scored == 92
    monkeypatch.undo()
    rows = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    want = alignscore.bertscore(tiny_bert_dir, layer=3, idf=True).score(read_lines(files["c"]), read_lines(files["r"]))
    assert (torch.tensor([r["f1"] for r in rows]) - want.f1).abs().max() < TOL
    assert result.means["f1"] == pytest.approx(float(want.f1.double().mean()), abs=TOL)


@pytest.mark.parametrize("fmt", ["tsv", "jsonl"])
def test_resume_after_interruption_gives_the_same_file(files, tiny_bert_dir, tmp_path, fmt):
    common = ["score", "-c", files["c"], "-r", files["r"], "-r", files["r2"], "--model", tiny_bert_dir,
              "--layer", "3", "--weighting", "idf-S", "-q", "--format", fmt, "--chunk-size", 15]
    full = tmp_path / f"full.{fmt}"
    _cli(*common, "-o", full, "--stream")
    data = full.read_bytes()
    for cut in (len(data) // 3, len(data) // 2 + 7, len(data) - 5):
        part = tmp_path / f"part.{fmt}"
        part.write_bytes(data[:cut])  # the run stopped mid-row
        # the run's signature file beside it (both formats: it records the inputs, which a resume checks)
        sidecar_path(part).write_bytes(sidecar_path(full).read_bytes())
        result = _cli(*common, "-o", part, "--resume")
        assert part.read_bytes() == data
        assert "92 candidates" in result.output
    _cli(*common, "-o", full, "--resume")  # nothing left to do
    assert full.read_bytes() == data


def test_resume_refuses_another_composition(files, tiny_bert_dir, tmp_path):
    out = tmp_path / "o.tsv"
    _cli("score", "-c", files["c"], "-r", files["r"], "--model", tiny_bert_dir, "--layer", "3", "-q",
         "-o", out, "--stream")
    result = CliRunner().invoke(main, ["score", "-c", str(files["c"]), "-r", str(files["r"]), "--model",
                                       tiny_bert_dir, "--layer", "2", "-q", "-o", str(out), "--resume"])
    assert result.exit_code == 1 and "another composition" in result.output


def test_stream_needs_an_output_file(files, tiny_bert_dir):
    result = CliRunner().invoke(main, ["score", "-c", str(files["c"]), "-r", str(files["r"]), "--model",
                                       tiny_bert_dir, "--layer", "3", "--stream"])
    assert result.exit_code == 1 and "-o" in result.output


@pytest.mark.parametrize("content", [
    b"a\nb\n", b"a\nb", b"\xef\xbb\xbfa\r\nb\r\n", b"x\xe2\x80\xa8y\n\nz", b"", b"\n", b"only",
    b"\xef\xbb\xbf", b"\xef\xbb\xbf\n", b"\xef\xbb\xbf\r\n",
])
def test_iter_lines_reads_like_read_lines(tmp_path, content):
    path = tmp_path / "f.txt"
    path.write_bytes(content)
    assert list(iter_lines(path)) == read_lines(path)


def test_mismatched_files_are_an_error(files, tiny_bert_dir, tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("one\n")
    result = CliRunner().invoke(main, ["score", "-c", str(files["c"]), "-r", str(short), "--model",
                                       tiny_bert_dir, "--layer", "3", "-o", str(tmp_path / "o.tsv"), "--stream"])
    assert result.exit_code == 1 and "lines" in result.output


# -- resume only continues a file of the very same run --------------------------------------------
def _stream(files, tiny_bert_dir, out, *extra):
    return CliRunner().invoke(main, ["score", "-c", str(files["c"]), "-r", str(files["r"]), "--model", tiny_bert_dir,
                                     "-q", "-o", str(out), "--chunk-size", "20", *map(str, extra)])


def _signature(result):
    return [ln for ln in result.stderr.splitlines() if ln.startswith("signature: ")][0][len("signature: "):]


@pytest.mark.parametrize("content", [
    b"my notes\nline two\nline three",            # a file of the user's, last line without newline
    b"# Title\nsome text\n",                         # looks like a comment header, is not ours
    b'{"a": 1}\n{"b": 2}\n{"c": 3',                 # JSON lines, but no signature file
    b"",
])
@pytest.mark.parametrize("fmt", ["tsv", "jsonl"])
def test_resume_refuses_a_file_that_is_not_ours_and_leaves_it_alone(files, tiny_bert_dir, tmp_path, content, fmt):
    out = tmp_path / f"notes.{fmt}"
    out.write_bytes(content)
    result = _stream(files, tiny_bert_dir, out, "--layer", 3, "--format", fmt, "--resume")
    if not content:  # an empty file holds nothing to lose: the run starts it
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 1 and "not an output of alignscore" in result.stderr, result.output
    assert out.read_bytes() == content and not (tmp_path / f"notes.{fmt}.signature").exists()


@pytest.mark.parametrize("fmt", ["tsv", "jsonl"])
def test_resume_refuses_another_composition_naming_what_differs(files, tiny_bert_dir, tmp_path, fmt):
    out = tmp_path / f"o.{fmt}"
    first = _stream(files, tiny_bert_dir, out, "--layer", 4, "--format", fmt, "--stream")
    assert first.exit_code == 0, first.output
    data = out.read_bytes()
    lines = data.splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:23]))  # interrupted after 20 rows (TSV: and its 3 header lines)
    cut = out.read_bytes()
    other = _stream(files, tiny_bert_dir, tmp_path / "other.tsv", "--layer", 1, "--stream")
    result = _stream(files, tiny_bert_dir, out, "--layer", 1, "--format", fmt, "--resume")
    assert result.exit_code == 1, result.output
    error = result.stderr.strip()
    assert error.count("\n") == 0 and "another composition" in error
    # the setting that differs is named, not two whole signatures
    assert "layers L4 vs L1 (the file vs this run)" in error and _signature(first) not in error
    assert _signature(other).replace("L1", "L4") == _signature(first)
    assert out.read_bytes() == cut


@pytest.mark.parametrize("written, resumed", [("tsv", "jsonl"), ("jsonl", "tsv")])
def test_resume_refuses_another_format_naming_both(files, tiny_bert_dir, tmp_path, written, resumed):
    out = tmp_path / "o.out"
    first = _stream(files, tiny_bert_dir, out, "--layer", 4, "--format", written, "--stream")
    assert first.exit_code == 0, first.output
    out.write_bytes(out.read_bytes()[:-40])  # interrupted
    cut = out.read_bytes()
    result = _stream(files, tiny_bert_dir, out, "--layer", 4, "--format", resumed, "--resume")
    assert result.exit_code == 1, result.output
    error = result.stderr.strip()
    assert error.count("\n") == 0 and "another format" in error and "internal error" not in error
    assert f"another format ({written}; this run writes {resumed})" in error
    assert out.read_bytes() == cut


def test_jsonl_carries_its_signature_in_a_file_beside_it(files, tiny_bert_dir, tmp_path):
    out = tmp_path / "o.jsonl"
    result = _stream(files, tiny_bert_dir, out, "--layer", 4, "--format", "jsonl", "--stream")
    assert result.exit_code == 0, result.output
    meta = json.loads((tmp_path / "o.jsonl.signature").read_text())
    inputs = meta.pop("inputs")
    assert meta == {"format": "jsonl", "signature": _signature(result), "columns": ["precision", "recall", "f1"]}
    assert inputs[str(files["c"])] == hashlib.sha256(Path(files["c"]).read_bytes()).hexdigest()
    assert set(inputs) == {str(files["c"]), str(files["r"]), "model files"}
    assert all(set(json.loads(line)) == {"precision", "recall", "f1"} for line in out.read_text().splitlines())
    # another run writing the same file removes the signature file of the earlier one
    plain = CliRunner().invoke(main, ["score", "-c", str(files["c"]), "-r", str(files["r"]), "--model", tiny_bert_dir,
                                      "-q", "-o", str(out), "--layer", "1", "--format", "jsonl"])
    assert plain.exit_code == 0, plain.output
    assert not (tmp_path / "o.jsonl.signature").exists()
    resumed = _stream(files, tiny_bert_dir, out, "--layer", 1, "--format", "jsonl", "--resume")
    assert resumed.exit_code == 1 and "not an output of alignscore" in resumed.stderr


def test_resume_refuses_a_damaged_row(files, tiny_bert_dir, tmp_path):
    out = tmp_path / "o.tsv"
    assert _stream(files, tiny_bert_dir, out, "--layer", 4, "--stream").exit_code == 0
    lines = out.read_text().splitlines(keepends=True)
    lines[10] = "0.5\tnot a number\t0.5\n"
    out.write_text("".join(lines[:30]))
    before = out.read_bytes()
    result = _stream(files, tiny_bert_dir, out, "--layer", 4, "--resume")
    assert result.exit_code == 1 and "o.tsv:11: is not a row of scores" in result.stderr, result.output
    assert out.read_bytes() == before


def test_a_pipe_as_the_stream_output_names_the_options_as_python_does(files, tiny_bert_dir):
    scorer = alignscore.build(alignscore.run_spec({"model": tiny_bert_dir, "layer": 2}))
    with pytest.raises(alignscore.InputError, match="is a pipe or a device: stream= and resume= write a file"):
        score_stream(scorer, files["c"], [files["r"]], os.devnull)
