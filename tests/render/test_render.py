"""Rendering an explained alignment (alignscore.render): the PNG and SVG figures, the HTML page and the
text table show the tokens, scores and signature; a figure draws the reference asked for; the format
follows the output's suffix; an unmatchable cell is never printed as NaN."""

from __future__ import annotations

import math
import struct
from html.parser import HTMLParser

import pytest

import alignscore
from alignscore.aggregators import SingleLayer
from alignscore.encoders import HFEncoder
from alignscore.render import format_for, html_report, save_figure, text_report
from helpers import PAPER_CAND, PAPER_REF, compose, svg_texts


@pytest.fixture(scope="module")
def encoder(minilm_encoder) -> HFEncoder:
    return minilm_encoder


def _greedy(encoder, **kw):
    return compose(encoder=encoder, aggregator=SingleLayer(4), **kw)


class _TextCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.words: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.words += data.split()


@pytest.mark.slow  # figures: out of the edit loop's tier, in CI's
def test_renders_png_svg_html_and_text(encoder, tmp_path):
    e = _greedy(encoder).explain(PAPER_CAND, [PAPER_REF, "cars are people"])
    words = {"people", "like", "foreign", "cars", "consumers", "prefer", "imported"}

    png = save_figure(e, tmp_path / "pair.png")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert 300 <= width <= 2000 and 300 <= height <= 2000
    assert 5_000 < len(data) < 500_000

    svg = save_figure(e, tmp_path / "pair.svg")
    texts = svg_texts(svg)
    assert words <= texts, words - texts
    assert "f1" in texts and any(t.startswith("model:all-MiniLM-L6-v2") for t in texts)  # title: scores, signature

    page = html_report(e)
    parser = _TextCollector()
    parser.feed(page)
    assert words <= set(parser.words)
    assert "table" in parser.tags and "script" not in parser.tags and "img" not in parser.tags
    assert "http" not in page  # self-contained: no outside resource
    assert "reference [0] (best)" in page and str(e.signature) in page

    text = text_report(e)
    assert words <= set(text.replace("(", " ").split())
    assert "reference [0] (best): people like foreign cars" in text
    assert f"f1={e.scores['f1']:.4f}" in text


@pytest.mark.slow  # a figure from the real model: out of the edit loop's tier, in CI's
def test_figure_draws_a_chosen_reference(encoder, tmp_path):
    e = _greedy(encoder).explain(PAPER_CAND, [PAPER_REF, "cars are people"])
    assert "are" in svg_texts(save_figure(e, tmp_path / "r1.svg", ref_index=1))
    assert "are" not in svg_texts(save_figure(e, tmp_path / "r0.svg"))
    with pytest.raises(alignscore.ConfigError, match="out of range"):
        save_figure(e, tmp_path / "r5.svg", ref_index=5)


def test_format_for():
    assert format_for(None, None) == "text"
    assert format_for("a/b.PNG", None) == "png"
    assert format_for("x.htm", None) == "html"
    assert format_for("x.png", "svg") == "svg"
    with pytest.raises(alignscore.ConfigError, match="suffix"):
        format_for("x.jpeg", None)


def test_no_nan_in_text_for_unmatchable_cells(encoder):
    scorer = _greedy(encoder, special_tokens="drop")
    e = scorer.explain(PAPER_CAND, PAPER_REF)
    p = e.best
    assert math.isnan(float(p.matrix[0, 0]))  # [CLS] cannot be matched under "drop"
    assert "nan" not in text_report(e).lower()
