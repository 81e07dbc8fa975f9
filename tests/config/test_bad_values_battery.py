"""A bad-input battery in the style of a fuzzer (hypothesis) over the CLI and the Python API, for
the classes layers, powers, baselines, OT options, presets, API types and idf over too few texts.

Every case ends in one of two ways: one clear error (CLI: non-zero exit, exactly one
``alignscore: error:`` line, no traceback, no "internal error"; API: an ``AlignScoreError``), or
finite scores (never NaN or infinity); and no input file changes. Where the rule for a valid
input is simple, the test also checks which of the two it must be. Tiny local models; a fixed
number of derandomised examples per class keeps the file fast and the same in CI.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import alignscore
from alignscore.aggregators import PowerMeans, SingleLayer
from alignscore.aligners import WMD, Greedy, Sinkhorn
from alignscore.cli import main
from alignscore.errors import AlignScoreError
from helpers import compose

REFS = ["the cat sat on the mat.", "people like foreign cars", "", "he said: it is unbelievable!"]
CANDS = ["a cat was sitting on the mat", "consumers prefer imported cars", "something", "he said it was incredible"]
NUM_LAYERS = 4  # the tiny BERT of conftest.py: layers 0..4

FAST = settings(max_examples=12, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("battery")
    paths = {"refs": folder / "refs.txt", "cands": folder / "cands.txt", "baseline": folder / "baseline.csv"}
    paths["refs"].write_text("\n".join(REFS) + "\n", encoding="utf-8")
    paths["cands"].write_text("\n".join(CANDS) + "\n", encoding="utf-8")
    return paths


def _digests(paths: list[Path]) -> dict[Path, str]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.exists()}


def cli(inputs: dict[str, Path], model: str, *args: str, valid: bool | None = None) -> list[dict[str, float]]:
    """Run ``alignscore score`` in-process on the battery's files and check the contract; returns
    the rows on success."""
    files = list(inputs.values())
    before = _digests(files)
    result = CliRunner().invoke(main, ["score", "-r", str(inputs["refs"]), "-c", str(inputs["cands"]),
                                       "--model", model, "-q", "--format", "jsonl", *args])
    assert _digests(files) == before, "an input file changed"
    err = result.stderr
    assert "Traceback" not in err and "internal error" not in err, (args, err)
    if result.exit_code == 0:
        assert valid is not False, f"accepted {args}"
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(rows) == len(CANDS)
        assert all(isinstance(v, float) and math.isfinite(v) for row in rows for v in row.values()), rows
        return rows
    assert valid is not True, f"refused {args}: {err}"
    errors = [ln for ln in err.splitlines() if ln.startswith("alignscore: error:")]
    assert result.exit_code in (1, 2) and len(errors) == 1, (args, err)  # 2: a value click's parsing refused
    assert result.stdout == ""
    return []


def finite_or_error(build_and_score: Any) -> bool:
    """Call it; True when it scored (every score finite), False when it raised an AlignScoreError."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # warnings are tested elsewhere; here: numbers and errors
            scores = build_and_score()
    except AlignScoreError as exc:
        assert str(exc).strip() and "\n" not in str(exc).strip(), repr(exc)
        return False
    for name, values in scores.metrics.items():
        assert torch.isfinite(values).all(), (name, values)
    return True


# -- layers ----------------------------------------------------------------------------------------
def _layer_ok(k: int) -> bool:
    return -NUM_LAYERS - 1 <= k <= NUM_LAYERS


@FAST
@given(k=st.integers(-9, 9), aligner=st.sampled_from(["greedy", "wmd"]))
def test_layer(inputs, tiny_bert_dir, k, aligner) -> None:
    cli(inputs, tiny_bert_dir, "--layer", str(k), "--aligner", aligner, valid=_layer_ok(k))


_layer_item = st.one_of(st.integers(-8, 8).map(lambda k: (str(k), [k])),
                        st.tuples(st.integers(0, 7), st.integers(0, 7)).map(
                            lambda ab: (f"{ab[0]}-{ab[1]}", list(range(ab[0], ab[1] + 1)) if ab[0] <= ab[1] else None)),
                        st.sampled_from([("", None), ("x", None), ("1.5", None), ("--2", None), ("3-", None)]))


@FAST
@given(items=st.lists(_layer_item, min_size=1, max_size=3))
def test_layers(inputs, tiny_bert_dir, items) -> None:
    spec = ",".join(text for text, _ in items)
    layers = [k for _, ks in items for k in (ks if ks is not None else [None])]
    valid = bool(layers) and None not in layers and all(_layer_ok(k) for k in layers)
    if spec.strip(", ") == "":
        valid = None  # an empty option is the option left out: either outcome is fine
    cli(inputs, tiny_bert_dir, "--aggregator", "pmeans", "--layers", spec, valid=valid)


# -- powers ----------------------------------------------------------------------------------------
_power = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                   st.sampled_from(["inf", "-inf", "+inf", "nan", "NaN", "0", "-0", "1", "1e400", "-1e400",
                                    "1e-400", "-1e-400", "200", "1000", "-15", "abc", ""]))


def _power_ok(text: str) -> bool:
    try:
        p = float(text)
    except ValueError:
        return False
    return p > 0 or p == -math.inf


@FAST
@given(powers=st.lists(_power, min_size=1, max_size=3), aligner=st.sampled_from(["greedy", "wmd", "sinkhorn"]))
def test_powers(inputs, tiny_bert_dir, powers, aligner) -> None:
    text = ",".join(powers)  # "" is the option left out (the default powers)
    cli(inputs, tiny_bert_dir, "--layers", "2-4", "--powers", text, "--aligner", aligner,
        valid=all(_power_ok(p) for p in powers) if text else None)


@FAST
@given(p=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5), st.booleans(), st.none(),
                   st.text(max_size=3)))
def test_powers_api(tiny_bert_dir, p) -> None:
    valid = isinstance(p, (int, float)) and not isinstance(p, bool) and (p > 0 or p == -math.inf)
    scorer = lambda: compose(alignscore.HFEncoder(tiny_bert_dir),  # noqa: E731
                                       PowerMeans((2, 3), (1.0, p))).score(CANDS, REFS)
    assert finite_or_error(scorer) == valid


# -- baselines -------------------------------------------------------------------------------------
_cell = st.one_of(st.floats(-2, 0.99).map(repr), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                  st.sampled_from(["1.0", "1", "0.999999", "nan", "-inf", "x", ""]))
_row = st.tuples(st.one_of(st.integers(0, 3).map(str), st.sampled_from(["-1", "2.0", "a", ""])), _cell, _cell, _cell)


def _row_ok(row: tuple[str, ...]) -> bool:
    try:
        layer = int(row[0])
        values = [float(c) for c in row[1:]]
    except ValueError:
        return False
    if layer < 0:
        return False
    return all(math.isfinite(v) and v < 1 for v in values)


@FAST
@given(rows=st.lists(_row, min_size=0, max_size=4), header=st.sampled_from(["LAYER,P,R,F", "LAYER,P,R", "P,R,F"]))
def test_baselines(inputs, tiny_bert_dir, rows, header) -> None:
    inputs["baseline"].write_text("\n".join([header] + [",".join(r) for r in rows]) + "\n", encoding="utf-8")
    rows_ok = all(_row_ok(r) for r in rows)
    layers = [int(r[0]) for r in rows] if rows_ok else []
    valid = header == "LAYER,P,R,F" and rows_ok and len(set(layers)) == len(layers) and 2 in layers
    cli(inputs, tiny_bert_dir, "--layer", "2", "--baseline", str(inputs["baseline"]), valid=valid)


# -- OT options ------------------------------------------------------------------------------------
@FAST
@given(aligner=st.sampled_from(["greedy", "wmd", "sinkhorn"]),
       reg=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e-3, 0.02, 0.5])),
       cost=st.sampled_from([None, "euclidean", "sqeuclidean"]), form=st.sampled_from([None, "1-d", "1/(1+d)"]),
       n_gram=st.sampled_from([None, "1", "2", "sentence", "0", "x"]))
def test_ot_options(inputs, tiny_bert_dir, aligner, reg, cost, form, n_gram) -> None:
    args = ["--layer", "3", "--aligner", aligner]
    for flag, value in (("--reg", reg), ("--cost", cost), ("--score-form", form), ("--n-gram", n_gram)):
        if value is not None:
            args += [flag, repr(value) if isinstance(value, float) else value]
    ot = aligner != "greedy"
    valid = ((reg is None or (aligner == "sinkhorn" and math.isfinite(reg) and reg >= 4000 * 2.0 ** -52))
             and (ot or (cost is None and form is None and n_gram is None))
             and n_gram not in ("0", "x"))
    rows = cli(inputs, tiny_bert_dir, *args, valid=valid)
    if rows and ot:
        assert all(row["score"] <= 1 + 1e-9 for row in rows)


# -- presets ---------------------------------------------------------------------------------------
_preset_kwargs = st.fixed_dictionaries({}, optional={
    "layer": st.one_of(st.integers(-7, 7), st.sampled_from(["4", True, 2.0, None])),
    "idf": st.booleans(),
    "special_tokens": st.sampled_from(["keep", "drop", "match-only", "all", 3]),
    "aggregator": st.sampled_from([SingleLayer(2), SingleLayer(9), PowerMeans((2, 3)), "single", None]),
    "aligner": st.sampled_from([Greedy(), WMD(), Sinkhorn(reg=0.05), "wmd"]),
    "weighting": st.sampled_from([alignscore.Uniform(), alignscore.IdfS(), "idf"]),
    "multi_ref": st.sampled_from(["max", "mean", "min"]),
    "batch_size": st.sampled_from([1, 3, 0, 2.5, True]),
    "n_gram": st.sampled_from([1, 2, "sentence", 0]),
    "colour": st.just("red"),
})


def _preset_kwargs_valid(preset: str, kw: dict) -> bool:
    """Whether the preset function takes ``kw`` (the tiny model has layers 0..4), by the rules the
    README states: each value of the right type and range, no unknown keyword, and no two
    settings that cannot go together."""
    layer, aggregator, aligner, n_gram = kw.get("layer"), kw.get("aggregator"), kw.get("aligner"), kw.get("n_gram")
    layer_ok = layer is None or (type(layer) is int and -5 <= layer <= 4)
    # the tiny model has no default layer: a single layer must come from somewhere (moverscore-v2's
    # preset names -1; moverscore-v1's power means need none, unless the single layer replaces them)
    single = aggregator == "single" or isinstance(aggregator, SingleLayer) or (
        aggregator is None and (preset == "bertscore" or layer is not None))
    layer_ok &= not single or layer is not None or isinstance(aggregator, SingleLayer) or (
        preset == "moverscore-v2" and aggregator in (None, "single"))
    if aggregator is not None and layer is not None:  # a layer is a setting of the single-layer aggregator only
        layer_ok &= aggregator == "single" or (isinstance(aggregator, SingleLayer) and aggregator.layer == layer)
    aggregator_ok = aggregator is None or aggregator == "single" or isinstance(aggregator, PowerMeans) or (
        isinstance(aggregator, SingleLayer) and aggregator.layer <= 4)
    ot = aligner not in (None,) and not isinstance(aligner, Greedy) or (aligner is None and preset != "bertscore")
    n_gram_ok = n_gram is None or (ot and n_gram in (1, 2, "sentence"))
    weighting = kw.get("weighting")
    weighting_ok = weighting is None or isinstance(weighting, (alignscore.Uniform, alignscore.IdfS))
    if preset == "bertscore" and kw.get("idf") and weighting is not None:  # idf=True means weighting idf-S
        weighting_ok &= isinstance(weighting, alignscore.IdfS)
    if preset != "bertscore" and kw.get("idf") is False and weighting is not None:
        weighting_ok = False  # idf=False and weighting= both set the weighting
    return ("colour" not in kw and layer_ok and aggregator_ok and n_gram_ok and weighting_ok
            and kw.get("special_tokens", "keep") in ("keep", "drop", "match-only")
            and kw.get("multi_ref", "max") in ("max", "mean")
            and kw.get("batch_size", 1) in (1, 3) and type(kw.get("batch_size", 1)) is int)


@FAST
@given(preset=st.sampled_from(["bertscore", "moverscore-v2", "moverscore-v1"]), kwargs=_preset_kwargs)
def test_presets(tiny_bert_dir, preset, kwargs) -> None:
    verdict = finite_or_error(lambda: alignscore.PRESET_FUNCTIONS[preset](model=tiny_bert_dir, **kwargs).score(
        CANDS, REFS))
    assert verdict == _preset_kwargs_valid(preset, kwargs), (preset, kwargs)


# -- API types -------------------------------------------------------------------------------------
_text = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=12)
_thing = st.one_of(_text, st.none(), st.integers(), st.floats(), st.binary(max_size=4), st.just("a\ud800b"),
                   st.lists(_text, max_size=2), st.dictionaries(_text, _text, max_size=1))


def _is_text(x: Any) -> bool:
    return isinstance(x, str) and "\ud800" not in x


@FAST
@given(cands=st.lists(st.one_of(_text, _thing), max_size=3), refs=st.lists(st.one_of(_text, _thing), max_size=3),
       as_generator=st.booleans())
def test_api_inputs(tiny_bert_dir, cands, refs, as_generator) -> None:
    scorer = alignscore.bertscore(tiny_bert_dir, layer=2)
    valid = (len(cands) == len(refs) and all(_is_text(c) for c in cands)
             and all(_is_text(r) or (isinstance(r, list) and r and all(_is_text(t) for t in r)) for r in refs))
    args = (iter(cands), iter(refs)) if as_generator else (cands, refs)
    assert finite_or_error(lambda: scorer.score(*args)) == valid


@FAST
@given(field=st.sampled_from(["batch_size", "token_budget", "layer", "multi_ref", "special_tokens"]),
       value=st.one_of(st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=4), st.none(), st.booleans()))
def test_api_settings(tiny_bert_dir, field, value) -> None:
    kwargs = {"layer": 2, field: value}
    verdict = finite_or_error(lambda: alignscore.bertscore(tiny_bert_dir, **kwargs).score(CANDS[:2], REFS[:2]))
    whole = type(value) is int  # bool is not an int here
    valid = {"batch_size": value is None or (whole and value >= 1),
             "token_budget": value is None or value == "auto" or (whole and value >= 1)
             or (isinstance(value, str) and value.isdigit() and int(value) >= 1),
             "layer": whole and -5 <= value <= 4,  # None: the tiny model has no default layer
             "multi_ref": value is None or value in ("max", "mean"),
             "special_tokens": value is None or value in ("match-only", "drop", "keep")}[field]
    assert verdict == valid, (field, value)


# -- idf over too few texts --------------------------------------------------------------------------
@FAST
@given(n=st.integers(1, 3), weighting=st.sampled_from(["idf-S", "idf-S+sep"]),
       aligner=st.sampled_from(["greedy", "wmd"]))
def test_idf_over_few_texts(tiny_bert_dir, n, weighting, aligner) -> None:
    scorer = compose(alignscore.HFEncoder(tiny_bert_dir), SingleLayer(2),
                               weighting=alignscore.IdfS(sep=weighting.endswith("sep")),
                               aligner=alignscore.ALIGNERS.build(aligner))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = scorer.score(CANDS[:n], [REFS[1]] * n)  # the same reference n times: every token in all of them
    assert all(torch.isfinite(v).all() and (v == 0).all() for v in scores.metrics.values())
    messages = [str(w.message) for w in caught]
    assert any("every token has idf 0" in m for m in messages) and not any("empty text" in m for m in messages)
