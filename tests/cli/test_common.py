"""The sides the comparing commands share (:func:`alignscore.cli.common.sides_specs`): every side
of diff, challenge and compare is checked before the model is looked up, and the model's absence is
named as it was given (on the side that names it, or not on a side)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_checks import assert_one_error, invoke

MISSING = "/nonexistent/model"
ITEMS = Path(__file__).parents[2] / "examples" / "challenge.jsonl"


@pytest.fixture
def commands(files) -> dict[str, list[str]]:
    c, r = files("c.txt", ["a cat sat", "a dog ran", "hi", "no"]), files("r.txt", ["the cat sat", "dogs", "hey", "yes"])
    h = files("h.txt", ["1", "2", "3", "4"])
    return {"diff": ["diff", "-c", c, "-r", r], "challenge": ["challenge", ITEMS],
            "compare": ["compare", "-c", c, "-r", r, "--human", h]}


@pytest.mark.parametrize("command", ["diff", "challenge", "compare"])
def test_the_second_sides_values_before_the_model(commands, command: str) -> None:
    code, _, err = invoke(*commands[command], "--model", MISSING, "--a", "", "--b", "--aligner sinkhorn --reg -1")
    line = assert_one_error(code, err, "--b '--aligner sinkhorn --reg -1': --reg: expected a number > 0")
    assert MISSING not in line


@pytest.mark.parametrize("command", ["diff", "challenge", "compare"])
def test_the_models_absence_is_named_where_it_was_given(commands, command: str) -> None:
    code, _, err = invoke(*commands[command], "--model", MISSING, "--a", "", "--b", "--layer 1")
    line = assert_one_error(code, err, f"--model: no such model folder or file: {MISSING}")
    assert "--a" not in line and "--b" not in line  # the model is both sides', not one side's
    code, _, err = invoke(*commands[command], "--model", "all-MiniLM-L6-v2", "--a", "--layer 1",
                          "--b", f"--model {MISSING}")
    assert_one_error(code, err, f"--b '--model {MISSING}': --model: no such model folder or file")
