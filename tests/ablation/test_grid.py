"""Grids (:mod:`alignscore.ablation.grid`): a row's preset may not silently replace the part a
column declares."""

from __future__ import annotations

from pathlib import Path

import pytest

from alignscore.ablation import load_grid
from alignscore.config import compile_run
from alignscore.errors import ConfigError


def test_a_rows_preset_may_not_replace_a_columns_aligner(tmp_path: Path) -> None:
    text = ('[models.m]\nmodel = "all-MiniLM-L6-v2"\n[[columns]]\nname = "F"\naligner = "greedy"\n'
            '[[columns]]\nname = "WMD"\naligner = "wmd"\n[[rows]]\nname = "MS2"\npreset = "moverscore-v2"\n')
    path = tmp_path / "g.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"g\.toml:11: rows\[0\]\.preset: its preset's aligner wmd would replace "
                                          r"column 'F''s aligner greedy"):
        load_grid(path)
    path.write_text(text.replace('name = "F"\naligner = "greedy"', 'name = "F"\naligner = "wmd"'), encoding="utf-8")
    grid = load_grid(path)  # the preset's aligner is the columns': its settings apply below the row
    assert compile_run(grid.sources(grid.rows[0], grid.columns[0])).composition.aligner.name == "wmd"
    # a row that names the part itself changes it in plain sight
    path.write_text(text + 'aligner = "greedy"\n', encoding="utf-8")
    load_grid(path)
