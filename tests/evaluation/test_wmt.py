"""Loading WMT DAseg folders: discovery, idf-L corpora, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from alignscore.errors import ConfigError, InputError
from alignscore.evaluation.wmt import discover, load_daseg
from helpers import WMT16


def _write(folder: Path, year: str, lp: str, n: int = 4, human: list[str] | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rows = {"reference": [f"ref {lp} {i}" for i in range(n)], "mt-system": [f"mt {lp} {i}" for i in range(n)],
            "human": human if human is not None else [f"{0.1 * i - 0.2:.3f}" for i in range(n)],
            "source": [f"src {lp} {i}" for i in range(n)]}
    for kind, lines in rows.items():
        (folder / f"DAseg.newstest{year}.{kind}.{lp}").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_the_wmt16_folder_loads_six_language_pairs():
    pairs = load_daseg(WMT16)
    assert [p.name for p in pairs] == ["cs-en", "de-en", "fi-en", "ro-en", "ru-en", "tr-en"]
    assert all(len(p) == 560 and len(p.references) == 560 and p.human.shape == (560,) for p in pairs)
    assert {p.year for p in pairs} == {"2016"}
    assert all(p.idf_corpus is None for p in pairs)  # no full reference files in that folder


def test_discovery_any_year_and_the_official_idf_corpus(tmp_path):
    _write(tmp_path, "2017", "zh-en")
    _write(tmp_path, "2017", "lv-en")
    (tmp_path / "newstest2017-zhen-ref.en").write_text("a\nb\n\nc\n", encoding="utf-8")
    (tmp_path / "README").write_text("not data")
    assert set(discover(tmp_path)["2017"]) == {("zh", "en"), ("lv", "en")}
    pairs = load_daseg(tmp_path)
    assert [p.name for p in pairs] == ["lv-en", "zh-en"]
    lv, zh = pairs
    assert lv.idf_corpus is None
    assert zh.idf_corpus == ["a", "b", "", "c"] and zh.idf_corpus_path.name == "newstest2017-zhen-ref.en"
    np.testing.assert_allclose(zh.human, [-0.2, -0.1, 0.0, 0.1])
    assert zh.sources == [f"src zh-en {i}" for i in range(4)]
    assert [p.name for p in load_daseg(tmp_path, ["zh-en"])] == ["zh-en"]


def test_a_user_named_idf_corpus_file_or_template(tmp_path):
    _write(tmp_path / "d", "2016", "de-en")
    _write(tmp_path / "d", "2016", "cs-en")
    (tmp_path / "all.en").write_text("x\ny\n", encoding="utf-8")
    (tmp_path / "full-csen.txt").write_text("c\n", encoding="utf-8")
    (tmp_path / "full-deen.txt").write_text("d\n", encoding="utf-8")
    one = load_daseg(tmp_path / "d", idf_corpus=tmp_path / "all.en")
    assert all(p.idf_corpus == ["x", "y"] for p in one)
    per_lp = load_daseg(tmp_path / "d", idf_corpus=str(tmp_path / "full-{src}{tgt}.txt"))
    assert [p.idf_corpus for p in per_lp] == [["c"], ["d"]]
    with pytest.raises(InputError, match="not found"):
        load_daseg(tmp_path / "d", idf_corpus=tmp_path / "missing.en")
    with pytest.raises(ConfigError, match="template"):
        load_daseg(tmp_path / "d", idf_corpus=str(tmp_path / "{language}.txt"))


def test_bad_folders_are_clear_errors(tmp_path):
    with pytest.raises(InputError, match="no DAseg"):
        load_daseg(tmp_path)
    with pytest.raises(InputError, match="not a folder"):
        load_daseg(tmp_path / "nope")
    _write(tmp_path / "two", "2016", "de-en")
    _write(tmp_path / "two", "2017", "de-en")
    with pytest.raises(ConfigError, match="several years"):
        load_daseg(tmp_path / "two")
    assert load_daseg(tmp_path / "two", year="2017")[0].year == "2017"
    with pytest.raises(ConfigError, match="xx-en"):
        load_daseg(tmp_path / "two", ["xx-en"], year="2016")
    _write(tmp_path / "short", "2016", "de-en", human=["0.1", "0.2", "0.3"])
    with pytest.raises(InputError, match="3 lines but the reference file has 4"):
        load_daseg(tmp_path / "short")
    _write(tmp_path / "nan", "2016", "de-en", human=["0.1", "high", "0.3", "0.4"])
    with pytest.raises(InputError, match=r"human\.de-en:2: not a number"):
        load_daseg(tmp_path / "nan")
    (tmp_path / "nohuman").mkdir()
    _write(tmp_path / "nohuman", "2016", "de-en")
    (tmp_path / "nohuman" / "DAseg.newstest2016.human.de-en").unlink()
    with pytest.raises(InputError, match="missing"):
        load_daseg(tmp_path / "nohuman")
