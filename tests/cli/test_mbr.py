"""``alignscore mbr``: the samples file is checked before the model is looked up."""

from __future__ import annotations

from cli_checks import assert_one_error, invoke


def test_blocks_that_do_not_divide_the_file_before_the_model(files) -> None:
    samples = files("s.txt", [f"sample {i}" for i in range(10)])
    code, out, err = invoke("mbr", "-c", samples, "--samples", "3", "--model", "/nonexistent/model")
    line = assert_one_error(code, err, "has 10 lines, which is not a multiple of --samples 3")
    assert "no such model" not in line and out == ""
