"""The suite's helpers, imported by name by the test files (``from helpers import wmt16``): the WMT16
data, the tests' shorthand for a scorer, a counter of forward passes, and :func:`needs` for the
reference packages (the oracles of the parity tests).

They live here, not in conftest.py: pytest imports each conftest.py itself, so a test file that
imported ``conftest`` would get a second copy of it, whose state (:func:`needs`'s) pytest never set.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ALIGNSCORE_DATA", REPO.parent / "shared" / "data"))
WMT16 = DATA / "wmt16-da-seg"
LANG_PAIRS = ("cs-en", "de-en", "fi-en", "ro-en", "ru-en", "tr-en")
#: the BERTScore paper's example pair (its figure 1)
PAPER_REF = "people like foreign cars"
PAPER_CAND = "consumers prefer imported cars"
#: the language pairs of the reference-free tests (a remapping each: the ``remaps`` fixture)
SOURCE_LPS = ("de-en", "ru-en")


def wmt16(lp: str) -> dict[str, list[str]]:
    """The WMT16 DAseg files of one language pair: reference, mt-system, human (as text)."""
    from alignscore.textio import read_lines

    return {kind: read_lines(WMT16 / f"DAseg.newstest2016.{kind}.{lp}")
            for kind in ("reference", "mt-system", "human", "source")}


def compose(encoder: Any, aggregator: Any = None, filters: tuple = (), special_tokens: str = "match-only",
            weighting: Any = None, aligner: Any = None, metric: str | None = None, multi_ref: str = "max",
            baseline: Any = None, cache: Any = None, **runtime: Any) -> Any:
    """A :class:`~alignscore.Scorer` from its parts by keyword (the tests' shorthand for
    ``Scorer(encoder, Composition(...), Runtime(...), cache)``)."""
    from alignscore import Composition, Runtime, Scorer, SingleLayer, TokenRoles, Uniform, Greedy

    composition = Composition(aggregator or SingleLayer(), TokenRoles(special_tokens, tuple(filters)),
                              weighting or Uniform(), aligner or Greedy(), metric, multi_ref, baseline)
    return Scorer(encoder, composition, Runtime(**runtime), cache)


def write_daseg(folder: Path, lang_pairs: tuple[str, ...], n: int, sources: bool = False) -> Path:
    """A DAseg folder with the first ``n`` WMT16 segments of each language pair (reference,
    mt-system, human; with ``sources``, the source too)."""
    for lp in lang_pairs:
        files = wmt16(lp)
        for kind in ("reference", "mt-system", "human", *(("source",) if sources else ())):
            (folder / f"DAseg.newstest2016.{kind}.{lp}").write_text("\n".join(files[kind][:n]) + "\n",
                                                                   encoding="utf-8")
    return folder


def daseg_with_candidate(folder: Path, lang_pairs: tuple[str, ...], n: int, lp: str, line: int, text: str) -> Path:
    """:func:`write_daseg` with sources, the MT output on ``line`` (1-based) of ``lp`` replaced by
    ``text``."""
    folder.mkdir(parents=True, exist_ok=True)
    write_daseg(folder, lang_pairs, n, sources=True)
    mt = folder / f"DAseg.newstest2016.mt-system.{lp}"
    lines = mt.read_text(encoding="utf-8").splitlines()
    mt.write_text("\n".join([*lines[:line - 1], text, *lines[line:]]) + "\n", encoding="utf-8")
    return folder


@contextmanager
def counted_forward() -> Iterator[dict[str, int]]:
    """Counts the encoder forward passes (``HFEncoder.forward`` calls) made inside the block."""
    from alignscore.encoders.huggingface import HFEncoder

    calls = {"n": 0}
    original = HFEncoder.forward

    def counting(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        calls["n"] += 1
        return original(self, *args, **kwargs)

    HFEncoder.forward = counting  # type: ignore[method-assign]
    try:
        yield calls
    finally:
        HFEncoder.forward = original  # type: ignore[method-assign]


def memoise(fn: Callable[..., Any], key: Callable[..., bytes]) -> Callable[..., Any]:
    """Cache a pure function (a forward pass over one fixed batch) by ``key`` of its arguments; numbers
    are unchanged."""
    cache: dict[bytes, Any] = {}

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        k = key(*args, **kwargs)
        if k not in cache:
            cache[k] = fn(*args, **kwargs)
        return cache[k]

    return wrapper


def ids_key(*tensors: Any) -> bytes:
    """The bytes and shapes of the tensors among ``tensors`` (a batch's token ids and mask)."""
    import torch

    return b"|".join(t.cpu().numpy().tobytes() + str(tuple(t.shape)).encode() for t in tensors
                     if isinstance(t, torch.Tensor))


def memoised_forward(encoder: Any) -> Any:
    """``encoder`` with its forward pass memoised per batch (token ids, mask and layers): the scorers built
    on it share the passes over batches they have in common."""
    forward = encoder.forward
    encoder.forward = memoise(forward, lambda ids, mask, layers: ids_key(ids, mask) + str(list(layers)).encode())
    return encoder


_REQUIRED = {"oracles": False}


def require_oracles(required: bool) -> None:
    """Whether a missing oracle fails the run (CI, ``--require-reference``) or skips its tests."""
    _REQUIRED["oracles"] = required


def needs(module: str, load: bool = True) -> ModuleType | None:
    """The reference package ``module`` (an oracle): the test skips where it is not installed,
    unless the run requires the oracles (CI, --require-reference), where its absence fails.
    ``load=False``: only check that it is installed (moverscore_v2 loads a model when imported)."""
    try:
        if not load:
            if importlib.util.find_spec(module) is None:
                raise ImportError(f"no module named {module!r}")
            return None
        return importlib.import_module(module)
    except ImportError as exc:
        if _REQUIRED["oracles"]:
            pytest.fail(f"the oracle {module} cannot be imported ({exc}); the run requires the reference packages "
                        "(CI=true or --require-reference): pip install -e '.[test,reference,torchmetrics,evaluate,ray,docs]'",
                        pytrace=False)
        pytest.skip(f"needs {module} ({exc})", allow_module_level=True)


def source_challenge_set(path: Path, lps: tuple[str, ...]) -> Path:
    """12 items per language pair: good the reference, bad the MT output, each with its source and lp."""
    rows = []
    for lp in lps:
        files = wmt16(lp)
        rows += [{"ref": files["reference"][k], "good": files["reference"][k], "bad": files["mt-system"][k],
                  "category": "mt", "source": files["source"][k], "lp": lp} for k in range(12)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def svg_texts(path: str | Path) -> set[str]:
    """The words of an SVG figure's text elements."""
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    words: set[str] = set()
    for el in root.iter():
        if el.tag.endswith("text"):
            words.update("".join(el.itertext()).split())
    return words


@contextmanager
def warm_alignscore() -> Iterator[tuple[list[str], dict[str, str]]]:
    """A server that imported alignscore once (``warm_server.py``), for tests that run many commands as
    real processes: yields the command that stands for ``python -m alignscore`` (``[*command, ARGS...]``;
    ``[*command, "-c", CODE, ARGS...]`` for ``python -c``) and the variables the command needs."""
    tests = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": str(tests.parent), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with tempfile.TemporaryDirectory(prefix="alignscore-warm-") as tmp:
        path = os.path.join(tmp, "socket")
        server = subprocess.Popen([sys.executable, str(tests / "warm_server.py"), path], env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout.readline().strip() == "ready", "the warm alignscore server did not start"
            yield [sys.executable, "-S", str(tests / "warm_client.py")], {"ALIGNSCORE_WARM_SOCKET": path}
        finally:
            server.kill()
            server.wait()
