"""Challenge sets: ``alignscore challenge`` equals a brute-force count from ``alignscore.score``
of the good and the bad candidates; each distinct text is encoded once; ``perturb`` is
deterministic and each kind does what it says; bad input is one error and nothing written;
``ablate --challenge`` tables every cell."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import numpy as np
import pytest

import alignscore
from alignscore.evaluation import challenge as challenge_module
from alignscore.evaluation import perturb as perturb_module
from alignscore.evaluation.challenge import TIE_TOLERANCE, read_items
from alignscore.evaluation.perturb import KINDS, _join, _words, perturb
from alignscore.evaluation.stats import bootstrap_mean, bootstrap_mean_difference
from cli_checks import assert_one_error, invoke
from helpers import counted_forward, wmt16

N_LINES = 12


@pytest.fixture(scope="module")
def set_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A challenge set made by ``alignscore perturb`` from the first WMT16 de-en lines."""
    folder = tmp_path_factory.mktemp("challenge")
    texts = wmt16("de-en")
    (folder / "refs.txt").write_text("\n".join(texts["reference"][:N_LINES]) + "\n", encoding="utf-8")
    (folder / "cands.txt").write_text("\n".join(texts["mt-system"][:N_LINES]) + "\n", encoding="utf-8")
    code, _, err = invoke("perturb", "-r", folder / "refs.txt", "-c", folder / "cands.txt", "--seed", 1,
                          "-o", folder / "set.jsonl")
    assert code == 0, err
    return folder / "set.jsonl"


def _jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_accuracy_equals_a_brute_force_count_from_score(set_path: Path, tiny_bert_dir: str) -> None:
    code, out, err = invoke("challenge", set_path, "--model", tiny_bert_dir, "--layer", 2, "--batch-size", 8,
                            "--b", "--aligner wmd --n-gram 1 --idf --sep", "--format", "jsonl", "--bootstrap", 200,
                            "--seed", 5, "-q")
    assert code == 0, err
    rows = _jsonl(out)
    items = read_items(set_path)
    # brute force: every distinct (candidate, references) pair of the set scored by alignscore.score
    pairs = list(dict.fromkeys((t, i.refs) for i in items for t in (i.good, i.bad)))
    assert len(pairs) < 2 * len(items)  # a good candidate serves several items: scored once
    sides = {"A": {}, "B": {"aligner": "wmd", "n_gram": 1, "idf": True, "sep": True}}
    right = {}
    for name, options in sides.items():
        scores = alignscore.score([c for c, _ in pairs], [list(r) for _, r in pairs], model=tiny_bert_dir,
                                  layer=2, **options)
        value = dict(zip(pairs, scores["f1" if name == "A" else "score"].double().tolist()))
        g = np.array([value[(i.good, i.refs)] for i in items])
        b = np.array([value[(i.bad, i.refs)] for i in items])
        right[name] = (g - b > TIE_TOLERANCE, np.abs(g - b) <= TIE_TOLERANCE, b - g)
    by_key = {(r["composition"], r["category"]): r for r in rows}
    cats = list(dict.fromkeys(i.category for i in items))
    assert {c for _, c in by_key} == set(cats) | {"all"}
    checked = 0
    for name in sides:
        correct, tie, change = right[name]
        for cat in cats + ["all"]:
            idx = np.array([k for k, i in enumerate(items) if (i.category == cat if cat != "all" else not i.control)])
            row = by_key[(name, cat)]
            assert row["n"] == len(idx)
            assert row["ties"] == int(tie[idx].sum())
            if KINDS.get(cat, KINDS["number"]).control:
                assert row["accuracy"] is None and row["kind"] == "control"
                assert row["mean_change"] == pytest.approx(float(change[idx].mean()), abs=1e-6)
                continue
            assert row["correct"] == int(correct[idx].sum())
            assert row["accuracy"] == correct[idx].sum() / len(idx)  # the same count, the same division
            interval = bootstrap_mean(correct[idx].astype(float), 200, 5)
            assert (row["low"], row["high"]) == (interval.low, interval.high)
            if name == "B":
                test = bootstrap_mean_difference(correct[idx].astype(float), right["A"][0][idx].astype(float), 200, 5)
                assert (row["delta"], row["p_value"]) == (test.difference, test.p_value)
                assert row["against"] == "A"
            else:
                assert row["delta"] is None
            checked += 1
    assert checked >= 2 * 5
    assert all(r["signature"].startswith("model:") for r in rows)
    assert {r["signature"] for r in rows if r["composition"] == "B"} != {r["signature"] for r in rows
                                                                          if r["composition"] == "A"}


def test_each_distinct_text_is_encoded_once_for_every_composition(set_path: Path, tiny_bert_dir: str) -> None:
    items = read_items(set_path)
    distinct = {t.strip() for i in items for t in (*i.refs, i.good, i.bad)}
    with counted_forward() as calls:
        code, out, err = invoke("challenge", set_path, "--model", tiny_bert_dir, "--layer", 2, "--batch-size", 1,
                                "--b", "--aligner wmd", "--b", "--layer 3", "-q")
    assert code == 0, err
    assert calls["n"] == len(distinct)  # batch size 1: one forward pass per distinct text, for all three
    lines = [ln for ln in out.splitlines() if not ln.startswith("#")]
    assert lines[0].split("\t")[:4] == ["composition", "category", "n", "accuracy"]
    assert {ln.split("\t")[0] for ln in lines[1:]} == {"A", "B1", "B2"}


def test_a_tie_is_a_miss_counted_apart() -> None:
    from alignscore.evaluation.challenge import Item, evaluate_scores

    items = [Item(("r",), f"g{k}", f"b{k}", "c" if k < 4 else "d") for k in range(6)]
    good = np.array([0.9, 0.5, 0.5 + TIE_TOLERANCE / 2, 0.2, 0.7, 0.7])
    bad = np.array([0.8, 0.5, 0.5, 0.3, 0.6, 0.7])
    (result,) = evaluate_scores(items, [("A", "sig", good, bad)], resamples=100, seed=0)
    c, d, total = (result.category(k) for k in ("c", "d", "all"))
    assert (c.n, c.correct, c.ties, c.accuracy) == (4, 1, 2, 0.25)
    assert (d.n, d.correct, d.ties, d.accuracy) == (2, 1, 1, 0.5)
    assert (total.n, total.correct, total.ties) == (6, 2, 3) and total.accuracy == 2 / 6
    assert 0 <= c.low <= c.accuracy <= c.high <= 1


def test_tsv_output_file_and_its_header(set_path: Path, tiny_bert_dir: str, tmp_path: Path) -> None:
    out = tmp_path / "res.tsv"
    code, stdout, err = invoke("challenge", set_path, "--model", tiny_bert_dir, "--layer", 2, "-o", out, "-q")
    assert code == 0, err
    assert stdout == ""
    text = out.read_text(encoding="utf-8")
    assert "# A: model:" in text and "\nA\tall\t" in text


# -- perturb -------------------------------------------------------------------------------------------
def test_perturb_is_deterministic_for_a_seed_and_independent_of_the_other_kinds(wmt_data: dict) -> None:
    cands, refs = wmt_data["de-en"]["mt-system"][:40], [[r] for r in wmt_data["de-en"]["reference"][:40]]
    one, again, other = perturb(cands, refs, 3), perturb(cands, refs, 3), perturb(cands, refs, 4)
    assert one.items == again.items
    assert [i.bad for i in one.items] != [i.bad for i in other.items]
    subset = perturb(cands, refs, 3, ["swap", "number"])
    assert subset.items == [i for i in one.items if i.category in ("number", "swap")]
    for kind in KINDS:
        assert one.made[kind] + one.skipped[kind] == len(cands)
    assert sum(one.made.values()) == len(one.items)
    assert all(i.good == cands[int(i.id.split(":")[0]) - 1] for i in one.items)  # each keeps its source line
    assert all(i.good.strip() != i.bad.strip() for i in one.items)


def _apply(kind: str, text: str, seed: int = 0, pool: tuple[str, ...] = ()) -> str | None:
    out = perturb([text, *pool], [["reference"]] * (1 + len(pool)), seed, [kind])
    bad = [i.bad for i in out.items if i.id == f"1:{kind}"]
    return bad[0] if bad else None


@pytest.mark.parametrize("kind, text, want", [
    ("negation", "He is not here.", "He is here."),
    ("negation", "She isn't late.", "She is late."),
    ("negation", "He never came.", "He always came."),
    ("negation", "They were happy.", "They were not happy."),
    ("negation", "Cats sleep.", None),
    ("content_drop", "the cat", "the"),
    ("function_drop", "the cat sat", "cat sat"),
    ("function_drop", "Cats sleep.", None),
    ("swap", "big dog.", "dog big."),
    ("repeat", "Hello", "Hello Hello"),
    ("clause_drop", "Yes, we can go.", "we can go."),
    ("clause_drop", "We can go.", None),
    ("casing", "The Cat.", "the cat."),
    ("casing", "the cat.", None),
    ("punct_spacing", "Yes, we go.", "Yes , we go ."),
    ("punct_spacing", "yes we go", None),
    ("number", "We saw cats.", None),
    ("entity", "we saw cats.", None),
])
def test_each_kind_on_an_example(kind: str, text: str, want: str | None) -> None:
    assert _apply(kind, text) == want


def test_number_changes_one_number_and_nothing_else() -> None:
    for seed in range(20):
        bad = _apply("number", "In 2015, 3 people came.", seed)
        before, after = "In 2015, 3 people came.".split(), bad.split()
        diff = [k for k, (x, y) in enumerate(zip(before, after)) if x != y]
        assert len(after) == len(before) and len(diff) == 1, bad
        assert before[diff[0]].strip(",") != after[diff[0]].strip(",") and after[diff[0]].strip(",").isdigit()


def test_entity_swaps_a_capitalised_word_for_one_of_the_pool() -> None:
    bad = _apply("entity", "Yesterday Merkel met Obama.", 2, pool=("Then Putin spoke.",))
    words = bad.split()
    assert words[0] == "Yesterday" and len(words) == 4
    assert sum(a != b for a, b in zip(words, "Yesterday Merkel met Obama.".split())) == 1
    (k,) = [k for k, (a, b) in enumerate(zip(words, "Yesterday Merkel met Obama.".split())) if a != b]
    assert k in (1, 3) and words[k].rstrip(".") in {"Putin", "Merkel", "Obama"}  # the pool: inner capitals
    assert words[3].endswith(".")


def test_kinds_keep_words_and_punctuation_whole() -> None:
    text = "The company, which was founded in 1998, said it would not sell 40 percent of its shares."
    for kind in KINDS:
        for seed in range(5):
            bad = _apply(kind, text, seed, pool=("Then Siemens spoke.",))
            assert bad is None or (bad != text and "  " not in bad and bad == _join(_words(bad))), (kind, bad)


def test_perturb_cli_writes_a_set_that_challenge_reads(set_path: Path) -> None:
    items = read_items(set_path)
    lines = [json.loads(line) for line in set_path.read_text(encoding="utf-8").splitlines()]
    assert len(items) == len(lines) > N_LINES
    assert {"id", "ref", "good", "bad", "category"} <= set(lines[0])
    assert all(line.get("control", False) == KINDS[line["category"]].control for line in lines)


def test_perturb_cli_bad_kind_and_counts(tmp_path: Path, files) -> None:
    refs, cands = files("r.txt", ["a b c", "one"]), files("c.txt", ["the cat sat", ""])
    code, _, err = invoke("perturb", "-r", refs, "-c", cands, "--seed", 1, "-o", tmp_path / "s.jsonl",
                          "--kinds", "swap,bogus")
    assert_one_error(code, err, "bogus")
    assert not (tmp_path / "s.jsonl").exists()
    code, _, err = invoke("perturb", "-r", refs, "-c", cands, "--seed", 1, "-o", tmp_path / "s.jsonl",
                          "--kinds", "swap,number")
    assert code == 0, err
    assert "number 0 (skipped 1), swap 1 (skipped 0); 1 line(s) with an empty candidate" in err


# -- bad input -----------------------------------------------------------------------------------------
GOOD = {"ref": "the cat sat", "good": "a cat sat", "bad": "a cat stood", "category": "verb"}


@pytest.mark.parametrize("line, needle", [
    ({"ref": "r", "good": "a b", "category": "c"}, "missing field(s): bad"),
    ({"good": "a b", "bad": "b a", "category": "c"}, "missing field(s): ref"),
    ({"ref": "r", "refs": ["r"], "good": "a b", "bad": "b a", "category": "c"}, "ref or refs, not both"),
    ({"ref": "r", "good": "a b", "bad": " a b ", "category": "c"}, "the same text"),
    ({"ref": "r", "good": "  ", "bad": "b a", "category": "c"}, "'good' is empty"),
    ({"refs": [], "good": "a", "bad": "b", "category": "c"}, "non-empty list"),
    ({"ref": "r", "good": "a", "bad": "b", "category": "all "}, "'all' is the name of the total"),
    ({"ref": "r", "good": "a", "bad": "b", "category": "verb\tx"}, "holds '\\t', a control or formatting character"),
    ({"ref": "r", "good": "a", "bad": "b", "category": "ver\u2028b"}, "a control or formatting character"),
    ({**GOOD, "id": "7"}, "id '7' is also the id of line 1, a different item"),
    ([1, 2], "expected a JSON object"),
])
def test_a_bad_line_is_one_error_with_file_and_line(line, needle: str, tmp_path: Path, files,
                                                    tiny_bert_dir: str) -> None:
    path = files("set.jsonl", [json.dumps({**GOOD, "bad": "a cat ran", "id": 7}), "", json.dumps(line)])
    out = tmp_path / "out.tsv"
    code, stdout, err = invoke("challenge", path, "--model", tiny_bert_dir, "--layer", 2, "-o", out, "-q")
    assert_one_error(code, err, f"{path}:3:", needle)
    assert not out.exists() and stdout == ""


def test_not_utf8_and_not_json_and_empty(tmp_path: Path, files, tiny_bert_dir: str) -> None:
    bad_bytes = files("latin.jsonl", (json.dumps(GOOD) + "\n").encode() + b'{"ref": "caf\xe9"}\n')
    code, _, err = invoke("challenge", bad_bytes, "--model", tiny_bert_dir, "--layer", 2, "-q")
    assert_one_error(code, err, f"{bad_bytes}:2:", "UTF-8")
    broken = files("broken.jsonl", [json.dumps(GOOD), "{not json"])
    code, _, err = invoke("challenge", broken, "--model", tiny_bert_dir, "--layer", 2, "-q")
    assert_one_error(code, err, f"{broken}:2:", "not valid JSON")
    empty = files("empty.jsonl", ["", "  "])
    code, _, err = invoke("challenge", empty, "--model", tiny_bert_dir, "--layer", 2, "-q")
    assert_one_error(code, err, "holds no challenge item")


def test_a_small_category_is_a_warning_with_its_n(files, tiny_bert_dir: str) -> None:
    path = files("set.jsonl", [json.dumps(GOOD), json.dumps({**GOOD, "bad": "a dog sat", "category": "noun"})])
    code, out, err = invoke("challenge", path, "--model", tiny_bert_dir, "--layer", 2, "-q")
    assert code == 0, err
    assert "alignscore: warning: category 'verb' has only 1 item(s)" in err
    assert "\nA\tall\t2\t" in out


def test_the_output_may_not_be_the_set(set_path: Path, tiny_bert_dir: str) -> None:
    before = set_path.read_bytes()
    code, _, err = invoke("challenge", set_path, "--model", tiny_bert_dir, "--layer", 2, "-o", set_path, "-q")
    assert_one_error(code, err, "is also an input")
    assert set_path.read_bytes() == before


# -- ablate --challenge ----------------------------------------------------------------------------------
GRID = """
title = "mini"
models.base = {{model = "{model}", layer = 2}}
columns = [{{name = "WMD1", aligner = "wmd", n_gram = 1}}, {{name = "BERTScore F", aligner = "greedy", metric = "f1"}}]
rows = [{{name = "Vanilla"}}, {{name = "IDF-S", weighting = "idf-S"}}, {{name = "IDF-L", weighting = "idf-L"}}]
"""


@pytest.mark.slow  # a whole grid: out of the edit loop's tier, in CI's
def test_ablate_challenge_tables_every_cell(set_path: Path, tiny_bert_dir: str, tmp_path: Path) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID.format(model=tiny_bert_dir), encoding="utf-8")
    out = tmp_path / "out"
    code, stdout, err = invoke("ablate", grid, "--challenge", set_path, "-o", out, "-q", "--bootstrap", 100)
    assert code == 0, err
    rows = _jsonl((out / "results.jsonl").read_text(encoding="utf-8"))
    cells = list(dict.fromkeys(r["composition"] for r in rows))
    assert cells[:4] == ["Vanilla / WMD1", "Vanilla / BERTScore F", "IDF-S / WMD1", "IDF-S / BERTScore F"]
    assert "| IDF-L / WMD1 | skipped [1] |" in stdout and "[1] idf-L needs a corpus" in stdout
    assert (out / "heatmap.png").read_bytes()[:4] == b"\x89PNG"
    # a cell's accuracy is that of the same composition run alone by `challenge`
    code, alone, err = invoke("challenge", set_path, "--model", tiny_bert_dir, "--layer", 2, "--idf",
                              "--format", "jsonl", "-q", "--bootstrap", 100)
    assert code == 0, err
    want = {r["category"]: r["accuracy"] for r in _jsonl(alone)}
    got = {r["category"]: r["accuracy"] for r in rows if r["composition"] == "IDF-S / BERTScore F"}
    assert got == want
    against = {r["composition"]: r["against"] for r in rows if r["category"] == "all"}
    assert against["IDF-S / WMD1"] == "Vanilla / WMD1" and against["IDF-S / BERTScore F"] == "Vanilla / BERTScore F"
    assert against["Vanilla / WMD1"] is None
    table = (out / "table.md").read_text(encoding="utf-8")
    header = next(line for line in table.splitlines() if line.startswith("| Composition"))
    k = header.split(" | ").index(next(c for c in header.split(" | ") if c.startswith("all (n=")))
    column = {line.split(" | ")[0][2:]: line.split(" | ")[k] for line in table.splitlines()
              if line.startswith("| ") and line != header and "skipped" not in line}
    assert len(column) >= 4
    best = max(float(v.strip("*↑↓")) for v in column.values())
    assert {name for name, v in column.items() if v.startswith("**")} == \
        {name for name, v in column.items() if float(v.strip("*↑↓")) == best}


@pytest.mark.slow  # a whole grid: out of the edit loop's tier, in CI's
def test_ablate_challenge_stops_at_a_missing_model_unless_told_to_skip(set_path: Path, tiny_bert_dir: str,
                                                                      tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    grid = tmp_path / "grid.toml"
    text = GRID.format(model=tiny_bert_dir).replace('"idf-L"}]', '"idf-L"}, {name = "Other", model = "other"}]')
    grid.write_text(text + f'[models.other]\nmodel = "{missing}"\n', encoding="utf-8")
    out = tmp_path / "out"
    args = ("ablate", grid, "--challenge", set_path, "-o", out, "-q", "--bootstrap", 100)
    code, _, err = invoke(*args)
    line = grid.read_text(encoding="utf-8").splitlines().index(f'model = "{missing}"') + 1
    assert code == 1 and not out.exists()
    assert [e for e in err.splitlines() if "error" in e] == [
        f"alignscore: error: {grid}:{line}: models.other.model: no such model folder or file: {missing}; "
        "--skip-missing skips the runs that need it"]
    code, stdout, err = invoke(*args, "--skip-missing")
    assert code == 0, err
    assert "| Other / WMD1 | skipped [2] |" in stdout and f"[2] model {str(missing)!r} is not on this machine" in stdout


@pytest.mark.reference
def test_ablate_challenge_has_sacrebleu_rows(set_path: Path, tiny_bert_dir: str, tmp_path: Path) -> None:
    from helpers import needs

    sacrebleu = needs("sacrebleu")
    if sacrebleu is None:
        return
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID.format(model=tiny_bert_dir), encoding="utf-8")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(wmt16("de-en")["reference"][:50]) + "\n", encoding="utf-8")
    code, stdout, err = invoke("ablate", grid, "--challenge", set_path, "-o", tmp_path / "out", "-q",
                               "--bootstrap", 100, "--idf-corpus", corpus)
    assert code == 0, err
    assert "| IDF-L / WMD1 | " in stdout and "skipped" not in stdout
    items = read_items(set_path)
    bleu = sacrebleu.metrics.BLEU(effective_order=True)
    good = np.array([bleu.sentence_score(i.good, list(i.refs)).score for i in items if not i.control])
    bad = np.array([bleu.sentence_score(i.bad, list(i.refs)).score for i in items if not i.control])
    rows = _jsonl((tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8"))
    (row,) = [r for r in rows if r["composition"] == "sacreBLEU sentence BLEU" and r["category"] == "all"]
    assert row["accuracy"] == (good - bad > TIE_TOLERANCE).sum() / len(good)
    assert "tok:13a|smooth:exp" in row["signature"] and "tok:13a|smooth:exp" in stdout


def test_ablate_needs_one_of_data_or_challenge(set_path: Path, tmp_path: Path) -> None:
    code, _, err = invoke("ablate", Path(__file__).resolve().parents[2] / "ablations" / "table9.toml")
    assert_one_error(code, err, "--data DIR", "--challenge SET")


def test_docstring_examples_run() -> None:
    for module in (challenge_module, perturb_module):
        failures, tried = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)[:2]
        assert failures == 0 and tried > 0, module.__name__


def test_perturb_with_nothing_to_make_writes_nothing(tmp_path: Path, files) -> None:
    refs, cands = files("r.txt", ["a b"]), files("c.txt", ["cats sleep"])
    code, _, err = invoke("perturb", "-r", refs, "-c", cands, "--seed", 1, "-o", tmp_path / "s.jsonl",
                          "--kinds", "number")
    assert_one_error(code, err, "no kind (number) applies")
    assert not (tmp_path / "s.jsonl").exists()


def test_paired_bootstrap_of_a_difference_of_accuracies() -> None:
    rng = np.random.default_rng(0)
    a = (rng.random(400) < 0.9).astype(float)
    b = np.where(rng.random(400) < 0.5, a, 0.0)  # b is right only where a is, half as often
    t = bootstrap_mean_difference(a, b, resamples=500, seed=1)
    assert t.difference == pytest.approx(a.mean() - b.mean(), abs=1e-12)
    assert t.low <= t.difference <= t.high and t.low > 0 and t.p_value < 0.01
    same = bootstrap_mean_difference(a, a, resamples=500, seed=1)
    assert (same.difference, same.low, same.high, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    flipped = bootstrap_mean_difference(b, a, resamples=500, seed=1)
    assert (flipped.low, flipped.high) == pytest.approx((-t.high, -t.low), abs=1e-12)


# -- categories, repeats, extra fields and --by ------------------------------------------------------------
def _rows_by(out: str, *keys: str) -> dict[tuple, dict]:
    return {tuple(r[k] for k in keys): r for r in _jsonl(out)}


def test_surrounding_spaces_of_a_category_are_stripped(files, tiny_bert_dir: str) -> None:
    path = files("set.jsonl", [json.dumps(GOOD), json.dumps({**GOOD, "bad": "a dog sat", "category": " verb "})])
    code, out, err = invoke("challenge", path, "--model", tiny_bert_dir, "--layer", 2, "-q", "--format", "jsonl")
    assert code == 0, err
    assert sorted((r["category"], r["n"]) for r in _jsonl(out)) == [("all", 2), ("verb", 2)]


def test_repeated_items_are_counted_with_a_warning_or_dropped(files, tiny_bert_dir: str) -> None:
    other = {**GOOD, "bad": "a dog sat", "category": "noun"}
    path = files("set.jsonl", [json.dumps(GOOD), json.dumps(other), json.dumps({**GOOD, "id": "x"}), json.dumps(GOOD)])
    code, out, err = invoke("challenge", path, "--model", tiny_bert_dir, "--layer", 2, "-q", "--format", "jsonl")
    assert code == 0, err
    assert "alignscore: warning: 2 item(s) repeat an earlier one (line 3 repeats line 1, the id aside)" in err
    assert "--dedupe drops the repeats" in err
    assert _rows_by(out, "category")[("verb",)]["n"] == 3
    code, out, err = invoke("challenge", path, "--model", tiny_bert_dir, "--layer", 2, "-q", "--format", "jsonl",
                            "--dedupe")
    assert code == 0, err
    assert "dropped 2 item(s) that repeat an earlier one" in err and "repeat an earlier one (" not in err
    assert {k[0]: r["n"] for k, r in _rows_by(out, "category").items()} == {"verb": 1, "noun": 1, "all": 2}


def test_extra_fields_are_kept_and_written_back() -> None:
    from alignscore.evaluation.challenge import parse_item
    from alignscore.evaluation.perturb import item_json

    line = {"id": "3", "ref": "a b", "good": "a b", "bad": "b a", "category": "swap", "lp": "de-en",
            "system": {"name": "online-B", "year": 2016}}
    item = parse_item(line)
    assert item.fields == (("lp", "de-en"), ("system", {"name": "online-B", "year": 2016}))
    assert item.extra("lp") == "de-en" and item.extra("absent") is None
    assert item_json(item) == line


@pytest.fixture(scope="module")
def lp_set(set_path: Path) -> Path:
    """The perturbed set with a language pair per item: its source line's parity decides it."""
    lines = [json.loads(line) for line in set_path.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        line["lp"] = "de-en" if int(line["id"].split(":")[0]) % 2 else "cs-en"
    path = set_path.parent / "lp.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_by_lp_gives_each_language_pair_its_own_results(lp_set: Path, tiny_bert_dir: str, tmp_path: Path) -> None:
    common = ["--model", tiny_bert_dir, "--layer", 2, "--b", "--aligner wmd --n-gram 1", "--bootstrap", 100,
              "--seed", 5, "-q"]
    code, out, err = invoke("challenge", lp_set, *common, "--by", "lp", "--format", "jsonl")
    assert code == 0, err
    grouped = _rows_by(out, "lp", "composition", "category")
    assert {k[0] for k in grouped} == {"de-en", "cs-en"}
    lines = lp_set.read_text(encoding="utf-8").splitlines()
    for lp in ("de-en", "cs-en"):  # each pair's rows are what its items alone give
        subset = tmp_path / f"{lp}.jsonl"
        subset.write_text("".join(line + "\n" for line in lines if json.loads(line)["lp"] == lp), encoding="utf-8")
        code, alone, err = invoke("challenge", subset, *common, "--format", "jsonl")
        assert code == 0, err
        want = _rows_by(alone, "composition", "category")
        assert {k[1:] for k in grouped if k[0] == lp} == set(want)
        for key, row in want.items():
            got = grouped[(lp, *key)]
            assert (got["n"], got["correct"], got["ties"], got["kind"]) == (row["n"], row["correct"], row["ties"],
                                                                           row["kind"])
            for name in ("accuracy", "low", "high", "mean_change", "delta", "p_value"):
                assert got[name] == (None if row[name] is None else pytest.approx(row[name], abs=1e-6)), name
    out_tsv = tmp_path / "by.tsv"
    code, _, err = invoke("challenge", lp_set, *common, "--by", "lp", "-o", out_tsv)
    assert code == 0, err
    text = out_tsv.read_text(encoding="utf-8")
    assert ", by lp;" in text and "\ncomposition\tlp\tcategory\tn\taccuracy\t" in text
    assert "\nB\tcs-en\tall\t" in text and "\nA\tde-en\tall\t" in text


@pytest.mark.parametrize("by, needle", [
    ("lp", "--by lp: 1 item(s) have no 'lp' (the first on line 2): give every item the field"),
    ("category", "--by category: 'category' is a field of every item"),
    ("n", "--by n: the results have a column of that name"),
])
def test_by_a_field_some_items_lack_is_one_error(files, tiny_bert_dir: str, tmp_path: Path, by: str,
                                                 needle: str) -> None:
    path = files("set.jsonl", [json.dumps({**GOOD, "lp": "de-en", "n": 1}), json.dumps({**GOOD, "bad": "a dog sat"})])
    out = tmp_path / "out.tsv"
    code, stdout, err = invoke("challenge", path, "--model", tiny_bert_dir, "--layer", 2, "-q", "--by", by, "-o", out)
    assert_one_error(code, err, needle)
    assert not out.exists() and stdout == ""


def test_by_a_value_that_is_not_a_label_names_its_line(files, tiny_bert_dir: str) -> None:
    path = files("set.jsonl", [json.dumps({**GOOD, "lp": "de-en"}), json.dumps({**GOOD, "bad": "x", "lp": ["a"]})])
    code, _, err = invoke("challenge", path, "--model", tiny_bert_dir, "--layer", 2, "-q", "--by", "lp")
    assert_one_error(code, err, f"{path}:2: --by lp: the value ['a'] is not a one-line text")


def test_ablate_dedupe_is_for_challenge_sets(tmp_path: Path, tiny_bert_dir: str) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID.format(model=tiny_bert_dir), encoding="utf-8")
    code, _, err = invoke("ablate", grid, "--data", tmp_path, "--dedupe", "-o", tmp_path / "out", "-q")
    assert_one_error(code, err, "--dedupe applies with --challenge only")
    assert not (tmp_path / "out").exists()


def test_settle_repeats_keeps_the_first_of_each() -> None:
    from alignscore.evaluation.challenge import Item, repeats, settle_repeats

    a, b = Item(("r",), "g", "b", "c", "1", line=1), Item(("r",), "g", "x", "c", line=2)
    again = Item(("r",), "g", "b", "c", "other id", line=3)  # the id aside, the same item
    other_lp = Item(("r",), "g", "b", "c", fields=(("lp", "de-en"),), line=4)  # another field: another item
    items = [a, b, again, other_lp, a]
    assert repeats(items) == [(2, 0), (4, 0)]
    kept, n = settle_repeats(items, dedupe=True)
    assert kept == [a, b, other_lp] and n == 2
    with pytest.warns(UserWarning, match=r"2 item\(s\) repeat an earlier one \(line 3 repeats line 1"):
        assert settle_repeats(items) == (items, 2)
