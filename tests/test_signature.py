"""Identity by content: the files that change scores (an idf-L corpus, stop words, a baseline, a
word-vector table) are named in the signature by their name and a digest of what the run uses
of them, so two files of one name and other contents never share a signature (and a resume with
the other is refused), while the same content under another name has the same digest; and a
revision is in the signature only where it is used (a local folder given one is refused)."""

from __future__ import annotations

import csv
import hashlib
import shutil
from pathlib import Path

import pytest

import alignscore
from alignscore.rescale import Baseline, bert_score_baseline
from alignscore.encoders.huggingface import HFEncoder
from alignscore.encoders.static import StaticEncoder
from alignscore.errors import ConfigError
from alignscore.filters import StopWords
from alignscore.signature import Signature, content_digest
from alignscore.weighting.schemes import IdfL

from cli_checks import assert_one_error, fingerprint, invoke, write_toml

CANDS = ["the cat sat on the mat", "a dog ran in the park", "birds sing at dawn"]
REFS = ["a cat sat on a mat", "the dog runs in a park", "the birds sang at dawn"]
CORPUS_A = [f"the cat sat on mat number {i}" for i in range(40)]
CORPUS_B = [f"a dog ran in the park on day {i}" for i in range(40)]


def _write(path: Path, lines: list[str]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def _sha12(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


# -- the digests, part by part --------------------------------------------------------------------
def test_idf_corpora_of_one_name_and_other_sentences_have_other_signatures(tmp_path):
    a = _write(tmp_path / "a" / "corpus.txt", CORPUS_A)
    b = _write(tmp_path / "b" / "corpus.txt", CORPUS_B)
    sig_a, sig_b = IdfL(idf_corpus=a).signature(), IdfL(idf_corpus=b).signature()
    assert sig_a != sig_b
    # the name stays readable, and a file with no blank line has the digest sha256sum prints
    assert sig_a == f"idf-L(corpus.txt#{_sha12(a)},M=40)" and sig_b == f"idf-L(corpus.txt#{_sha12(b)},M=40)"


def test_an_idf_corpus_under_another_name_or_as_a_list_has_the_same_digest(tmp_path):
    a = _write(tmp_path / "corpus.txt", CORPUS_A)
    with_blanks = _write(tmp_path / "other.txt", CORPUS_A[:20] + ["", "   "] + CORPUS_A[20:])
    digest = IdfL(idf_corpus=a).corpus.digest
    assert IdfL(idf_corpus=with_blanks).signature() == f"idf-L(other.txt#{digest},M=40)"  # blank lines: unused
    assert IdfL(idf_corpus=tuple(CORPUS_A), sep=True).signature() == f"idf-L(corpus#{digest},M=40)+sep"
    assert IdfL(idf_corpus=tuple(CORPUS_A[:-1])).corpus.digest != digest


def test_stop_word_lists_are_named_by_their_words(tmp_path):
    a = _write(tmp_path / "a" / "stop.txt", ["the", "a", "of"])
    b = _write(tmp_path / "b" / "stop.txt", ["the", "a", "in"])
    shuffled = _write(tmp_path / "mine.txt", ["of", " the ", "", "a", "the"])  # order, blanks, repeats: unused
    digest = content_digest(["a", "of", "the"])
    assert StopWords(a).signature() == f"stop(stop.txt#{digest},n=3)"
    assert StopWords(b).signature() != StopWords(a).signature()
    assert StopWords(shuffled).signature() == f"stop(mine.txt#{digest},n=3)"
    assert StopWords(("of", "the", "a"), stopwords_unit="token").signature() == f"stop(list#{digest},n=3,per-token)"
    # sorted words, one per line: what `LC_ALL=C sort -u stop.txt | sha256sum` prints for a clean file
    assert digest == _sha12(_write(tmp_path / "sorted.txt", ["a", "of", "the"]))


def test_baselines_are_named_by_their_values(tmp_path):
    rows = "LAYER,P,R,F\n0,0.3,0.31,0.305\n2,0.8,0.7,0.75\n"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "base.csv").write_text(rows, encoding="utf-8")
    (tmp_path / "b" / "base.csv").write_text(rows.replace("0.75", "0.76"), encoding="utf-8")
    # the same numbers written otherwise (CRLF, another spelling of 0.8, blank lines) under another name
    (tmp_path / "same.tsv").write_text(rows.replace("0.8,", "0.80,").replace("\n", "\r\n") + "\r\n", encoding="utf-8")
    a, b, same = (Baseline.read(tmp_path / p) for p in ("a/base.csv", "b/base.csv", "same.tsv"))
    assert a.signature() == f"base.csv#{_sha12(tmp_path / 'a' / 'base.csv')}"  # its own canonical text
    assert b.signature() != a.signature()
    assert same.signature() == f"same.tsv#{a.digest()}"
    made = Baseline(a.rows)  # made in Python: named by its values too
    assert made.signature() == f"baseline#{a.digest()}"


def test_word_vector_tables_are_named_by_their_content(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "words.vec").write_text("cat 1.0 0.0\ndog 0.0 1.0\n", encoding="utf-8")
    (tmp_path / "b" / "words.vec").write_text("cat 1.0 0.0\ndog 0.5 1.0\n", encoding="utf-8")
    shutil.copy(tmp_path / "a" / "words.vec", tmp_path / "copy.vec")
    a, b, copy = (StaticEncoder(str(tmp_path / p)) for p in ("a/words.vec", "b/words.vec", "copy.vec"))
    assert a.signature() != b.signature() and a.signature().startswith("static:words.vec#")
    assert copy.signature() == a.signature().replace("words.vec", "copy.vec")


# -- end to end: scores, signatures and resumes ----------------------------------------------------
@pytest.fixture
def pairs(tmp_path):
    return _write(tmp_path / "c.txt", CANDS), _write(tmp_path / "r.txt", REFS)


def _signature(stderr: str) -> Signature:
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("signature: ")]
    return Signature.parse(line[len("signature: "):])


@pytest.mark.parametrize("kind", ["idf_corpus", "stopwords", "baseline"])
def test_same_named_files_give_other_scores_and_other_signatures_from_every_way_in(kind, pairs, tiny_bert_dir,
                                                                                  tmp_path):
    """From flags, a run file and Python keywords: the two files of one name give other numbers,
    and the signature says so in the field the file sets."""
    if kind == "baseline":
        paths = [tmp_path / d / "base.csv" for d in ("a", "b")]
        for path, b in zip(paths, (0.2, 0.3)):
            path.parent.mkdir()
            path.write_text("LAYER,P,R,F\n" + "".join(f"{k},{b},{b},{b}\n" for k in range(3)), encoding="utf-8")
        paths, extra, field = [str(p) for p in paths], {}, "rescale"
    elif kind == "stopwords":
        paths = [_write(tmp_path / "a" / "stop.txt", ["the", "a"]), _write(tmp_path / "b" / "stop.txt", ["cat", "dog"])]
        extra, field = {}, "tokens"
    else:
        paths = [_write(tmp_path / "a" / "corpus.txt", CORPUS_A), _write(tmp_path / "b" / "corpus.txt", CORPUS_B)]
        extra, field = {"weighting": "idf-L"}, "w"
    c, r = pairs
    base = {"model": tiny_bert_dir, "layer": 2, **extra}
    flag_extra = [a for k, v in extra.items() for a in (f"--{k}", v)]
    by_flags, by_file, by_keyword = [], [], []
    for i, path in enumerate(paths):
        code, out, err = invoke("score", "-c", c, "-r", r, "--model", tiny_bert_dir, "--layer", 2, *flag_extra,
                                f"--{kind.replace('_', '-')}", path)
        assert code == 0, err
        by_flags.append((out, _signature(err)))
        run = write_toml({**base, kind: path}, tmp_path / f"run{i}.toml")
        code, out, err = invoke("score", "-c", c, "-r", r, "--config", run)
        assert code == 0, err
        by_file.append((out, _signature(err)))
        by_keyword.append(alignscore.score(CANDS, REFS, **base, **{kind: path}))
    for (out_a, sig_a), (out_b, sig_b) in (by_flags, by_file):
        assert out_a != out_b  # the scores differ...
        assert sig_a[field] != sig_b[field] and sig_a.differences(sig_b) == [f"{field} {sig_a[field]} vs {sig_b[field]}"]
    assert by_flags[0][1] == by_file[0][1] and by_flags[1][1] == by_file[1][1]
    assert [str(s.signature) for s in by_keyword] == [str(sig) for _, sig in by_flags]


def test_a_resume_with_the_other_same_named_corpus_is_refused(pairs, tiny_bert_dir, tmp_path):
    c, r = pairs
    a = _write(tmp_path / "a" / "corpus.txt", CORPUS_A)
    b = _write(tmp_path / "b" / "corpus.txt", CORPUS_B)
    out = tmp_path / "o.tsv"
    common = ("score", "-c", c, "-r", r, "--model", tiny_bert_dir, "--layer", 2, "--weighting", "idf-L", "-q",
              "-o", out)
    code, _, err = invoke(*common, "--idf-corpus", a, "--stream")
    assert code == 0, err
    before = fingerprint(out)
    code, _, err = invoke(*common, "--idf-corpus", b, "--resume")
    line = assert_one_error(code, err, "another composition", "w idf-L(corpus.txt#")
    assert f"#{_sha12(a)}," in line and f"#{_sha12(b)}," in line
    assert fingerprint(out) == before  # left as it was
    code, _, err = invoke(*common, "--idf-corpus", a, "--resume")  # the same corpus resumes
    assert code == 0, err


def test_a_resume_with_a_changed_stop_word_file_of_the_same_path_is_refused(pairs, tiny_bert_dir, tmp_path):
    c, r = pairs
    stop = _write(tmp_path / "stop.txt", ["the", "a"])
    out = tmp_path / "o.tsv"
    common = ("score", "-c", c, "-r", r, "--model", tiny_bert_dir, "--layer", 2, "--stopwords", stop, "-q", "-o", out)
    code, _, err = invoke(*common, "--stream")
    assert code == 0, err
    _write(Path(stop), ["the", "an"])
    code, _, err = invoke(*common, "--resume")
    assert_one_error(code, err, "another composition", "tokens ", "stop(stop.txt#")


# -- a revision only where it is used -------------------------------------------------------------
def test_a_local_folder_given_a_revision_is_refused_before_it_loads(pairs, tmp_path, tiny_bert_dir):
    c, r = pairs
    not_a_model = tmp_path / "folder"  # exists, holds no model: the check is on the settings alone
    not_a_model.mkdir()
    out = tmp_path / "o.tsv"
    for model in (tiny_bert_dir, str(not_a_model)):
        code, _, err = invoke("score", "-c", c, "-r", r, "--model", model, "--revision", "abc", "-o", out)
        assert_one_error(code, err, "--revision", "local folder")
        assert not out.exists()
    run = write_toml({"model": str(not_a_model), "revision": "abc"}, tmp_path / "run.toml")
    code, _, err = invoke("score", "-c", c, "-r", r, "--config", run)
    assert_one_error(code, err, f"{run}:2: revision", "local folder")
    with pytest.raises(ConfigError, match=r"revision=: .*local folder"):
        alignscore.score(CANDS, REFS, model=str(not_a_model), revision="abc")
    with pytest.raises(ConfigError, match="revision: .*local folder"):
        HFEncoder(tiny_bert_dir, revision="abc")


def test_a_hub_model_keeps_its_revision_in_the_signature():
    assert HFEncoder("roberta-large", revision="abc123").signature() == "roberta-large@abc123"  # nothing loaded
    assert HFEncoder("roberta-large").signature() == "roberta-large"


# -- bert_score's own baselines ---------------------------------------------------------------------
bert_score = pytest.importorskip("bert_score", reason="bert_score's baseline files come with it")


def _shipped() -> list[Path]:
    return sorted((Path(bert_score.__file__).parent / "rescale_baseline").rglob("*.tsv"))


def test_every_baseline_bert_score_ships_reads_as_it_is():
    """Each value read equals the file's, and the LAYER column is the row's position (bert_score
    picks a layer's row by position, alignscore by LAYER: the same row)."""
    assert len(_shipped()) > 50
    for path in _shipped():
        with open(path, newline="", encoding="utf-8") as fh:
            header, *rows = list(csv.reader(fh))
        assert header == ["LAYER", "P", "R", "F"], path
        read = Baseline.read(path)
        assert sorted(read.rows) == [int(row[0]) for row in rows] == list(range(len(rows))), path
        for row in rows:
            assert read.values(int(row[0])) == {m: float(v) for m, v in zip(("precision", "recall", "f1"), row[1:])}


def test_bert_score_baseline_finds_a_model_s_file():
    path = bert_score_baseline("roberta-large", "en")
    assert path == (Path(bert_score.__file__).parent / "rescale_baseline" / "en" / "roberta-large.tsv").resolve()
    assert bert_score_baseline("FacebookAI/roberta-large", "en") == path  # another spelling of its hub id
    assert bert_score_baseline("microsoft/deberta-xlarge-mnli", "en").name == "deberta-xlarge-mnli.tsv"
    with pytest.raises(ConfigError, match="no baseline for 'all-MiniLM-L6-v2' in 'en' .*roberta-large.*alignscore "
                                          "baseline"):
        bert_score_baseline("all-MiniLM-L6-v2", "en")
    with pytest.raises(ConfigError, match="no baselines for the language 'xx' .*en-sci"):
        bert_score_baseline("roberta-large", "xx")
    with pytest.raises(ConfigError, match="no baseline"):
        bert_score_baseline("../en/roberta-large", "zh")  # nothing outside the language's folder


def test_alignscore_baseline_bert_score_prints_the_path_or_copies_the_file(tmp_path):
    code, out, err = invoke("baseline", "--model", "roberta-large", "--bert-score", "en")
    assert code == 0, err
    assert out.strip() == str(bert_score_baseline("roberta-large", "en"))
    code, out, _ = invoke("baseline", "--lang", "de", "--bert-score", "de")  # --lang names the model
    assert out.strip().endswith("de/bert-base-multilingual-cased.tsv")
    copy = tmp_path / "rl.csv"
    code, _, err = invoke("baseline", "--model", "roberta-large", "--bert-score", "en", "-o", copy)
    assert code == 0, err
    assert copy.read_bytes() == bert_score_baseline("roberta-large", "en").read_bytes()
    code, _, err = invoke("baseline", "--model", "roberta-large", "--bert-score", "en", "--pairs", 5)
    assert code != 0 and "--pairs" in err
    code, _, err = invoke("baseline", "--model", "all-MiniLM-L6-v2", "--bert-score", "en")
    assert_one_error(code, err, "no baseline for 'all-MiniLM-L6-v2'")
    code, out, _ = invoke("baseline", "--help")
    assert "--bert-score LANG" in out and "Any model gets one this way" in " ".join(out.split())


def test_a_bert_score_baseline_file_rescales_as_the_formula_says(pairs, tiny_bert_dir):
    """bert_score's roberta-large file, given to --baseline as it is, rescales the tiny model's
    layer-2 scores with its row 2: x' = (x - b) / (1 - b) (the formula against bert_score's own
    numbers: tests/parity/test_bert_score_parity.py)."""
    path = bert_score_baseline("roberta-large", "en")
    raw = alignscore.score(CANDS, REFS, model=tiny_bert_dir, layer=2)
    rescaled = alignscore.score(CANDS, REFS, model=tiny_bert_dir, layer=2, baseline=str(path))
    b = Baseline.read(path).values(2)
    for m in ("precision", "recall", "f1"):
        want = (raw[m].double() - b[m]) / (1 - b[m])
        assert rescaled[m].double().sub(want).abs().max() < 1e-6
    assert rescaled.signature["rescale"] == f"roberta-large.tsv#{Baseline.read(path).digest()}"
