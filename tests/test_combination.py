"""A combination of runs (alignscore/combination.py): one part is that part, every way in gives
the same scores, parts of one model share one encoding, a pair's score does not depend on the
others, the signature names every part, show and diff explain each part, a streamed and resumed
run writes what one call writes, and bad input is one line with nothing written."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

import alignscore
from alignscore.cli.options import FLAGS
from alignscore.combination import MAX_PARTS, Combination, combine, combination_in
from alignscore.errors import ConfigError
from cli_checks import assert_one_error, invoke, write_toml
from helpers import counted_forward

CANDS = ["the cat sat on the mat", "a dog ran in the park", "it rained all day", "nothing"]
REFS = ["a cat sat on a mat", "the dog runs in a park", "rain fell the whole day", "something else entirely"]


@pytest.fixture
def parts(tiny_bert_dir) -> list[dict]:
    return [{"model": tiny_bert_dir, "layer": 2}, {"model": tiny_bert_dir, "layer": 1, "aligner": "wmd"}]


@pytest.fixture
def combo_file(parts, tmp_path) -> Path:
    tables = [{"weight": w, "location": m, "scale": d, **p} for p, w, m, d in zip(parts, (0.7, 0.3), (0.5, 0.2),
                                                                                     (0.25, 0.125))]
    return write_toml({"parts": tables}, tmp_path / "combo.toml")


@pytest.fixture
def texts(tmp_path) -> tuple[Path, Path]:
    (tmp_path / "c.txt").write_text("\n".join(CANDS) + "\n", encoding="utf-8")
    (tmp_path / "r.txt").write_text("\n".join(REFS) + "\n", encoding="utf-8")
    return tmp_path / "c.txt", tmp_path / "r.txt"


def test_one_part_is_that_part_bit_for_bit(tiny_bert_dir) -> None:
    alone = alignscore.score(CANDS, REFS, model=tiny_bert_dir, layer=2)
    one = combine([{"model": tiny_bert_dir, "layer": 2}]).score(CANDS, REFS)
    assert torch.equal(one["combined"], alone.f1.double())  # (s - 0) / 1 * 1 is s exactly
    assert torch.equal(one["part0"], alone.f1)


def test_the_formula_with_fixed_standardisation(parts) -> None:
    scorer = combine(parts, [0.7, 0.3], [0.5, 0.2], [0.25, 0.125])
    got = scorer.score(CANDS, REFS)
    a = alignscore.score(CANDS, REFS, **parts[0]).f1.double()
    b = alignscore.score(CANDS, REFS, **parts[1]).score.double()
    assert torch.allclose(got["combined"], 0.7 * (a - 0.5) / 0.25 + 0.3 * (b - 0.2) / 0.125, atol=1e-6, rtol=0)
    # fixed location and scale: a pair scores the same alone as among the others
    alone = scorer.score(CANDS[1:2], REFS[1:2])
    assert math.isclose(float(alone["combined"][0]), float(got["combined"][1]), abs_tol=1e-6)


def test_every_way_in_gives_the_same_scores(parts, combo_file, texts) -> None:
    python = combine(parts, [0.7, 0.3], [0.5, 0.2], [0.25, 0.125]).score(CANDS, REFS)
    keyword = alignscore.score(CANDS, REFS, config=str(combo_file))
    code, stdout, stderr = invoke("score", "--config", combo_file, "-c", texts[0], "-r", texts[1], "--format",
                                  "jsonl", "--batch-size", "2", "-q")
    assert code == 0, stderr
    cli = [json.loads(line)["combined"] for line in stdout.splitlines() if line.strip()]
    assert torch.allclose(keyword["combined"], python["combined"], atol=1e-6, rtol=0)
    assert cli == pytest.approx(python["combined"].tolist(), abs=1e-6)
    assert str(keyword.signature) == str(python.signature)
    # the file written back reads as the same combination
    again = combo_file.parent / "again.toml"
    again.write_text(Combination.read(combo_file).toml(), encoding="utf-8")
    assert torch.equal(alignscore.score(CANDS, REFS, config=str(again))["combined"], keyword["combined"])


def test_the_signature_names_every_part_and_weight(parts) -> None:
    sig = combine(parts, [0.7, 0.3]).score(CANDS, REFS).signature
    assert list(sig) == ["combination", "part0", "part1"]
    assert sig["part0"].startswith("w=0.7,m=0.0,d=1.0,") and "align:greedy(cos)" in sig["part0"]
    assert "align:wmd" in sig["part1"] and "layers:L1" in sig["part1"] and "|" not in sig["part1"]


def test_parts_of_one_model_share_one_encoding(parts) -> None:
    one = combine(parts[:1])
    both = combine(parts)
    assert both.scorers[0].encoder is both.scorers[1].encoder
    one.score(CANDS, REFS)  # the model loaded
    both.score(CANDS, REFS)
    with counted_forward() as single:
        one.score(CANDS, REFS)
    with counted_forward() as shared:
        both.score(CANDS, REFS)
    assert shared["n"] == single["n"] > 0


def test_flags_apply_to_every_part(combo_file) -> None:
    combination = combination_in({"config": str(combo_file), "batch_size": "3"}, FLAGS)
    assert combination is not None and [p.spec.runtime.batch_size for p in combination.parts] == [3, 3]
    assert combination_in({"layer": 2}) is None


@pytest.mark.parametrize("change, needles", [
    (lambda t: t.update(parts=[]), ["parts", "at least one part"]),
    (lambda t: t["parts"][1].update(weight=math.nan), ["combo.toml:", "parts[1].weight", "finite"]),
    (lambda t: t["parts"][0].update(weight=0.9), ["weights sum to"]),
    (lambda t: t["parts"][1].update(scale=0.0), ["parts[1].scale"]),
    (lambda t: t["parts"][1].update(n_gram=0), ["combo.toml:", "parts[1].n_gram"]),
    (lambda t: t["parts"][1].update(layer=99), ["combo.toml:", "parts[1].layer", "does not exist"]),
    (lambda t: t["parts"][0].pop("weight"), ["parts[0]", "no weight"]),
    (lambda t: t.update(batch_size=2), ["combo.toml:", "batch_size", "[[parts]] only"]),
    (lambda t: t.update(parts=[dict(t["parts"][0], weight=1 / (MAX_PARTS + 1))] * (MAX_PARTS + 1)),
     [f"at most {MAX_PARTS}"]),
])
def test_bad_input_is_one_line_and_nothing_written(parts, texts, tmp_path, change, needles) -> None:
    import tomllib

    table = {"parts": [{"weight": 0.5, "location": 0.0, "scale": 1.0, **p} for p in parts]}
    change(table)
    path = write_toml(table, tmp_path / "combo.toml")
    assert tomllib.loads(path.read_text())  # still TOML (NaN written as nan)
    out = tmp_path / "out.tsv"
    code, _, stderr = invoke("score", "--config", path, "-c", texts[0], "-r", texts[1], "-o", out, "-q")
    assert_one_error(code, stderr, *needles)
    assert not out.exists()


@pytest.mark.parametrize("before", [0, 1])
def test_a_part_against_sources_only_is_refused_against_references(tiny_bert_dir, texts, tmp_path, before) -> None:
    own = {"location": 0.0, "scale": 1.0}
    lm_part = {"weight": 1.0 / (before + 1), **own, "model": tiny_bert_dir, "layer": 2, "lm": tiny_bert_dir}
    plain = [{"weight": 0.5, **own, "model": tiny_bert_dir, "layer": 1}] * before  # parts on both sides
    path = write_toml({"parts": [*plain, lm_part]}, tmp_path / "c.toml")
    out = tmp_path / "out.tsv"
    code, _, stderr = invoke("score", "--config", path, "-c", texts[0], "-r", texts[1], "-o", out, "-q")
    assert_one_error(code, stderr, "c.toml:", f"parts[{before}].lm")
    assert not out.exists()


def test_python_errors_name_the_part(tiny_bert_dir) -> None:
    with pytest.raises(ConfigError, match=r"^combine\(\): parts\[1\]\.n_gram=: "):
        Combination.of([{"model": tiny_bert_dir}, {"model": tiny_bert_dir, "aligner": "wmd", "n_gram": 0}])
    with pytest.raises(ConfigError, match="weights: 1 for 2 parts"):
        Combination.of([{"model": tiny_bert_dir}, {"model": tiny_bert_dir}], weights=[1.0])
    with pytest.raises(ConfigError, match="at least one part"):
        Combination.of([])
    with pytest.raises(ConfigError, match="does not exist"):
        combine([{"model": tiny_bert_dir, "layer": 99}])


def test_a_cache_given_on_the_command_line_serves_every_part(combo_file, texts, tmp_path) -> None:
    plain = invoke("score", "--config", combo_file, "-c", texts[0], "-r", texts[1], "--format", "jsonl", "-q")
    cached = [invoke("score", "--config", combo_file, "-c", texts[0], "-r", texts[1], "--format", "jsonl", "-q",
                     "--cache", tmp_path / "cache") for _ in range(2)]  # filled, then read
    assert plain[0] == cached[0][0] == cached[1][0] == 0
    assert (tmp_path / "cache").is_dir() and any((tmp_path / "cache").iterdir())
    rows = [[json.loads(line)["combined"] for line in out[1].splitlines() if line.strip()]
            for out in (plain, *cached)]
    assert rows[1] == pytest.approx(rows[0], abs=1e-6) and rows[2] == pytest.approx(rows[0], abs=1e-6)


def test_show_gives_each_part_its_line_and_the_combined_score(parts, combo_file, tmp_path) -> None:
    scored = combine(parts, [0.7, 0.3], [0.5, 0.2], [0.25, 0.125]).score(CANDS[:1], REFS[:1])
    code, stdout, stderr = invoke("show", "--config", combo_file, "-c", CANDS[0], "-r", REFS[0])
    assert code == 0, stderr
    assert "== part 0: weight 0.7, location 0.5, scale 0.25; f1 " in stdout
    assert "== part 1: weight 0.3, location 0.2, scale 0.125; score " in stdout
    assert stdout.count("signature: model:") == 2 and "align:wmd" in stdout
    assert f"scores: combined={float(scored['combined'][0]):.6f}" in stderr
    code, _, stderr = invoke("show", "--config", combo_file, "-c", CANDS[0], "-r", REFS[0], "-o", tmp_path / "p.html")
    assert code == 0, stderr
    assert (tmp_path / "p.part0.html").exists() and (tmp_path / "p.part1.html").exists()
    assert "p.part1.html: part 1: weight 0.3" in stderr and "signature model:" in stderr
    code, _, stderr = invoke("show", "--config", combo_file, "-c", CANDS[0], "-r", REFS[0], "--format", "html")
    assert_one_error(code, stderr, "one per part")


def test_diff_ranks_a_combination_by_its_combined_score(parts, combo_file, texts, tmp_path) -> None:
    python = combine(parts, [0.7, 0.3], [0.5, 0.2], [0.25, 0.125]).score(CANDS, REFS)
    out = tmp_path / "diff"
    code, stdout, stderr = invoke("diff", "-c", texts[0], "-r", texts[1], "--a", f"--config {combo_file}", "--b",
                                  f"--model {parts[0]['model']} --layer 1", "--top", 1, "-q")
    assert code == 0, stderr
    assert "# A: combination:sum w(s-m)/d of 2|part0:w=0.7" in stdout and "A.combined" in stdout
    assert "--- A part 0 ---" in stdout and "--- A part 1 ---" in stdout and "--- B ---" in stdout
    code, _, stderr = invoke("diff", "-c", texts[0], "-r", texts[1], "--a", f"--config {combo_file}", "--b",
                             f"--model {parts[0]['model']} --layer 1", "--top", 1, "-q", "--format", "html", "-o", out)
    assert code == 0, stderr
    rows = [line.split("\t") for line in (out / "diff.tsv").read_text(encoding="utf-8").splitlines()[4:]]
    got = {int(r[0]) - 1: float(r[1]) for r in rows}
    assert [got[i] for i in range(len(CANDS))] == pytest.approx(python["combined"].tolist(), abs=1e-4)
    line = rows[0][0]
    assert {p.name for p in out.glob(f"line{line}-*")} == {f"line{line}-a.part0.html", f"line{line}-a.part1.html",
                                                          f"line{line}-b.html"}


def test_compare_takes_a_combination_by_its_combined_score(parts, combo_file, texts) -> None:
    human = texts[0].parent / "human.txt"
    judged = [3.0, 1.0, 2.0, 0.0]
    human.write_text("".join(f"{v}\n" for v in judged), encoding="utf-8")
    code, stdout, stderr = invoke("compare", "-c", texts[0], "-r", texts[1], "--human", human, "--a",
                                  f"--config {combo_file}", "--b", f"--model {parts[0]['model']} --layer 2", "-q",
                                  "--bootstrap", 100, "--permutations", 100)
    assert code == 0, stderr
    assert "# A: combination:sum w(s-m)/d of 2|part0:w=0.7" in stdout
    row = dict(zip(*(line.split("\t") for line in stdout.splitlines()[3:5])))
    python = combine(parts, [0.7, 0.3], [0.5, 0.2], [0.25, 0.125]).score(CANDS, REFS)
    alone = alignscore.score(CANDS, REFS, **parts[0])
    for column, scores in (("A.abs_r", python["combined"]), ("B.abs_r", alone.f1)):
        assert float(row[column]) == pytest.approx(abs(np.corrcoef(scores.double().numpy(), judged)[0, 1]), abs=1e-5)


def test_stream_and_resume_write_what_one_call_writes(combo_file, texts, tmp_path) -> None:
    whole, out = tmp_path / "whole.tsv", tmp_path / "out.tsv"
    given = ["score", "--config", combo_file, "-c", texts[0], "-r", texts[1], "-q", "--chunk-size", 2]
    assert invoke(*given, "--stream", "-o", whole)[0] == 0
    at_once = invoke("score", "--config", combo_file, "-c", texts[0], "-r", texts[1], "-q", "--format", "jsonl")
    rows = [line.split("\t") for line in whole.read_text(encoding="utf-8").splitlines()[3:]]
    assert [float(r[0]) for r in rows] == pytest.approx(
        [json.loads(line)["combined"] for line in at_once[1].splitlines() if line.strip()], abs=1e-6)
    lines = whole.read_text(encoding="utf-8").splitlines(keepends=True)
    # as a run killed in its third row leaves it: header, two rows, part of the third
    out.write_text(lines[0] + "# mean pending\n" + "".join(lines[2:5]) + lines[5][:7], encoding="utf-8")
    (tmp_path / "out.tsv.signature").write_bytes((tmp_path / "whole.tsv.signature").read_bytes())
    code, _, stderr = invoke(*given, "--resume", "-o", out)
    assert code == 0, stderr
    assert "(2 scored now)" in stderr and out.read_bytes() == whole.read_bytes()
    other = write_toml({"parts": [{"weight": 1.0, "location": 0.0, "scale": 1.0, "model": "all-MiniLM-L6-v2"}]},
                       tmp_path / "other.toml")
    before = out.read_bytes()
    code, _, stderr = invoke("score", "--config", other, "-c", texts[0], "-r", texts[1], "-q", "--resume", "-o", out)
    assert_one_error(code, stderr, "another composition")
    assert out.read_bytes() == before


def test_what_a_combination_does_not_take_is_one_line(combo_file, texts, tmp_path) -> None:
    extra = ["--pairwise", "-o", str(tmp_path / "OUT.npy")]
    code, _, stderr = invoke("score", "--config", combo_file, "-c", texts[0], "-r", texts[1], *extra)
    assert_one_error(code, stderr, "a combination")
    assert not any(tmp_path.glob("OUT*"))
