"""The fits' shared fixtures: a DAseg folder of the test module's ``PAIRS`` (30 WMT16 segments each)
and a start run file of the tiny BERT at layer 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_checks import write_toml
from helpers import write_daseg


@pytest.fixture
def start(tiny_bert_dir: str, tmp_path: Path) -> Path:
    return write_toml({"model": tiny_bert_dir, "layer": 2}, tmp_path / "start.toml")


@pytest.fixture
def data(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    return write_daseg(tmp_path / "data", request.module.PAIRS, 30)
