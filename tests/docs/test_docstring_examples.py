"""The examples in the docstrings run (doctest), every module whose imports are installed.

A module that needs an optional package (ray, model2vec, torchmetrics, evaluate, ...) which is
missing is left out; the pure functions of the aligners, aggregators and weightings need none,
so their examples always run.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import alignscore

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
# examples that load the real model (all-MiniLM-L6-v2): seconds each
SLOW = {"alignscore.integrations.torchmetrics"}
# modules whose examples must exist and run wherever the package does
CORE = ("alignscore.aligners", "alignscore.aggregators", "alignscore.weighting")


def modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(alignscore.__path__, "alignscore."))


def examples(name: str) -> list[doctest.DocTest]:
    """The doctests of module ``name`` (its own objects, not what it imports)."""
    return [t for t in doctest.DocTestFinder().find(importlib.import_module(name)) if t.examples]


def run(name: str) -> int:
    """Run the examples of ``name``; the number of docstrings with examples."""
    try:
        tests = examples(name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "alignscore":
            raise
        pytest.skip(f"{name} needs {exc.name}, which is not installed")
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} example(s) of {name} failed (output above)"
    return len(tests)


@pytest.mark.parametrize("name", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW else m for m in modules()])
def test_docstring_examples_run(name: str) -> None:
    run(name)


def test_the_pure_functions_have_at_least_ten_examples() -> None:
    """Aligners, aggregators and weightings: Parameters, Returns, the formula and an example."""
    counted = {name: len(examples(name)) for name in modules() if name.startswith(CORE)}
    assert sum(counted.values()) >= 10, counted
    for needed in ("alignscore.aligners.greedy.greedy_match", "alignscore.aligners.greedy.f_beta",
                   "alignscore.aligners.transport.exact_plans", "alignscore.aligners.transport.sinkhorn_plans",
                   "alignscore.aggregators.pmeans.power_mean", "alignscore.aggregators.routing.route",
                   "alignscore.weighting.base.idf_from_df"):
        module, _, function = needed.rpartition(".")
        test = next((t for t in examples(module) if t.name == needed), None)
        assert test is not None, f"{needed} has no example"
        doc = test.docstring or ""
        assert "Parameters" in doc and "Returns" in doc and "Examples" in doc, needed


def test_no_example_is_skipped() -> None:
    """An example that does not run is not an example (the docs run theirs too)."""
    from pathlib import Path

    root = Path(alignscore.__file__).parent
    skipped = [str(p.relative_to(root)) for p in root.rglob("*.py") if "+" + "SKIP" in p.read_text(encoding="utf-8")]
    assert not skipped
