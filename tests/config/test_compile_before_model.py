"""Every value is checked before the model is looked up (issue "Trust every number", case 1), a
boolean is a boolean from every source (case 2), a preset is the base of a run file, a grid row
or a keyword run (case 7), and a part from outside may not redeclare a shared setting (case 6).

Each case of the first kind uses a model path that does not exist: the error must name the bad
option as the user wrote it, never the model."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import tomli_w

import alignscore
from alignscore.ablation.grid import parse_grid
from alignscore.aligners import ALIGNERS
from alignscore.aligners.greedy import Greedy
from alignscore.cli.options import FLAGS
from alignscore.config import compile_run, run_spec, sources_of
from alignscore.config.schema import options
from alignscore.errors import ConfigError
from alignscore.settings import setting

from cli_checks import assert_one_error, invoke

MISSING = "/nonexistent/model"

# one case per class of check: (the options, the option the error must name, a word of the reason)
CASES = {
    "shared range": ({"aligner": "sinkhorn", "reg": -1.0}, "reg", "> 0"),
    "shared int range": ({"aligner": "wmd", "n_gram": 0}, "n_gram", ">= 1"),
    "shared choices": ({"aligner": "wmd", "cost": "manhattan"}, "cost", "one of"),
    "not a number": ({"aligner": "sinkhorn", "tol": math.nan}, "tol", "nan"),
    "beyond the declaration": ({"aligner": "sinkhorn", "sinkhorn_dtype": "float32", "reg": 1e-9}, "reg",
                               "too small"),
    "aggregator value": ({"aggregator": "pmeans", "powers": [0.0]}, "powers", "not defined"),
    "filter value": ({"filters": ["stopwords"], "stopwords": ["the"], "stopwords_unit": "line"}, "stopwords_unit",
                     "token"),
    "weighting needs data": ({"weighting": "idf-L"}, "weighting", "needs a corpus"),
    "requirement": ({"window_stride": 4}, "window_stride", "applies with"),
    "pairing": ({"metric": "score"}, "metric", "no output"),
    "composition choice": ({"multi_ref": "median"}, "multi_ref", "mean"),
    "runtime": ({"batch_size": 0}, "batch_size", ">= 1"),
    "cache requirement": ({"cache_size": "1G"}, "cache_size", "applies with"),
    "encoder": ({"max_length": 1}, "max_length", ">= 2"),
}


def _flags(values: dict[str, Any]) -> list[str]:
    out = []
    for key, value in values.items():
        flag = options()[key].flag
        for item in value if isinstance(value, list) else [value]:
            out += [flag, str(item)]
    return out


def _no_model_error(message: str) -> None:
    assert "no such model" not in message and MISSING not in message, message


@pytest.mark.parametrize("case", CASES)
def test_flag_value_before_model(case: str) -> None:
    values, name, reason = CASES[case]
    code, out, err = invoke("config", "--model", MISSING, *_flags(values))
    line = assert_one_error(code, err, options()[name].flag, reason)
    _no_model_error(line)
    assert out == ""


@pytest.mark.parametrize("case", CASES)
def test_keyword_value_before_model(case: str) -> None:
    values, name, reason = CASES[case]
    with pytest.raises(ConfigError) as caught:
        alignscore.score(["a"], ["b"], model=MISSING, **values)
    assert f"{name}=" in str(caught.value) and reason in str(caught.value)
    _no_model_error(str(caught.value))


def _from_file(tmp_path: Path, text: str) -> Any:
    """The run of a run file ``run.toml`` holding ``text``."""
    path = tmp_path / "run.toml"
    path.write_text(text, encoding="utf-8")
    return run_spec({"config": str(path)})


@pytest.mark.parametrize("case", CASES)
def test_run_file_value_before_model(case: str, tmp_path: Path) -> None:
    values, name, reason = CASES[case]
    text = tomli_w.dumps({"model": MISSING, **values})  # as written: a NaN too (alignscore writes none)
    line = 1 + next(i for i, ln in enumerate(text.splitlines()) if ln.startswith(f"{name} ="))
    with pytest.raises(ConfigError) as caught:
        _from_file(tmp_path, text)
    assert f"run.toml:{line}: {name}" in str(caught.value) and reason in str(caught.value)
    _no_model_error(str(caught.value))


@pytest.mark.parametrize("case", CASES)
def test_grid_row_value_before_model(case: str) -> None:
    values, name, reason = CASES[case]
    with pytest.raises(ConfigError) as caught:  # when the grid is read, or when its cell is compiled
        grid = parse_grid({"models": {"m": {"model": MISSING}}, "columns": [{"name": "c", "aligner": "greedy"}],
                           "rows": [{"name": "r", **values}]}, path="g.toml")
        compile_run(grid.sources(grid.rows[0], grid.columns[0]))
    assert f"rows[0].{name}" in str(caught.value) and reason in str(caught.value)
    _no_model_error(str(caught.value))


def test_the_model_is_the_last_check() -> None:
    with pytest.raises(ConfigError, match="model=: no such model folder or file"):
        run_spec({"model": MISSING, "aligner": "sinkhorn", "reg": 0.5})


# -- booleans ---------------------------------------------------------------------------------
SWITCHES = ["idf", "rescale", "lowercase", "sep", "normalize"]


@pytest.mark.parametrize("name", SWITCHES)
@pytest.mark.parametrize("text", ["no", "false", "true", "1"])
def test_a_string_is_not_a_switch_keyword(name: str, text: str) -> None:
    with pytest.raises(ConfigError, match=rf"{name}=: True or False, not '{text}'"):
        run_spec({"model": MISSING, name: text})


@pytest.mark.parametrize("name", SWITCHES)
def test_a_string_is_not_a_switch_file(name: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=rf"run.toml:2: {name}: true or false \(a TOML boolean, without quotes\)"):
        _from_file(tmp_path, f'model = "{MISSING}"\n{name} = "no"\n')


def test_a_switch_in_a_part_table_and_a_number(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"run.toml:1: weighting.sep: true or false"):
        _from_file(tmp_path, 'weighting = { name = "idf-S", sep = "false" }\n')
    with pytest.raises(ConfigError, match=r"idf=: True or False, not 0"):
        run_spec({"idf": 0})
    assert run_spec({"idf": False}).composition.weighting.signature() == "none"


# -- presets as bases -------------------------------------------------------------------------
def test_preset_as_the_base_of_a_run_file(tmp_path: Path) -> None:
    from_file = _from_file(tmp_path, 'preset = "moverscore-v2"\nn_gram = 2\nbatch_size = 8\n')
    from_flags = compile_run(sources_of({"preset": "moverscore-v2", "n_gram": "2", "batch_size": "8"}, FLAGS))
    assert from_file == from_flags
    assert from_file.encoder.model == "distilbert-base-uncased" and from_file.composition.aligner.n_gram == 2
    switched = _from_file(tmp_path, 'preset = "moverscore-v2"\naligner = "greedy"\n')  # its wmd settings go with it
    assert switched.composition.aligner.signature() == run_spec({"aligner": "greedy"}).composition.aligner.signature()
    with pytest.raises(ConfigError, match=r"run.toml:2: n_gram"):
        _from_file(tmp_path, 'preset = "moverscore-v2"\nn_gram = 0\n')


def test_preset_as_the_base_of_a_grid_row_keeps_the_role_model() -> None:
    grid = parse_grid({"models": {"m": {"model": "all-MiniLM-L6-v2", "layer": 4}},
                       "columns": [{"name": "c", "aligner": "wmd"}],
                       "rows": [{"name": "r", "preset": "moverscore-v2", "n_gram": 2}]}, path="g.toml")
    spec = compile_run(grid.sources(grid.rows[0], grid.columns[0]))
    wanted = run_spec({"preset": "moverscore-v2", "model": "all-MiniLM-L6-v2", "n_gram": 2})
    assert spec.encoder.model.endswith("all-MiniLM-L6-v2")
    assert spec.composition == wanted.composition  # the preset's layer -1 over the role's 4, below the row


def test_preset_and_run_file_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"run.toml:2: config: a run file holds options"):
        _from_file(tmp_path, 'preset = "baryscore"\nconfig = "other.toml"\n')
    with pytest.raises(ConfigError, match=r"preset= and config= both give a whole run"):
        run_spec({"preset": "baryscore", "config": str(tmp_path / "run.toml")})


# -- a plugin's setting that a built-in part already declares ---------------------------------
@dataclass(frozen=True)
class _Costly(Greedy):
    cost: str = setting("l1", choices=("l1", "l2"), help="a cost of its own")


def test_a_plugin_may_not_redeclare_a_shared_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ALIGNERS._entries, "costly", _Costly)
    with pytest.raises(ConfigError, match=r"aligner \w+'s setting 'cost' .* differs from aligner \w+'s"):
        options()
    monkeypatch.undo()
    assert "euclidean" in options()["cost"].setting.decl.choices
