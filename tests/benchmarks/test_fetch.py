"""benchmarks/_fetch.py, what the fetch scripts share: the OUT_DIR rule and the check's report."""

from __future__ import annotations

import pytest

from benchmarks._fetch import CheckFailed, out_dir_state, report


def test_out_dir_states(tmp_path):
    assert out_dir_state(tmp_path / "absent", "m.json") == "new"
    (tmp_path / "empty").mkdir()
    assert out_dir_state(tmp_path / "empty", "m.json") == "new"
    (tmp_path / "ours").mkdir()
    (tmp_path / "ours" / "m.json").write_text("{}")
    assert out_dir_state(tmp_path / "ours", "m.json") == "ours"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "config.json").write_text("{}")
    assert out_dir_state(tmp_path / "other", "m.json") == "foreign"


def test_the_report_prints_every_number_then_names_every_problem(capsys):
    assert report({"cosine_min": 0.995, "sentences": 100}, []) == {"cosine_min": 0.995, "sentences": 100}
    assert capsys.readouterr().out == "cosine_min: 0.995000\nsentences: 100\n"
    with pytest.raises(CheckFailed, match="^cosine 0.9 < 0.99; ids differ$"):
        report({"cosine_min": 0.9}, ["cosine 0.9 < 0.99", "ids differ"])
