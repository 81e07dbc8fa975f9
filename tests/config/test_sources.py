"""Sources (:mod:`alignscore.config.sources`): an empty text where a file is named, and the files a
run's sources read."""

from __future__ import annotations

from pathlib import Path

import pytest

from alignscore.cli.options import FLAGS
from alignscore.config import run_spec, sources_of
from alignscore.errors import ConfigError

from cli_checks import invoke, write_toml


def test_an_empty_cache_means_no_cache_every_way_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    tiny_bert_dir: str) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ALIGNSCORE_CACHE", raising=False)
    assert run_spec({"cache": ""}).cache is None and run_spec({"cache": " "}).cache is None
    assert run_spec({"cache": ""}, FLAGS).cache is None
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
    assert run_spec({"config": "moverscore-v2", "n_gram": "2"}, FLAGS).composition.aligner.n_gram == 2
    monkeypatch.chdir(tmp_path)
    write_toml({"layer": 3}, tmp_path / "bertscore")  # a file of that name is the file
    assert run_spec({"config": "bertscore"}).composition.aggregator.layer == 3


# -- bert_score's keywords ----------------------------------------------------------------------
@pytest.mark.parametrize("keyword, value, needle", [
    ("rescale_with_baseline", True, "is baseline= here (Baseline file in bert_score's format)"),
    ("baseline_path", "b.tsv", "is baseline= here"),
    ("model_type", "bert-base-uncased", "is model= here (Hugging Face hub id or local directory)"),
    ("num_layers", 9, "is layer= here (Layer for the single-layer aggregator"),
    ("return_hash", True, "has no counterpart here: every result carries its signature"),
    ("verbose", True, "has no counterpart here"),
    ("all_layers", True, "has no counterpart here: a run scores one composition"),
    ("nthreads", 4, "has no counterpart here"),
    ("use_fast_tokenizer", True, "has no counterpart here"),
])
def test_bert_scores_keywords_name_the_option_to_use(keyword: str, value: object, needle: str) -> None:
    import alignscore

    with pytest.raises(ConfigError) as caught:
        alignscore.score(["a"], ["b"], model="/nonexistent/model", **{keyword: value})
    assert str(caught.value).startswith(f"score(): {keyword}=: bert_score's {keyword} {needle}")
    assert "did you mean" not in str(caught.value)


def test_lang_beside_a_model_says_what_bert_score_does() -> None:
    with pytest.raises(ConfigError, match=r"lang= means model roberta-large; it cannot go with model= "
                                          r"all-MiniLM-L6-v2: give one \(bert_score keeps its model_type and "
                                          r"reads its lang only for the baseline file: here leave lang= out and "
                                          r"give baseline= that file\)"):
        run_spec({"lang": "en", "model": "all-MiniLM-L6-v2"})


@pytest.mark.reference
def test_every_keyword_of_bert_scores_score_is_an_option_or_mapped() -> None:
    import inspect

    from alignscore.config import options
    from alignscore.config.sources import KEYWORDS, bert_score_name
    from helpers import needs

    bert_score = needs("bert_score")
    keywords = [k for k in inspect.signature(bert_score.score).parameters if k not in ("cands", "refs")]
    assert [k for k in keywords if k not in options() and bert_score_name(k, KEYWORDS) is None] == []


def test_the_docs_map_every_bert_score_keyword() -> None:
    from alignscore.config import options
    from alignscore.config.sources import BERT_SCORE_ONLY
    from helpers import REPO

    page = (REPO / "docs" / "python-api.md").read_text(encoding="utf-8")
    table = page[page.index("### Coming from bert_score"):page.index("## Scorers and presets")]
    declared = [k for o in options().values() if o.setting for k in o.setting.decl.bert_score]
    assert len(declared) == 4 and [k for k in [*declared, *BERT_SCORE_ONLY] if k not in table] == []


def test_a_combination_given_as_a_run_file_is_named_by_the_option_that_gave_it(tmp_path: Path) -> None:
    path = write_toml({"parts": [{"config": "a.toml"}]}, tmp_path / "both.toml")
    with pytest.raises(ConfigError, match=r"a combination of runs \(score config= scores it\), not one run"):
        run_spec({"config": str(path)})
    with pytest.raises(ConfigError, match=r"\(score --config scores it\)"):
        sources_of({"config": str(path)}, FLAGS)
