"""``alignscore distill``: its own values before the model is looked up."""

from __future__ import annotations

import pytest

from cli_checks import assert_one_error, invoke


@pytest.mark.parametrize("sif", ["nan", "inf", "0"])
def test_a_sif_coefficient_out_of_range_before_the_model(tmp_path, sif: str) -> None:
    code, _, err = invoke("distill", "--model", "/nonexistent/model", "--sif", sif, "-o", tmp_path / "out")
    line = assert_one_error(code, err, "--sif")
    assert "no such model" not in line and not (tmp_path / "out").exists()
