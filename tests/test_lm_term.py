"""XMoverScore's target-side language-model term in a run: ``--lm MODEL`` (``lm=``, ``lm = ...`` in a
run file, a grid row, a space entry) and ``--lm-weight W``; each score against sources becomes
``score + W * lm_score``. Without an LM the term is off and the signature says ``lm:none``; with one
it names the LM (a local folder by the digest of its files) and the weight. The LM loads only when
scoring; a path that names nothing, a weight that is not a finite number, an LM given references
and texts the LM cannot read are each one error line, before anything is written."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
import torch

import alignscore
from alignscore.ablation import parse_grid
from alignscore.config import compile_run
from alignscore.encoders.fingerprint import directory_fingerprint
from alignscore.errors import ConfigError, ModelLoadError
from alignscore.tune.space import parse_space
from alignscore.lm import PAPER_WEIGHT, LMTerm, reference_score
from cli_checks import assert_one_error, invoke, write_toml
from fakes import CountingEncoder

CANDS = ["the cat sat on the mat", "a dog ran in the park", "a", "birds sing at dawn"]
SOURCES = ["die katze sass auf der matte", "ein hund lief im park", "ein", "voegel singen im morgengrauen"]


@pytest.fixture
def encoder(tiny_bert_dir: str) -> CountingEncoder:
    return CountingEncoder(tiny_bert_dir)


def _scorer(encoder: CountingEncoder, **options: object) -> alignscore.Scorer:
    return alignscore.build(alignscore.run_spec(dict(options, model=encoder.name, layer=2)), encoder=encoder)


def _by_hand(lm_dir: str, text: str) -> float:
    """The reference's LM score of one text (score_utils_2.lm_perplexity: the model's own loss on
    the text alone), through :func:`reference_score` from the summed log-probability."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(lm_dir)
    model = AutoModelForCausalLM.from_pretrained(lm_dir).eval()
    ids = tok(text.strip(), add_special_tokens=False)["input_ids"]
    if len(ids) < 2:
        return reference_score(0.0, len(ids))
    with torch.no_grad():
        loss = model(torch.tensor([ids]), labels=torch.tensor([ids])).loss.item()
    by_loss = (1 / math.exp(loss)) ** (1 / len(ids))
    assert reference_score(-loss * (len(ids) - 1), len(ids)) == pytest.approx(by_loss, rel=1e-9)
    return by_loss


# -- the mix -------------------------------------------------------------------------------------
def test_each_score_becomes_the_alignment_plus_the_weighted_lm_score(encoder, tiny_gpt2_dir) -> None:
    plain = _scorer(encoder).score(CANDS, sources=SOURCES)
    mixed = _scorer(encoder, lm=tiny_gpt2_dir, lm_weight=0.3).score(CANDS, sources=SOURCES)
    lm = torch.tensor([_by_hand(tiny_gpt2_dir, c) for c in CANDS], dtype=torch.float64)
    assert lm[2] == 0.0 and (lm[[0, 1, 3]] > 0).all()  # one token scores 0, as in the reference
    for metric in plain.metrics:  # every output of the aligner (precision, recall, F1)
        want = plain[metric].double() + 0.3 * lm
        assert torch.allclose(mixed[metric].double(), want, atol=1e-6), metric
        assert torch.isfinite(mixed[metric]).all() and mixed[metric].dtype == plain[metric].dtype
    assert mixed.signature.differences(plain.signature) == [
        f"lm {Path(tiny_gpt2_dir).name}#{directory_fingerprint(Path(tiny_gpt2_dir))[:12]}(w=0.3) vs none"]


def test_the_lm_batch_is_padding_invariant(encoder, tiny_gpt2_dir) -> None:
    scorer = _scorer(encoder, lm=tiny_gpt2_dir, batch_size=8)
    composition = scorer.resolved()
    together = scorer.lm_scores(composition, CANDS)  # one padded batch: the short texts padded to the longest
    alone = torch.cat([scorer.lm_scores(composition, [c]) for c in CANDS])
    assert torch.allclose(together, alone, atol=1e-6)
    in_batch = scorer.score(CANDS, sources=SOURCES).f1
    assert torch.allclose(torch.cat([scorer.score([c], sources=[s]).f1 for c, s in zip(CANDS, SOURCES)]),
                          in_batch, atol=1e-5)


def test_the_lm_loads_only_when_scoring(encoder, tmp_path) -> None:
    not_a_model = tmp_path / "empty-lm"
    not_a_model.mkdir()  # exists: the run is valid; it cannot load, which only scoring finds out
    scorer = _scorer(encoder, lm=str(not_a_model))
    assert scorer.composition.lm is not None and scorer.composition.lm._models == {}
    with pytest.raises(ModelLoadError, match="cannot load the language model"):
        scorer.score(CANDS, sources=SOURCES)
    assert encoder.calls == 0  # the LM is tried before anything is encoded


# -- the signature -------------------------------------------------------------------------------
def test_the_signature_says_whether_there_is_an_lm_and_names_a_folder_by_its_files(encoder, tiny_gpt2_dir,
                                                                                   tmp_path) -> None:
    off = _scorer(encoder)
    assert off.signature(sources=True)["lm"] == "none" and "lm" not in off.signature()  # with references: no term
    digest = directory_fingerprint(Path(tiny_gpt2_dir))[:12]
    assert _scorer(encoder, lm=tiny_gpt2_dir).signature(True)["lm"] == f"{Path(tiny_gpt2_dir).name}#{digest}(w=0.1)"
    copy = Path(shutil.copytree(tiny_gpt2_dir, tmp_path / "my-lm"))
    assert LMTerm(str(copy), 0.25).signature() == f"my-lm#{digest}(w=0.25)"  # the same files: the same digest
    (copy / "config.json").write_text((copy / "config.json").read_text(encoding="utf-8") + " ", encoding="utf-8")
    assert LMTerm(str(copy)).signature() != f"my-lm#{digest}(w=0.1)"
    assert LMTerm("gpt2").signature() == "gpt2(w=0.1)"  # a hub id by its name
    preset = alignscore.run_spec({"preset": "xmoverscore"}).composition
    assert preset.lm is None  # the paper's run, with its term off until an LM is named
    assert alignscore.run_spec({"preset": "xmoverscore", "lm": "gpt2"}).composition.lm == LMTerm("gpt2", PAPER_WEIGHT)


# -- every way in --------------------------------------------------------------------------------
@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {"cands": tmp_path / "mt.txt", "sources": tmp_path / "src.txt"}
    out["cands"].write_text("\n".join(CANDS) + "\n", encoding="utf-8")
    out["sources"].write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    return out


def _rows(path: Path) -> list[float]:
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")][1:]
    return [float(ln.split("\t")[2]) for ln in lines]


def test_flags_keywords_run_files_grid_rows_and_space_entries_give_the_same_run(tiny_bert_dir, tiny_gpt2_dir,
                                                                              files, tmp_path) -> None:
    options = {"model": tiny_bert_dir, "layer": 2, "lm": tiny_gpt2_dir, "lm_weight": 0.5}
    want = alignscore.score(CANDS, sources=SOURCES, **options)
    spec = alignscore.run_spec(options)
    flags = ["--model", tiny_bert_dir, "--layer", 2, "--lm", tiny_gpt2_dir, "--lm-weight", 0.5]
    common = ["score", "-c", files["cands"], "--sources", files["sources"], "-q"]
    code, _, err = invoke(*common, *flags, "-o", tmp_path / "flags.tsv")
    assert code == 0, err
    run = write_toml(options, tmp_path / "run.toml")
    code, _, err = invoke(*common, "--config", run, "-o", tmp_path / "file.tsv")
    assert code == 0, err
    code, _, err = invoke(*common, *flags, "--stream", "--chunk-size", 3, "-o", tmp_path / "stream.tsv")
    assert code == 0, err
    for name in ("flags", "file", "stream"):
        out = tmp_path / f"{name}.tsv"
        assert str(want.signature) in out.read_text(encoding="utf-8"), name
        assert _rows(out) == pytest.approx(want.f1.tolist(), abs=1e-6), name
    grid = parse_grid({"models": {"base": {"model": tiny_bert_dir}}, "columns": [{"name": "c", "aligner": "greedy"}],
                       "rows": [{"name": "r", "layer": 2, "lm": tiny_gpt2_dir, "lm_weight": 0.5}]})
    assert compile_run(grid.sources(grid.rows[0], grid.columns[0])) == spec
    (candidate,) = parse_space({k: [v] for k, v in options.items()}).candidates()
    assert candidate.spec == spec
    again = compile_run([alignscore.config.file_source(_written(spec, tmp_path))])
    assert again == spec and again.composition.lm == LMTerm(tiny_gpt2_dir, 0.5)


def _written(spec: alignscore.RunSpec, tmp_path: Path) -> Path:
    path = tmp_path / "written.toml"
    path.write_text(spec.toml(), encoding="utf-8")
    return path


def test_a_relative_lm_folder_in_a_run_file_is_read_from_the_files_folder(tiny_bert_dir, tiny_gpt2_dir,
                                                                          tmp_path) -> None:
    folder = tmp_path / "runs"
    shutil.copytree(tiny_gpt2_dir, folder / "lms" / "tiny")
    run = write_toml({"model": tiny_bert_dir, "layer": 2, "lm": "lms/tiny"}, folder / "run.toml")
    spec = compile_run([alignscore.config.file_source(run)])
    assert spec.composition.lm.lm == str((folder / "lms" / "tiny").resolve())


# -- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize("extra, needles", [
    (["--lm", "/no/such/lm-folder"], ["--lm: no such model folder or file: /no/such/lm-folder"]),
    (["--lm", "LM", "--lm-weight", "nan"], ["--lm-weight", "expected a number >= 0, not nan"]),
    (["--lm", "LM", "--lm-weight", "inf"], ["--lm-weight", "expected a number >= 0, not inf"]),
    (["--lm", "LM", "--lm-weight", "heavy"], ["--lm-weight", "cannot read 'heavy'"]),
    (["--lm", "LM", "--lm-weight", "-1"], ["--lm-weight", "expected a number >= 0, not -1.0"]),
    (["--lm-weight", "0.2"], ["--lm-weight: applies with --lm MODEL only"]),
])
def test_bad_lm_options_are_one_line_and_nothing_is_written(tiny_bert_dir, tiny_gpt2_dir, files, tmp_path,
                                                            extra, needles) -> None:
    out = tmp_path / "out.tsv"
    extra = [tiny_gpt2_dir if a == "LM" else a for a in extra]
    assert_one_error(*invoke("score", "-c", files["cands"], "--sources", files["sources"], "--model", tiny_bert_dir,
                             "--layer", 2, "-o", out, *extra)[::2], *needles)
    assert not out.exists()


def test_a_missing_lm_folder_is_named_as_written_every_way_in(tiny_bert_dir, tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"^score\(\): lm=: no such model folder or file: \./nowhere$"):
        alignscore.score(["a"], sources=["b"], model=tiny_bert_dir, layer=2, lm="./nowhere")
    run = write_toml({"model": tiny_bert_dir, "layer": 2, "lm_weight": 0.2, "lm": "./nowhere"}, tmp_path / "r.toml")
    with pytest.raises(ConfigError, match=r"r\.toml:\d+: lm: no such model folder or file"):
        compile_run([alignscore.config.file_source(run)])
    with pytest.raises(ConfigError, match=r"lm_weight=: expected a number >= 0, not nan"):
        alignscore.run_spec({"lm": "gpt2", "lm_weight": float("nan")})
    with pytest.raises(ConfigError, match=r"^lm_weight: expected a number >= 0, not inf$"):  # the same declaration
        LMTerm("gpt2", math.inf)
    with pytest.raises(ConfigError, match=r"^lm_scale: expected a number > 0, not 0.0$"):
        LMTerm("gpt2", lm_scale=0)


def test_the_lm_term_refuses_references(encoder, tiny_gpt2_dir, files, tmp_path) -> None:
    from alignscore.scorer import score_together

    scorer = _scorer(encoder, lm=tiny_gpt2_dir)
    for against_references in (lambda: scorer.score(CANDS, SOURCES), lambda: scorer.pairwise(CANDS, CANDS),
                               lambda: score_together([scorer], CANDS, SOURCES), lambda: scorer.explain(CANDS[0], "a")):
        with pytest.raises(ConfigError, match="defined for scoring against sources only"):
            against_references()
    out = tmp_path / "out.tsv"
    assert_one_error(*invoke("score", "-c", files["cands"], "-r", files["sources"], "--model", encoder.name,
                             "--layer", 2, "--lm", tiny_gpt2_dir, "-o", out)[::2], "--lm: the language-model term")
    assert not out.exists() and encoder.calls == 0


def test_runs_planned_against_references_refuse_the_lm_term_before_anything_loads(tiny_bert_dir, tiny_gpt2_dir,
                                                                                     tmp_path) -> None:
    """Grids, searches, challenge sets and comparisons score against references: a grid row or a
    space entry with an LM is refused with the others' errors, never scored without its term."""
    from alignscore.config import plan_runs
    from alignscore.config.plan import RunSources

    grid = parse_grid({"models": {"base": {"model": tiny_bert_dir}}, "columns": [{"name": "c", "aligner": "greedy"}],
                       "rows": [{"name": "r", "layer": 2, "lm": tiny_gpt2_dir}]}, {("rows", 0, "lm"): 7})
    with pytest.raises(ConfigError, match=r"lm: the language-model term .* defined for scoring against sources only"):
        plan_runs([RunSources(grid.sources(grid.rows[0], grid.columns[0]))])
    spec = alignscore.run_spec({"model": tiny_bert_dir, "layer": 2, "lm": tiny_gpt2_dir})
    (scorer,) = plan_runs([spec], sources=True).scorers()
    assert scorer.composition.lm is not None and scorer.composition.lm._models == {}  # built, nothing loaded


@pytest.mark.parametrize("stream", [False, True])
def test_texts_the_lm_cannot_read_are_one_line_naming_the_lm_and_nothing_is_written(tiny_bert_dir, word_level_lm_dir,
                                                                                     tmp_path, stream) -> None:
    cands, sources, out = tmp_path / "mt.txt", tmp_path / "src.txt", tmp_path / "out.tsv"
    cands.write_text("the people like cars\nthe cars\nzebras gallop\n", encoding="utf-8")
    sources.write_text("die leute moegen autos\ndie autos\nzebras galoppieren\n", encoding="utf-8")
    streamed = ["--stream", "--chunk-size", 1] if stream else []  # the bad line in the last chunk: still nothing
    line = assert_one_error(*invoke("score", "-c", cands, "--sources", sources, "--model", tiny_bert_dir, "--layer",
                                    2, "--lm", word_level_lm_dir, "-o", out, "-q", *streamed)[::2],
                            "--lm: the language model", "cannot read 1 of the texts (text 3: only unknown tokens)")
    assert "\t" not in line and not out.exists()
    with pytest.raises(ConfigError, match=r"^score\(\): lm=: the language model .* cannot read 1 of the texts"):
        alignscore.score(["the people like cars", "zebras gallop"], sources=["a", "b"], model=tiny_bert_dir, layer=2,
                         lm=word_level_lm_dir)


# -- the LM score and its fixed scale -------------------------------------------------------------
def test_the_mean_logprob_score_on_a_fixed_scale(encoder, tiny_gpt2_dir) -> None:
    from alignscore.lm import mean_logprob

    plain = _scorer(encoder).score(CANDS, sources=SOURCES)
    options = dict(lm=tiny_gpt2_dir, lm_weight=0.3, lm_score="mean-logprob", lm_location=-5.0, lm_scale=2.0)
    mixed = _scorer(encoder, **options).score(CANDS, sources=SOURCES)
    sums, lengths = LMTerm(tiny_gpt2_dir).model("cpu").log_likelihoods(CANDS)
    m = [mean_logprob(float(s), int(n)) for s, n in zip(sums, lengths)]
    assert m[2] is None and all(v is not None and v < 0 for v in m[:2] + m[3:])  # "a": one token, none predicted
    term = torch.tensor([0.0 if v is None else (v + 5.0) / 2.0 for v in m], dtype=torch.float64)
    assert torch.allclose(mixed["f1"].double(), plain["f1"].double() + 0.3 * term, atol=1e-6)
    # a candidate's score does not depend on the others scored with it (the scale is fixed, not the batch's)
    alone = _scorer(encoder, **options).score(CANDS[:1], sources=SOURCES[:1])
    assert float(alone["f1"][0]) == pytest.approx(float(mixed["f1"][0]), abs=1e-6)
    assert mixed.signature.differences(plain.signature) == [
        f"lm {Path(tiny_gpt2_dir).name}#{directory_fingerprint(Path(tiny_gpt2_dir))[:12]}"
        "(mean-logprob,(x+5.0)/2.0,w=0.3) vs none"]


@pytest.mark.parametrize("case", ["not causal", "gguf", "scale without lm", "bad score"])
def test_an_lm_that_cannot_serve_is_one_line_before_anything_loads(tiny_bert_dir, files, tmp_path, case) -> None:
    out = tmp_path / "out.tsv"
    gguf = tmp_path / "model.Q4_1.gguf"
    gguf.write_bytes(b"GGUF")
    extra, needle = {
        "not causal": (["--lm", tiny_bert_dir], f"--lm: {tiny_bert_dir} is not a causal language model (its "
                                                 "architectures: BertModel)"),
        "gguf": (["--lm", str(gguf)], "--lm: model.Q4_1.gguf is a GGUF file: convert it to a Hugging Face folder"),
        "scale without lm": (["--lm-scale", "2"], "--lm-scale: applies with --lm MODEL only"),
        "bad score": (["--lm", str(tmp_path), "--lm-score", "ppl"], "--lm-score: one of reference, mean-logprob"),
    }[case]
    assert_one_error(*invoke("score", "-c", files["cands"], "--sources", files["sources"], "--model", tiny_bert_dir,
                             "--layer", 2, "-o", out, *extra)[::2], needle)
    assert not out.exists()


@pytest.mark.parametrize("case", ["not causal", "gguf", "unreadable", "references"])
def test_an_lm_that_cannot_serve_is_named_as_given_every_way_in(tiny_bert_dir, tiny_gpt2_dir, word_level_lm_dir,
                                                                tmp_path, case) -> None:
    """The four LMs that cannot serve, from Python (``lm=``) and from a run file (``file:line: lm``)
    as from the command line (above): one error naming the option as the user gave it."""
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    lm, needle = {"not causal": (tiny_bert_dir, "is not a causal language model"),
                  "gguf": (str(gguf), "model.gguf is a GGUF file: convert it to a Hugging Face folder"),
                  "unreadable": (word_level_lm_dir, "cannot read 1 of the texts (text 2: only unknown tokens)"),
                  "references": (tiny_gpt2_dir, "defined for scoring against sources only")}[case]
    cands = ["the people like cars", "zebras gallop"]
    side = {"refs": ["a", "b"]} if case == "references" else {"sources": ["a", "b"]}
    with pytest.raises(ConfigError, match=r"^score\(\): lm=: ") as info:
        alignscore.score(cands, model=tiny_bert_dir, layer=2, lm=lm, **side)
    assert needle in str(info.value)
    run = write_toml({"model": tiny_bert_dir, "layer": 2, "lm": lm}, tmp_path / "run.toml")
    with pytest.raises(ConfigError, match=r"^score\(\): .*run\.toml:\d+: lm: ") as info:
        alignscore.score(cands, config=str(run), **side)
    assert needle in str(info.value)


def test_challenge_items_the_lm_cannot_read_are_named_as_given(tiny_bert_dir, word_level_lm_dir, tmp_path) -> None:
    """``challenge --sources``: an item's good or bad the LM cannot read is one line naming the set,
    the side and the LM as given (the flag, a run file's key), before any text is encoded."""
    from helpers import counted_forward

    items = tmp_path / "set.jsonl"
    items.write_text('{"ref": "x", "good": "the people like cars", "bad": "zebras gallop", "category": "c", '
                     '"source": "die leute moegen autos"}\n', encoding="utf-8")
    run = write_toml({"model": tiny_bert_dir, "layer": 2, "lm": word_level_lm_dir}, tmp_path / "run.toml")
    with counted_forward() as calls:
        for given, label in ((["--model", tiny_bert_dir, "--layer", 2, "--lm", word_level_lm_dir], "--lm: "),
                             (["--config", run], "run.toml:3: lm: ")):
            line = assert_one_error(*invoke("challenge", items, "--sources", "-q", *given)[::2],
                                    "set.jsonl (bad): ", f"{label}the language model", "cannot read 1 of the texts")
            assert "(text 1: only unknown tokens)" in line
    assert calls["n"] == 0
