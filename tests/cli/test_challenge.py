"""``alignscore challenge``'s checks before any work: no output replaces an input, the run file a
side (--a, --b) names included."""

from __future__ import annotations

from pathlib import Path

from cli_checks import assert_one_error, fingerprint, invoke, write_toml

ITEMS = Path(__file__).parents[2] / "examples" / "challenge.jsonl"


def test_no_output_replaces_a_sides_run_file(tmp_path: Path, tiny_bert_dir: str) -> None:
    run = write_toml({"layer": 2, "aligner": "wmd"}, tmp_path / "b.toml")
    before = fingerprint(run)
    code, _, err = invoke("challenge", ITEMS, "--model", tiny_bert_dir, "--layer", "1", "--b", f"--config {run}",
                          "-o", run, "-q")
    assert_one_error(code, err, "is also an input")
    assert fingerprint(run) == before
