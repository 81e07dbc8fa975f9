"""``alignscore tune``'s checks before any work: no output replaces an input, the run file given
with --config and the files it names included."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_checks import assert_one_error, fingerprint, invoke, write_toml
from helpers import write_daseg


@pytest.mark.parametrize("named", ["config", "stopwords"])
def test_no_output_replaces_the_run_file_or_a_file_it_names(tmp_path: Path, tiny_bert_dir: str, named: str) -> None:
    data = write_daseg(tmp_path, ("de-en",), 10)
    out = tmp_path / "out"
    out.mkdir()
    best = write_toml({"model": tiny_bert_dir, "layer": 2}, out / "best.toml")
    if named == "stopwords":  # a run file outside the folder names a file that the search writes
        (out / "leaderboard.md").write_text("the\n", encoding="utf-8")
        best = write_toml({"model": tiny_bert_dir, "layer": 2, "stopwords": str(out / "leaderboard.md")},
                          tmp_path / "run.toml")
    before = fingerprint(out)
    code, _, err = invoke("tune", "--data", data, "--config", best, "-o", out, "--budget", "0.1", "-q")
    assert_one_error(code, err, "is also an input")
    assert fingerprint(out) == before
