"""``alignscore diff``'s checks before any work: no output replaces an input, the run file a side
(--a, --b) names included."""

from __future__ import annotations

from pathlib import Path

from cli_checks import assert_one_error, fingerprint, invoke, write_toml


def test_no_output_replaces_a_sides_run_file(files, tmp_path: Path, tiny_bert_dir: str) -> None:
    c, r = files("c.txt", ["a cat sat"]), files("r.txt", ["the cat sat"])
    out = tmp_path / "out"
    out.mkdir()
    run = write_toml({"layer": 2}, out / "diff.tsv")
    before = fingerprint(out)
    code, _, err = invoke("diff", "-c", c, "-r", r, "--model", tiny_bert_dir, "--layer", "1", "--a", "",
                          "--b", f"--config {run}", "-o", out, "-q")
    assert_one_error(code, err, "is also an input")
    assert fingerprint(out) == before
