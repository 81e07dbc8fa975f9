"""Scoring against sources (reference-free): the candidate is aligned with the text it translates,
the source side remapped where the composition has a remapping; what needs a reference refuses
sources and what maps sources refuses references, before any text is encoded."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import alignscore
from alignscore.errors import ConfigError, InputError
from alignscore.remap import Remapping, model_digest, save_remapping
from cli_checks import assert_one_error, invoke
from fakes import CountingEncoder

CANDS = ["the cat sat on the mat", "a dog ran", ""]
SOURCES = ["die katze sass auf der matte", "ein hund lief", "leer"]


def _remap_file(tmp_path: Path, encoder: CountingEncoder, method: str, weights: torch.Tensor, layer: int = 2) -> Path:
    path = tmp_path / f"{method}-{layer}.remap"
    save_remapping(Remapping(method, weights, encoder.name, model_digest(encoder), layer, "de", 10), path)
    return path


@pytest.fixture
def encoder(tiny_bert_dir: str) -> CountingEncoder:
    return CountingEncoder(tiny_bert_dir)


def _scorer(encoder: CountingEncoder, **options: object) -> alignscore.Scorer:
    return alignscore.build(alignscore.run_spec(dict(options, model=encoder.name, layer=2)), encoder=encoder)


def test_sources_take_the_references_place_and_the_signature_says_so(encoder: CountingEncoder) -> None:
    scorer = _scorer(encoder)
    with pytest.warns(UserWarning, match="empty"):
        free = scorer.score(CANDS, sources=SOURCES)
        with_refs = scorer.score(CANDS, SOURCES)
    for metric in free.metrics:
        assert torch.equal(free[metric], with_refs[metric])  # the same arithmetic on the same vectors
    assert free.signature["refs"] == "source" and with_refs.signature["refs"] == "max"


def test_an_identity_remapping_changes_no_score_and_umd_does(encoder: CountingEncoder, tmp_path: Path) -> None:
    width = encoder.load_model().config.hidden_size
    plain = _scorer(encoder).score(CANDS[:2], sources=SOURCES[:2])
    identity = _scorer(encoder, remap=str(_remap_file(tmp_path, encoder, "clp", torch.eye(width, dtype=torch.float64))))
    same = identity.score(CANDS[:2], sources=SOURCES[:2])
    assert torch.allclose(same.f1, plain.f1, atol=1e-6)  # float32 rounding of x @ I and the renormalisation
    assert same.signature["remap"].startswith("clp(de,layer 2)#")
    direction = torch.zeros(width, dtype=torch.float64)
    direction[0] = 1.0
    umd = _scorer(encoder, remap=str(_remap_file(tmp_path, encoder, "umd", direction)))
    moved = umd.score(CANDS[:2], sources=SOURCES[:2])
    assert not torch.allclose(moved.f1, plain.f1, atol=1e-4)
    # the candidate side is not remapped: a candidate against itself as its source is no longer exact
    assert umd.score(["a dog ran"], sources=["a dog ran"]).f1.item() < 1 - 1e-4
    assert _scorer(encoder).score(["a dog ran"], sources=["a dog ran"]).f1.item() == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("layer, message", [(3, "remapping learned for model .* layer 2, not .* layer 3")])
def test_a_remapping_of_another_layer_is_refused_before_encoding(encoder: CountingEncoder, tmp_path: Path,
                                                                 layer: int, message: str) -> None:
    path = _remap_file(tmp_path, encoder, "umd", torch.ones(32, dtype=torch.float64) / 32 ** 0.5)
    with pytest.raises(ConfigError, match="remap=: " + message):  # when the scorer is built
        alignscore.build(alignscore.run_spec(dict(model=encoder.name, layer=layer, remap=str(path))), encoder=encoder)
    assert encoder.calls == 0


def test_what_needs_a_reference_refuses_sources_and_a_remapping_refuses_references(encoder: CountingEncoder,
                                                                                  tmp_path: Path) -> None:
    baseline = tmp_path / "b.tsv"
    baseline.write_text("LAYER,P,R,F\n2,0.5,0.5,0.5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="baseline .* not against sources"):
        _scorer(encoder, baseline=str(baseline)).score(CANDS, sources=SOURCES)
    width = encoder.load_model().config.hidden_size
    remapped = _scorer(encoder, remap=str(_remap_file(tmp_path, encoder, "clp", torch.eye(width, dtype=torch.float64))))
    with pytest.raises(ConfigError, match="maps sources into the candidates' language"):
        remapped.score(CANDS, SOURCES)
    with pytest.raises(ConfigError, match="baseline"):
        alignscore.run_spec(dict(model=encoder.name, layer=2, baseline=str(baseline),
                                 remap=str(_remap_file(tmp_path, encoder, "clp", torch.eye(width, dtype=torch.float64)))))
    assert encoder.calls == 0


@pytest.mark.parametrize("refs, sources, message", [
    (None, None, "give references or sources"),
    (SOURCES, SOURCES, "not both"),
    (None, SOURCES[:2], "3 candidates but 2 sources"),
    (None, [["a"], ["b"], ["c"]], r"source 0 is list \[.a.\], not a text"),
])
def test_bad_sources_are_one_line_before_encoding(encoder: CountingEncoder, refs: object, sources: object,
                                                  message: str) -> None:
    with pytest.raises(InputError, match=message) as err:
        _scorer(encoder).score(CANDS, refs, sources=sources)
    assert "\n" not in str(err.value) and encoder.calls == 0


def test_the_front_door_takes_sources(tiny_bert_dir: str) -> None:
    scores = alignscore.score(CANDS[:2], sources=SOURCES[:2], model=tiny_bert_dir, layer=2)
    assert scores.signature["refs"] == "source" and len(scores.f1) == 2


def test_the_xmoverscore_preset_is_the_papers_alignment(encoder: CountingEncoder, tmp_path: Path) -> None:
    spec = alignscore.run_spec({"preset": "xmoverscore"})
    c = spec.composition
    assert spec.encoder.model == "bert-base-multilingual-cased" and c.aggregator.layer == 8
    assert (c.aligner.n_gram, c.aligner.cost, c.aligner.score_form) == (2, "euclidean", "1/(1+d)")
    assert (c.aligner.flow_dropout, c.aligner.ngram_mean) == (0.3, "states")  # the reference code's
    assert c.roles.special == "keep" and c.remap is None
    width = encoder.load_model().config.hidden_size
    path = _remap_file(tmp_path, encoder, "clp", torch.eye(width, dtype=torch.float64))
    scorer = alignscore.build(alignscore.run_spec({"preset": "xmoverscore", "model": encoder.name, "layer": 2,
                                                   "remap": str(path)}), encoder=encoder)
    scores = scorer.score(CANDS[:2], sources=SOURCES[:2])
    assert scores.signature["align"] == "wmd(euclidean,1/(1+d),n=2,mean=states,flow_dropout=0.3)" and "remap" in scores.signature


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {"cands": tmp_path / "mt.txt", "sources": tmp_path / "src.txt", "short": tmp_path / "short.txt"}
    out["cands"].write_text("\n".join(CANDS[:2]) + "\n", encoding="utf-8")
    out["sources"].write_text("\n".join(SOURCES[:2]) + "\n", encoding="utf-8")
    out["short"].write_text(SOURCES[0] + "\n", encoding="utf-8")
    return out


@pytest.mark.parametrize("stream", [False, True])
def test_the_command_scores_against_sources_as_the_library(tiny_bert_dir: str, files: dict[str, Path],
                                                             tmp_path: Path, stream: bool) -> None:
    out = tmp_path / "out.tsv"
    code, _, err = invoke("score", "-c", files["cands"], "--sources", files["sources"], "--model", tiny_bert_dir,
                          "--layer", 2, "-o", out, "-q", *(["--stream"] if stream else []))
    assert code == 0, err
    want = alignscore.score(CANDS[:2], sources=SOURCES[:2], model=tiny_bert_dir, layer=2)
    text = out.read_text(encoding="utf-8")
    assert str(want.signature) in text and "refs:source" in err
    rows = [line.split("\t") for line in text.splitlines() if not line.startswith("#")][1:]
    assert [float(r[2]) for r in rows] == pytest.approx(want.f1.tolist(), abs=1e-6)


def test_the_commands_bad_sources_are_one_line_and_write_nothing(tiny_bert_dir: str, files: dict[str, Path],
                                                                 tmp_path: Path) -> None:
    out = tmp_path / "out.tsv"
    base = ["score", "-c", files["cands"], "--model", tiny_bert_dir, "--layer", 2, "-o", out]
    assert_one_error(*invoke(*base, "--sources", files["sources"], "-r", files["sources"])[::2], "not both")
    assert_one_error(*invoke(*base, "--sources", files["short"])[::2], "has 1 lines but")
    width_file = tmp_path / "m.remap"
    encoder = CountingEncoder(tiny_bert_dir)
    save_remapping(Remapping("umd", torch.ones(32, dtype=torch.float64), tiny_bert_dir, model_digest(encoder), 2),
                   width_file)
    assert_one_error(*invoke(*base, "-r", files["sources"], "--remap", width_file)[::2],
                     "maps sources into the candidates' language")
    assert_one_error(*invoke(*base, "--sources", files["sources"], "--remap", width_file, "--layer", 3)[::2],
                     "--remap: remapping learned for model")
    assert_one_error(*invoke("score", "-c", files["cands"], "--sources", files["sources"], "--pairwise", "-o",
                             tmp_path / "m.npy", "--model", tiny_bert_dir)[::2], "--pairwise")
    assert not out.exists() and not (tmp_path / "m.npy").exists()


def test_a_tsv_of_candidates_and_sources_scores_as_the_files(tiny_bert_dir: str, files: dict[str, Path],
                                                             tmp_path: Path) -> None:
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{c}\t{s}\n" for c, s in zip(CANDS[:2], SOURCES[:2])), encoding="utf-8")
    encoder = CountingEncoder(tiny_bert_dir)
    direction = torch.zeros(32, dtype=torch.float64)
    direction[1] = 1.0
    remap = _remap_file(tmp_path, encoder, "umd", direction)
    common = ["--model", tiny_bert_dir, "--layer", 2, "--remap", remap, "-q"]
    code, _, err = invoke("score", "-c", files["cands"], "--sources", files["sources"], "-o", tmp_path / "a", *common)
    assert code == 0, err
    code, _, err = invoke("score", "--tsv", tsv, "--tsv-sources", "-o", tmp_path / "b", *common)
    assert code == 0, err
    assert (tmp_path / "b").read_bytes() == (tmp_path / "a").read_bytes()  # the same rows and signature
    assert "refs:source" in (tmp_path / "b").read_text(encoding="utf-8")
    # without --tsv-sources the second field is a reference: the remapping is refused
    assert_one_error(*invoke("score", "--tsv", tsv, "-o", tmp_path / "c", *common)[::2], "maps sources")
    two = tmp_path / "two.tsv"
    two.write_text("a cat\teine katze\tder hund\n", encoding="utf-8")
    assert_one_error(*invoke("score", "--tsv", two, "--tsv-sources", "-o", tmp_path / "c", *common)[::2],
                     "two.tsv:1: has 2 fields", "candidate<TAB>source, one source")
    assert_one_error(*invoke("score", "-c", files["cands"], "--sources", files["sources"], "--tsv-sources", "-o",
                             tmp_path / "c", *common)[::2], "--tsv-sources applies with --tsv only")
    assert not (tmp_path / "c").exists()


def test_a_remapping_scored_against_references_advises_sources_as_python_names_it(encoder: CountingEncoder,
                                                                                   tmp_path: Path) -> None:
    width = encoder.load_model().config.hidden_size
    remap = _remap_file(tmp_path, encoder, "clp", torch.eye(width, dtype=torch.float64))
    with pytest.raises(ConfigError, match=r"score against sources \(sources=\), or leave it out"):
        _scorer(encoder, remap=str(remap)).score(CANDS, [[s] for s in SOURCES])
