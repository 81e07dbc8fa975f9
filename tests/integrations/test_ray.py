"""Scoring a Ray Dataset on a local Ray (two CPUs): the scores of one process (idf-S with SEP and
several references; uniform, idf-S, idf-L and WMD as a combination's parts), an actor killed
mid-job losing and duplicating no row, bad input (and texts the LM cannot read) refused before
any actor starts, and ``alignscore score --ray`` writing what the run without it writes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import torch

from cli_checks import assert_one_error, invoke, write_toml  # noqa: E402
from helpers import WMT16, needs, wmt16  # noqa: E402
needs("ray")

import ray  # noqa: E402
from click.testing import CliRunner  # noqa: E402

import alignscore  # noqa: E402
from alignscore.cli import main  # noqa: E402
from alignscore.errors import InputError  # noqa: E402
from alignscore.integrations import ray as on_ray  # noqa: E402
from alignscore.config import run_spec  # noqa: E402

pytestmark = pytest.mark.slow

TOL = 1e-6
N = 30


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray for the module (each start costs seconds); actors inherit PYTHONPATH,
    so they import this checkout's alignscore."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the killing actor below
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def pairs():
    data, other = wmt16("de-en"), wmt16("cs-en")["reference"]
    cands, refs = data["mt-system"][:N], data["reference"][:N]
    cands[3] = ""  # an empty candidate scores 0 both ways
    # one to three references; the best one is at 0, 1 (the candidate itself) or 2
    groups = [[r, other[i], c] if i % 10 == 0 else [r, c] if i % 2 else [r, other[i]] if i % 4 == 0 else [r]
              for i, (c, r) in enumerate(zip(cands, refs))]
    return cands, refs, groups


def _rows(cands, refs):
    # ids that are not positions: the output is matched on them
    return [{"id": 1000 + 7 * i, "cand": c, "ref": r} for i, (c, r) in enumerate(zip(cands, refs))]


def _by_id(rows):
    ids = [r["id"] for r in rows]
    assert sorted(ids) == sorted(set(ids)), "a row came out twice"
    return {r["id"]: r for r in rows}


def _check(rows, expected, cands, several=False):
    got = _by_id(rows)
    assert sorted(got) == [1000 + 7 * i for i in range(len(cands))]  # every row, once
    for i in range(len(cands)):
        row = got[1000 + 7 * i]
        assert row["cand"] == cands[i]
        for m, values in expected.metrics.items():
            assert abs(row[m] - float(values[i])) <= TOL, (m, i)
        if several:
            assert row["best_ref"] == int(expected.best_reference[i])
        assert row["signature"] == str(expected.signature)


IDF_CORPUS = str(WMT16 / "DAseg.newstest2016.reference.cs-en")


def test_several_references(minilm_dir, pairs, tmp_path):
    from alignscore.cache import DB_NAME, EmbeddingCache

    cands, _, groups = pairs
    ds = ray.data.from_items(_rows(cands, groups))
    options = {"model": minilm_dir, "weighting": "idf-S", "sep": True}  # SEP: candidates' idf too
    cache = tmp_path / "cache"
    out = on_ray.score_dataset(ds, concurrency=2, batch_size=8, cache=str(cache), **options).take_all()
    expected = alignscore.score(cands, groups, **options)
    _check(out, expected, cands, several=True)
    # idf fitted per batch would differ: the first pass fitted it on every row
    alone = alignscore.score(cands[:8], groups[:8], **options)
    assert max(abs(float(a) - float(b)) for a, b in zip(alone.f1, expected.f1[:8])) > 1e-4
    assert (cache / DB_NAME).exists() and EmbeddingCache(cache).stats().entries > 0  # the actors filled it
    assert set(int(b) for b in expected.best_reference) == {0, 1, 2}  # the test can tell references apart


class KilledOnce(on_ray.ScoreBatches):
    """Scores as its parent, except that its process exits at its second batch unless the
    ``marker`` file exists (which it creates first): Ray restarts it and retries that batch."""

    marker = ""

    def __init__(self, job) -> None:
        super().__init__(job)
        self.calls = 0

    def __call__(self, batch):
        self.calls += 1
        marker = Path(self.marker)
        if self.calls == 2 and not marker.exists():
            marker.write_text("killed\n")
            os._exit(1)
        return super().__call__(batch)


def test_killed_actor_loses_and_duplicates_no_row(minilm_dir, pairs, tmp_path):
    cands, refs, _ = pairs
    marker = tmp_path / "killed"
    actor = type("KilledOnceHere", (KilledOnce,), {"marker": str(marker)})  # pickled with its marker
    ds = ray.data.from_items(_rows(cands, refs))
    spec = run_spec({"model": minilm_dir, "idf": True})
    job = on_ray.prepare(ds, spec, "cand", "ref")
    out = on_ray.run(ds, job, actor, concurrency=1, batch_size=6).take_all()
    assert marker.exists()  # an actor did die mid-job
    _check(out, alignscore.score(cands, refs, model=minilm_dir, idf=True), cands)


@pytest.fixture
def no_actor(monkeypatch):
    """Fails the test if :func:`run` (which starts the actors) is reached."""
    def refuse(*args, **kwargs):
        raise AssertionError("actors were started")

    monkeypatch.setattr(on_ray, "run", refuse)


@pytest.mark.parametrize("items, columns, message", [
    ([{"text": "a", "ref": "b"}], {}, "no candidate column 'cand' (its columns: text, ref); name it with cand="),
    ([{"cand": "a", "reference": "b"}], {}, "no reference column 'ref'"),
    ([{"cand": 1, "ref": "b"}], {}, "column 'cand' holds int64, not texts"),
    ([{"cand": "a", "ref": 2.5}], {}, "column 'ref' holds double, not texts (strings) nor lists of texts"),
    ([{"cand": "a", "ref": "b"}, {"cand": None, "ref": "c"}], {}, "its candidate is NoneType None, not a text"),
    ([{"cand": "a", "ref": ["b", None]}], {}, "its reference is NoneType None, not a text"),
    ([{"cand": "a", "ref": []}, {"cand": "b", "ref": ["c"]}], {}, "it has no reference (an empty list)"),
    ([{"cand": "a", "ref": "b", "f1": 0.5}], {}, "already has the column(s) f1"),
    ([{"c": "a", "r": 3}], {"cand": "c", "ref": "r"}, "column 'r' holds int64"),
], ids=["no-cand", "no-ref", "int-cand", "float-ref", "null-cand", "null-in-list", "empty-list", "taken", "named"])
def test_bad_input_is_one_error_before_any_actor(minilm_dir, no_actor, items, columns, message):
    with pytest.raises(InputError) as err:
        on_ray.score_dataset(ray.data.from_items(items), model=minilm_dir, idf=True, **columns)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_empty_dataset_is_one_error_before_any_actor(minilm_dir, no_actor):
    empty = ray.data.from_items([{"cand": "a", "ref": "b"}]).filter(lambda row: False)
    with pytest.raises(InputError, match="the dataset is empty: there is nothing to score"):
        on_ray.score_dataset(empty, model=minilm_dir)


def test_without_ray_one_clear_error(monkeypatch, minilm_dir):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails as where it is not installed
    with pytest.raises(alignscore.ConfigError, match=r"^scoring a Ray Dataset needs Ray Data: pip install "
                                                     r"'alignscore\[ray\]'$"):
        on_ray.score_dataset(object(), model=minilm_dir)


def test_options_are_checked_before_the_dataset(minilm_dir, no_actor):
    with pytest.raises(alignscore.ConfigError, match="concurrency must be a whole number >= 1"):
        on_ray.score_dataset(ray.data.from_items([{"cand": "a", "ref": "b"}]), model=minilm_dir, concurrency=0)
    with pytest.raises(alignscore.ConfigError, match="no_such=: no such option"):
        on_ray.score_dataset(ray.data.from_items([{"cand": "a", "ref": "b"}]), model=minilm_dir, no_such=1)


def test_cli_ray_writes_what_one_process_writes(minilm_dir, files, tmp_path):
    """Several references, as JSON lines (the test below writes TSV; docs/ray.md's example runs two
    actors)."""
    data, other = wmt16("ro-en"), wmt16("fi-en")["reference"]
    cands = files("cands.txt", data["mt-system"][:12])
    refs = [files("refs.txt", data["reference"][:12]), files("refs2.txt", other[:12])]
    common = ["score", "-c", cands, "-r", *refs, "--model", minilm_dir, "--idf", "-q", "--format", "jsonl"]
    runner = CliRunner()
    one = runner.invoke(main, [*common, "-o", str(tmp_path / "one")])
    assert one.exit_code == 0, one.output
    # Ray runs already (the module's): --ray joins it
    on = runner.invoke(main, [*common, "-o", str(tmp_path / "ray"), "--ray", "local", "--ray-actors", "1"])
    assert on.exit_code == 0, on.output
    written = (tmp_path / "ray").read_bytes()
    assert written == (tmp_path / "one").read_bytes()
    assert len(written.splitlines()) == 12


def test_cli_ray_scores_against_sources_as_one_process(minilm_dir, files, tmp_path):
    data = wmt16("de-en")
    cands, sources = files("cands.txt", data["mt-system"][:12]), files("src.txt", data["source"][:12])
    common = ["score", "-c", cands, "--sources", sources, "--model", minilm_dir, "--idf", "-q"]
    runner = CliRunner()
    one = runner.invoke(main, [*common, "-o", str(tmp_path / "one")])
    assert one.exit_code == 0, one.output
    on = runner.invoke(main, [*common, "-o", str(tmp_path / "ray"), "--ray", "local", "--ray-actors", "1"])
    assert on.exit_code == 0, on.output
    assert (tmp_path / "ray").read_bytes() == (tmp_path / "one").read_bytes()
    assert "refs:source" in (tmp_path / "ray").read_text(encoding="utf-8")
    # a composition that needs a reference refuses sources before any task
    baseline = files("b.csv", ["LAYER,P,R,F", "4,0.5,0.5,0.5"])
    rows = ray.data.from_items([{"cand": "a cat", "ref": "eine Katze"}])
    with pytest.raises(alignscore.ConfigError, match="baseline .* not against sources"):
        on_ray.score_dataset(rows, sources=True, model=minilm_dir, layer=4, baseline=baseline)


def test_cli_ray_refuses_what_it_cannot_do(minilm_dir, files, tmp_path):
    cands, refs = files("c.txt", ["a"]), files("r.txt", ["b"])
    result = CliRunner().invoke(main, ["score", "-c", cands, "-r", refs, "--model", minilm_dir, "--stream",
                                       "-o", str(tmp_path / "out"), "--ray", "local"])
    assert result.exit_code == 1
    assert "alignscore: error: --ray scores the pairs at once: not with --pairwise, --stream or --resume" \
        in result.output
    assert not (tmp_path / "out").exists()


def test_a_combination_scores_on_ray_as_in_one_process(minilm_dir, pairs, files, tmp_path, monkeypatch):
    """``score --config combo.toml --ray``: each part's weighting (uniform, idf-S fitted on every row
    by the first pass where batches of 5 would give other weights, idf-L counted on the driver)
    and aligner as in one process, the parts sharing one encoder on the actor; and
    ``score_dataset(config=...)`` hands the same combination to the first pass."""
    from alignscore.combination import Combination, combine

    cands, refs = pairs[0][:12], pairs[1][:12]
    parts = [{"model": minilm_dir, "idf": True}, {"model": minilm_dir, "aligner": "wmd", "layer": 3},
             {"model": minilm_dir}, {"model": minilm_dir, "weighting": "idf-L", "idf_corpus": IDF_CORPUS}]
    weights, locations, scales = [0.4, 0.2, 0.2, 0.2], [0.9, 0.5, 0.9, 0.9], [0.5, 0.5, 0.4, 0.3]
    combo = write_toml({"parts": [{"weight": w, "location": m, "scale": d, **p}
                                  for p, w, m, d in zip(parts, weights, locations, scales)]}, tmp_path / "combo.toml")
    expected = combine(parts, weights, locations, scales).score(cands, refs)
    real_run, pools = on_ray.run, []

    def in_batches_of_5(ds, job, actor, **kw):  # 3 batches for the 2 actors
        pools.append(kw["concurrency"])
        return real_run(ds, job, actor, **{**kw, "batch_size": 5})

    monkeypatch.setattr(on_ray, "run", in_batches_of_5)
    result = CliRunner().invoke(main, ["score", "--config", str(combo), "-c", files("c.txt", cands), "-r",
                                       files("r.txt", refs), "-q", "--format", "jsonl", "-o", str(tmp_path / "out"),
                                       "--ray", "local", "--ray-actors", "2"])
    assert result.exit_code == 0, result.output
    assert pools == [2]
    rows = [json.loads(line) for line in (tmp_path / "out").read_text(encoding="utf-8").splitlines()]
    for name in ("combined", "part0", "part1", "part2", "part3"):
        assert [r[name] for r in rows] == pytest.approx(expected[name].tolist(), abs=TOL), name

    def first_pass(ds, what, *args, **kwargs):
        raise LookupError(what)

    monkeypatch.setattr(on_ray, "prepare", first_pass)
    with pytest.raises(LookupError) as caught:
        on_ray.score_dataset(ray.data.from_items(_rows(cands, refs)), config=str(combo))
    assert isinstance(caught.value.args[0], Combination) and len(caught.value.args[0].parts) == 4


def test_on_ray_texts_the_lm_cannot_read_are_the_same_one_line(tiny_bert_dir, word_level_lm_dir, tmp_path) -> None:
    """``--ray``: the first pass finds the candidates the LM cannot read and reports them as one
    process does (one line naming --lm, the same count and text), before a byte is written."""
    cands, sources, out = tmp_path / "mt.txt", tmp_path / "src.txt", tmp_path / "out.tsv"
    cands.write_text("the people like cars\nzebras gallop\nthe cars\nzebras gallop\n", encoding="utf-8")
    sources.write_text("die leute moegen autos\nzebras galoppieren\ndie autos\nzebras galoppieren\n",
                       encoding="utf-8")
    common = ["score", "-c", cands, "--sources", sources, "--model", tiny_bert_dir, "--layer", 2, "--lm",
              word_level_lm_dir, "-o", out, "-q"]
    alone = assert_one_error(*invoke(*common)[::2], "--lm: the language model",
                             "cannot read 2 of the texts (text 2: only unknown tokens)")
    on_ray = assert_one_error(*invoke(*common, "--ray", "local", "--ray-actors", 1)[::2])
    assert on_ray == alone and not out.exists()


def test_state_of_blocks_is_the_state_of_all(minilm_dir, pairs):
    """The first pass's counts, summed over blocks, are those of one count over every row."""
    from alignscore.stream import count_texts
    from alignscore.config import build

    cands, _, groups = pairs
    scorer = build(run_spec({"model": minilm_dir, "weighting": "idf-S", "sep": True}))
    enc, w = scorer.scoring_encoder(), scorer.weighting
    whole = count_texts(w, enc, [(cands, groups)])
    parts = count_texts(w, enc, [(cands[:11], groups[:11])])
    parts.merge(count_texts(w, enc, [(cands[11:], groups[11:])]))
    for a, b in ((whole.ref, parts.ref), (whole.cand, parts.cand)):
        assert torch.equal(a.df, b.df) and a.docs == b.docs and a.docs > 0


def test_a_cluster_that_cannot_be_joined_is_named_as_python_does(monkeypatch) -> None:
    class Unreachable:  # Ray that finds no cluster at the address (a real one waits a minute to say so)
        @staticmethod
        def is_initialized() -> bool:
            return False

        @staticmethod
        def init(**kwargs) -> None:
            raise ConnectionError("no GCS there")

    monkeypatch.setattr(on_ray, "_ray", lambda: Unreachable)
    with pytest.raises(alignscore.ConfigError, match="^address= nowhere:1: cannot join the Ray cluster: no GCS there$"):
        on_ray.score_pairs(["a"], [["b"]], run_spec({"model": "all-MiniLM-L6-v2"}), "nowhere:1", False)
