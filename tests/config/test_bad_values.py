"""Issue 11, numbers, parts and the Python API: each bad value is refused with one clear error
(CLI: one ``alignscore: error:`` line; API: an AlignScoreError), or scores are finite and
documented. Tiny local models."""

from __future__ import annotations

import json
import math
import warnings

import pytest
import torch
from click.testing import CliRunner

import alignscore
from alignscore.aggregators import PowerMeans, SingleLayer, power_mean
from alignscore.aligners import WMD, Greedy, PairBatch, Sinkhorn
from alignscore._ops import normalise_mass
from alignscore.aligners.transport import exact_plans, pairwise_cost, sinkhorn_plans
from alignscore.cli import main
from alignscore.cli.options import FLAGS
from alignscore.errors import AlignScoreError, ConfigError, InputError, NonFiniteError
from helpers import compose

REFS = ["the cat sat on the mat.", "people like foreign cars", "he said: it is unbelievable!"]
CANDS = ["a cat was sitting on the mat", "consumers prefer imported cars", "he said it was incredible"]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def one_error_line(code: int, err: str, *needles: str) -> str:
    """The CLI's contract for bad input: non-zero exit, exactly one error line, no traceback."""
    assert code != 0, err
    errors = [ln for ln in err.splitlines() if ln.startswith("alignscore: error:")]
    assert len(errors) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def jsonl_scores(out: str) -> list[dict[str, float]]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.fixture
def io(tmp_path) -> tuple[str, str]:
    refs, cands = tmp_path / "refs.txt", tmp_path / "cands.txt"
    refs.write_text("\n".join(REFS) + "\n", encoding="utf-8")
    cands.write_text("\n".join(CANDS) + "\n", encoding="utf-8")
    return str(refs), str(cands)


def score_cli(io: tuple[str, str], model: str, *args: str) -> tuple[int, str, str]:
    refs, cands = io
    return run("score", "-r", refs, "-c", cands, "--model", model, "-q", "--format", "jsonl", *args)


def unit_rows(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True)


def batch(seed: int = 0, n: int = 7, m: int = 6, pairs: int = 3) -> PairBatch:
    gen = torch.Generator().manual_seed(seed)
    ref, cand = unit_rows(torch.randn(pairs, n, 8, generator=gen)), unit_rows(torch.randn(pairs, m, 8, generator=gen))
    return PairBatch(ref, cand,
                     torch.rand(pairs, n, generator=gen) + 0.1, torch.rand(pairs, m, generator=gen) + 0.1,
                     torch.ones(pairs, n, dtype=torch.bool), torch.ones(pairs, m, dtype=torch.bool))


# -- 1. power means ---------------------------------------------------------------------------
@pytest.mark.parametrize("p", [math.nan, 0, 0.0, -10, -15.0, -1e-9, True, "2", None])
def test_power_means_refuse_exponents_where_they_are_not_defined(p) -> None:
    with pytest.raises(ConfigError, match="powers: "):
        PowerMeans(powers=(1.0, p))
    if not isinstance(p, (str, type(None))):
        with pytest.raises(ConfigError):
            power_mean(torch.ones(2, 3), p)


def test_power_means_accept_inf_and_positive_exponents() -> None:
    agg = PowerMeans(layers=[-2, -1], powers=[-math.inf, 0.5, 2, 1000, math.inf])
    assert agg.layers == (-2, -1) and agg.powers == (-math.inf, 0.5, 2.0, 1000.0, math.inf)
    assert "p=-inf,0.5,2,1000,inf" in agg.resolve(4).signature()
    with pytest.raises(ConfigError, match="at least one"):
        PowerMeans(powers=())


@pytest.mark.parametrize("p", [200.0, 1000.0, 1e6])
def test_large_powers_neither_underflow_nor_overflow(p: float) -> None:
    # components of unit vectors in a few hundred dimensions: 0.1 ** 200 is 0 in float32
    x = torch.tensor([[0.05, -0.30, 0.10], [0.20, -0.10, 0.12], [0.15, 0.02, -0.04]], dtype=torch.float32)
    m = power_mean(x, p)
    assert torch.isfinite(m).all()
    # M_p = s * M_p(x / s), in float64 without the scaling as the reference
    x64 = x.double()
    s = x64.abs().amax(0)
    y = x64 / s
    t = (y.sign() * y.abs() ** p).mean(0)
    ref = s * t.sign() * t.abs() ** (1 / p)
    assert torch.allclose(m.double(), ref, rtol=1e-5, atol=0)
    assert m[0] > 0.19 and m[1] < -0.29  # close to the signed largest component, not 0


def test_power_means_are_scale_equivariant_and_match_the_formula() -> None:
    x = torch.tensor([[1.0, -2.0], [3.0, 4.0], [-5.0, 0.5]], dtype=torch.float64)
    for p in (0.5, 2.0, 3.0, 7.0):
        m = (x.sign() * x.abs() ** p).mean(0)
        assert torch.allclose(power_mean(x, p), m.sign() * m.abs() ** (1 / p))
        assert torch.allclose(power_mean(1e-30 * x, p), 1e-30 * power_mean(x, p))
    assert torch.equal(power_mean(torch.zeros(3, 2), 5.0), torch.zeros(2))


@pytest.mark.parametrize("powers", ["nan", "-15", "0", "-inf,-2,inf", "1,NaN"])
@pytest.mark.parametrize("aligner", ["greedy", "wmd"])
def test_cli_refuses_undefined_powers(io, tiny_bert_dir, powers, aligner) -> None:
    code, out, err = score_cli(io, tiny_bert_dir, "--powers", powers, "--aligner", aligner)
    one_error_line(code, err, "--powers")
    assert out == ""


def test_cli_large_powers_give_real_scores(io, tiny_bert_dir) -> None:
    code, out, err = score_cli(io, tiny_bert_dir, "--aggregator", "pmeans", "--layers", "2-4", "--powers", "200,1000")
    assert code == 0, err
    f1 = [r["f1"] for r in jsonl_scores(out)]
    code, out, err = score_cli(io, tiny_bert_dir, "--aggregator", "pmeans", "--layers", "2-4", "--powers", "inf,inf")
    assert code == 0, err
    # M_p of three values is within a factor 3^(1/p) of their max: large p is the max, not the 0 of underflow
    assert f1 == pytest.approx([r["f1"] for r in jsonl_scores(out)], abs=0.02), f1


def test_exact_and_entropic_plans_refuse_a_non_finite_cost() -> None:
    b = batch()
    cost = pairwise_cost(b.ref, b.cand, "euclidean")
    cost[0, 1, 1] = float("nan")
    a, m = normalise_mass(b.ref_mass.double()), normalise_mass(b.cand_mass.double())
    for solve in (exact_plans, lambda c, x, y: sinkhorn_plans(c, x, y, 0.05)):
        with pytest.raises(NonFiniteError, match="NaN or infinity"):
            solve(cost, a, m)


# -- 2. Sinkhorn says when it did not converge -------------------------------------------------
def test_sinkhorn_that_stops_at_max_iter_says_so() -> None:
    b = batch(seed=3, pairs=4)
    with pytest.warns(UserWarning, match=r"sinkhorn did not converge for [1-4] of 4 pair\(s\).*"
                                         r"raise max_iter or reg") as record:
        scores = Sinkhorn(reg=1e-4, max_iter=30)(b)["score"]
    assert torch.isfinite(scores).all()
    assert "max_iter=30" in str(record[0].message) and "tol 1e-06" in str(record[0].message)


@pytest.mark.parametrize("reg, dtype", [(1e-12, "float64"), (5e-4, "float32")])
def test_sinkhorn_at_the_smallest_reg_gives_finite_scores_or_says_why(reg, dtype) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # it may not converge: that is said, and tested above
        scores = Sinkhorn(reg=reg, sinkhorn_dtype=dtype, max_iter=50)(batch(seed=6))["score"]
    assert torch.isfinite(scores).all()


def test_sinkhorn_result_reports_each_pairs_marginal_error() -> None:
    b = batch(seed=4, pairs=3)
    b.ref_mass[2] = 0.0  # an empty pair: no plan, error 0
    cost = pairwise_cost(b.ref, b.cand, "euclidean")
    a, m = normalise_mass(b.ref_mass.double()), normalise_mass(b.cand_mass.double())
    short = sinkhorn_plans(cost, a, m, reg=1e-3, max_iter=5, tol=1e-9)
    row_err = (short.plan.sum(2) - a).abs().sum(1)
    assert torch.allclose(short.error[:2], row_err[:2]) and short.error[2] == 0
    assert short.converged.tolist() == [False, False, True] and short.iterations == 5
    done = sinkhorn_plans(cost, a, m, reg=0.05, max_iter=5000, tol=1e-9)
    assert done.converged.all() and (done.error < 1e-9).all() and done.iterations < 5000
    assert torch.allclose(done.plan.sum(1)[:2], m[:2], atol=1e-12)  # columns exact


def test_sinkhorn_default_converges_and_stays_close_to_exact() -> None:
    b = batch(seed=5, n=12, m=11, pairs=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "did not converge" warning
        approx = Sinkhorn()(b)["score"]
    exact = WMD()(b)["score"]
    assert (approx <= exact + 1e-9).all() and (exact - approx).max() < 5e-3


@pytest.mark.parametrize("kwargs", [{"reg": math.nan}, {"reg": math.inf}, {"reg": 0.0}, {"reg": -1.0}, {"reg": "0.1"},
                                    {"reg": 5e-324}, {"reg": 1e-13}, {"reg": 1e-4, "sinkhorn_dtype": "float32"},
                                    {"tol": 0.0}, {"tol": math.nan}, {"max_iter": 2.5}, {"max_iter": 0}])
def test_sinkhorn_settings_are_checked(kwargs) -> None:
    with pytest.raises(ConfigError):
        Sinkhorn(**kwargs)


# -- 3. the OT aligners' options on the command line -----------------------------------------
def test_cli_reg_cost_and_score_form_change_the_scores_as_documented(io, tiny_bert_dir) -> None:
    def scores(*args: str) -> tuple[list[float], str]:
        code, out, err = score_cli(io, tiny_bert_dir, "--layer", "3", *args)
        assert code == 0, err
        sig = next(ln for ln in err.splitlines() if ln.startswith("signature: "))
        return [r["score"] for r in jsonl_scores(out)], sig

    exact, sig = scores("--aligner", "wmd")
    assert "align:wmd(euclidean,1-d,n=1)" in sig
    loose, sig = scores("--aligner", "sinkhorn", "--reg", "0.1")
    assert "reg=0.1," in sig
    tight, sig = scores("--aligner", "sinkhorn", "--reg", "0.01")
    assert "reg=0.01," in sig
    assert max(abs(t - e) for t, e in zip(tight, exact)) < min(abs(t - e) for t, e in zip(loose, exact))
    inverse, sig = scores("--aligner", "wmd", "--score-form", "1/(1+d)")
    assert "align:wmd(euclidean,1/(1+d),n=1)" in sig
    assert inverse == pytest.approx([1 / (1 + (1 - s)) for s in exact], abs=1e-9)
    squared, sig = scores("--aligner", "wmd", "--cost", "sqeuclidean")
    assert "align:wmd(sqeuclidean,1-d,n=1)" in sig and squared != pytest.approx(exact, abs=1e-6)
    for s, e in zip(squared, exact):  # unit vectors: d_e^2 <= d_sq <= 2 d_e (Jensen; |x - y| <= 2)
        assert (1 - e) ** 2 - 1e-9 <= 1 - s <= 2 * (1 - e) + 1e-9, (s, e)
    preset, sig = scores("--preset", "moverscore-v2", "--aligner", "sinkhorn", "--reg", "0.05")
    assert "align:sinkhorn(euclidean,1-d,n=1,reg=0.05," in sig  # the preset's cost is kept


@pytest.mark.parametrize("args, needle", [
    (["--reg", "0.1"], "--reg: applies to aligner baryscore or sinkhorn, not to aligner greedy (the default)"),
    (["--cost", "sqeuclidean"], "--cost: applies to aligner sinkhorn or wmd, not to aligner greedy"),
    (["--score-form", "1/(1+d)"], "--score-form: applies to aligner baryscore or sinkhorn or wmd, not to aligner greedy"),
    (["--aligner", "wmd", "--reg", "0.1"], "--reg: applies to aligner baryscore or sinkhorn, not to aligner wmd (--aligner)"),
    (["--preset", "moverscore-v2", "--reg", "0.1"], "not to aligner wmd (preset moverscore-v2: aligner)"),
    (["--aligner", "sinkhorn", "--reg", "0"], "--reg: expected a number > 0, not 0.0"),
    (["--aligner", "sinkhorn", "--reg", "nan"], "--reg: expected a number > 0, not nan"),
    (["--aligner", "sinkhorn", "--reg", "-inf"], "--reg: expected a number > 0, not -inf"),
])
def test_cli_ot_options_that_do_not_apply_are_one_error(io, tiny_bert_dir, args, needle) -> None:
    code, out, err = score_cli(io, tiny_bert_dir, "--layer", "3", *args)
    one_error_line(code, err, needle)


# -- 7. layers and empty input ---------------------------------------------------------------
def test_layer_0_alone_is_the_embedding_layer(tiny_bert_dir) -> None:
    from transformers import AutoModel

    enc = alignscore.HFEncoder(tiny_bert_dir, device_name="cpu")
    ids = torch.tensor([[2, 40, 41, 42, 3]])
    mask = torch.ones_like(ids)
    with torch.no_grad():
        hidden = AutoModel.from_pretrained(tiny_bert_dir).eval()(input_ids=ids, attention_mask=mask,
                                                                  output_hidden_states=True).hidden_states
    assert torch.allclose(enc.forward(ids, mask, [0])[0], hidden[0], atol=1e-6)


@pytest.mark.parametrize("args, signature", [(["--layer", "0"], "layers:L0|"), (["--layer", "-5"], "layers:L0|"),
                                             (["--aggregator", "pmeans", "--layers", "0"], "layers:pmeans(L0;"),
                                             (["--aggregator", "pmeans", "--layers", "0", "--aligner", "wmd"],
                                              "layers:pmeans(L0;")])
def test_cli_layer_0_scores(io, tiny_bert_dir, args, signature) -> None:
    code, out, err = score_cli(io, tiny_bert_dir, *args)
    assert code == 0, err
    assert signature in err
    rows = jsonl_scores(out)
    options = {a[2:].replace("-", "_"): v for a, v in zip(args[::2], args[1::2])}  # the same options, as text
    want = alignscore.build(alignscore.run_spec({"model": tiny_bert_dir, **options}, FLAGS)).score(CANDS, REFS)
    assert len(rows) == 3
    for name in want.metrics:
        assert [r[name] for r in rows] == pytest.approx(want[name].tolist(), abs=1e-6), name


@pytest.mark.parametrize("args, needle", [
    (["--layers", "5-3"], "the range 5-3 is empty"),
    (["--layers", "1,4-2"], "the range 4-2 is empty"),
    (["--layers", "x"], "--layers: cannot read 'x' as whole numbers"),
    (["--layer", "5"], "layer 5 does not exist"),
    (["--layer", "-6"], "layer -6 does not exist"),
    (["--aggregator", "pmeans", "--layers", "-6,1"], "layer -6 does not exist"),
])
def test_cli_bad_layers_are_one_error(io, tiny_bert_dir, args, needle) -> None:
    code, out, err = score_cli(io, tiny_bert_dir, *args)
    one_error_line(code, err, needle)


@pytest.mark.parametrize("aligner", [Greedy(), WMD(), Sinkhorn()])
def test_scoring_no_candidates_gives_empty_scores(tiny_bert_dir, aligner) -> None:
    scorer = compose(alignscore.HFEncoder(tiny_bert_dir), SingleLayer(2), aligner=aligner)
    scores = scorer.score([], [])
    assert len(scores) == 0 and list(scores.metrics) == list(aligner.metrics)
    assert all(v.shape == (0,) for v in scores.metrics.values())
    assert scores.best_reference.shape == (0,) and scores.empty.shape == (0,)
    assert str(scores.signature).startswith("model:")
    with pytest.raises(InputError, match="no candidates"):
        scores.means()


# -- 9. Python API input types ---------------------------------------------------------------
@pytest.mark.parametrize("cands, refs, needle", [
    ([None, "a"], ["a", "b"], "candidate 0 is NoneType None, not a text"),
    (["a", 3], ["a", "b"], "candidate 1 is int 3, not a text"),
    (["a", b"b"], ["a", "b"], "candidate 1 is bytes b'b', not a text"),
    (["a", "b\ud800c"], ["a", "b"], "candidate 1 is not valid Unicode: character 1 is a lone surrogate"),
    (["a", "b"], ["a", None], "reference 1 is NoneType None, not a text"),
    (["a", "b"], ["a", 7], "reference 1 is int 7"),
    (["a", "b"], ["a", b"b"], "reference 1 is bytes"),
    (["a", "b"], ["a", ["x", 2.5]], "reference group 1, item 1 is float 2.5"),
    (["a", "b"], ["a", ["x", "\udfff"]], "reference group 1, item 1 is not valid Unicode"),
    (["a", "b"], ["a", []], "candidate 1 has no reference"),
    (["a", "b"], ["a"], "2 candidates but 1 references"),
    (None, ["a"], "candidates must be a list of texts, not NoneType"),
    ("a text", ["a"], "candidates must be a list of texts, not str"),
    (["a"], 5, "references must be a list of texts, not int"),
])
def test_bad_api_inputs_are_input_errors(tiny_bert_dir, cands, refs, needle) -> None:
    scorer = alignscore.bertscore(tiny_bert_dir, layer=2)
    with pytest.raises(InputError) as info:
        scorer.score(cands, refs)
    assert needle in str(info.value)


def test_generators_are_read_once(tiny_bert_dir) -> None:
    scorer = alignscore.bertscore(tiny_bert_dir, layer=2)
    listed = scorer.score(CANDS, [[r, c] for r, c in zip(REFS, CANDS)])
    generated = scorer.score((c for c in CANDS), ((r, c) for r, c in zip(REFS, CANDS)))
    assert torch.equal(listed.f1, generated.f1) and torch.equal(listed.best_reference, generated.best_reference)


@pytest.mark.parametrize("build, needle", [
    (lambda m: alignscore.bertscore(m, layer="4"), "bertscore(): layer=: expected an integer, not '4'"),
    (lambda m: alignscore.bertscore(m, layer=True), "layer=: expected an integer, not True"),
    (lambda m: alignscore.bertscore(m, layer=2.0), "layer=: expected an integer, not 2.0"),
    (lambda m: alignscore.bertscore(m, layer=2, batch_size=2.5), "batch_size=: expected an integer >= 1, not 2.5"),
    (lambda m: alignscore.bertscore(m, layer=2, batch_size=0), "batch_size=: expected an integer >= 1, not 0"),
    (lambda m: alignscore.bertscore(m, layer=2, token_budget=True), "token_budget=: expected an integer >= 1 or one"),
    (lambda m: compose(alignscore.HFEncoder(m), aligner="wmd"), "aligner must be an instance of Aligner"),
    (lambda m: compose(m), "encoder must be an instance of Encoder"),
    (lambda m: compose(alignscore.HFEncoder(m), filters=["rm"]), "filters must be a list of TokenFilter"),
    (lambda m: compose(alignscore.HFEncoder(m), baseline="b.csv"), "baseline must be an instance of Baseline"),
    (lambda m: PowerMeans(layers=(1, "2")), "layers: expected a list of integers, not '2'"),
    (lambda m: PowerMeans(layers=3), "layers: expected a list of integers, not 3"),
])
def test_bad_part_settings_are_config_errors(tiny_bert_dir, build, needle) -> None:
    with pytest.raises(ConfigError) as info:
        build(tiny_bert_dir)
    assert needle in str(info.value)
    assert isinstance(info.value, AlignScoreError)


# -- 4. baselines ----------------------------------------------------------------------------
def _baseline_file(tmp_path, text: str) -> str:
    path = tmp_path / "base.tsv"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("rows, line, needle", [
    ("0,0.3,0.3,0.3\n4,1.0,1.0,1.0\n", 3, "layer 4: the precision baseline 1.0 is not below 1"),
    ("0,0.3,0.3,0.3\n1,0.5,2.5,0.4\n", 3, "layer 1: the recall baseline 2.5 is not below 1"),
    ("0,0.3,nan,0.3\n", 2, "the recall baseline nan is not a finite number"),
    ("0,0.3,0.3,-inf\n", 2, "the f1 baseline -inf is not a finite number"),
    ("0,0.3,0.3,0.3\n\n0,0.4,0.4,0.4\n", 4, "layer 0 has a second row (the first is on line 2)"),
    ("1.5,0.3,0.3,0.3\n", 2, "an integer layer and three numbers"),
    ("x,0.3,0.3,0.3\n", 2, "an integer layer and three numbers"),
    ("0,0.3,0.3\n", 2, "an integer layer and three numbers"),
    ("", None, "has no rows"),
])
def test_bad_baseline_rows_are_refused_with_file_and_line(tmp_path, rows, line, needle) -> None:
    path = _baseline_file(tmp_path, "LAYER,P,R,F\n" + rows)
    with pytest.raises(InputError) as info:
        alignscore.Baseline.read(path)
    where = f"{path}:{line}: " if line else f"{path}: "
    assert str(info.value).startswith(where) and needle in str(info.value), str(info.value)


def test_baseline_rows_are_taken_by_their_layer_column(tmp_path) -> None:
    path = _baseline_file(tmp_path, "LAYER,P,R,F\n2,0.2,0.2,0.2\n0,0.5,0.6,0.55\n 1 , 0.1 , 0.1 , 0.1 \n")
    base = alignscore.Baseline.read(path)
    assert base.values(0) == {"precision": 0.5, "recall": 0.6, "f1": 0.55}
    assert base.values(2)["f1"] == 0.2 and base.values(1)["recall"] == 0.1
    with pytest.raises(ConfigError, match=r"no row for layer 7 \(it has layers 0..2\)"):
        base.values(7)
    gappy = alignscore.Baseline.read(_baseline_file(tmp_path, "LAYER,P,R,F\n0,0.5,0.5,0.5\n3,0.2,0.2,0.2\n"))
    with pytest.raises(ConfigError, match=r"no row for layer 1 \(it has layers 0, 3\)"):
        gappy.values(1)


def test_bert_scores_own_baseline_files_read_as_before() -> None:
    import csv
    from pathlib import Path

    import bert_score

    files = sorted((Path(bert_score.__file__).parent / "rescale_baseline").glob("*/*.tsv"))
    assert len(files) > 50
    for path in files:
        table = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
        base = alignscore.Baseline.read(path)
        assert sorted(base.rows) == list(range(len(table) - 1)), path
        for k, row in enumerate(table[1:]):  # bert_score reads row k as layer k
            assert base.values(k) == dict(zip(("precision", "recall", "f1"), map(float, row[1:]))), path


@pytest.mark.parametrize("rows", [{4: {"f1": 1.0}}, {0: {"f1": math.nan}}, {"0": {"f1": 0.3}}, {}])
def test_baselines_built_in_python_are_checked(rows) -> None:
    with pytest.raises(ConfigError):
        alignscore.Baseline(rows)


def test_cli_bad_baseline_is_one_error_line(io, tiny_bert_dir, tmp_path) -> None:
    path = _baseline_file(tmp_path, "LAYER,P,R,F\n0,0.3,0.3,0.3\n1,0.3,0.3,0.3\n2,1.0,1.0,1.0\n")
    code, out, err = score_cli(io, tiny_bert_dir, "--layer", "2", "--baseline", path)
    one_error_line(code, err, f"{path}:4:", "not below 1")
    path = _baseline_file(tmp_path, "LAYER,P,R,F\n0,0.3,0.3,0.3\n1,0.3,0.3,0.3\n2,0.4,0.4,0.4\n")
    code, out, err = score_cli(io, tiny_bert_dir, "--layer", "3", "--baseline", path)
    one_error_line(code, err, "no row for layer 3 (it has layers 0..2)")


def test_baseline_of_lines_that_differ_only_in_whitespace_is_refused(tmp_path, tiny_bert_dir) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat\n  the cat sat\nthe cat sat \t\n\n", encoding="utf-8")
    out = tmp_path / "b.tsv"
    code, _, err = run("baseline", "--model", tiny_bert_dir, "--corpus", str(corpus), "-o", str(out),
                       "--pairs", "20", "-q")
    one_error_line(code, err, "at least two different non-empty lines")
    assert not out.exists()
    # whitespace variants of one line are never drawn as a pair of different lines
    corpus.write_text("the cat sat\n  the cat sat\na dog ran  \n", encoding="utf-8")
    base = alignscore.compute_baseline(alignscore.HFEncoder(tiny_bert_dir), corpus.read_text().splitlines(),
                                       pairs=40)
    assert all(b < 0.999 for row in base.rows.values() for b in row.values())


# -- 5. why a pair has nothing to align ---------------------------------------------------------
def _warnings_of(fn) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_idf_from_one_reference_says_why_everything_scores_0(tiny_bert_dir) -> None:
    scorer = alignscore.bertscore(tiny_bert_dir, layer=2, idf=True)
    found = []
    messages = _warnings_of(lambda: found.append(scorer.score(["consumers prefer imported cars"],
                                                              ["people like foreign cars"])))
    assert found[0].f1.tolist() == [0.0]
    assert len(messages) == 1, messages
    assert "1 pair(s) have a text whose every token has idf 0" in messages[0]
    assert "idf from the 1 reference sentence(s)" in messages[0] and "idf-L" in messages[0]
    assert "empty text" not in messages[0]


def test_the_three_reasons_for_nothing_to_align_are_told_apart(tiny_bert_dir) -> None:
    scorer = compose(alignscore.HFEncoder(tiny_bert_dir), SingleLayer(2),
                               filters=(alignscore.FILTERS.build("rm"),))
    messages = _warnings_of(lambda: scorer.score(["a cat", "a cat", "a cat", "a cat"],
                                                 ["", "  ", "!!! ?", "the cat"]))
    assert messages == ["2 pair(s) have an empty text; they score 0",
                        "1 pair(s) have a text that the token roles (special=match-only+rm) left empty (every token "
                        "taken out); they score 0"]
    sep = compose(alignscore.HFEncoder(tiny_bert_dir), SingleLayer(2), weighting=alignscore.IdfS(sep=True))
    messages = _warnings_of(lambda: sep.score(["a cat"], ["the cat"]))
    assert len(messages) == 1 and "candidate idf from the 1 candidate(s)" in messages[0]


def test_show_says_why_the_figure_is_empty(tiny_bert_dir) -> None:
    code, out, err = run("show", "-r", "people like foreign cars", "-c", "consumers prefer imported cars",
                         "--model", tiny_bert_dir, "--preset", "moverscore-v2")
    assert code == 0, err
    warned = [ln for ln in err.splitlines() if ln.startswith("alignscore: warning:")]
    assert len(warned) == 1 and "every token has idf 0 (idf-S+sep" in warned[0], err
    assert "--weighting idf-L --idf-corpus FILE" in warned[0] and "empty text" not in err


# -- 6. undefined correlations are never shown as numbers --------------------------------------
def test_spearman_is_undefined_for_constant_or_non_finite_scores() -> None:
    from alignscore.evaluation.agreement import spearman

    x = torch.tensor([0.3, 0.1, 0.2, 0.5])
    assert spearman(x, torch.full((4,), 0.7)) is None
    assert spearman(torch.tensor([0.3, float("nan"), 0.2, 0.5]), x) is None
    assert spearman(x, -x) == pytest.approx(-1.0)


def test_diff_of_constant_scores_prints_rho_as_undefined(tmp_path, tiny_bert_dir) -> None:
    refs, cands = tmp_path / "refs.txt", tmp_path / "blank.txt"
    refs.write_text("the cat sat\na dog ran home\npeople like cars\n", encoding="utf-8")
    cands.write_text("\n \n\n", encoding="utf-8")  # every pair has an empty side: every score is 0
    code, out, err = run("diff", "-r", str(refs), "-c", str(cands), "--model", tiny_bert_dir, "--layer", "2",
                         "--a", "--aligner greedy", "--b", "--aligner wmd", "--top", "0", "-q")
    assert code == 0, err
    assert "Spearman rho(A f1, B score) = undefined (A and B: all scores equal)" in out
    assert "nan" not in out.lower()


def _daseg(folder, refs: list[str], cands: list[str], human: list[str]):
    folder.mkdir()
    for kind, lines in (("reference", refs), ("mt-system", cands), ("human", human)):
        (folder / f"DAseg.newstest2016.{kind}.de-en").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _grid(tmp_path, model: str):
    grid = tmp_path / "g.toml"
    grid.write_text(f'title = "t"\n[models.base]\nmodel = "{model}"\nlayer = 2\n[[columns]]\nname = "F"\n'
                    'aligner = "greedy"\n[[columns]]\nname = "WMD1"\naligner = "wmd"\n[[rows]]\nname = "Vanilla"\n',
                    encoding="utf-8")
    return grid


SEGMENTS = ["the cat sat on the mat", "a dog ran home", "people like foreign cars", "he said it was fine",
            "it rained all day"]


@pytest.mark.parametrize("human, needle", [(["0.5"] * 5, "every human score is 0.5"),
                                           (["0.1", "nan", "0.3", "0.4", "0.2"], "human.de-en:2: not a finite number"),
                                           (["0.1", "inf", "0.3", "0.4", "0.2"], "human.de-en:2: not a finite number")])
def test_ablate_refuses_human_scores_without_a_correlation(tmp_path, tiny_bert_dir, human, needle) -> None:
    data = _daseg(tmp_path / "data", SEGMENTS, SEGMENTS[::-1], human)
    out = tmp_path / "out"
    code, _, err = run("ablate", str(_grid(tmp_path, tiny_bert_dir)), "--data", str(data), "-o", str(out), "-q")
    one_error_line(code, err, needle, "DAseg.newstest2016.human.de-en")
    assert not out.exists()


def test_ablate_shows_cells_with_constant_scores_as_undefined(tmp_path, tiny_bert_dir) -> None:
    import csv

    # blank translations: every pair has an empty side, so every cell scores 0 throughout
    data = _daseg(tmp_path / "data", SEGMENTS, [""] * 5, ["0.1", "-0.4", "0.9", "0.3", "0.0"])
    out = tmp_path / "out"
    code, stdout, err = run("ablate", str(_grid(tmp_path, tiny_bert_dir)), "--data", str(data), "-o", str(out),
                            "--bootstrap", "20", "--correlation", "pearson", "--correlation", "kendall", "-q")
    assert code == 0, err
    table = (out / "table.md").read_text(encoding="utf-8")
    assert "| Vanilla | F | undefined [1] | — |" in table
    assert "[1] the cell's scores are all equal: the correlation is undefined" in table
    rows = list(csv.DictReader((out / "results.csv").open(encoding="utf-8")))
    assert len(rows) == 4 and all(r["status"] == "undefined: the cell's scores are all equal: the correlation is "
                                                  "undefined" and r["r"] == "" and r["p_value"] == "" for r in rows)
    assert all(r["ci_low"] == "" and r["not_beaten"] == "" for r in rows)
    for text in (table, (out / "results.csv").read_text(encoding="utf-8"), stdout):
        assert "nan" not in text.lower()


# -- 8. presets: every part can be overridden by keyword ----------------------------------------
@pytest.mark.parametrize("preset, kwargs, expect", [
    ("bertscore", {"layer": 2, "special_tokens": "drop"}, "tokens:special=drop|"),
    ("bertscore", {"layer": 2, "aligner": Sinkhorn()}, "align:sinkhorn(euclidean"),
    ("bertscore", {"aggregator": PowerMeans((1, 2))}, "layers:pmeans(L1,2;"),
    ("bertscore", {"layer": 2, "filters": (alignscore.FILTERS.build("rm"),), "multi_ref": "mean"},
     "special=match-only+rm|w:none|align:greedy(cos)|refs:mean"),
    ("moverscore-v2", {"aggregator": SingleLayer(2)}, "layers:L2|tokens:special=keep+ms2-punct"),
    ("moverscore-v2", {"special_tokens": "drop", "weighting": alignscore.Uniform()}, "special=drop+ms2-punct|w:none"),
    ("moverscore-v2", {"multi_ref": "max", "aligner": Sinkhorn(reg=0.05)}, "reg=0.05,"),
    ("moverscore-v1", {"aggregator": SingleLayer(1), "filters": ()}, "layers:L1|tokens:special=keep+rm|"),
    ("moverscore-v1", {"weighting": alignscore.Uniform(), "special_tokens": "match-only"},
     "special=match-only+rm|w:none"),
])
def test_preset_parts_are_overridden_by_keyword(tiny_bert_dir, preset, kwargs, expect) -> None:
    scorer = alignscore.PRESET_FUNCTIONS[preset](model=tiny_bert_dir, **kwargs)
    assert expect in str(scorer.signature())
    scores = scorer.score(CANDS, REFS)
    assert all(torch.isfinite(v).all() for v in scores.metrics.values())
    if not isinstance(scorer.aligner, Sinkhorn):  # exact aligners: a text against itself scores 1
        same = scorer.score(CANDS, CANDS)
        assert all(v.tolist() == pytest.approx([1.0] * len(CANDS), abs=1e-5) for v in same.metrics.values())


@pytest.mark.parametrize("preset, kwargs, needle", [
    ("bertscore", {"colour": "red"}, "bertscore(): colour=: no such option"),
    ("bertscore", {"layer": 2, "aggregator": SingleLayer(3)}, "aggregator= and layer= both give layer: give one"),
    ("bertscore", {"idf": True, "weighting": alignscore.Uniform()}, "idf= means weighting idf-S; it cannot go with "
                                                                    "weighting= none"),
    ("moverscore-v2", {"idf": False, "weighting": alignscore.IdfS()}, "idf= means weighting none; it cannot go with "
                                                                      "weighting= idf-S"),
    ("moverscore-v2", {"n_gram": 2, "aligner": WMD()}, "both give n_gram: give one"),
    ("moverscore-v1", {"device": "cpu", "encoder": alignscore.HFEncoder("x")}, "both set the encoder"),
    ("bertscore", {"layer": 2, "baseline": 5}, "baseline=: expected a file name"),
    ("bertscore", {"layer": 2, "multi_ref": "min"}, "one of max, mean, not 'min'"),
])
def test_bad_preset_keywords_are_config_errors(tiny_bert_dir, preset, kwargs, needle) -> None:
    with pytest.raises(ConfigError) as info:
        alignscore.PRESET_FUNCTIONS[preset](model=tiny_bert_dir, **kwargs)
    assert needle in str(info.value)


# -- 10. [RM] with SentencePiece tokenizers --------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_sentencepiece_dir(tmp_path_factory) -> str:
    """A SentencePiece-style tokenizer (Unigram + Metaspace) trained here on a few lines with CJK
    text, and a random 2-layer XLM-R."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, XLMRobertaConfig, XLMRobertaModel

    out = tmp_path_factory.mktemp("tiny-sp")
    lines = ["我们喜欢外国汽车。", "他说这很好。", "今天下雨了。", "the cat sat on the mat", "people like foreign cars",
             "我喜欢猫", "猫坐在垫子上", "consumers prefer imported cars"] * 3
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    tok.train_from_iterator(lines, trainers.UnigramTrainer(vocab_size=120, special_tokens=specials, unk_token="<unk>"))
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>", cls_token="<s>", sep_token="</s>", model_max_length=64)
    fast.save_pretrained(out)
    torch.manual_seed(0)
    config = XLMRobertaConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
                              num_attention_heads=4, intermediate_size=64, max_position_embeddings=66, pad_token_id=1)
    XLMRobertaModel(config).eval().save_pretrained(out)
    return str(out)


def test_rm_keeps_the_first_real_piece_not_a_bare_sentencepiece_marker(tiny_sentencepiece_dir) -> None:
    from alignscore.tokens import TokenTable

    texts = ["猫坐在垫子上 the cat", "我喜欢外国汽车"]
    table = TokenTable.from_tokenized(alignscore.HFEncoder(tiny_sentencepiece_dir).tokenize(texts))
    assert "▁" in table.tokens  # the tokenizer does split off a bare marker here
    kept = [t for t, k in zip(table.tokens, alignscore.FILTERS.build("rm").keep(table).tolist()) if k]
    assert "▁" not in kept
    assert kept[:2] == ["猫", "t"] and "▁ca" in kept  # one piece per word: its first that is text
    for token, surface in zip(table.tokens, table.surface):
        if token == "▁":
            assert surface == ""
    scorer = compose(alignscore.HFEncoder(tiny_sentencepiece_dir), SingleLayer(2),
                     filters=(alignscore.FILTERS.build("rm"),), aligner=WMD())
    assert torch.isfinite(scorer.score(texts, texts[::-1]).score).all()
    assert scorer.score(texts, texts).score.tolist() == pytest.approx([1.0, 1.0], abs=1e-6)  # d = 0 with itself


# -- 11. default layers ----------------------------------------------------------------------------
def test_default_layers_are_bert_scores_whole_table() -> None:
    from bert_score.utils import model2layers

    from alignscore.encoders.layers import DEFAULT_LAYERS, default_layer

    assert default_layer("xlm-mlm-en-2048") == 6 and default_layer("xlm-mlm-100-1280") == 10
    assert {k: DEFAULT_LAYERS.get(k) for k in model2layers} == dict(model2layers)
    assert default_layer("google-t5/t5-base") == 11 and default_layer("FacebookAI/xlm-roberta-large") == 17


def _copy(src: str, dest) -> str:
    import shutil

    shutil.copytree(src, dest)
    return str(dest)


@pytest.mark.slow  # a copy of the real model: out of the edit loop's tier, in CI's
def test_a_local_copy_of_a_known_model_gets_its_default_layer(tmp_path, tiny_bert_dir, io) -> None:
    known = "google/bert_uncased_L-4_H-256_A-4"  # 4 layers like the tiny model; default 3
    named = _copy(tiny_bert_dir, tmp_path / "named")
    config = json.loads((tmp_path / "named" / "config.json").read_text(encoding="utf-8"))
    (tmp_path / "named" / "config.json").write_text(json.dumps({**config, "_name_or_path": known}), encoding="utf-8")
    cached = _copy(tiny_bert_dir, tmp_path / "hub" / "models--google--bert_uncased_L-4_H-256_A-4" / "snapshots" / "0a")
    for path in (named, cached):
        scorer = alignscore.bertscore(path)
        assert scorer.layers() == [3]
        assert f"|layers:L3(default of {known})|" in str(scorer.signature())
        code, out, err = score_cli(io, path)
        assert code == 0, err
        assert f"layers:L3(default of {known})|" in err
    # a model given by name keeps the plain signature; a directory that names no known model has no default
    assert alignscore.HFEncoder("roberta-large").default_layer_origin() is None
    with pytest.raises(ConfigError, match="no default layer"):
        alignscore.bertscore(tiny_bert_dir).layers()


@pytest.mark.parametrize("text", ["+-5", "--3", "5-", "1 2"])
def test_an_integer_that_is_not_one_is_a_clear_error(text) -> None:
    from alignscore.config import run_compiled

    with pytest.raises(ConfigError, match=r"--batch-size: cannot read"):
        run_compiled({"batch_size": text}, FLAGS)
