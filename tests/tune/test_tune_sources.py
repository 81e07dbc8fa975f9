"""``alignscore tune --sources``: the search scores each MT output against its source, through the
engine path of ``score --sources`` (the same scores), with one remapping per source language;
what cannot run against sources, and a language without a remapping, are one error line before
any model loads, nothing written. Tiny local model, 2 language pairs x 16 WMT16 segments."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from alignscore.encoders.huggingface import HFEncoder
from alignscore.errors import ConfigError
from alignscore.tune import tune
from alignscore.remap import Remapping, model_digest, save_remapping
from cli_checks import assert_one_error, invoke
from helpers import (SOURCE_LPS as LPS, counted_forward, daseg_with_candidate, source_challenge_set,
                     write_daseg)

N = 16
SPACE = 'layer = [2]\naligner = ["greedy", { name = "wmd", n_gram = 1 }]\n'


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_daseg(tmp_path_factory.mktemp("daseg-src"), LPS, N, sources=True)


@pytest.fixture(scope="module")
def space_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("space-src") / "space.toml"
    path.write_text(SPACE, encoding="utf-8")
    return path


def _score_r(data_dir: Path, lp: str, tiny_bert_dir: str, *options: object) -> float:
    """|r| with the human scores of ``score --sources`` on one language pair."""
    code, _, err = invoke("score", "--sources", data_dir / f"DAseg.newstest2016.source.{lp}",
                          "-c", data_dir / f"DAseg.newstest2016.mt-system.{lp}", "--model", tiny_bert_dir,
                          "--human", data_dir / f"DAseg.newstest2016.human.{lp}", "-q", "-o", "/dev/null", *options)
    assert code == 0, err
    return abs(float(next(ln for ln in err.splitlines() if ln.startswith("pearson r(")).split("= ")[1].split()[0]))


@pytest.mark.slow  # three searches against sources: CI's tier
@pytest.mark.parametrize("remapped, lm", [(False, False), (True, False), (True, True)])
def test_tune_scores_against_sources_as_score_does(data_dir: Path, space_file: Path, remaps: Path,
                                                   tiny_bert_dir: str, tiny_gpt2_dir: str, tmp_path: Path,
                                                   remapped: bool, lm: bool) -> None:
    more = {"remap": str(remaps)} if remapped else {}
    term = {"lm": tiny_gpt2_dir, "lm_weight": 0.5} if lm else {}
    result = tune(data_dir, space_file, model=tiny_bert_dir, against_sources=True, budget=5, bootstrap=100,
                  output=tmp_path / "out", **more, **term)
    run = result.run
    assert len(run.entries) == 2 and all("refs:source" in e.signature for e in run.entries)
    for e, entry in enumerate(run.entries):
        options = ["--layer", 2, "--aligner", "greedy" if entry.composition.metric == "f1" else "wmd"]
        for k, lp in enumerate(LPS):
            remap = ["--remap", remaps / f"{lp[:2]}.remap"] if remapped else []
            with_lm = ["--lm", tiny_gpt2_dir, "--lm-weight", 0.5] if lm else []
            assert abs(run.per_pair[e][k] - _score_r(data_dir, lp, tiny_bert_dir, *options, *remap, *with_lm)) < 1e-6
    if lm:  # the term is in every run's numbers: without it they differ
        alone = tune(data_dir, space_file, model=tiny_bert_dir, against_sources=True, budget=5, bootstrap=100,
                     **more)
        assert not np.allclose(alone.run.per_pair[0], run.per_pair[0], atol=1e-4)
        return
    # against references the numbers differ: the sources were scored
    refs = tune(data_dir, space_file, model=tiny_bert_dir, budget=5, bootstrap=100)
    assert not np.allclose(refs.run.per_pair[0], run.per_pair[0], atol=1e-4)


@pytest.mark.slow  # a whole tune: out of the edit loop's tier, in CI's
def test_the_command_scores_against_sources_with_a_remapping_per_language(data_dir: Path, space_file: Path,
                                                                         remaps: Path, tiny_bert_dir: str,
                                                                         tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, stdout, err = invoke("tune", space_file, "--data", data_dir, "--sources", "--remap", remaps,
                               "--model", tiny_bert_dir, "-o", out, "-q", "--bootstrap", 100, "--holdout", data_dir)
    assert code == 0, err
    assert (out / "best.toml").is_file() and "refs:source" in (out / "leaderboard.csv").read_text(encoding="utf-8")
    # the held-out pairs are scored against their sources too, with their languages' remappings: here the
    # same data, so the same |r| as the search's
    best = next(r for r in csv.DictReader(open(out / "leaderboard.csv", encoding="utf-8")) if r["selected"] == "true")
    held = {r["lang_pair"]: float(r["selected"]) for r in csv.DictReader(open(out / "holdout.csv", encoding="utf-8"))}
    assert held.keys() == set(LPS) and all(abs(held[lp] - float(best[lp])) < 1e-6 for lp in LPS)
    # best.toml is the composition without a remapping (and says so); best.<lang>.toml adds the language's
    # remapping, and score --config with it reproduces the search's |r| of that language pair
    plain = (out / "best.toml").read_text(encoding="utf-8")
    assert "remap =" not in plain and "without a remapping" in plain and "best.de.toml" in plain
    for lp in LPS:
        lang = lp[:2]
        run_file = out / f"best.{lang}.toml"
        text = run_file.read_text(encoding="utf-8")
        assert f'remap = "{(remaps / f"{lang}.remap").resolve()}"' in text
        assert f"{lang} with best.{lang}.toml" in stdout
        assert abs(_score_r(data_dir, lp, tiny_bert_dir, "--config", run_file) - float(best[lp])) < 1e-6
    # without the remapping the numbers differ: the run file's remapping is what reproduces them
    assert any(abs(_score_r(data_dir, lp, tiny_bert_dir, "--config", out / "best.toml") - float(best[lp])) > 1e-4
               for lp in LPS)
    assert "best.de.toml" in (out / "leaderboard.md").read_text(encoding="utf-8")


def _refused(tmp_path: Path, *args: object) -> str:
    out = tmp_path / "out"
    with counted_forward() as calls:
        code, _, err = invoke("tune", *args, "-o", out, "-q")
    assert calls["n"] == 0 and not out.exists()  # before any text is encoded; nothing written
    return assert_one_error(code, err)


def test_a_reference_only_composition_is_refused_against_sources(data_dir: Path, space_file: Path,
                                                                 tiny_bert_dir: str, tmp_path: Path) -> None:
    baseline = tmp_path / "b.csv"
    baseline.write_text("LAYER,P,R,F\n2,0.5,0.5,0.5\n", encoding="utf-8")
    line = _refused(tmp_path, space_file, "--data", data_dir, "--sources", "--model", tiny_bert_dir,
                    "--baseline", baseline)
    assert "--baseline" in line and "not against sources" in line


def test_a_language_without_a_remapping_is_refused(data_dir: Path, space_file: Path, remaps: Path,
                                                   tiny_bert_dir: str, tmp_path: Path) -> None:
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "de.remap").write_bytes((remaps / "de.remap").read_bytes())
    line = _refused(tmp_path, space_file, "--data", data_dir, "--sources", "--model", tiny_bert_dir,
                    "--remap", partial)
    assert "--remap" in line and "no remapping for source language ru" in line and "ru.remap" in line
    # one file for data of two source languages: it was learned for de, and ru has none
    line = _refused(tmp_path, space_file, "--data", data_dir, "--sources", "--model", tiny_bert_dir,
                    "--remap", remaps / "de.remap")
    assert "learned for source language de, not ru" in line


def test_what_sources_cannot_serve_is_refused(data_dir: Path, space_file: Path, remaps: Path, tiny_bert_dir: str,
                                              tmp_path: Path) -> None:
    # a remapping of another layer (the space's runs read layer 2)
    other = tmp_path / "layer3"
    other.mkdir()
    for lang in ("de", "ru"):
        save_remapping(Remapping("umd", torch.eye(32, dtype=torch.float64)[0], tiny_bert_dir,
                                 model_digest(HFEncoder(tiny_bert_dir)), 3, lang, 10), other / f"{lang}.remap")
    line = _refused(tmp_path, space_file, "--data", data_dir, "--sources", "--model", tiny_bert_dir, "--remap", other)
    assert "--remap" in line and "layer 3, not" in line
    # a language pair without its source file
    bare = tmp_path / "bare"
    bare.mkdir()
    for path in data_dir.iterdir():
        if ".source." not in path.name:
            (bare / path.name).write_bytes(path.read_bytes())
    line = _refused(tmp_path, space_file, "--data", bare, "--sources", "--model", tiny_bert_dir)
    assert "--sources" in line and "source" in line and "de-en" in line
    # a remapping without --sources (against references) is refused as before
    line = _refused(tmp_path, space_file, "--data", data_dir, "--model", tiny_bert_dir, "--remap",
                    remaps / "de.remap")
    assert "--remap" in line
    # a challenge item without its source, and (with a folder of remappings) one without its language pair:
    # each named by its file and line
    challenge = tmp_path / "set.jsonl"
    challenge.write_text('{"ref": "a", "good": "a", "bad": "b", "category": "x", "source": "s", "lp": "de-en"}\n'
                         '{"ref": "a", "good": "a", "bad": "c", "category": "x", "lp": "de-en"}\n', encoding="utf-8")
    line = _refused(tmp_path, space_file, "--data", data_dir, "--sources", "--model", tiny_bert_dir, "--challenge",
                    challenge, "--objective", "correlation + 0.5 * accuracy[all]")
    assert "set.jsonl:2" in line and "--sources" in line and "no 'source' text" in line
    challenge.write_text('{"ref": "a", "good": "a", "bad": "b", "category": "x", "source": "s", "lp": "de-en"}\n'
                         '{"ref": "a", "good": "a", "bad": "c", "category": "x", "source": "s"}\n', encoding="utf-8")
    line = _refused(tmp_path, space_file, "--data", data_dir, "--sources", "--model", tiny_bert_dir, "--challenge",
                    challenge, "--objective", "correlation + 0.5 * accuracy[all]", "--remap", remaps)
    assert "set.jsonl:2" in line and "--remap" in line and "'lp'" in line
    with pytest.raises(ConfigError, match="against_sources="):
        tune(bare, space_file, model=tiny_bert_dir, against_sources=True)



def _challenge_correct(path: Path, tiny_bert_dir: str, *options: object) -> dict[str, tuple[int, int]]:
    """``challenge --sources`` of the space's two runs (A greedy, B wmd): (correct, n) of category all."""
    code, stdout, err = invoke("challenge", path, "--sources", "--model", tiny_bert_dir, "--layer", 2, "--format",
                               "jsonl", "--a", "--aligner greedy", "--b", "--aligner wmd --n-gram 1", "-q", *options)
    assert code == 0, err
    rows = [json.loads(line) for line in stdout.splitlines()]
    return {r["composition"]: (r["correct"], r["n"]) for r in rows if r["category"] == "all"}


@pytest.mark.slow  # whole tunes: out of the edit loop's tier, in CI's
@pytest.mark.parametrize("remapped", [False, True])
def test_tune_challenge_accuracy_against_sources_is_the_challenge_commands(data_dir: Path, space_file: Path,
                                                                          remaps: Path, tiny_bert_dir: str,
                                                                          tmp_path: Path, remapped: bool) -> None:
    challenge = source_challenge_set(tmp_path / "set.jsonl", LPS)
    more = {"remap": str(remaps)} if remapped else {}
    result = tune(data_dir, space_file, model=tiny_bert_dir, against_sources=True, budget=5, bootstrap=100,
                  challenge=challenge, objective="correlation + 0.5 * accuracy[all]", **more)
    # the challenge command, on each language's items with that language's remapping (one file each)
    counts = {"A": [0, 0], "B": [0, 0]}
    for lp in LPS:
        part = source_challenge_set(tmp_path / f"{lp}.jsonl", (lp,))
        for name, (correct, n) in _challenge_correct(part, tiny_bert_dir, *(
                ["--remap", remaps / f"{lp[:2]}.remap"] if remapped else [])).items():
            counts[name][0] += correct
            counts[name][1] += n
    for entry in result.run.entries:
        correct, n = counts["A" if entry.composition.metric == "f1" else "B"]
        assert n == 24 and entry.accuracy == pytest.approx(correct / n, abs=1e-12)
        # against the references good (the reference itself) would win every item: the sources were scored
        assert 0 < correct < n
    if remapped:  # the remappings were applied: without them some run's accuracy differs
        # challenge --remap takes the folder as tune does: the whole set, each item by its lp, the same counts
        folder = _challenge_correct(challenge, tiny_bert_dir, "--remap", remaps)
        assert {name: list(v) for name, v in folder.items()} == counts
        plain = _challenge_correct(challenge, tiny_bert_dir)
        assert any(plain[name][0] != counts[name][0] for name in counts)


def test_tune_and_challenge_share_one_sources_switch() -> None:
    from alignscore.cli import main

    helps = {}
    for name in ("tune", "challenge"):
        (param,) = [p for p in main.commands[name].params if "--sources" in p.opts]
        assert param.is_flag and param.name == "against_sources"
        helps[name] = param.help
    common = "not against the reference: reference-free, as 'alignscore score --sources' does"
    assert all(common in h for h in helps.values())
    assert "DAseg.*.source.*" in helps["tune"] and "--challenge items" in helps["tune"]
    assert "field 'source'" in helps["challenge"] and "DAseg" not in helps["challenge"]


@pytest.mark.slow  # a whole tune: out of the edit loop's tier, in CI's
def test_tune_searches_the_lm_weight_against_sources(data_dir: Path, tiny_bert_dir: str, tiny_gpt2_dir: str,
                                                     tmp_path: Path) -> None:
    space = tmp_path / "lm-space.toml"
    space.write_text('layer = [2]\naligner = ["greedy"]\nlm_score = ["mean-logprob"]\nlm_weight = [0.0, 0.05]\n',
                     encoding="utf-8")
    result = tune(data_dir, space, model=tiny_bert_dir, against_sources=True, budget=5, bootstrap=100,
                  lm=tiny_gpt2_dir, output=tmp_path / "out")
    run = result.run
    weights = sorted(e.composition.lm.lm_weight for e in run.entries)
    assert weights == [0.0, 0.05] and all(e.composition.lm.lm_score == "mean-logprob" for e in run.entries)
    for e, entry in enumerate(run.entries):  # each entry's numbers are score's with its weight
        w = entry.composition.lm.lm_weight
        for k, lp in enumerate(LPS):
            got = _score_r(data_dir, lp, tiny_bert_dir, "--layer", 2, "--lm", tiny_gpt2_dir, "--lm-score",
                           "mean-logprob", "--lm-weight", w)
            assert abs(run.per_pair[e][k] - got) < 1e-6
    assert not np.allclose(run.per_pair[0], run.per_pair[1], atol=1e-4)


def test_texts_the_lm_cannot_read_are_refused_before_any_model_loads_every_way_in(
        tiny_bert_dir: str, word_level_lm_dir: str, tmp_path: Path) -> None:
    """A candidate the LM's tokenizer cannot read: one line naming the LM as given (``--lm``, ``lm=``,
    the space's ``file:line: lm[0]``) and the language pair, before any encoding, nothing written."""
    data = daseg_with_candidate(tmp_path / "data", LPS, N, "ru-en", 4, "zebras gallop")
    space = tmp_path / "space.toml"
    space.write_text('layer = [2]\naligner = ["greedy"]\n', encoding="utf-8")
    needle = "cannot read 1 of the texts (text 4: only unknown tokens)"
    with counted_forward() as calls:
        line = _refused(tmp_path, space, "--data", data, "--sources", "--model", tiny_bert_dir, "--lm",
                        word_level_lm_dir)
        assert line.startswith("alignscore: error: ru-en: --lm: the language model") and needle in line
        with pytest.raises(ConfigError, match=r"^ru-en: lm=: the language model") as info:
            tune(data, space, model=tiny_bert_dir, against_sources=True, lm=word_level_lm_dir, budget=5)
        assert needle in str(info.value)
        space.write_text(f'layer = [2]\naligner = ["greedy"]\nlm = ["{word_level_lm_dir}"]\n', encoding="utf-8")
        line = _refused(tmp_path, space, "--data", data, "--sources", "--model", tiny_bert_dir)
        assert "ru-en: " in line and "space.toml:3: lm[0]: the language model" in line and needle in line
    assert calls["n"] == 0
