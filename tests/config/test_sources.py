"""Sources (:mod:`alignscore.config.sources`): an empty text where a file is named, and the files a
run's sources read."""

from __future__ import annotations

from pathlib import Path

import pytest

from alignscore.config import run_spec, sources_of
from alignscore.errors import ConfigError

from cli_checks import invoke, write_toml


def test_an_empty_cache_means_no_cache_every_way_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    tiny_bert_dir: str) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ALIGNSCORE_CACHE", raising=False)
    assert run_spec({"cache": ""}).cache is None and run_spec({"cache": " "}).cache is None
    assert run_spec({"cache": ""}, style="flag").cache is None
    (tmp_path / "c.txt").write_text("a cat\n", encoding="utf-8")
    code, out, err = invoke("score", "-c", "c.txt", "-r", "c.txt", "--model", tiny_bert_dir, "--layer", "1",
                            "--cache", "", "-q")
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt"]  # no cache database in the working folder


@pytest.mark.parametrize("name", ["stopwords", "baseline", "idf_corpus"])
def test_an_empty_file_name_is_refused_not_the_working_folder(name: str) -> None:
    with pytest.raises(ConfigError, match=f"{name}=: a file name, not an empty text"):
        run_spec({name: ""})


def test_input_files_are_the_run_files_and_the_files_they_name(tmp_path: Path) -> None:
    from alignscore.config.sources import input_files

    run = write_toml({"stopwords": "stop.txt", "layer": 2}, tmp_path / "run.toml")
    files = input_files(sources_of({"config": str(run), "baseline": str(tmp_path / "b.csv")}))
    assert files == [str(run.resolve()), str(tmp_path / "stop.txt"), str(tmp_path / "b.csv")]


def test_a_preset_by_name_where_a_run_file_is_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_spec({"config": "moverscore-v2"}) == run_spec({"preset": "moverscore-v2"})
    assert run_spec({"config": "moverscore-v2", "n_gram": "2"}, style="flag").composition.aligner.n_gram == 2
    monkeypatch.chdir(tmp_path)
    write_toml({"layer": 3}, tmp_path / "bertscore")  # a file of that name is the file
    assert run_spec({"config": "bertscore"}).composition.aggregator.layer == 3
