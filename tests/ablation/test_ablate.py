"""``alignscore ablate``'s checks before any work: no output replaces an input, files that the
grid's cells or the command's run file name included."""

from __future__ import annotations

from pathlib import Path

from cli_checks import assert_one_error, fingerprint, invoke, write_toml
from helpers import write_daseg


def test_no_output_replaces_a_file_a_cell_names(tmp_path: Path, tiny_bert_dir: str) -> None:
    data = write_daseg(tmp_path, ("de-en",), 10)
    out = tmp_path / "out"
    out.mkdir()
    (out / "table.md").write_text("the\n", encoding="utf-8")  # stop words, where the table is written
    grid = write_toml({"models": {"base": {"model": tiny_bert_dir, "layer": 2}},
                       "columns": [{"name": "F", "aligner": "greedy"}],
                       "rows": [{"name": "Stop", "filters": ["stopwords"], "stopwords": str(out / "table.md")}]},
                      tmp_path / "grid.toml")
    before = fingerprint(out)
    code, _, err = invoke("ablate", grid, "--data", data, "-o", out, "-q")
    assert_one_error(code, err, "table.md", "is also an input")
    # the command's own run file, written where the grid's results go
    run = write_toml({"layer": 2}, out / "results.csv")
    before = fingerprint(out)
    code, _, err = invoke("ablate", grid, "--challenge", Path(__file__).parents[2] / "examples" / "challenge.jsonl",
                          "--config", run, "-o", out, "-q")
    assert_one_error(code, err, "is also an input")
    assert fingerprint(out) == before
