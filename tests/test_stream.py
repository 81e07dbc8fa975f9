"""Streaming: chunked scoring gives the rows of a whole-file run, holds one chunk at a time, and
an interrupted run resumes to the same file."""

from __future__ import annotations

import json

import pytest
import torch
from click.testing import CliRunner

import alignscore
from alignscore.cli import main
from alignscore.stream import count_lines, iter_lines, score_stream
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


@pytest.mark.parametrize("weighting", ["none", "idf-S"])
def test_stream_gives_the_rows_of_a_whole_run(files, tiny_bert_dir, tmp_path, weighting):
    common = ["-c", files["c"], "-r", files["r"], "-r", files["r2"], "--model", tiny_bert_dir, "--layer", "3",
              "--weighting", weighting, "-q"] + (["--sep"] if weighting == "idf-S" else [])
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
])
def test_iter_lines_reads_like_read_lines(tmp_path, content):
    path = tmp_path / "f.txt"
    path.write_bytes(content)
    assert list(iter_lines(path)) == read_lines(path)
    assert count_lines(path) == len(read_lines(path))


def test_mismatched_files_are_an_error(files, tiny_bert_dir, tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("one\n")
    result = CliRunner().invoke(main, ["score", "-c", str(files["c"]), "-r", str(short), "--model",
                                       tiny_bert_dir, "--layer", "3", "-o", str(tmp_path / "o.tsv"), "--stream"])
    assert result.exit_code == 1 and "lines" in result.output
