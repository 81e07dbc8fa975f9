"""`alignscore diff`: the ranks and Spearman's rho it reports are scipy's, the pairs it lists are where
the two compositions' ranks differ most (recomputed from the API), its folder output, and a bad side
is one line."""

from __future__ import annotations

import pytest
import torch

import alignscore
from alignscore.cli.common import sides_specs
from alignscore.cli.options import parse_spec
from alignscore.evaluation.agreement import average_ranks, rank_pairs, spearman
from alignscore.errors import ConfigError
from cli_checks import assert_one_error, invoke
from helpers import compose

MODEL = ["--model", "all-MiniLM-L6-v2", "--layer", "4"]


def lines_file(tmp_path, name: str, lines: list[str]) -> str:
    path = tmp_path / name
    path.write_text("".join(t + "\n" for t in lines), encoding="utf-8")
    return str(path)


def test_average_ranks_and_spearman_match_scipy():
    from scipy import stats
    torch.manual_seed(0)
    x = torch.randint(0, 6, (40,)).double()  # many ties
    y = x + torch.randn(40)
    assert torch.allclose(average_ranks(x), torch.from_numpy(stats.rankdata(-x.numpy())).double())
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x.numpy(), y.numpy())[0], abs=1e-12)
    ra, rb, order = rank_pairs(x, y)
    gaps = (ra - rb).abs()[order]
    assert bool((gaps[:-1] >= gaps[1:]).all())


def test_parse_spec():
    # the values as typed: the compiler reads and checks them (sides_specs), naming the side
    assert parse_spec("--aligner wmd --n-gram 2", "--b") == {"aligner": "wmd", "n_gram": "2"}
    assert parse_spec("moverscore-v2", "--a") == {"preset": "moverscore-v2"}
    assert parse_spec("--layer 3 --weighting idf-S", "--a") == {"layer": "3", "weighting": "idf-S"}
    with pytest.raises(ConfigError, match="--a 'nonsense': not a preset"):
        parse_spec("nonsense", "--a")
    with pytest.raises(ConfigError, match="--b"):
        parse_spec("--no-such-option 1", "--b")
    with pytest.raises(ConfigError, match=r"^--b '--aligner magic': --aligner: no aligner 'magic'"):
        sides_specs({}, [("--b", "--aligner magic")], progress=False)


@pytest.fixture(scope="module")
def wmt_files(tmp_path_factory, wmt_data):
    folder = tmp_path_factory.mktemp("diff")
    data = wmt_data["de-en"]
    refs, cands = data["reference"][:24], data["mt-system"][:24]
    (folder / "refs.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    (folder / "cands.txt").write_text("\n".join(cands) + "\n", encoding="utf-8")
    return str(folder / "refs.txt"), str(folder / "cands.txt"), refs, cands


@pytest.mark.slow
def test_diff_ranks_the_pairs_where_greedy_and_wmd_disagree(wmt_files, minilm_encoder):
    refs_path, cands_path, refs, cands = wmt_files
    code, out, err = invoke("diff", "-r", refs_path, "-c", cands_path, *MODEL, "--a", "--aligner greedy",
                         "--b", "--aligner wmd --special-tokens drop", "--top", "3", "-q")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("# A: model:all-MiniLM-L6-v2|layers:L4|") and "align:greedy(cos)" in lines[0]
    assert "align:wmd(" in lines[1] and "special=drop" in lines[1]
    # the ranking, recomputed from the API: the same three lines, in the same order
    enc = minilm_encoder
    f1 = compose(encoder=enc, aggregator=alignscore.SingleLayer(4)).score(cands, refs).f1
    wmd = compose(encoder=enc, aggregator=alignscore.SingleLayer(4), special_tokens="drop",
                            aligner=alignscore.ALIGNERS.build("wmd")).score(cands, refs)["score"]
    ra, rb = average_ranks(f1), average_ranks(wmd)
    expected = torch.argsort((ra - rb).abs(), descending=True, stable=True)[:3]
    rho = spearman(f1, wmd)
    assert f"Spearman rho(A f1, B score) = {rho:.4f}" in lines[2]
    header = lines[3].split()
    assert header[:6] == ["line", "A.f1", "A.rank", "B.score", "B.rank", "shift"]
    rows = [ln.split() for ln in lines[4:7]]
    assert [int(r[0]) for r in rows] == [int(i) + 1 for i in expected]
    for r, i in zip(rows, expected.tolist()):
        assert float(r[1]) == pytest.approx(float(f1[i]), abs=1e-4)
        assert float(r[3]) == pytest.approx(float(wmd[i]), abs=1e-4)
        assert float(r[5]) == pytest.approx(float(rb[i] - ra[i]))
    # each listed pair comes with both alignments
    assert out.count("=== #") == 3 and out.count("--- A ---") == 3 and out.count("--- B ---") == 3
    assert "best match (similarity)" in out and "sends mass to (flow)" in out


@pytest.mark.slow
def test_diff_writes_a_folder(wmt_files, minilm_dir, tmp_path):
    refs_path, cands_path, refs, cands = wmt_files
    folder = tmp_path / "cmp"
    code, out, err = invoke("diff", "-r", refs_path, "-c", cands_path, *MODEL, "--a", "--layer 4",
                         "--b", "--layer 2 --weighting idf-S", "--top", "2", "--format", "svg",
                         "-o", str(folder), "-q")
    assert code == 0, err
    table = (folder / "diff.tsv").read_text(encoding="utf-8").splitlines()
    assert table[0].startswith("# A: ") and "layers:L2" in table[1] and "w:idf-S" in table[1]
    rows = [ln.split("\t") for ln in table[4:]]
    assert len(rows) == len(cands) and sorted(int(r[0]) for r in rows) == list(range(1, len(cands) + 1))
    shifts = [abs(float(r[5])) for r in rows]
    assert shifts == sorted(shifts, reverse=True)
    figures = sorted(p.name for p in folder.glob("*.svg"))
    top2 = [int(r[0]) for r in rows[:2]]
    assert figures == sorted(f"line{n}-{s}.svg" for n in top2 for s in "ab")


def test_diff_bad_spec_is_one_line(tmp_path, tiny_bert_dir):
    refs = lines_file(tmp_path, "r.txt", ["a b c"])
    cands = lines_file(tmp_path, "c.txt", ["a b d"])
    code, out, err = invoke("diff", "-r", refs, "-c", cands, "--model", tiny_bert_dir, "--layer", "1",
                         "--a", "--aligner greedy", "--b", "--no-such-option")
    assert code == 1
    assert_one_error(code, err, "--b", "--no-such-option")
    code, out, err = invoke("diff", "-r", refs, "-c", cands, "--model", tiny_bert_dir, "--layer", "1",
                         "--a", "--aligner greedy", "--b", "--aligner wmd", "--format", "png")
    assert code == 1
    assert_one_error(code, err, "-o DIR")
